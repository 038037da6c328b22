#!/usr/bin/env python3
"""The native searches against exhaustive, two ways.

Through the agent (Slurm by default), from campaign files:

    .venv/bin/python tests/bench/native_search.py --state-dir /tmp/ns ns-exhaustive.yaml ns-mgd.yaml ns-smgd.yaml
    .venv/bin/python tests/bench/native_search.py --state-dir /tmp/ns --no-submit ns-exhaustive ns-mgd ns-smgd

The first campaign must search `exhaustive` (over the grid of pgmpi_formats/native_search.py: message
sizes 8 B - 1 MiB in powers of two, segment sizes 1 KiB - 512 KiB below each message size for the methods
that take one); the others `mgd` / `smgd`.  Submits each campaign in turn (so their jobs never share the
machine), then prints scheduler/search_report.py's table per MPI library: MGD and SMGD replayed on the
exhaustive results (each neighbour mode) and each reduced campaign's own search judged on them --
experiments, their measuring time, and the loss of each choice against the exhaustive optimum of its cell,
next to the scan bound (the most a search that measures every method of a cell can save on that grid).
Then the decision per cell (service/analysis/native_decision.py) over the exhaustive campaign.

Locally, the whole pipeline per library (the search driver itself, scheduler/native_driver.py, with the
library's own mpirun at 2 ranks, no scheduler):

    .venv/bin/python tests/bench/native_search.py --local mpich openmpi [--grid night|site] [--searches race,rerun] \
        [--counts fixed|predict|time-rule]
    .venv/bin/python tests/bench/native_search.py --local intelmpi --grid intel

Intel MPI (presets fixed at MPI_Init) runs through the driver's Intel rounds (scheduler/intel_race.py): exhaustive
is every preset in an mpirun of its own next to the round's default mpirun, `mpiruns` rounds (the planner's
intel_preset_launches, driven from there so one clock times both), race drops presets between the rounds;
rounds are its confirmations, so its "confirmed" column is 0.  Every library's table also prints the start-up
share: the pipeline's mpiruns x one mpirun's start-up (startup_seconds) over its seconds.

Per library: exhaustive in `mpiruns` sweeps (3), then each reduced search once followed by its confirmations
(up to `mpiruns` rounds of the cell's count -- `race-half`: of half the count, native_driver's confirm_share
2 -- each round one mpirun measuring at every cell to confirm the
default, the chosen variant and the control arm, each alone, in alternating blocks of 4 repetitions; a later
round only where the cell's alone
pairs so far can still pass the decision's interval rule, native_driver.can_still_win), and `rerun`, a second exhaustive campaign (the noise floor: what a search that knew every variant of
an independent campaign would lose).  Each pipeline ends in the decision per cell (native_decision.decide over
its own raw files).  Measuring time = the wall time of every pgmpi-bench mpirun of the pipeline, start-up and
exit included (the driver times each launch and each --serve session from start to exit), as a fraction of
the exhaustive campaign's.  Loss per cell = the time of the chosen variant / the time of the cell's best
variant - 1, both from the exhaustive campaign's table (per-mpirun medians, median over the sweeps; the
control arm left out), for the pipeline's pick (its search's choice where it measured it faster than the
default, else the default) and for its decision; mean, 95th percentile and max over cells, every cell
printed, and the decisions that differ from exhaustive's.  Every decision is judged on the rerun's table too
(an independent re-measurement): exhaustive's own decision there and the rerun's decision on exhaustive's
table are the noise floor, the loss a decision shows only because the table judging it is noisy.  Per
pipeline the control arm's null spread per size class (what the decision's threshold was made of), and where
its time went (the search's cell commands by stage, each confirmation round's start-up and costliest cells).
Then the honest loss (--evaluate N, default 4): N fresh mpiruns measure at every cell, each arm alone in
alternating blocks of 4 as a job under a decision file runs it, the default, the control arm, exhaustive's
table's fastest variant and every pipeline's decision; a decision's loss there is its time / the fastest arm's
- 1 (medians over the N mpiruns), next to the evaluation's own noise floor (the control arm judged against the
default) -- no table that chose a variant judges it, so the winner's curse of the table's minimum is gone.
Where a pipeline's decision differs from exhaustive's, the script prints why (refusals): the rule that refused
the other's choice in each decision (native_decision's numbered rules), the pairs per mpirun, what the search
chose there and which confirmation rounds measured it.  --counts predict|time-rule: a pilot mpirun fixes each
cell's count under that policy (the nightly example's prediction, or the seed paper's time rule) and every
pipeline and the evaluation measure with it, as a campaign with campaign-wide NREP does (the pilot's time in
none).  race-seq: the race with up to twice the confirmation rounds for a cell that can still win and has not
shown it (native_driver confirm_max; tests/bench/confirm_stopping.py simulates what that costs in false passes).
The floor (per library, before the table): what any search that keeps exhaustive's choices must spend at the
least -- every cell where exhaustive's decision takes a variant confirmed alone in `mpiruns` rounds (default,
variant, control arm at the cell's count, priced at exhaustive's per-call medians, plus a start-up per round)
and a scan's first stage (every variant once at a sixth of the count); on Intel MPI, round 0's mpiruns.
Goal (issue 35): <= 15 % of the time, mean loss <= 2 %, p95 <= 10 %, the loss judged on the evaluation.  Figures with the machine load; asserts nothing.  Both Debian MPIs on the night grid
took 30 s at load 2 (--grid site: 45 s); at load 12-19 up to 5 minutes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib" / "python"))

from pgmpi_formats.native_search import SEGMENTS as SITE_SEGMENTS, SIZES as SITE_SIZES  # noqa: E402
from scheduler.campaign import load_campaign          # noqa: E402
from scheduler.search_report import report            # noqa: E402
from service.analysis.native_decision import decide, runs_from_files   # noqa: E402

# a grid a night could afford at 2 ranks: the four collectives with most algorithms, sizes 8 B - 1 MiB in
# powers of four, segments 1 KiB - 512 KiB in powers of four
CALLS = ("allreduce", "bcast", "reduce", "allgather")
SIZES = [8 * 4 ** k for k in range(9)]
SEGMENTS = [1024 * 4 ** k for k in range(5)]
# --grid site: the grid pgmpi_formats/native_search.py says a site sweeps (powers of two 8 B - 1 MiB,
# segments 1 KiB - 512 KiB)
GRIDS = {"night": (SIZES, SEGMENTS), "site": (SITE_SIZES, SITE_SEGMENTS),
         # --grid intel: Intel MPI runs one mpirun per preset (allreduce lists 32) and round, so a grid of 4 sizes
         # 8 B - 256 KiB in powers of 64 keeps exhaustive's 3 x 33 mpiruns within minutes on this machine
         "intel": ([8, 512, 32768, 262144], [1024])}


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def run_local(lib_id: str, work: Path, search: str, mpiruns: int, nrep: int, reuse: bool = False,
              first_nrep: int = 0, grid: str = "night", counts: dict | None = None) -> dict:
    """One pipeline (exhaustive: `mpiruns` sweeps; mgd/smgd/race: one search + `mpiruns` confirmation rounds)
    with the library's own mpirun; returns {"files": [...], "seconds": launch s, "experiments": n, "paths": ...}.
    counts: {(key, size): n}, the campaign-wide count of each cell (pilot_counts), set as the planner sets it
    (each collective's `nrep` per size); None: every cell at `nrep`."""
    from scheduler import launchers
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    launcher = shlex.join([lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False)])
    d = work / search
    d.mkdir(parents=True, exist_ok=True)
    out = {"files": [], "seconds": 0.0, "experiments": 0, "confirm_seconds": 0.0, "paths": {}, "confirmed": 0}
    if reuse and (d / "search-0.json").is_file():        # report again on what an earlier run kept (--keep)
        for rep_file in sorted(d.glob("search-*.json")):
            _account(out, json.loads(rep_file.read_text()), d)
        return out
    # rerun: a second, independent exhaustive campaign; race-half: the race confirming with half the count in
    # every round (confirm_share 2), against the race's whole count
    # a name may end in #<n>: the same pipeline once more (race,race-half,race-half#2,race#2: an ABBA pairing)
    base = search.split("#")[0]
    kind = {"rerun": "exhaustive", "race-half": "race", "race-seq": "race"}.get(base, base)

    def drive(spec: dict, rep_file: Path) -> None:
        """One run of the search driver, as the agent's job script runs it; its report accounted into out."""
        p = subprocess.run([sys.executable, "-m", "scheduler.native_driver", "--spec", json.dumps(spec),
                            "--launcher", launcher, "--bench", str(bench), "--output", str(rep_file)],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{lib_id} {search}: the search driver failed ({p.returncode}): {p.stderr[-1500:]}")
        _account(out, json.loads(rep_file.read_text()), d)

    if lib.family.native_at_init:
        # presets fixed at MPI_Init: the driver's Intel rounds (scheduler/intel_race.py), exhaustive and race alike,
        # `mpiruns` rounds in one driver run; the presets from the library's own impi_info -v
        from pgmpi_formats import impi_adjust
        disc = impi_adjust.discover(env)
        top = disc.presets
        entry = {"search": kind, "sizes": GRIDS[grid][0], "segments": [],
                 **({"first_nrep": first_nrep} if first_nrep else {})}
        spec = {"prefix": "search-0", "control": True, "confirm": mpiruns,
                "intel": {"version": disc.version, "presets": {k: top[k] for k in CALLS}},
                "bench_args": [f"--nrep={nrep}", f"--campaign=ns-{search}", f"--module-name={lib_id}"],
                "collectives": {k: dict(entry) for k in CALLS}}
        rep_file = d / "search-0.json"
        drive(spec, rep_file)
        return out
    listing = subprocess.run(shlex.split(launcher.replace("-np 2", "-np 1")) + [str(bench), "--list-native"],
                             capture_output=True, text=True, env=env, timeout=120)
    if listing.returncode:
        sys.exit(f"{lib_id}: pgmpi-bench --list-native failed: {listing.stderr[-500:]}")
    (d / "native-algorithms.txt").write_text(listing.stdout)
    sweeps = mpiruns if kind == "exhaustive" else 1
    for i in range(sweeps):
        entry = {"search": kind, "sizes": GRIDS[grid][0], "segments": GRIDS[grid][1], "lookahead": 2, "prune": 0.5,
                 "neighbour": "none"}
        if first_nrep:
            entry["first_nrep"] = first_nrep
        spec = {"prefix": f"search-{i}", "control": True, "confirm": 0 if kind == "exhaustive" else mpiruns,
                **({"confirm_share": 2} if base == "race-half" else {}),
                **({"confirm_max": 2 * mpiruns} if base == "race-seq" else {}),
                "bench_args": [f"--nrep={nrep}", f"--mpirun-index={i}", f"--campaign=ns-{search}",
                               f"--module-name={lib_id}"],
                "collectives": {k: dict(entry, **({"nrep": {str(s): counts[(k, s)] for s in entry["sizes"]}}
                                                  if counts else {})) for k in CALLS}}
        rep_file = d / f"search-{i}.json"
        drive(spec, rep_file)
    return out


# --counts: the repetition policy whose pilot fixes each cell's count (issue 34's campaign-wide NREP), as a
# campaign under it would: predict is deploy/scheduler/nightly.example.yaml's rule, time-rule the seed paper's
# (PGMPITuneLib sect. 4.2: every cell's count scaled to the same run-time, so the 512 KiB cells get few)
COUNT_POLICIES = {"predict": dict(policy="predict", rules=["rse", "covmedian"], min_nrep=50, max_nrep=1000,
                                  covmedian_thres=0.002, covmedian_window=50, time_budget=3),
                  "time-rule": dict(policy="time-rule", max_nrep=1000)}


def pilot_counts(lib_id: str, work: Path, sizes: list[int], policy: str) -> tuple[dict, float]:
    """A campaign's pilot mpirun (its mpirun 0 under `policy`, the default only, every cell of the grid) and
    the counts a campaign reads from it (scheduler/planner.search_counts over its `#@pgmpi nrep` lines):
    ({(key, size): n}, its wall seconds).  Its time is in no pipeline's: a campaign pays one pilot for all."""
    import types

    from pgmpi_formats.collectives import by_key
    from scheduler import launchers
    from scheduler.campaign import Repetitions
    from scheduler.planner import search_counts
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    work.mkdir(parents=True, exist_ok=True)
    rep = Repetitions(**COUNT_POLICIES[policy])
    out = work / "pilot.txt"
    out.unlink(missing_ok=True)
    argv = [lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False), str(bench), f"--calls={','.join(CALLS)}",
            f"--sizes={','.join(map(str, sizes))}", "--algorithms=default", "--no-barrier-rows", *rep.policy_argv(),
            *([f"--time-budget={rep.time_budget:g}"] if rep.time_budget else []), f"--output={out}"]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    secs = time.perf_counter() - t0
    got = search_counts(types.SimpleNamespace(repetitions=Repetitions(**{**COUNT_POLICIES[policy], "nrep_from": [str(out)]})))
    return {(k, s): got[(by_key(k).mpi_name, s)] for k in CALLS for s in sizes}, secs


def mpirun_costs(lib_id: str, work: Path, sizes: list[int], nrep: int, first: int, rounds: int = 3) -> dict:
    """What an mpirun of this library costs, from interleaved pgmpi-bench mpiruns (rounds x 3 arms, the arms'
    order rotating): "start-up" measures one repetition of one 8 B cell (launch, MPI_Init, the check round, exit),
    "first" the grid (CALLS x sizes) at the race's first-stage count, "full" the grid at nrep; the median wall
    time of each.  What repetitions buy is full - first; what no count changes is start-up (and the grid's
    per-cell fixed cost: first - start-up)."""
    from scheduler import launchers
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    work.mkdir(parents=True, exist_ok=True)
    grid = [f"--calls={','.join(CALLS)}", f"--sizes={','.join(map(str, sizes))}"]
    arms = {"start-up": ["--calls=allreduce", "--sizes=8", "--nrep=1"], "first": [*grid, f"--nrep={first}"],
            "full": [*grid, f"--nrep={nrep}"]}
    secs: dict = {a: [] for a in arms}
    for i in range(rounds):
        names = list(arms)[i % 3:] + list(arms)[:i % 3]
        for a in names:
            out = work / f"cost-{a}-{i}.txt"
            out.unlink(missing_ok=True)
            t0 = time.perf_counter()
            subprocess.run([lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False), str(bench), *arms[a],
                            "--algorithms=default", "--no-barrier-rows", f"--output={out}"],
                           env=env, capture_output=True, check=True)
            secs[a].append(time.perf_counter() - t0)
    return {a: statistics.median(v) for a, v in secs.items()}


def evaluate(lib_id: str, work: Path, arms: dict[str, dict], runs: int, nrep: int, counts: dict | None = None) -> dict:
    """The honest loss (issue 35): a fresh measurement of the decisions, independent of the tables that chose
    them.  `runs` new mpirun (one pgmpi-bench --serve each), every cell measured with exactly its candidate
    arms -- the default, the control arm (the default again) and each arm's label there (`arms`: {name:
    {(key, size): label}}, e.g. exhaustive's decision, exhaustive's table's fastest, the race's decision) --
    each alone in alternating blocks of native_driver.CONFIRM_BLOCK repetitions, as the confirmations and a job
    under a decision file run them; cells in ascending order in even mpiruns, descending in odd ones, the arms'
    order reversed in odd ones; each cell with its count (`counts`, else nrep).  Returns {"t": {cell: {label:
    [per-mpirun median]}}, "seconds": s, "load": ...}."""
    from pgmpi_formats.collectives import by_key
    from pgmpi_formats.native_search import WARMUP_BYTES
    from scheduler import launchers
    from scheduler.native_driver import CONFIRM_BLOCK, Session
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    d = work / "evaluate"
    d.mkdir(parents=True, exist_ok=True)
    cells = sorted({c for per in arms.values() for c in per})
    labels = {c: sorted({per[c] for per in arms.values() if c in per} - {"default"}) for c in cells}
    keys = sorted({k for k, _ in cells})
    algs = ["default", *sorted({x for v in labels.values() for x in v}), "default_control"]
    sizes = sorted({s for _, s in cells} | {WARMUP_BYTES})
    t: dict = {c: {} for c in cells}
    secs, l0 = 0.0, load()
    for i in range(runs):
        name = f"evaluate-{i}.txt"
        argv = [lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False), str(bench), "--serve",
                f"--calls={','.join(keys)}", f"--sizes={','.join(map(str, sizes))}",
                f"--algorithms={','.join(algs)}", "--no-barrier-rows", f"--nrep={nrep}", f"--mpirun-index={i}",
                "--campaign=ns-evaluate", f"--module-name={lib_id}", f"--output={name}"]
        t0 = time.perf_counter()
        sess = Session(argv, d, d / f"evaluate-{i}.log", env)
        # the mpirun's first calls on no cell's arm (as the confirmations do)
        sess.cell(by_key(keys[0]).mpi_name, WARMUP_BYTES, ["default"], alone=True)
        for k, size in (cells if i % 2 == 0 else cells[::-1]):
            order = ["default_control", "default", *labels[(k, size)]]
            n = (counts or {}).get((k, size), nrep)
            got = sess.cell(by_key(k).mpi_name, size, order if i % 2 == 0 else order[::-1], nrep=n,
                            blocks=max(1, min(CONFIRM_BLOCK, n // 2)))
            for lab, x in got.items():
                t[(k, size)].setdefault(lab, []).append(x)
        if sess.close() != 0:
            sys.exit(f"{lib_id} evaluation mpirun {i} exited with {sess.proc.returncode}: {sess.tail()}")
        secs += time.perf_counter() - t0
    return {"t": t, "seconds": secs, "load": f"{l0}-{load()}", "runs": runs}


def evaluation_losses(ev: dict, choices: dict) -> dict:
    """{(key, size): loss} of the chosen label per cell on the evaluation: its time / the fastest arm's - 1,
    each arm's time the median over the evaluation's mpiruns of its per-mpirun medians, the control arm left
    out (the default measured twice)."""
    out = {}
    for cell, label in choices.items():
        per = {lab: statistics.median(xs) for lab, xs in ev["t"].get(cell, {}).items()
               if lab != "default_control" and xs and all(math.isfinite(x) for x in xs)}
        if label in per:
            out[cell] = per[label] / min(per.values()) - 1
    return out


def evaluation_floor(ev: dict) -> dict:
    """The evaluation's own noise floor per cell: the control arm judged as if it were a choice between the
    default and itself (its time / the faster of the two - 1): what a loss on the evaluation shows with no
    difference at all between two arms."""
    out = {}
    for cell, per in ev["t"].items():
        if per.get("default") and per.get("default_control"):
            a, b = statistics.median(per["default"]), statistics.median(per["default_control"])
            out[cell] = max(a, b) / min(a, b) - 1
    return out


def paired_against(ev: dict, mine: dict, theirs: dict) -> dict:
    """{(key, size): ratio - 1} where two decisions differ: the geometric mean over the evaluation's mpiruns of
    mine's time / theirs' in the same mpirun (positive: mine is slower)."""
    out = {}
    for cell, a in mine.items():
        b = theirs.get(cell)
        per = ev["t"].get(cell, {})
        if b is None or a == b or a not in per or b not in per:
            continue
        r = [x / y for x, y in zip(per[a], per[b]) if 0 < y and math.isfinite(x) and math.isfinite(y)]
        if r:
            out[cell] = math.exp(statistics.mean(math.log(x) for x in r)) - 1
    return out


def _account(out: dict, rep: dict, d: Path) -> None:
    """One search driver report added to a pipeline's totals.  Seconds: the wall time of every pgmpi-bench
    mpirun of the pipeline, start-up and shutdown included (the driver times each launch and each --serve
    session from its start to its exit), search and confirmations alike."""
    out["files"] += [d / f for f in rep["files"]]
    out["seconds"] += rep["launch_seconds"] + rep["confirm"]["launch_seconds"]
    out["confirm_seconds"] += rep["confirm"]["launch_seconds"]
    out["confirm_mpiruns"] = out.get("confirm_mpiruns", 0) + rep["confirm"]["mpiruns"]
    out["mpiruns"] = out.get("mpiruns", 0) + rep["mpiruns"] + rep["confirm"]["mpiruns"]
    out["confirmed"] += sum(len(v) for v in rep["confirm"].get("cells", {}).values())
    out["experiments"] += sum(len(r) * rep_n for paths in rep["paths"].values() for p in paths.values()
                              for r, rep_n in zip(p["rounds"], p.get("repeats") or [1] * len(p["rounds"])))
    for st, x in rep.get("stage_seconds", {}).items():
        out.setdefault("stage_seconds", {})[st] = out.get("stage_seconds", {}).get(st, 0.0) + x
    out["search_seconds"] = out.get("search_seconds", 0.0) + rep["launch_seconds"]
    out.setdefault("confirm_parts", []).extend(rep["confirm"].get("parts", []))
    out["paths"] = rep["paths"]
    out["confirm_rounds"] = rep["confirm"].get("rounds", [])
    out["defaults"] = rep.get("defaults", {})
    out["version"] = rep.get("version", "")


def time_parts(g: dict) -> str:
    """Where a pipeline's measuring time went (the driver's stage_seconds and confirmation parts): the search's
    mpiruns and their cell commands by stage (the rest: start-up, exit, the driver), each confirmation round's
    start-up (launch to the warm-up cell's answer), its cells and the three costliest."""
    st = g.get("stage_seconds", {})
    out = (f"time: search {g.get('search_seconds', 0.0):.2f} s (cell commands: "
           + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(st.items()))
           + f"; start-up, exit and driver {g.get('search_seconds', 0.0) - sum(st.values()):.2f} s)")
    for i, part in enumerate(g.get("confirm_parts", [])):
        top = sorted(part["cells"].items(), key=lambda kv: -kv[1])[:3]
        out += (f"; confirmation {i}: {part['seconds']:.2f} s, start-up {part['start-up']:.2f} s, "
                f"{len(part['cells'])} cells {sum(part['cells'].values()):.2f} s (costliest "
                + ", ".join(f"{c} {x:.3f}" for c, x in top) + ")")
    return out


def exhaustive_table(files) -> dict:
    """(key, size) -> {label: median over mpiruns of the per-mpirun medians} of the exhaustive sweeps (the
    control arm left out: it is the default measured twice, not a variant one could choose)."""
    cells = runs_from_files(files)
    return {(k, s): {a: statistics.median([r[a] for r in runs if a in r])
                     for a in {a for r in runs for a in r} - {"default_control"}}
            for (k, s, _p), runs in cells.items()}


def cell_losses(table: dict, choices: dict) -> dict:
    """{(key, size): loss} of the chosen label per cell: its time / the cell's best variant's - 1, both from
    the exhaustive table (a choice it lacks -- failed there -- is not judged)."""
    out = {}
    for cell, label in choices.items():
        t = table.get(cell, {})
        if label in t and t:
            out[cell] = t[label] / min(t.values()) - 1
    return out


# the control arm's spread per size class, printed next to each pipeline (what the decision's threshold was
# made of): |default / default_control - 1| per mpirun, 95th percentile per class
CLASSES = ((1024, "< 1 KiB"), (65536, "1-64 KiB"), (math.inf, ">= 64 KiB"))


def spread_by_class(files) -> dict[str, tuple[float, int]]:
    from service.analysis.native_decision import null_spread
    out = {}
    cells = runs_from_files(files)
    lo = 0
    for hi, name in CLASSES:
        part = {c: runs for c, runs in cells.items() if lo <= c[1] < hi}
        n = sum(1 for runs in part.values() for r in runs if "default_control" in r)
        out[name] = (null_spread(part), n)
        lo = hi
    return out


def refusals(mine, theirs, g: dict, cells) -> list[str]:
    """Why a pipeline's decision (`mine`, native_decision.Result) differs from exhaustive's (`theirs`) at each of
    `cells`: for the label the other chose, the rule that refused it in each decision (Candidate.refused, the
    module doc's numbered rules) with its paired ratios per mpirun and interval, and where the search driver
    left it (the search's choice at the cell, the confirmation rounds that measured it)."""
    out = []
    for k, s in cells:
        a = next(d for (k2, s2, _p), d in mine.decisions.items() if (k2, s2) == (k, s))
        b = next(d for (k2, s2, _p), d in theirs.decisions.items() if (k2, s2) == (k, s))
        parts = []
        for who, dec, other in (("here", a, b), ("exhaustive", b, a)):
            lab = other.choice
            if lab == "default":
                continue
            c = next((c for c in dec.candidates if c.label == lab), None)
            if c is None:
                parts.append(f"{lab} {who}: not measured")
                continue
            ratios = "/".join(f"{r:.3f}" for r in c.run_ratios)
            ci = f", CI {c.ci[0]:.3f}-{c.ci[1]:.3f}" if c.ci else ""
            parts.append(f"{lab} {who}: {c.refused or 'won'} (default / it per mpirun {ratios}{ci})")
        p = g.get("paths", {}).get(k, {}).get(str(s))
        if p is not None:
            rounds = [i for i, r in enumerate(g.get("confirm_rounds", [])) if str(s) in r.get(k, {})]
            parts.append(f"search chose {p.get('choice')} ({p.get('times', {}).get(p.get('choice'), math.nan):.3g} s "
                         f"against the default's {p.get('reference') or math.nan:.3g} s), confirmation rounds "
                         f"{rounds or 'none'}")
        out.append(f"{k} {s}: " + "; ".join(parts))
    return out


def confirmation_floor(table: dict, decision: dict, counts: dict | None, nrep: int, rounds: int) -> dict:
    """What confirming exhaustive's own decision costs at the least: {(key, size): seconds} for every cell where
    it takes a variant, measured alone in `rounds` mpiruns (a pair over fewer cannot pass the decision's
    interval, rule 4: t(1) = 12.7), each with the default, the variant and the control arm at the cell's count,
    priced at exhaustive's own per-call medians (in the calls only: no check round, no barrier, no driver, no
    start-up).  A reduced search that loses nothing against exhaustive's decision must confirm those cells, so
    its time is at least their sum, one start-up per round and its own search."""
    out = {}
    for cell, label in decision.items():
        t = table.get(cell, {})
        if label != "default" and label in t and "default" in t:
            out[cell] = rounds * (counts or {}).get(cell, nrep) * (2 * t["default"] + t[label])
    return out


def scan_floor(table: dict, counts: dict | None, nrep: int, first: int) -> float:
    """Seconds a scan's first stage spends in the calls at the least: every variant (and the default) of every
    cell once, at the first-stage count (native_driver.first_nrep: the cell's count / 6, at least 2)."""
    out = 0.0
    for cell, t in table.items():
        n = first or max(2, (counts or {}).get(cell, nrep) // 6)
        out += n * sum(t.values())
    return out


def summary(xs: list[float]) -> tuple[float, float, float]:
    xs = sorted(xs)
    if not xs:
        return (float("nan"),) * 3
    return statistics.mean(xs), xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)], xs[-1]


def local(ids: list[str], mpiruns: int, nrep: int, keep: Path | None, reuse: bool = False,
          searches: tuple[str, ...] = ("race", "rerun"), first_nrep: int = 0, grid: str = "night",
          evaluate_runs: int = 4, count_policy: str = "fixed") -> None:
    from scheduler import launchers
    sizes, segments = GRIDS[grid]
    how = (f"nrep {nrep}" if count_policy == "fixed" else
           f"each cell's count from a {count_policy} pilot ({COUNT_POLICIES[count_policy]}), as a campaign's")
    print(f"# local pipelines, 2 ranks, {mpiruns} sweeps per exhaustive campaign and up to {mpiruns} confirmation "
          f"rounds of the whole count per reduced one (race-half: of half the count), {how}, {', '.join(CALLS)} at {len(sizes)} sizes {sizes[0]}-{sizes[-1]} B, "
          f"segments {segments[0]}-{segments[-1]} B (grid {grid}); load at start {load()} (a loaded machine when "
          "> 1.2: 2 cores shared)")
    rows = []
    floors: dict[str, tuple[float, float, int]] = {}
    t_all = time.time()
    for lib_id in ids:
        work = keep / lib_id if keep else Path(tempfile.mkdtemp(prefix=f"ns-{lib_id}-"))
        got, loads = {}, {}
        counts = None
        if count_policy != "fixed" and not launchers.library(lib_id).family.native_at_init:
            l0 = load()
            counts, secs = pilot_counts(lib_id, work / "pilot", sizes, count_policy)
            print(f"# {lib_id} pilot ({count_policy}, default only, in no pipeline's time): {secs:.2f} s, load "
                  f"{l0}-{load()}; counts per cell: " + ", ".join(f"{k} {s}: {n}" for (k, s), n in sorted(counts.items())),
                  flush=True)
        for search in ("exhaustive", *searches):
            t0, l0 = time.time(), load()
            got[search] = run_local(lib_id, work, search, mpiruns, nrep, reuse, first_nrep, grid, counts)
            loads[search] = f"{l0}-{load()}"
            print(f"# {lib_id} {search}: {time.time() - t0:.0f} s wall, load {loads[search]}", flush=True)
        l0 = load()
        cost = mpirun_costs(lib_id, work / "cost", sizes, nrep, first_nrep or max(2, nrep // 6))
        up = cost["start-up"]
        print(f"# {lib_id}: an mpirun's wall time (pgmpi-bench, default only, 3 interleaved rounds, medians): "
              f"start-up (one repetition of one 8 B cell) {up:.2f} s; the grid ({len(CALLS) * len(sizes)} cells) at "
              f"the race's first-stage count {cost['first']:.2f} s, at nrep {nrep} {cost['full']:.2f} s; "
              f"load {l0}-{load()}", flush=True)
        table = exhaustive_table(got["exhaustive"]["files"])
        # the independent re-measurement's table: every decision judged there too, so the part of the loss that
        # is the exhaustive table's own noise shows (exhaustive's decision judged on it is the noise floor)
        table2 = exhaustive_table(got["rerun"]["files"]) if "rerun" in got else {}
        # the family's file decides what can be written (an Intel collective the gapless file leaves to the library)
        family = launchers.library(lib_id).family.name
        results = {search: decide(runs_from_files(got[search]["files"]), library=family)
                   for search in ("exhaustive", *searches)}
        decs = {search: {(k, s): d.choice for (k, s, _p), d in results[search].decisions.items()}
                for search in ("exhaustive", *searches)}
        ex = decs["exhaustive"]
        ev = None
        if evaluate_runs and not launchers.library(lib_id).family.native_at_init:     # Intel: presets fixed at MPI_Init
            # the honest loss: exhaustive's table's fastest variant, every pipeline's decision and the default,
            # measured afresh and alone (evaluate)
            fastest = {c: min(t, key=t.get) for c, t in table.items() if t}
            ev = evaluate(lib_id, work, {"fastest": fastest, **decs}, evaluate_runs, nrep, counts)
            floor = evaluation_floor(ev)
            fm, fp, fx = summary(list(floor.values()))
            fast_l = evaluation_losses(ev, fastest)
            print(f"# {lib_id} evaluation: {evaluate_runs} fresh mpiruns, every cell's arms alone in alternating blocks "
                  f"of 4 (the default, the control arm, exhaustive's table's fastest variant and each decision), "
                  f"{ev['seconds']:.1f} s, load {ev['load']}; its noise floor (the control arm judged against the "
                  f"default): mean {100 * fm:.2f} %, p95 {100 * fp:.1f} %, max {100 * fx:.1f} %; exhaustive's "
                  f"table's fastest variant loses there: mean {100 * summary(list(fast_l.values()))[0]:.2f} %, "
                  f"p95 {100 * summary(list(fast_l.values()))[1]:.1f} %", flush=True)
        # the least any reduced search that keeps exhaustive's decision can spend (docs/native-search-loss.md)
        if launchers.library(lib_id).family.native_at_init:
            # Intel MPI: the rounds are the confirmations; round 0's one mpirun per preset number (each forces
            # that preset on every collective that has it) and the default's is the floor
            # (scheduler/README.md, "Reduced against exhaustive on Intel MPI")
            n0 = 1 + len({lab for t in table.values() for lab in t if lab.startswith("native:")})
            print(f"# {lib_id} floor: round 0 measures every preset once, each in an mpirun of its own: {n0} of "
                  f"exhaustive's {got['exhaustive'].get('mpiruns', 0)} mpiruns, before any later round", flush=True)
        else:
            per = confirmation_floor(table, ex, counts, nrep, mpiruns)
            cf, ncf = sum(per.values()) + (mpiruns * up if per else 0.0), len(per)
            sf = scan_floor(table, counts, nrep, first_nrep)
            exs = got["exhaustive"]["seconds"]
            floors[lib_id] = (cf / exs, sf / exs, ncf)
            print(f"# {lib_id} floor: confirming exhaustive's decision's {ncf} variant cells ({mpiruns} rounds x "
                  f"default, variant and control arm alone, in-call time at exhaustive's medians + {mpiruns} "
                  f"start-ups) {cf:.2f} s = {100 * cf / exs:.1f} % of exhaustive's {exs:.2f} s ("
                  + ", ".join(f"{k} {sz} {ex[(k, sz)]} {x:.3f} s" for (k, sz), x in sorted(per.items(), key=lambda kv: -kv[1]))
                  + f"); a scan's first stage in the calls {sf:.2f} s = {100 * sf / exs:.1f} %; together "
                  f"{100 * (cf + sf) / exs:.1f} % (the goal: 15 %)", flush=True)
        print(f"\n## {lib_id} ({got['exhaustive'].get('version', '')}): {len(table)} cells; loss = the chosen "
              "variant's time / the cell's best variant's - 1, both from the exhaustive sweeps")
        if ev:
            print("  on the evaluation (fresh mpiruns, alone): loss = the chosen arm's time / the fastest arm's of the "
                  "cell - 1 (arms: the default, exhaustive's table's fastest, every decision)")
            print("  evaluation's noise floor per cell: " + ", ".join(
                f"{k} {s}: {100 * x:.1f}" for (k, s), x in sorted(floor.items())))
            print("  exhaustive's table's fastest per cell on the evaluation: " + ", ".join(
                f"{k} {s} {fastest[(k, s)]}: {100 * x:.1f}" for (k, s), x in sorted(fast_l.items())))
        for search in ("exhaustive", *searches):
            g = got[search]
            dec = decs[search]
            losses = cell_losses(table, dec)
            mean, p95, mx = summary(list(losses.values()))
            losses2 = cell_losses(table2, dec)
            mean2, p95b, _ = summary(list(losses2.values()))
            differ = sorted(c for c in dec if c in ex and dec[c] != ex[c])
            # the pipeline's pick before the decision's statistics: a rerun's fastest variant of its own table; a
            # search's choice where it measured it faster than the default next to it, else the default
            if search.split("#")[0] == "rerun":
                own_t = exhaustive_table(g["files"])
                pick = {c: min(t, key=t.get) for c, t in own_t.items() if t}
            elif search == "exhaustive":
                pick = {c: min(t, key=t.get) for c, t in table.items() if t}
            else:
                pick = {}
                for k, per in g["paths"].items():
                    for size, p in per.items():
                        ref = (p.get("reference") if p.get("kind") == "race" else None) or g["defaults"].get(k, {}).get(size)
                        ch = p["choice"]
                        pick[(k, int(size))] = ch if ch and ref and p["times"].get(ch, math.inf) < ref else "default"
            pl = cell_losses(table, pick)
            pm, pp, _ = summary(list(pl.values()))
            # the load moves between pipelines: the same fraction against the rerun too, measured later
            rr = g["seconds"] / got["rerun"]["seconds"] if "rerun" in got else math.nan
            el = evaluation_losses(ev, dec) if ev else {}
            em, ep, emx = summary(list(el.values()))
            vs = paired_against(ev, dec, ex) if ev else {}
            rows.append((lib_id, search, g.get("mpiruns", 0), g["seconds"], g.get("mpiruns", 0) * up / g["seconds"], g["seconds"] / got["exhaustive"]["seconds"], rr,
                         pm, pp, mean, p95, mx, mean2, p95b, em, ep, emx, len(differ), len(dec), g["confirmed"], loads[search]))
            print(f"{search}: {g['experiments']} experiments, {g.get('mpiruns', 0)} mpiruns, {g['seconds']:.1f} s "
                  f"({g['confirm_seconds']:.1f} s confirming {g['confirmed']} cells), load {loads[search]}")
            print("  pick's loss per cell: " + ", ".join(f"{k} {s}: {100 * x:.1f}" for (k, s), x in sorted(pl.items())))
            print("  decision's loss per cell: " + ", ".join(f"{k} {s}: {100 * x:.1f}" for (k, s), x in sorted(losses.items())))
            if losses2:
                print("  decision's loss per cell on the rerun's table: "
                      + ", ".join(f"{k} {s}: {100 * x:.1f}" for (k, s), x in sorted(losses2.items())))
            print("  control arm's null spread per size class (95th percentile, ratios): " + ", ".join(
                f"{name} {100 * v:.1f} % ({n})" for name, (v, n) in spread_by_class(g["files"]).items()))
            print("  " + time_parts(g))
            if el:
                print("  decision's loss per cell on the evaluation: " + ", ".join(
                    f"{k} {s}: {100 * x:.1f}" for (k, s), x in sorted(el.items())))
            if vs:
                print("  where it differs from exhaustive's decision, its time / exhaustive's choice's in the same "
                      "evaluation mpirun - 1 (geometric mean): " + ", ".join(
                          f"{k} {s} {dec[(k, s)]} vs {ex[(k, s)]}: {100 * x:+.1f}" for (k, s), x in sorted(vs.items())))
            left = [f"{k} {s} {dec[(k, s)]}" for (k, s) in sorted(dec) if dec[(k, s)] != "default"]
            print(f"  decision takes a variant in {len(left)} of {len(dec)} cells (the default in the others): {', '.join(left) or '-'}")
            if differ:
                print("  differs from exhaustive's decision: " + ", ".join(
                    f"{k} {s} {dec[(k, s)]} (exhaustive: {ex[(k, s)]})" for k, s in differ))
                for line in refusals(results[search], results["exhaustive"], g, differ):
                    print("    " + line)
        print(f"# raw files in {work}", flush=True)
    print(f"\n# table (issue 35 goal: <= 15 % of exhaustive's time, mean loss <= 2 %, p95 <= 10 %); wall "
          f"{time.time() - t_all:.0f} s, load now {load()}")
    print("# pick: the pipeline's choice before the decision's statistics (rerun: an independent exhaustive "
          "campaign's fastest variant -- the noise floor); decision: what it would write (decide over its own files)")
    print("# decision (rerun's table): the same decision judged on the independent re-measurement's table; the "
          "exhaustive row there and the rerun row on exhaustive's table are the noise floor of the loss")
    print("# start-up: the pipeline's mpiruns x one mpirun's start-up, as a share of its seconds (the rest is "
          "measuring)")
    print(f"{'library':9} {'search':10} {'mpiruns':>7} {'seconds':>8} {'start-up':>8} {'of exh.':>7} {'(rerun)':>7} {'pick mean':>9} "
          f"{'p95':>6} {'decision mean':>13} {'p95':>6} {'max':>7} {'(rerun) mean':>12} {'p95':>6} "
          f"{'(eval) mean':>11} {'p95':>6} {'max':>6} {'differ':>7} {'confirmed':>9}  load")
    for lib_id, search, runs, secs, su, frac, rr, pm, pp, mean, p95, mx, mean2, p95b, em, ep, emx, nd, nc, conf, ld in rows:
        print(f"{lib_id:9} {search:10} {runs:>7} {secs:>8.1f} {100 * min(su, 1.0):>7.0f}% {100 * frac:>6.1f}% {100 * rr:>6.1f}% {100 * pm:>8.2f}% {100 * pp:>5.1f}% "
              f"{100 * mean:>12.2f}% {100 * p95:>5.1f}% {100 * mx:>6.1f}% {100 * mean2:>11.2f}% {100 * p95b:>5.1f}% "
              f"{100 * em:>10.2f}% {100 * ep:>5.1f}% {100 * emx:>5.1f}% {nd:>3}/{nc:<3} {conf:>9}  {ld}")
    for lib_id, (cf, sf, ncf) in floors.items():
        print(f"# {lib_id} floor of a search keeping exhaustive's decision: confirming its {ncf} variant cells "
              f"{100 * cf:.1f} % + a scan's first stage {100 * sf:.1f} % = {100 * (cf + sf):.1f} % of exhaustive's time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="*", help="campaign files (or names with --no-submit); exhaustive first")
    ap.add_argument("--state-dir", type=Path)
    ap.add_argument("--no-submit", action="store_true", help="report on campaigns already in the state dir")
    ap.add_argument("--local", nargs="+", metavar="MPI_ID", help="run the pipelines locally on these libraries "
                    "(deploy/mpi-libraries.tsv ids, built into build/install/<id>)")
    ap.add_argument("--mpiruns", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=100, help="--local: repetitions per (call, size, algorithm) and "
                    "mpirun (default 100: a campaign's repetitions when its file names none, scheduler/campaign.py; "
                    "the native example campaigns' 20 make each mpirun's start-up a large share of the time)")
    ap.add_argument("--keep", type=Path, help="--local: keep the raw files under this folder")
    ap.add_argument("--reuse", action="store_true", help="--local with --keep: report on the kept runs, measure "
                    "only what is missing")
    ap.add_argument("--searches", default="race,rerun", help="--local: the reduced searches to run after exhaustive, "
                    "comma list of mgd, smgd, race, race-half (the race confirming every round with half the count), race-seq (the race with up to twice the confirmation rounds for a cell that can still win and has not shown it: confirm_max), rerun (a second exhaustive campaign: the noise floor of the loss); "
                    "a name ending in #<n> runs that pipeline once more (race,race-half,race-half#2,race#2: ABBA); "
                    "default race,rerun")
    ap.add_argument("--counts", choices=["fixed", *COUNT_POLICIES], default="fixed", help="--local: fixed (every "
                    "cell at --nrep) or each cell's count from a pilot mpirun under that policy, as a campaign with "
                    "campaign-wide NREP measures (predict: nightly.example.yaml's rule; time-rule: the seed paper's)")
    ap.add_argument("--first-nrep", type=int, default=0, help="--local: race's first-stage repetitions "
                    "(default: a sixth of --nrep, at least 2)")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="night", help="--local: night (sizes 8 B - 512 KiB "
                    "and segments 1 KiB - 256 KiB in powers of four) or site (powers of two 8 B - 1 MiB, segments "
                    "1 KiB - 512 KiB: pgmpi_formats/native_search.py)")
    ap.add_argument("--evaluate", type=int, default=4, metavar="N", help="--local: N fresh mpiruns measuring, "
                    "alone, every cell's default, control arm, exhaustive's table's fastest variant and each "
                    "pipeline's decision: the loss on a measurement that chose nothing (0: none; default 4)")
    a = ap.parse_args()
    if a.local:
        local(a.local, a.mpiruns, a.nrep, a.keep, a.reuse, tuple(a.searches.split(",")), a.first_nrep, a.grid,
              a.evaluate, a.counts)
        return
    if not a.campaigns or a.state_dir is None:
        ap.error("campaign files and --state-dir, or --local")
    names = []
    for ref in a.campaigns:
        if a.no_submit:
            names.append(ref)
            continue
        name = load_campaign(ref).name
        print(f"# {name}: submitting, load {os.getloadavg()[0]:.2f}", flush=True)
        p = subprocess.run([str(ROOT / ".venv" / "bin" / "pgmpi"), "campaign", "submit", ref, "--state-dir",
                            str(a.state_dir), "--watch", "--interval", "2"], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{name}: pgmpi campaign submit failed ({p.returncode}): {p.stderr[-800:]}")
        print(f"# {name}: done, load {os.getloadavg()[0]:.2f}", flush=True)
        names.append(name)
    print(f"# load {os.getloadavg()[0]:.2f} (loaded machine when > 1.2)\n")
    print(report(a.state_dir, names[0], names[1:]))
    for job in sorted((a.state_dir / "campaigns" / names[0]).glob("*/attempt-*")):
        files = sorted(job.glob("search-*.txt"))
        if not files:
            continue
        res = decide(runs_from_files(files))
        changed = [d for d in res.decisions.values() if d.choice != "default"]
        print(f"## decision over {job.parent.name} ({len(files)} mpiruns): {len(changed)} of {len(res.decisions)} "
              f"cells leave the default (null spread {100 * res.spread:.1f} %): "
              + ", ".join(f"{d.key} {d.size} {d.choice}" for d in sorted(changed, key=lambda d: (d.key, d.size))))


if __name__ == "__main__":
    main()
