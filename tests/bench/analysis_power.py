#!/usr/bin/env python3
"""Power curve and A/A rate of the pattern test at R mpiruns, for two noise levels (prints a table).

Noise (service/analysis/synthetic.py): log-normal mpirun-to-mpirun factor sigma_run, per-measurement factor
sigma_rep, outliers with probability p_out times 1 + Exp(1). "moderate" = 5 %/5 %/2 % (what the tests use),
"harsh" = 10 %/10 %/5 %. No shared per-mpirun drift here, so the paired tests gain nothing over the unpaired
ones; tests/bench/analysis_paired.py has the structure measured on this machine. Usage: .venv/bin/python tests/bench/analysis_power.py [--campaigns 200] [--runs 10]
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.reader import ResultSet  # noqa: E402
from service.analysis.synthetic import Design, simulate  # noqa: E402

SLOWDOWNS = [1.0, 1.05, 1.1, 1.2, 2.0]
NAMES = ["allgather_as_gather_bcast", "allgather_as_alltoall", "allgather_as_allreduce", "allgather_as_allgatherv"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--campaigns", type=int, default=200)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nrep", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    sizes = [8, 4096, 262144]
    mocks = NAMES + ["allgather_as_x5"]
    print(f"R={args.runs} mpiruns, nrep={args.nrep}, alpha={args.alpha}, {args.campaigns} campaigns x "
          f"{len(sizes)} sizes per cell; detection rate of 'default slower than mock-up'")
    print(f"{'noise':10s} {'test':12s} " + " ".join(f"{s:>7.2f}x" for s in SLOWDOWNS))
    for label, sr, sp, po in (("moderate", 0.05, 0.05, 0.02), ("harsh", 0.10, 0.10, 0.05)):
        rng = np.random.default_rng(42)
        runs = []
        fac = {("allgather", m, s): 1 / f for m, f in zip(mocks, SLOWDOWNS) for s in sizes}
        for c in range(args.campaigns):
            d = Design(collectives=["allgather"], sizes=sizes, mockups={"allgather": mocks}, factors=fac,
                       nruns=args.runs, nrep=args.nrep, sigma_run=sr, sigma_rep=sp, p_outlier=po, machine=f"c{c}")
            runs += simulate(d, rng)
        rs = ResultSet.from_runs(runs)
        for test in ("paired_t", "wilcoxon", "mannwhitney", "welch", "ks"):
            a = analyze(rs, alpha=args.alpha, test=test, kinds=("pattern",))
            rates = []
            for m in mocks:
                vs = [v for v in a.verdicts if v.algorithm == m]
                rates.append(sum(v.violated for v in vs) / len(vs))
            print(f"{label:10s} {test:12s} " + " ".join(f"{r:8.3f}" for r in rates))
    print("(column 1.00x is the A/A rate: a mock-up exactly as fast as the default)")


if __name__ == "__main__":
    main()
