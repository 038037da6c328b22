"""Regressions across nights: a collective that got slower at a size between nights, flagged with a known
false-alarm rate (pure: lists of floats in, verdicts out; no database, no Flask).

    series = {("MPI_Bcast", 1024, 2): [t_night1, t_night2, ...], ...}    # per night the default's median, oldest first
    alarms = detect(series)                                               # the cells that regressed at the last night

Method (a control chart on a two-night moving mean against a reference band, as ReFrame's reference bands and
XDMoD's control charts do; docs in service/analysis/README.md, "Regressions across nights"):
1. Per cell (collective, size, p) and night, x = log of the night's median time (median over its mpiruns): a
   ratio to the reference is a difference of logs, and log-times are close to normal night to night.
2. Reference band: the REFERENCE nights before the last two (mean m, night-to-night standard deviation s, with
   a floor SIGMA_FLOOR so that a too-quiet reference never makes every wobble significant).
3. Statistic: the mean of the last two nights' x as a prediction-interval test: t = (mean - m) / (s *
   sqrt(1/2 + 1/R)), R reference nights, against Student's t with R-1 degrees of freedom (the reference's
   spread is itself estimated). One-sided (slower only). Two nights, not one: the mean of two halves the
   variance, which is what buys 95 % power at 5 % within the two nights the site allows.
4. Level: the monthly budget of false alarms (BUDGET per machine x library per 30 nights) spread over the cells
   and the nights (Bonferroni): alpha = BUDGET / (30 * cells). A cell is flagged when the statistic passes its
   threshold and the estimated slowdown is at least MIN_EFFECT / 2 (too small to matter is no news even when
   certain). A cell flagged on consecutive nights is one alarm (the notifications send it once).
A 5 % shift is then flagged within two nights with probability >= 95 % when the night-to-night spread is
small enough (tests/bench/nightly_regressions.py prints the delay and the false-alarm rate on planted data).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

from scipy import stats

REFERENCE = 20          # nights in the reference band (a cell is judged from its 22nd night on)
SIGMA_FLOOR = 0.005     # 0.5 % night-to-night: no band is narrower
BUDGET = 1.0            # false alarms per machine x library per 30 nights
MIN_EFFECT = 0.05       # the slowdown a site wants to hear about (flagged from half of it when certain)


@dataclass(frozen=True)
class Alarm:
    cell: tuple
    ratio: float            # estimated slowdown: exp(mean - m), > 1 = slower
    nights: int             # 1: the last night alone; 2: the last two nights' mean
    t: float
    threshold: float
    reference: tuple        # (first, last) night index of the reference band
    band: tuple             # (low, high) ratio of the reference band: exp(+-threshold * spread)


@lru_cache(maxsize=256)
def _t_quantile(alpha: float, df: int) -> float:
    return float(stats.t.ppf(1.0 - alpha, df))


def level(cells: int, budget: float = BUDGET) -> float:
    """The per-cell, per-night false-alarm probability that spends `budget` alarms a month."""
    return budget / (30.0 * max(1, cells))


def check(values: list[float], alpha: float, reference: int = REFERENCE) -> Alarm | None:
    """Whether the last night(s) of one cell's series are slower than its reference band (None: no alarm)."""
    xs = [math.log(v) for v in values if v and v > 0 and math.isfinite(v)]
    if len(xs) < reference + 2:
        return None
    ref = xs[-(reference + 2):-2]
    m = statistics.fmean(ref)
    s = max(statistics.stdev(ref), SIGMA_FLOOR)
    best = None
    for k in (2,):
        mean = statistics.fmean(xs[-k:])
        t = (mean - m) / (s * math.sqrt(1.0 / k + 1.0 / reference))
        thr = _t_quantile(alpha, reference - 1)
        ratio = math.exp(mean - m)
        if t > thr and ratio >= 1 + MIN_EFFECT / 2 and (best is None or t - thr > best.t - best.threshold):
            half = thr * s * math.sqrt(1.0 / k + 1.0 / reference)
            best = Alarm(cell=(), ratio=ratio, nights=k, t=t, threshold=thr,
                         reference=(len(xs) - reference - 2, len(xs) - 3), band=(math.exp(-half), math.exp(half)))
    return best


def detect(series: dict[tuple, list[float]], budget: float = BUDGET, reference: int = REFERENCE) -> list[Alarm]:
    """The cells of one machine x library whose last night(s) regressed; alpha from the number of cells."""
    alpha = level(len(series), budget)
    out = []
    for cell, values in series.items():
        a = check(values, alpha, reference)
        if a is not None:
            out.append(Alarm(cell=cell, ratio=a.ratio, nights=a.nights, t=a.t, threshold=a.threshold,
                             reference=a.reference, band=a.band))
    return sorted(out, key=lambda a: -a.ratio)
