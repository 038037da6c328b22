#!/usr/bin/env python3
"""Paired vs unpaired verdicts on synthetic data with the noise structure measured here (prints a table).

Structure (service/analysis/synthetic.py, MEASURED): every mpirun shares one drift exp(N(0, sigma_shared)),
10-20 % on this machine's VMs (tests/bench/core_drift.sh), and each (algorithm, size) block of an mpirun has
1-3 % of its own (sigma_run); 5 % per measurement, 2 % outliers. Each campaign: one collective, 3 sizes, a
control arm (default_control, truth 1.0), one A/A mock-up (1.0x) and mock-ups that make the default 1.1x and
1.2x slower. Columns: detection rate per truth, without adjustment and with BH (per campaign, one analysis per
campaign, q = alpha), and the control arm's flagged share and campaigns with a control discovery under BH.

Usage: .venv/bin/python tests/bench/analysis_paired.py [--campaigns 200] [--runs 5 10] [--alpha 0.05]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.reader import ResultSet  # noqa: E402
from service.analysis.stats import build_cells  # noqa: E402
from service.analysis.synthetic import Design, simulate  # noqa: E402
from service.analysis.verdicts import CONTROL  # noqa: E402

TRUTH = {"allgather_as_allgatherv": 1.0, "allgather_as_gather_bcast": 1.1, "allgather_as_alltoall": 1.2}
TESTS = ("paired_t", "wilcoxon", "mannwhitney", "welch")
SIZES = [8, 4096, 262144]


def campaign_cells(rng, runs, sigma_shared, sigma_run, nrep, tag):
    fac = {("allgather", m, s): 1 / f for m, f in TRUTH.items() for s in SIZES}
    d = Design(collectives=["allgather"], sizes=SIZES, mockups={"allgather": list(TRUTH)}, factors=fac,
               nruns=runs, nrep=nrep, sigma_shared=sigma_shared, sigma_run=sigma_run, control=True, machine=tag)
    return build_cells(ResultSet.from_runs(simulate(d, rng)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--campaigns", type=int, default=200)
    ap.add_argument("--runs", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--nrep", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    t0 = time.time()
    print(f"{args.campaigns} campaigns per row x {len(SIZES)} sizes; alpha = BH target = {args.alpha}; nrep "
          f"{args.nrep}; share of tests flagged ('default slower than the mock-up')")
    hdr = (f"{'shared':>6s} {'indep':>5s} {'R':>3s} {'test':11s} | {'A/A':>6s} {'1.1x':>6s} {'1.2x':>6s} "
           f"{'ctrl':>6s} | {'A/A+BH':>6s} {'1.1+BH':>6s} {'1.2+BH':>6s} {'ctrlBH':>6s} {'c.disc':>6s}")
    print(hdr)
    print("-" * len(hdr))
    for sigma_shared in (0.10, 0.20):
        for sigma_run in (0.01, 0.03):
            for runs in args.runs:
                rng = np.random.default_rng(20261123)
                camps = [campaign_cells(rng, runs, sigma_shared, sigma_run, args.nrep, f"c{c}")
                         for c in range(args.campaigns)]
                for test in TESTS:
                    raw = {m: [] for m in list(TRUTH) + [CONTROL]}
                    bh = {m: [] for m in list(TRUTH) + [CONTROL]}
                    control_disc = 0
                    for cells in camps:
                        for fdr, store in ((False, raw), (True, bh)):
                            a = analyze(cells, alpha=args.alpha, test=test, fdr=fdr, kinds=("pattern",))
                            for v in a.verdicts:
                                store[v.algorithm].append(v.violated)
                            if fdr:
                                control_disc += a.control.flagged > 0
                    r = {m: float(np.mean(x)) for m, x in raw.items()}
                    b = {m: float(np.mean(x)) for m, x in bh.items()}
                    aa, m11, m12 = list(TRUTH)
                    print(f"{sigma_shared:6.2f} {sigma_run:5.2f} {runs:3d} {test:11s} | {r[aa]:6.3f} {r[m11]:6.3f} "
                          f"{r[m12]:6.3f} {r[CONTROL]:6.3f} | {b[aa]:6.3f} {b[m11]:6.3f} {b[m12]:6.3f} "
                          f"{b[CONTROL]:6.3f} {control_disc:6d}")
    print("shared: sigma of the per-mpirun drift shared by all algorithms; indep: per-(algorithm, size) sigma.")
    print("ctrl: default_control flagged (raw p); c.disc: campaigns with >= 1 control discovery under BH.")
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
