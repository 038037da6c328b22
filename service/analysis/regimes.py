"""How the mpiruns of a comparison split between cost regimes (plain, no Flask).

    reg = split_regimes(run_ratios, tolerance=0.05)   # -> Regimes: groups of mpiruns with the same cost
    reg.line()       # "2 regimes: 6 of 10 mpiruns at 1.25x (1.22-1.28); 4 of 10 at 0.37x (0.35-0.40)"
    reg.losing(tol)  # the regimes in which the alternative is slower than the default by more than tol

Why: a mock-up's cost can switch between regimes from one mpirun to the next while the default barely moves
(MPICH 4.0.2 here, 2 ranks, MPI_Bcast 16 KiB as Scatter + Allgather: 4.7 us in one launch, 11-13 us in the
next, against a 5 us default; tests/bench/regimes.py measures it). The paired ratio of such an mpirun is
then far from the 1-3 % spread that the ratio of two interleaved algorithms shows inside one mpirun, so the
per-mpirun ratios fall into separate clusters. A verdict states that split, and a redirection must win in
every regime measured: the median of the ratios would hide a 2.7x loss in some launches.

Clustering: one dimension, on log ratios, by gaps. Sorted, the log ratios are cut wherever two neighbours are
further apart than `gap` = max(log(1 + 2 * tolerance), GAP_FLOOR): with a within-mpirun spread of 1-3 % (the
control arm's null run spread) the neighbours of one regime lie far closer than that, and a regime switch of
2x is far wider. No count of regimes is assumed (one, two or more); a single mpirun apart is a regime of one.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

GAP_FLOOR = math.log(1.10)     # two regimes differ by more than 10 %: the minimum gain a redirection needs


@dataclass
class Regime:
    ratios: list[float]                  # the per-mpirun ratios default / alternative of this regime
    runs: list[int]                      # their positions in the input (mpirun order)

    @property
    def n(self) -> int:
        return len(self.ratios)

    @property
    def ratio(self) -> float:
        """Geometric median-like centre: the exp of the median log ratio."""
        return math.exp(statistics.median(math.log(r) for r in self.ratios))


@dataclass
class Regimes:
    regimes: list[Regime] = field(default_factory=list)     # fastest alternative (largest ratio) first
    gap: float = GAP_FLOOR

    @property
    def runs(self) -> int:
        return sum(r.n for r in self.regimes)

    @property
    def count(self) -> int:
        return len(self.regimes)

    def losing(self, tolerance: float) -> list[Regime]:
        """The regimes whose centre is slower than the default by more than `tolerance`."""
        return [r for r in self.regimes if r.ratio < 1 / (1 + tolerance)]

    def worst(self) -> Regime | None:
        return self.regimes[-1] if self.regimes else None

    def line(self) -> str:
        if not self.regimes:
            return "no mpirun measured both"
        parts = [f"{r.n} of {self.runs} mpiruns at {r.ratio:.2f}x"
                 + (f" ({min(r.ratios):.2f}-{max(r.ratios):.2f})" if r.n > 1 else "") for r in self.regimes]
        head = "1 regime" if self.count == 1 else f"{self.count} regimes"
        return f"{head}: " + "; ".join(parts)

    def to_dict(self) -> dict:
        return {"count": self.count, "runs": self.runs, "gap": self.gap, "line": self.line(),
                "regimes": [{"n": r.n, "ratio": r.ratio, "min": min(r.ratios), "max": max(r.ratios),
                             "runs": r.runs} for r in self.regimes]}


def split_regimes(run_ratios, tolerance: float = 0.05) -> Regimes:
    """Cluster per-mpirun ratios (default / alternative, same mpirun) into regimes; see the module doc."""
    gap = max(math.log(1 + 2 * tolerance), GAP_FLOOR)
    pts = sorted(((math.log(r), i, float(r)) for i, r in enumerate([] if run_ratios is None else list(run_ratios))
                  if r and r > 0 and math.isfinite(r)),
                 reverse=True)
    out = Regimes(gap=gap)
    for k, (lr, i, r) in enumerate(pts):
        if k == 0 or pts[k - 1][0] - lr > gap:
            out.regimes.append(Regime([], []))
        out.regimes[-1].ratios.append(r)
        out.regimes[-1].runs.append(i)
    return out
