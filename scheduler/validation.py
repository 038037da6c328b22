"""Validation of a candidate profile: pgmpi-bench in tuned mode against the default.

For every redirected range of the candidate (.prf ranges whose algorithm is not "default") the
job measures the campaign's sizes inside the range and their neighbours, in launches with the
default forced and in launches in tuned mode (PGMPITUNE_PROFILE_DIR set, nothing forced).
The figures per (collective, size): median default time, median tuned time, speedup.
"""
from __future__ import annotations

from pathlib import Path

from service.analysis.profiles import parse_prf   # one .prf reader for the agent and the service

from .campaign import Campaign, collectives
from .planner import JobSpec, launches_for

MPI_TO_KEY = {v.lower(): k for k, v in collectives().items()}


def redirected_sizes(c: Campaign, prf: dict) -> tuple[str, list[int]] | None:
    """(collective key, sizes to validate): campaign sizes in redirected ranges plus their neighbours."""
    key = MPI_TO_KEY.get(prf["mpi_name"].lower())
    if key is None:
        return None
    redirected = [(lo, hi) for lo, hi, alg in prf["ranges"] if alg != "default"]
    if not redirected:
        return None
    grid = sorted(set(c.sizes_for(key))) if key in c.collectives else []
    chosen: set[int] = set()
    for lo, hi in redirected:
        inside = [i for i, s in enumerate(grid) if lo <= s <= hi]
        if inside:
            for i in range(max(0, inside[0] - 1), min(len(grid), inside[-1] + 2)):
                chosen.add(grid[i])
        else:
            chosen.update({max(1, lo), hi})
    return key, sorted(chosen)


def validation_job(c: Campaign, version: dict, profile_dir: Path, walltime_seconds: int) -> JobSpec | None:
    """A validation job for one candidate profile version (as the analyses endpoint returns it)."""
    calls: dict[str, list[int]] = {}
    nprocs = None
    for text in version.get("files", {}).values():
        try:
            prf = parse_prf(text)
        except (StopIteration, ValueError, IndexError):
            continue
        got = redirected_sizes(c, prf)
        if got:
            key, sizes = got
            calls[key] = sorted(set(calls.get(key, [])) | set(sizes))
            nprocs = nprocs or prf["nprocs"]
    if not calls:
        return None
    library = version.get("library") or version.get("mpi")
    modules = [m for m in c.modules if library is None or m.mpi == library] or list(c.modules)
    module = modules[0]
    layouts = [lay for lay in c.layouts if lay.nprocs == nprocs] or list(c.layouts)
    layout = layouts[0]
    nrep = c.validation.nrep
    if c.validation.interleaved:      # paired: both arms in every mpirun (service/analysis/validation.py)
        launches = launches_for(c, module, c.validation.mpiruns, calls, {k: ["default", "tuned"] for k in calls},
                                nrep, prefix="validate", env={"PGMPITUNE_PROFILE_DIR": str(profile_dir)},
                                role="paired")
        vid = version.get("id", "x")
        return JobSpec(f"validate-{module.key}-n{layout.nodes}x{layout.ppn}-v{vid}", module, layout, launches,
                       walltime_seconds, kind="validate")
    launches = (launches_for(c, module, c.validation.mpiruns, calls, {k: ["default"] for k in calls}, nrep,
                             prefix="validate-default", role="default")
                + launches_for(c, module, c.validation.mpiruns, calls, {k: ["tuned"] for k in calls}, nrep,
                               prefix="validate-tuned", env={"PGMPITUNE_PROFILE_DIR": str(profile_dir)},
                               role="tuned"))
    vid = version.get("id", "x")
    return JobSpec(f"validate-{module.key}-n{layout.nodes}x{layout.ppn}-v{vid}", module, layout, launches,
                   walltime_seconds, kind="validate")


def figures(files: list[tuple[str, str]], nprocs: int) -> list[dict]:
    """Per (collective, size): default vs tuned, paired per mpirun when both arms share one (role, text)."""
    from service.analysis.validation import figures as paired_figures
    return paired_figures(files, nprocs)
