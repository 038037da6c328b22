"""Campaign-wide NREP from an earlier night (issue 34): the repetitions a job's cells were measured with by the
newest earlier campaign of this agent fix tonight's, instead of a new pilot.

    earlier = find(state, campaign, root)      # {job key: Earlier}; {} when nothing qualifies
    plan(campaign, earlier)                    # planner: a launch group the counts cover reads them

An earlier campaign qualifies for a job when it ran on the same machine with the same repetition rules
(policy, rules, thresholds, bounds: everything of campaign.Repetitions but how the counts are shared), and its
job of the same key (module and layout, so the same number of ranks) COMPLETED.  Its measurement files'
`#@pgmpi nrep` lines (the maximum per cell over its mpiruns, as pgmpi-bench's --nrep-from does) are copied to
<campaign root>/nrep/<earlier campaign>/<job key>.txt: tonight's files then say
`#@nrep_policy=from:<that path>`, naming the night the counts came from, and the copy keeps the job
runnable when the earlier night's files are cleaned up.  A launch group whose cells the counts do not all
cover (a size or collective new tonight) runs with its own pilot (planner.campaign_nrep_from).
Only the newest qualifying campaign per job counts: the cells of one job get one night's counts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pgmpi_formats.collectives import by_key
from pgmpi_formats.footer import Nrep, records
from pgmpi_formats.results import ResultsFormatError, read_file

from .campaign import Campaign, Repetitions
from .planner import job_key

# How the counts are shared, not how they are predicted: these may differ between the nights.
SHARING = {"campaign_wide", "nrep_from", "previous_night"}


@dataclass(frozen=True)
class Earlier:
    campaign: str                          # the earlier campaign whose files fixed the counts
    path: Path                             # tonight's copy of its '#@pgmpi nrep' lines (--nrep-from reads it)
    counts: dict[tuple[str, int], int]     # (MPI name, bytes) -> repetitions per mpirun

    def covers(self, keys: list[str], sizes: list[int]) -> bool:
        return all((by_key(k).mpi_name, s) in self.counts for k in keys for s in sizes)


def _rules(rep: Repetitions) -> dict:
    return {k: v for k, v in rep.model_dump(mode="json").items() if k not in SHARING}


def counts_of(files: list[Path]) -> dict[tuple[str, int], int]:
    """The counts per (call, size) of a job's measurement files (maximum over them); {} when a file is missing
    or unreadable, or was measured with a fixed count (no prediction to carry over)."""
    out: dict[tuple[str, int], int] = {}
    for f in files:
        try:
            run = read_file(f)
        except (OSError, ResultsFormatError):
            return {}
        if str(run.header.get("nrep_policy", "")).startswith("fixed"):
            return {}
        for r in records(run.pgmpi_lines, Nrep):
            out[(r.call, r.msize)] = max(out.get((r.call, r.msize), 0), r.n)
    return out


def _measure_files(row) -> list[Path]:
    spec = json.loads(row["spec"])
    adir = Path(row["attempt_dir"] or "")
    return [adir / ln["output"] for ln in spec.get("launches", [])
            if ln.get("role", "measure") == "measure" and not ln.get("program")]


def find(state, c: Campaign, root: Path) -> dict[str, Earlier]:
    """{job key: Earlier} for tonight's campaign `c` from the agent's state (scheduler/state.py)."""
    rep = c.repetitions
    if rep.policy == "fixed" or rep.nrep_from or not rep.previous_night:
        return {}
    me = state.campaign(c.name)
    since = me["created_at"] if me is not None else float("inf")
    rules = _rules(rep)
    wanted = {job_key(m, lay) for m in c.modules for lay in c.layouts}
    out: dict[str, Earlier] = {}
    for row in reversed(state.campaigns()):                    # newest first
        if wanted <= set(out):
            break
        if row["name"] == c.name or (row["created_at"] or 0) >= since:
            continue
        try:
            d = json.loads(row["definition"])
            if d.get("machine") != c.machine or _rules(Repetitions.model_validate(d.get("repetitions") or {})) != rules:
                continue
        except (ValueError, TypeError):                        # a definition of an older agent: not comparable
            continue
        for job in state.jobs(row["name"], ("COMPLETED",)):
            if job["kind"] != "measure" or job["key"] in out or job["key"] not in wanted:
                continue
            counts = counts_of(_measure_files(job))
            if not counts:
                continue
            path = root / "nrep" / row["name"] / f"{job['key']}.txt"
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                lines = [f"# repetitions of campaign {row['name']}, job {job['key']} (attempt dir "
                         f"{job['attempt_dir']}): the maximum per cell over its mpiruns",
                         *(f"#@pgmpi nrep {call} {size} {n}" for (call, size), n in sorted(counts.items()))]
                tmp = path.with_suffix(".tmp")
                tmp.write_text("\n".join(lines) + "\n")
                tmp.replace(path)
            out[job["key"]] = Earlier(row["name"], path.resolve(), counts)
    return out
