"""The figures of a validation job, read from its raw results (the agent computes them, the service judges
them: service/analysis/validation.py).

    figs = figures(files, nprocs)   # [(role, raw text)] per launch -> one figure per (collective, size)

A launch that measured `default` and `tuned` interleaved (pgmpi-bench --algorithms=default,tuned) gives one
ratio default / tuned per (collective, size) from the medians of that launch; launches of the older layout
(one arm per launch, role "default" / "tuned") are paired launch by launch and marked paired=False. A size's
figure is the median of its per-launch ratios, with the ratios themselves (the regime check needs them).
A pgmpi-dtbench validation (a datatype profile: scheduler/validation.py) gives one figure per case, size and
description, with the case and description named; its default arm is `typed` (or the description both arms
run) without the profile, its tuned arm `tuned` (or that description) with it, in separate launches.
"""
from __future__ import annotations

import math
import statistics

from . import collectives as _colls
from .footer import DtCase, records
from .results import parse_text

TUNED = "tuned"


DT_SEP = "/"      # a pgmpi-dtbench validation figure's key: "<pattern>/<case>/<description>"
_DT_PATTERNS = ("pingpong", "bcast", "allgather")     # a figure's collective: the pattern (bcast, allgather: keys)


def _dt_calls(run) -> dict[str, str]:
    """pgmpi-dtbench's cases of a run (`#@pgmpi dtcase <test> pattern=..`): test -> pattern."""
    return {c.test: c.pattern for c in records(run.pgmpi_lines, DtCase) if c.pattern in _DT_PATTERNS}


def _medians(text: str, name: str, layouts: set | None = None) -> tuple[dict[tuple[str, int, str], float],
                                                                        dict[tuple[str, int, str], int]]:
    run = parse_text(text, name)
    if layouts is not None:
        layouts.add(run.layout)
    dt = _dt_calls(run)
    # a datatype validation launch is one arm: with the profile when it ran the `tuned` description
    dt_arm = TUNED if TUNED in run.algorithms else "default"
    by: dict[tuple[str, int, str], list[float]] = {}
    for t, m, x, a in zip(run.test.tolist(), run.msize.tolist(), run.runtime.tolist(), run.algorithm.tolist()):
        call = run.tests[t]
        if call == "MPI_Barrier":
            continue
        alg = run.algorithms[a]
        if dt:      # a datatype validation launch: one figure per (case, description); typed/tuned are the arms
            if call not in dt:
                continue
            desc = "typed" if alg in ("typed", TUNED) else alg
            call, alg = DT_SEP.join((dt[call], call, desc)), dt_arm
        by.setdefault((call, m, alg), []).append(x)
    return ({k: statistics.median(v) for k, v in by.items()}, {k: len(v) for k, v in by.items()})


def figures(files: list[tuple[str, str]], nprocs: int) -> list[dict]:
    """Per (collective, size): paired ratio default / tuned over the mpiruns, with the per-mpirun ratios.

    files: (role, raw text) per launch; role "tuned" / "default" for separate launches, anything else when a
    launch measured both interleaved."""
    per_run: dict[tuple[str, int], list[float]] = {}
    times: dict[tuple[str, int, str], list[float]] = {}
    counts: dict[tuple[str, int, str], int] = {}
    separate: dict[str, list[dict]] = {"default": [], TUNED: []}
    paired_keys: set[tuple[str, int]] = set()
    layouts: set[str] = set()
    for k, (role, text) in enumerate(files):
        med, cnt = _medians(text, f"{role} launch {k}", layouts)  # a malformed file raises, naming file:line
        algs = {a for _, _, a in med}
        if {"default", TUNED} <= algs:
            for (call, m, a), x in med.items():
                if a == "default" and (call, m, TUNED) in med and med[(call, m, TUNED)] > 0:
                    per_run.setdefault((call, m), []).append(x / med[(call, m, TUNED)])
                    paired_keys.add((call, m))
        elif role in separate:
            # older layout: one arm per launch; "default" or the tuned launch's rows (labelled by the library)
            separate[role].append({(call, m): x for (call, m, a), x in med.items()})
        for (call, m, a), x in med.items():
            arm = TUNED if (a == TUNED or role == TUNED) else "default"
            times.setdefault((call, m, arm), []).append(x)
            counts[(call, m, arm)] = counts.get((call, m, arm), 0) + cnt[(call, m, a)]
    for d, t in zip(separate["default"], separate[TUNED]):      # launch i of each arm
        for key, x in d.items():
            if key not in paired_keys and key in t and t[key] > 0:
                per_run.setdefault(key, []).append(x / t[key])
    # the layout the launches measured (pgmpi_formats.layouts); "" when they disagree or do not say
    layout = layouts.pop() if len(layouts) == 1 else ""
    out = []
    for (call, m), ratios in sorted(per_run.items()):
        first, *dt = call.split(DT_SEP)
        coll = _colls.by_mpi_name(first)
        dflt, tuned = times.get((call, m, "default"), []), times.get((call, m, TUNED), [])
        extra = {"case": dt[0], "description": dt[1]} if dt else {}
        key = first if dt else (coll.key if coll else call.lower())
        out.append({**extra, "collective": key, "msize": m, "nprocs": nprocs, "layout": layout,
                    "default_time": statistics.median(dflt) if dflt else math.nan,
                    "tuned_time": statistics.median(tuned) if tuned else math.nan,
                    "speedup": math.exp(statistics.median(math.log(r) for r in ratios)),
                    "run_ratios": [float(r) for r in ratios], "paired": (call, m) in paired_keys,
                    "n_default": counts.get((call, m, "default"), 0), "n_tuned": counts.get((call, m, TUNED), 0)})
    return out
