"""Monotony and split-robustness proven on planted data (issue 34): planted-effect and A/A tables.

    .venv/bin/python tests/bench/guideline_proofs.py [--campaigns 20] [--runs 10]

Synthetic campaigns (service/analysis/synthetic.py) with the noise structure measured on this machine
(synthetic.MEASURED: a shared per-mpirun drift of 15 %, 2 % per block; 5 % per measurement, 2 % outliers),
one collective (MPI_Bcast) at 1, 2, 4, 8, 16 KiB, R mpiruns of 30 measurements, the paired t-test at alpha 0.05.

Planted: the default's time at one size is set so that the guideline's ratio has the planted value
(monotony: T(2 KiB) / T(4 KiB) = r; split: T(8 KiB) / (2 T(4 KiB)) = r, tolerance 5 %); "found" counts the
campaigns whose analysis flags exactly that pair (without and with BH over the campaign's tests).
A/A: "realistic" plants nothing (latency + bandwidth model: every size costs more than the smaller one and
less than k times it); "boundary" plants the edge of the null hypothesis (monotony T(2 KiB) = T(4 KiB);
split T(8 KiB) = 1.05 x 2 T(4 KiB)), where a calibrated test flags at most alpha of the checks.
PGMPI's rule: the default at 16 KiB 6x slower violates split-robustness against 8, 4, 2 and 1 KiB; only the
largest smaller size (8 KiB) is reported. Also the per-guideline summary table of one campaign.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pgmpi_formats.results import ResultSet  # noqa: E402
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.synthetic import MEASURED, Design, simulate  # noqa: E402

SIZES = [1024, 2048, 4096, 8192, 16384]
LAT, BW = 5e-6, 2e9
ALPHA, TOL = 0.05, 0.05


def t(m: int) -> float:
    return LAT + m / BW


def design(factors: dict, runs: int) -> Design:
    return Design(collectives=["bcast"], sizes=SIZES, mockups={}, nruns=runs, nrep=30, latency=LAT, bandwidth=BW,
                  sigma_rep=0.05, p_outlier=0.02, factors={("bcast", "default", s): f for s, f in factors.items()},
                  **MEASURED)


def campaign(factors: dict, runs: int, seed: int, fdr: bool, kind: str):
    rs = ResultSet.from_runs(simulate(design(factors, runs), np.random.default_rng(seed)))
    a = analyze(rs, alpha=ALPHA, fdr=fdr, split_tolerance=TOL, kinds=(kind,))
    return [v for v in a.verdicts if v.kind == kind]


def plant(kind: str, r: float) -> tuple[dict, tuple[int, int]]:
    if kind == "monotony":      # T(2048) = r T(4096)
        return {2048: r * t(4096) / t(2048)}, (4096, 2048)
    return {8192: r * 2 * t(4096) / t(8192)}, (8192, 4096)     # split: T(8192) = r 2 T(4096)


def planted_table(n: int, runs: int) -> list[str]:
    out = ["planted effects (found = the planted pair flagged; others = other checks flagged, all campaigns)",
           f"{'guideline':10} {'planted':>8} {'R':>3} {'found':>7} {'found BH':>9} {'others':>7} {'others BH':>10}"]
    for kind, effects in (("monotony", (1.15, 1.5)), ("split", (1.15, 1.5))):
        for r in effects:
            fac, pair = plant(kind, r)
            found = {False: 0, True: 0}
            others = {False: 0, True: 0}
            for seed in range(n):
                for fdr in (False, True):
                    vs = campaign(fac, runs, 1000 + seed, fdr, kind)
                    hit = [v for v in vs if v.violated and (v.msize, v.ref_msize) == pair]
                    found[fdr] += bool(hit)
                    others[fdr] += sum(v.violated for v in vs) - len(hit)
            out.append(f"{kind:10} {r:>7.2f}x {runs:>3} {found[False]:>4}/{n:<2} {found[True]:>6}/{n:<2} "
                       f"{others[False]:>7} {others[True]:>10}")
    return out


def null_table(n: int, runs: int) -> list[str]:
    out = ["A/A (nothing planted, or the edge of the null planted): false alarms over all checks of all campaigns",
           f"{'guideline':10} {'null':10} {'R':>3} {'checks':>7} {'flagged':>8} {'rate':>6} {'alpha':>6} "
           f"{'campaigns with a BH discovery':>30}"]
    for kind in ("monotony", "split"):
        edge = {2048: t(4096) / t(2048)} if kind == "monotony" else {8192: (1 + TOL) * 2 * t(4096) / t(8192)}
        for name, fac in (("realistic", {}), ("boundary", edge)):
            checks = flagged = bh_campaigns = 0
            for seed in range(n):
                vs = campaign(fac, runs, 5000 + seed, False, kind)
                checks += len(vs)
                flagged += sum(v.violated for v in vs)
                bh_campaigns += any(v.violated for v in campaign(fac, runs, 5000 + seed, True, kind))
            out.append(f"{kind:10} {name:10} {runs:>3} {checks:>7} {flagged:>8} {flagged / checks:>6.3f} "
                       f"{ALPHA:>6.2f} {bh_campaigns:>27}/{n}")
    return out


def pgmpi_rule(runs: int) -> list[str]:
    fac = {16384: 6.0}
    vs = [v for v in campaign(fac, runs, 7, False, "split") if v.msize == 16384]
    ratios = {m: 6.0 * t(16384) / (-(-16384 // m) * t(m)) for m in SIZES[:-1]}
    return ["PGMPI's rule (split, default at 16 KiB 6x slower): true T(16K) / (k T(m)) "
            + ", ".join(f"{m // 1024} KiB {r:.2f}" for m, r in ratios.items()),
            "  reported: " + "; ".join(f"{v.msize} B vs {v.k} x {v.ref_msize} B, violated={v.violated}, "
                                      f"effect {v.effect:.2f}x (95 % CI {v.ci_low:.2f}-{v.ci_high:.2f})"
                                      for v in vs)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    for line in planted_table(args.campaigns, args.runs) + [""] + null_table(args.campaigns, args.runs) + [""] \
            + pgmpi_rule(args.runs):
        print(line)
    from service.analysis.comparers import to_json, view
    rs = ResultSet.from_runs(simulate(design({2048: 1.5 * t(4096) / t(2048), 16384: 6.0}, args.runs),
                                      np.random.default_rng(3)))
    print("\nper-guideline summary of one campaign (both planted, BH; `pgmpi analyze --view summary`)")
    print(f"{'guideline':10} {'collective':11} {'tested':>6} {'violated':>8} {'cautious':>8} {'worst':>7} "
          f"{'95 % CI':>13}  where")
    for r in to_json(view(analyze(rs, fdr=True), "summary")):
        ci = (f"{r['worst_ci95_low']:.3f}-{r['worst_ci95_high']:.3f}" if r["worst_ci95_low"] is not None else "")
        worst = f"{r['worst_factor']:.3f}" if r["worst_factor"] is not None else ""
        print(f"{r['guideline']:10} {r['collective']:11} {r['tested']:>6} {r['violated']:>8} {r['cautious']:>8} "
              f"{worst:>7} {ci:>13}  {r['worst_at'] or ''}")

if __name__ == "__main__":
    main()
