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

    .venv/bin/python tests/bench/native_search.py --local openmpi mpich openmpi5 [--mpiruns 3] [--nrep 20]

Per library: exhaustive in `mpiruns` sweeps, then MGD and SMGD once each followed by their confirmations
(every chosen variant alone in an mpirun of its own, paired with the default alone, `mpiruns` rounds).  Each
pipeline ends in the decision per cell (native_decision.decide over its own raw files), so what is compared
is what each would put into a decision file.  Printed per library and search: the pgmpi-bench launch time
(search + confirmation, mpirun start-up included) as a fraction of the exhaustive campaign's, the experiments,
and per cell the loss of its decision against the exhaustive decision, both judged on the exhaustive table
(per-mpirun medians, median over sweeps): mean and 95th percentile over cells, and every cell that loses.
Goal (issue 35): <= 15 % of the time, mean loss <= 2 %, p95 <= 10 %.  Figures with the machine load;
asserts nothing.
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

from pgmpi_formats.native_search import campaign_row, cells_from_files   # noqa: E402
from scheduler.campaign import load_campaign          # noqa: E402
from scheduler.search_report import report            # noqa: E402
from service.analysis.native_decision import decide, runs_from_files   # noqa: E402

# a grid a night could afford at 2 ranks: the four collectives with most algorithms, sizes 8 B - 1 MiB in
# powers of four, segments 1 KiB - 512 KiB in powers of four
CALLS = ("allreduce", "bcast", "reduce", "allgather")
SIZES = [8 * 4 ** k for k in range(9)]
SEGMENTS = [1024 * 4 ** k for k in range(5)]


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def run_local(lib_id: str, work: Path, search: str, mpiruns: int, nrep: int, reuse: bool = False) -> dict:
    """One pipeline (exhaustive: `mpiruns` sweeps; mgd/smgd: one search + `mpiruns` confirmation rounds) with
    the library's own mpirun; returns {"files": [...], "seconds": launch s, "experiments": n, "paths": ...}."""
    from scheduler import launchers
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    launcher = shlex.join([lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False)])
    d = work / search
    d.mkdir(parents=True, exist_ok=True)
    out = {"files": [], "seconds": 0.0, "experiments": 0, "confirm_seconds": 0.0, "paths": {}}
    if reuse and (d / "search-0.json").is_file():        # report again on what an earlier run kept (--keep)
        for rep_file in sorted(d.glob("search-*.json")):
            _account(out, json.loads(rep_file.read_text()), d)
        return out
    listing = subprocess.run(shlex.split(launcher.replace("-np 2", "-np 1")) + [str(bench), "--list-native"],
                             capture_output=True, text=True, env=env, timeout=120)
    if listing.returncode:
        sys.exit(f"{lib_id}: pgmpi-bench --list-native failed: {listing.stderr[-500:]}")
    (d / "native-algorithms.txt").write_text(listing.stdout)
    sweeps = mpiruns if search == "exhaustive" else 1
    for i in range(sweeps):
        spec = {"prefix": f"search-{i}", "control": True, "confirm": 0 if search == "exhaustive" else mpiruns,
                "bench_args": [f"--nrep={nrep}", f"--mpirun-index={i}", f"--campaign=ns-{search}",
                               f"--module-name={lib_id}"],
                "collectives": {k: {"search": search, "sizes": SIZES, "segments": SEGMENTS, "lookahead": 2,
                                    "prune": 0.5, "neighbour": "none"} for k in CALLS}}
        rep_file = d / f"search-{i}.json"
        p = subprocess.run([sys.executable, "-m", "scheduler.native_driver", "--spec", json.dumps(spec),
                            "--launcher", launcher, "--bench", str(bench), "--output", str(rep_file)],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{lib_id} {search}: the search driver failed ({p.returncode}): {p.stderr[-1500:]}")
        _account(out, json.loads(rep_file.read_text()), d)
    return out


def _account(out: dict, rep: dict, d: Path) -> None:
    """One search driver report added to a pipeline's totals."""
    out["files"] += [d / f for f in rep["files"]]
    out["seconds"] += rep["launch_seconds"] + rep["confirm"]["launch_seconds"]
    out["confirm_seconds"] += rep["confirm"]["launch_seconds"]
    out["confirm_mpiruns"] = rep["confirm"]["mpiruns"]
    out["experiments"] += sum(sum(map(len, p["rounds"])) for paths in rep["paths"].values() for p in paths.values())
    out["paths"] = rep["paths"]
    out["version"] = rep.get("version", "")


def exhaustive_table(files) -> dict:
    """(key, size) -> {label: median over mpiruns of the per-mpirun medians} of the exhaustive sweeps."""
    cells = runs_from_files(files)
    return {(k, s): {a: statistics.median([r[a] for r in runs if a in r]) for a in {a for r in runs for a in r}}
            for (k, s, _p), runs in cells.items()}


def local(ids: list[str], mpiruns: int, nrep: int, keep: Path | None, reuse: bool = False) -> None:
    print(f"# local pipelines, 2 ranks, {mpiruns} mpiruns per exhaustive campaign and per confirmation, nrep {nrep}, "
          f"{', '.join(CALLS)} at {len(SIZES)} sizes 8 B - 1 MiB, segments 1 KiB - 256 KiB; load at start {load()} "
          "(a loaded machine when > 1.2: 2 cores shared)")
    for lib_id in ids:
        work = keep / lib_id if keep else Path(tempfile.mkdtemp(prefix=f"ns-{lib_id}-"))
        got = {}
        for search in ("exhaustive", "mgd", "smgd"):
            t0 = time.time()
            got[search] = run_local(lib_id, work, search, mpiruns, nrep, reuse)
            print(f"# {lib_id} {search}: {time.time() - t0:.0f} s wall, load {load()}", flush=True)
        table = exhaustive_table(got["exhaustive"]["files"])
        ex = decide(runs_from_files(got["exhaustive"]["files"])).decisions
        print(f"\n## {lib_id} ({got['exhaustive'].get('version', '')}): exhaustive {len(ex)} cells, "
              f"{got['exhaustive']['experiments']} experiments, {got['exhaustive']['seconds']:.1f} s of pgmpi-bench launches")
        print(f"{'search':7} {'time s':>7} {'of exh.':>8} {'confirm s':>9} {'experiments':>11} {'mean loss':>9} "
              f"{'p95 loss':>8} {'max':>7}  cells that lose (> 0.5 %): decision vs exhaustive's, on the exhaustive table")
        for search in ("mgd", "smgd"):
            dec = decide(runs_from_files(got[search]["files"])).decisions
            losses = {}
            for (k, s, p), d in sorted(dec.items()):
                t = table.get((k, s), {})
                mine, theirs = t.get(d.choice), t.get(ex[(k, s, p)].choice) if (k, s, p) in ex else None
                if mine is None or theirs is None:
                    continue        # a choice the exhaustive table lacks (it failed there): not judged
                losses[(k, s)] = mine / theirs - 1
            xs = sorted(losses.values())
            p95 = xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)] if xs else float("nan")
            bad = [f"{k} {s} {100 * x:.1f} %" for (k, s), x in sorted(losses.items()) if x > 0.005]
            print(f"{search:7} {got[search]['seconds']:>7.1f} {100 * got[search]['seconds'] / got['exhaustive']['seconds']:>7.1f}% "
                  f"{got[search]['confirm_seconds']:>9.1f} {got[search]['experiments']:>11} "
                  f"{100 * statistics.mean(xs) if xs else float('nan'):>8.2f}% {100 * p95:>7.1f}% "
                  f"{100 * xs[-1] if xs else float('nan'):>6.1f}%  {', '.join(bad) or 'none'}")
            print(f"{'':7} loss per cell: " + ", ".join(f"{k} {s}: {100 * x:+.1f}" for (k, s), x in sorted(losses.items())))
            chosen = [f"{d.key} {d.size} {d.choice}" for d in dec.values() if d.choice != "default"]
            print(f"{'':7} its decision leaves the default in {len(chosen)} of {len(dec)} cells: {', '.join(chosen) or '-'}")
            # the search alone, as scheduler/search_report.py judges it: its choice among the variants against
            # the exhaustive optimum of the variants of each cell
            vcells, _ = cells_from_files(got["exhaustive"]["files"])
            vl = sorted(x for k in got[search]["paths"] for x in
                        campaign_row(vcells, k, search, got[search]["paths"][k]).losses if not math.isnan(x))
            if vl:
                print(f"{'':7} its search's choices against the exhaustive optimum of the variants ({len(vl)} cells): "
                      f"mean {100 * statistics.mean(vl):.2f} %, p95 {100 * vl[min(len(vl) - 1, math.ceil(0.95 * len(vl)) - 1)]:.1f} %, "
                      f"max {100 * vl[-1]:.1f} %; confirmation mpiruns per round {got[search].get('confirm_mpiruns', 0) // max(mpiruns, 1)}")
        chosen = [f"{d.key} {d.size} {d.choice}" for d in ex.values() if d.choice != "default"]
        print(f"exhaustive's decision leaves the default in {len(chosen)} of {len(ex)} cells: {', '.join(chosen) or '-'}")
        print(f"# load {load()}; raw files in {work}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="*", help="campaign files (or names with --no-submit); exhaustive first")
    ap.add_argument("--state-dir", type=Path)
    ap.add_argument("--no-submit", action="store_true", help="report on campaigns already in the state dir")
    ap.add_argument("--local", nargs="+", metavar="MPI_ID", help="run the pipelines locally on these libraries "
                    "(deploy/mpi-libraries.tsv ids, built into build/install/<id>)")
    ap.add_argument("--mpiruns", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=20)
    ap.add_argument("--keep", type=Path, help="--local: keep the raw files under this folder")
    ap.add_argument("--reuse", action="store_true", help="--local with --keep: report on the kept runs, measure "
                    "only what is missing")
    a = ap.parse_args()
    if a.local:
        local(a.local, a.mpiruns, a.nrep, a.keep, a.reuse)
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
