"""Validation of a candidate profile: pgmpi-bench in tuned mode against the default.

For every redirected range of the candidate (.prf ranges whose algorithm is not "default") the job measures
the campaign's sizes inside the range and their neighbours. With `validation.interleaved` (the default of the
example campaign) every mpirun measures `default` and `tuned` interleaved (pgmpi-bench
--algorithms=default,tuned, PGMPITUNE_PROFILE_DIR set); otherwise default and tuned run in separate launches.
The figures (lib/python/pgmpi_formats/validation.py) go to the service, which judges them
(service/analysis/validation.py).
"""
from __future__ import annotations

from pathlib import Path

from pgmpi_formats.collectives import by_mpi_name
from pgmpi_formats.layouts import parse_layout
from pgmpi_formats.prf import ProfileFormatError, parse_prf, profile_layout, redirected_ranges
from pgmpi_formats.validation import figures as paired_figures

from .campaign import Campaign, Layout
from .planner import DTBENCH, JobSpec, Launch, launches_for, sync_argv, under_native_file


def redirected_sizes(c: Campaign, prf: dict) -> tuple[str, list[int]] | None:
    """(collective key, sizes to validate): campaign sizes in redirected ranges plus their neighbours."""
    coll = by_mpi_name(prf["mpi_name"])
    if coll is None:
        return None
    key = coll.key
    redirected = [(lo, hi) for lo, hi, _ in redirected_ranges(prf)]
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


def module_of(c: Campaign, version: dict):
    """The campaign module that measured the candidate: the one the agent names (module_key, from the
    results' library identity), else the first of the candidate's library (a family name), else the first."""
    key = version.get("module_key")
    library = version.get("library") or version.get("mpi")
    return (next((m for m in c.modules if key and m.key == key), None)
            or next((m for m in c.modules if library and m.family.name == library), None)
            or c.modules[0])


def is_datatype_candidate(files: dict[str, str]) -> bool:
    """A candidate from a datatype campaign: a datatype profile, or .prf files the datatype analysis wrote
    (`#@pgmpi source datatypes`)."""
    for name, text in files.items():
        if name.endswith(".dtprf"):
            return True
        try:
            if parse_prf(text).get("meta", {}).get("source", "").strip() == "datatypes":
                return True
        except ProfileFormatError:
            continue
    return False


def dt_validation_job(c: Campaign, version: dict, profile_dir: Path, walltime_seconds: int) -> JobSpec | None:
    """A datatype candidate is validated where it acts: pgmpi-dtbench on the campaign's datatype cases in
    MPI_Bcast / MPI_Allgather at all its sizes (those outside the .prf ranges are the control), in separate
    launches without and with the candidate (a GL4 replacement acts at MPI_Type_commit, so it cannot be
    switched per call): the default arm runs `typed` and the descriptions the datatype profile replaces, the
    tuned arm `tuned` (the .prf's choice) and the same descriptions.  Every layout is measured because a .prf
    range redirects every call of its size, whatever the layout (rule 3 of lib/src/core/pgmpitune_core.h)."""
    from pgmpi_formats.dtprf import DtProfileFormatError, parse_dtprf
    d = c.datatypes
    if d is None:
        return None
    # a .prf acts in the collectives; a replacement in MPI_Send/MPI_Recv too (lib/docs/profile-format.md)
    has_dtprf = any(n.endswith(".dtprf") for n in (version.get("files") or {}))
    patterns = [p for p in d.patterns if p in ("bcast", "allgather") or (has_dtprf and p == "pingpong")]
    extra: list[str] = []
    for name, text in (version.get("files") or {}).items():
        if not name.endswith(".dtprf"):
            continue
        try:
            rules = parse_dtprf(text, name)["rules"]
        except DtProfileFormatError:
            continue
        for _, _, ev in rules:
            for item in ev.get("evidence", "").split(","):
                desc = item.split(":", 1)[-1].split("@", 1)[0]
                if desc and desc not in extra and desc not in ("typed", "tuned"):
                    extra.append(desc)
    if not patterns:
        return None
    module = module_of(c, version)
    layout = sorted((lay for lay in c.layouts), key=lambda lay: lay.nodes)[0]
    case_argv = [f"--patterns={','.join(patterns)}", f"--layouts={','.join(d.layouts)}",
                 f"--variants={','.join(str(v) for v in d.variants)}",
                 f"--blocksizes={','.join(str(a) for a in d.blocksizes)}",
                 f"--sizes={','.join(str(s) for s in d.sizes)}", f"--nrep={c.validation.nrep}"]
    launches = []
    env = {"PGMPITUNE_PROFILE_DIR": str(profile_dir)}
    for i in range(c.validation.mpiruns):
        for base in d.basetypes:
            b = base.removeprefix("MPI_").lower()
            for role, first in (("default", "typed"), ("tuned", "tuned")):
                name = f"validate-{role}-{i}-{b}.txt"
                argv = case_argv + [f"--descriptions={','.join([first, *extra])}", f"--datatype={base}",
                                    f"--mpirun-index={i}", f"--campaign={c.name}", f"--machine={c.machine}"]
                if module.name:
                    argv.append(f"--module-name={module.name}")
                argv += sync_argv(c, layout.nodes)
                argv.append(f"--output={name}")
                launches.append(Launch(i, argv, name, dict(env) if role == "tuned" else {}, role,
                                       program=DTBENCH))
    vid = version.get("id", "x")
    return JobSpec(f"validate-{module.key}-n{layout.nodes}x{layout.ppn}-v{vid}", module, layout, launches,
                   walltime_seconds, kind="validate")


def validation_job(c: Campaign, version: dict, profile_dir: Path, walltime_seconds: int) -> JobSpec | None:
    """A validation job for one candidate profile version (as the analyses endpoint returns it)."""
    if is_datatype_candidate(version.get("files") or {}):
        return dt_validation_job(c, version, profile_dir, walltime_seconds)
    calls: dict[str, list[int]] = {}
    nprocs = None
    layout_wanted = ""
    for text in version.get("files", {}).values():
        try:
            prf = parse_prf(text)
        except ProfileFormatError:
            continue        # the service validated the set with pgmpitune-check; nothing to measure here
        got = redirected_sizes(c, prf)
        if got:
            key, sizes = got
            calls[key] = sorted(set(calls.get(key, [])) | set(sizes))
            nprocs = nprocs or prf["nprocs"]
            layout_wanted = layout_wanted or profile_layout(prf)
    if not calls:
        return None
    module = module_of(c, version)
    # a layout profile is measured on its layout (service/analysis/validation.py judges it by figures of that
    # layout only); the profile for p on one node where the campaign has one; one job per version
    wanted = parse_layout(layout_wanted)
    layouts = ([lay for lay in c.layouts if wanted and (lay.nodes, lay.ppn) == wanted]
               or sorted((lay for lay in c.layouts if lay.nprocs == nprocs), key=lambda lay: lay.nodes)
               # a count the campaign did not measure (a span's, service/analysis/spans.py): judged by figures
               # at line 2's p only, so measured there, on one node
               or ([Layout(nodes=1, ppn=nprocs)] if nprocs and not wanted else [])
               or list(c.layouts))
    layout = layouts[0]
    nrep = c.validation.nrep
    if c.validation.interleaved:      # paired: both arms in every mpirun (service/analysis/validation.py)
        launches = launches_for(c, module, c.validation.mpiruns, calls, {k: ["default", "tuned"] for k in calls},
                                nrep, prefix="validate", env={"PGMPITUNE_PROFILE_DIR": str(profile_dir)},
                                role="paired", nodes=layout.nodes)
        if module.native_file:          # validated as measured: under the native file
            launches = [under_native_file(x, module) for x in launches]
        vid = version.get("id", "x")
        return JobSpec(f"validate-{module.key}-n{layout.nodes}x{layout.ppn}-v{vid}", module, layout, launches,
                       walltime_seconds, kind="validate")
    launches = (launches_for(c, module, c.validation.mpiruns, calls, {k: ["default"] for k in calls}, nrep,
                             prefix="validate-default", role="default", nodes=layout.nodes)
                + launches_for(c, module, c.validation.mpiruns, calls, {k: ["tuned"] for k in calls}, nrep,
                               prefix="validate-tuned", env={"PGMPITUNE_PROFILE_DIR": str(profile_dir)},
                               role="tuned", nodes=layout.nodes))
    if module.native_file:
        launches = [under_native_file(x, module) for x in launches]
    vid = version.get("id", "x")
    return JobSpec(f"validate-{module.key}-n{layout.nodes}x{layout.ppn}-v{vid}", module, layout, launches,
                   walltime_seconds, kind="validate")


def figures(files: list[tuple[str, str]], nprocs: int) -> list[dict]:
    """Per (collective, size): default vs tuned, paired per mpirun when both arms share one (role, text)."""
    return paired_figures(files, nprocs)
