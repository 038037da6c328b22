"""The within-night looks of a sequential campaign (`sequential:` in its file; a `cells: from-usage` night
writes it, docs/usage.md section 3).

The agent runs such a campaign look by look. The planner gives look 1's job: every cell in the first
`looks[0]` mpiruns. Once a look's job has completed and been collected, `next_look` reads the raw files of
the job's look chain (the job and its `-look<k>` successors), turns them into per-mpirun log ratios
default / alternative per cell (the median of the mpirun's repetitions of each, as the replay bench does),
and asks usage_plan.sequential_cell -- the design's one owner of the statistics -- which cells and which
of their alternatives are still undecided after the looks taken. Only those go into the next look's job,
its mpirun indexes continuing where the last look stopped; a decided cell is not measured again, nor a
decided alternative of an undecided cell (the default and the control arm are measured whenever the cell
is). The service then analyses the whole campaign as any other: its verdicts are what is stored and
published.

Resumable: nothing but the collected files and the job rows is state. A restarted agent computes the same
looks again and finds the next look's job in its state (its key names the look), so it continues at the
right look and never submits one twice.

The night's budget is charged by what ran: a job's node-hours are its nodes x (end - start) as the backend
reported them; the next look is submitted only while what ran so far plus that look's share (the node-hours
per cell and mpirun measured so far, times its cells and mpiruns) stays within the campaign's
`budget.node_hours`; otherwise its cells stay undecided and the default stays, as in a fixed campaign.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pgmpi_formats.collectives import by_mpi_name
from pgmpi_formats.results import read_file

from .backends import collect_pairs
from .campaign import Campaign
from .planner import CONTROL, JobSpec, launches_for, under_native_file
from .usage_plan import CellOutcome, sequential_cell

LOOK = "-look"


def look_key(base: str, look: int) -> str:
    """Look 1 is the planner's job; look k > 1 is <base>-look<k>."""
    return base if look == 1 else f"{base}{LOOK}{look}"


def base_of(key: str) -> tuple[str, int]:
    base, sep, n = key.rpartition(LOOK)
    return (base, int(n)) if sep and n.isdigit() else (key, 1)


def node_hours(row) -> float:
    """What a job ran: its nodes x (end - start), from the backend's figures."""
    spec = json.loads(row["spec"])
    if not row["started_at"] or not row["ended_at"]:
        return 0.0
    return spec["layout"]["nodes"] * max(0.0, row["ended_at"] - row["started_at"]) / 3600.0


def per_mpirun(files: list[Path]) -> dict[tuple[str, int], dict[int, dict[str, float]]]:
    """(collective key, size) -> mpirun index -> algorithm -> the median of its repetitions in that mpirun."""
    out: dict[tuple[str, int], dict[int, dict[str, float]]] = {}
    for f in files:
        r = read_file(f)
        idx = r.mpirun_index
        groups: dict[tuple[str, int, str], list[float]] = {}
        for t, a, m, x in zip(r.test, r.algorithm, r.msize, r.runtime):
            groups.setdefault((r.tests[t], int(m), r.algorithms[a]), []).append(float(x))
        for (test, m, alg), xs in groups.items():
            coll = by_mpi_name(test)
            if coll is None:
                continue
            out.setdefault((coll.key, m), {}).setdefault(idx, {})[alg] = float(np.median(xs))
    return out


def log_ratios(runs: dict[int, dict[str, float]]) -> tuple[dict[str, list[float]], list[float] | None]:
    """Per alternative, its per-mpirun log ratios default / alternative in mpirun order (the mpiruns it was
    measured in); the control arm's likewise (None without one)."""
    lr: dict[str, list[float]] = {}
    ctrl: list[float] = []
    for i in sorted(runs):
        meds = runs[i]
        d = meds.get("default")
        if d is None or d <= 0:
            continue
        for a, v in meds.items():
            if a == "default" or v <= 0:
                continue
            (ctrl if a == CONTROL else lr.setdefault(a, [])).append(math.log(d / v))
    return lr, (ctrl or None)


@dataclass
class Look:
    base: str                              # the look chain's first job key
    taken: int                             # looks taken
    cells: dict[tuple[str, int], CellOutcome] = field(default_factory=dict)
    next_job: JobSpec | None = None        # the next look's job, when cells are open and it fits the budget
    why_stop: str = ""                     # why there is no next look
    node_hours: float = 0.0                # what the chain's jobs ran

    def open_cells(self) -> dict[tuple[str, int], tuple[str, ...]]:
        return {k: o.open for k, o in self.cells.items() if o.open}

    def as_dict(self) -> dict:
        def arm(lk):
            return {"state": lk.state, "effect": lk.effect, "lo": lk.lo, "hi": lk.hi, "mpiruns": lk.mpiruns}
        return {"base": self.base, "looks_taken": self.taken, "node_hours": self.node_hours,
                "next_job": self.next_job.key if self.next_job else None, "why_stop": self.why_stop,
                "cells": [{"collective": k[0], "msize": k[1], "decision": o.decision, "winner": o.winner,
                           "mpiruns": o.mpiruns, "open": list(o.open), "p_value": o.p_value,
                           "arms": {a: arm(lk) for a, lk in o.arms.items()},
                           "control": arm(o.control) if o.control else None}
                          for k, o in sorted(self.cells.items())]}


def chain(rows, base: str) -> list:
    """The measure jobs of one look chain, in look order."""
    out = [r for r in rows if r["kind"] == "measure" and base_of(r["key"])[0] == base]
    return sorted(out, key=lambda r: base_of(r["key"])[1])


def next_look(c: Campaign, rows, base: str, spent: float) -> Look | None:
    """The look chain `base` after its last completed look; None while a job of it is still running.
    spent: the node-hours every measure job of the campaign ran so far (the budget is the campaign's)."""
    from .agent import spec_from_json
    from .state import FINAL
    design = c.sequential.design()
    jobs = chain(rows, base)
    if any(r["state"] not in FINAL for r in jobs):
        return None
    look = Look(base, len(jobs), node_hours=sum(node_hours(r) for r in jobs))
    if jobs[-1]["state"] != "COMPLETED":
        look.taken = len(jobs) - 1
        look.why_stop = f"look {len(jobs)} ended {jobs[-1]['state']}: its cells keep what earlier looks measured"
    files = [p for r in jobs if r["state"] == "COMPLETED"
             for _, p in collect_pairs(Path(r["attempt_dir"]), spec_from_json(json.loads(r["spec"])))]
    data = per_mpirun(files)
    for cell, runs in data.items():
        lr, ctrl = log_ratios(runs)
        if lr:
            look.cells[cell] = sequential_cell(lr, design, ctrl, looks_done=max(1, look.taken))
    if look.why_stop or look.taken >= len(design.looks):
        look.why_stop = look.why_stop or "last look taken"
        for o in look.cells.values():
            o.open = ()
        return look
    todo = look.open_cells()
    if not todo:
        look.why_stop = f"every cell decided after look {look.taken}"
        return look
    first = design.looks[look.taken - 1]
    mpiruns = design.looks[look.taken] - first
    measured = sum(len(runs) for runs in data.values())          # cell-mpiruns the chain ran so far
    share = look.node_hours / measured * len(todo) * mpiruns if measured else 0.0
    if c.budget.node_hours is not None and spent + share > c.budget.node_hours:
        look.why_stop = (f"budget: {spent:.3g} node-hours ran, look {look.taken + 1} needs about {share:.3g} more, "
                         f"above budget.node_hours = {c.budget.node_hours:g}; {len(todo)} cell(s) stay undecided")
        for o in look.cells.values():
            o.open = ()
        return look
    first_job = spec_from_json(json.loads(jobs[0]["spec"]))
    by_arms: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for (coll, size), arms in sorted(todo.items()):
        by_arms.setdefault((coll, arms), []).append(size)
    launches = []
    for j, ((coll, arms), sizes) in enumerate(sorted(by_arms.items())):
        launches += launches_for(c, first_job.module, mpiruns, calls={coll: sizes},
                                 algorithms={coll: ["default", *arms]}, prefix=f"run-look{look.taken + 1}g{j}",
                                 control=c.control, nodes=first_job.nodes, first=first)
    launches = [under_native_file(x, first_job.module) for x in launches]
    look.next_job = JobSpec(look_key(base, look.taken + 1), first_job.module, first_job.layout, launches,
                            first_job.walltime_seconds, estimate_seconds=share * 3600 / max(1, first_job.nodes))
    return look


def write_report(root: Path, looks: list[Look]) -> Path:
    """<campaign dir>/looks.json: per look chain, the looks taken, each cell's outcome so far, what ran."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "looks.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps([lk.as_dict() for lk in looks], indent=1) + "\n")
    os.replace(tmp, path)
    return path
