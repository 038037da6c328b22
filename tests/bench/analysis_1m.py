#!/usr/bin/env python3
"""Benchmark: analyse ~1,000,000 raw measurements end to end and print the figures.

10 collectives x 20 sizes x 4 algorithms (default + 3 mock-ups; our real names where the collective has that
many, else `<key>_as_synthetic<k>`) x 10 mpiruns x 125 repetitions = 1,000,000 measurements, plus MPI_Barrier
rows. Files are written first (not timed), one per mpirun as pgmpi-bench writes them; then timed: parse files,
per-mpirun medians + cells, all tests (pattern, monotony, split), the six views (CSV + JSON), quality,
profile generation and writing. Usage: .venv/bin/python tests/bench/analysis_1m.py [--reps 125] [--keep DIR]
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from service.analysis import collectives as C  # noqa: E402
from service.analysis.comparers import VIEWS, to_csv, to_json, view  # noqa: E402
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.profiles import generate_profiles, write_profiles  # noqa: E402
from service.analysis.quality import quality  # noqa: E402
from service.analysis.reader import read_files  # noqa: E402
from service.analysis.stats import build_cells  # noqa: E402
from service.analysis.synthetic import MOCKUPS, Design, simulate, to_text  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=125)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--test", default="paired_t")
    ap.add_argument("--keep", default=None)
    args = ap.parse_args()
    sizes = [int(round(2 ** (k * 22 / 19))) for k in range(20)]     # 1 B .. 4 MiB, 20 sizes
    mock = {}
    for c in C.KEYS:
        names = list(MOCKUPS[c])[:3]
        while len(names) < 3:
            names.append(f"{c}_as_synthetic{len(names)}")
        mock[c] = names
    rng = np.random.default_rng(1)
    factors = {}
    for c in C.KEYS:     # a few injected violations so that profiles have something to do
        for s in sizes[5:9]:
            factors[(c, mock[c][0], s)] = 0.6
    d = Design(collectives=list(C.KEYS), sizes=sizes, mockups=mock, factors=factors, nruns=args.runs,
               nrep=args.reps, nprocs=16, barrier_time=3e-6)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pgmpi-1m-"))
    (tmp / "raw").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = simulate(d, rng)
    nbytes = 0
    for r in runs:
        text = to_text(r)
        nbytes += len(text)
        (tmp / "raw" / r.source).write_text(text)
    gen = time.perf_counter() - t0
    times = {}
    T = time.perf_counter()
    CPU = time.process_time()
    t = time.perf_counter(); rs = read_files([tmp / "raw"]); times["parse files"] = time.perf_counter() - t
    t = time.perf_counter(); cells = build_cells(rs); times["medians + cells"] = time.perf_counter() - t
    t = time.perf_counter(); a = analyze(cells, test=args.test); times["tests (3 guideline classes)"] = time.perf_counter() - t
    t = time.perf_counter()
    for v in VIEWS:
        vw = view(a, v)
        to_csv(vw)
        to_json(vw)
    times["6 views (csv + json)"] = time.perf_counter() - t
    t = time.perf_counter(); q = quality(a); times["quality"] = time.perf_counter() - t
    t = time.perf_counter()
    profs = generate_profiles(a)
    write_profiles(profs, tmp / "profiles")
    times["profiles (generate + write)"] = time.perf_counter() - t
    total = time.perf_counter() - T
    cpu = time.process_time() - CPU
    ncoll = int((rs.coll >= 0).sum())
    print(f"input: {len(rs.runs)} files, {nbytes / 1e6:.1f} MB, {len(rs):,} rows ({ncoll:,} collective measurements "
          f"+ {len(rs) - ncoll:,} MPI_Barrier), generated in {gen:.1f} s (not timed)")
    for k, v in times.items():
        print(f"  {k:30s} {v:7.3f} s")
    c = a.counts()
    print(f"END TO END: {total:.2f} s wall, {cpu:.2f} s CPU for {ncoll:,} measurements (goal <= 5 s); "
          f"{c['all']['checks']} checks, {c['pattern']['brave']} pattern / {c['monotony']['brave']} monotony / "
          f"{c['split']['brave']} split violations (brave), {len(profs)} profiles, quality {q[0]['score']}")
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"note: 2 shared cores, load average {load} while measuring (other helpers' jobs): wall time is noisy, "
          "CPU time is the better figure")


if __name__ == "__main__":
    main()
