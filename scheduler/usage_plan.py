"""Campaigns from usage, within a budget (`cells: from-usage`, `budget: {node_hours_per_night: ...}`).

Pure functions (no I/O): the agent gives them the service's usage aggregates and the cells' last verdicts,
and gets tonight's cells back; the sequential rule tells it after each round of mpiruns whether a cell is
decided and can stop.

Which cells. The cells holding `share` of the users' observed collective time (largest first), plus a
rotating sample of the rest (a different slice every night, so every cell is seen now and then and a
cell whose usage grows is noticed). A cell decided less than `refresh_nights` ago keeps its verdict and
is not measured again.

Within the budget. Each candidate has a cost (node-hours of measuring it, from the cost model) and an
expected saving (the users' rank-time in it times the gain a violation there would bring, weighted by how
likely one is: the cell's last verdict if it had one, else the prior). Candidates are taken by saving per
cost until the budget is spent; what does not fit is reported with the reason, and keeps its last
verdict with its age.

When to stop measuring a cell (`SequentialDesign`, `sequential_cell`). A measured cell gets `nrep`
repetitions per mpirun (the campaign's; fewer is possible, see docs/usage.md for what 10 instead of 30
cost in agreement) and is looked at after `looks[0]` mpiruns, then after each later look; only cells still undecided get the next mpiruns. At each look every
alternative still in play gives a t interval on its per-mpirun paired log ratios default/alternative; an
alternative is decided once the interval lies wholly above log(1 / (1 - min_gain)) (a redirect, the
service's rule on the interval's lower bound) or wholly below it (never a redirect: it stops being
measured). The cell stops once every alternative is decided; at the last look an undecided one is
inconclusive and the library's default stays, as in a fixed campaign.

Why the error stays alpha: the interval at look k has the nominal level of a two-sided group-sequential
design with Lan-DeMets alpha spending (`group_sequential_levels`: boundaries of the joint normal law of the
looks, correlation sqrt(n_i / n_j), the spending function alpha * t^rho), applied to the t statistic of the
look ("significance level approach", Jennison & Turnbull 2000, 3.8). With rho = 3 (O'Brien-Fleming-like) the
first looks spend almost nothing and the last look runs at nearly alpha, so a cell that goes the whole way
is decided as a fixed campaign would decide it. The p-value a cell reports for the service's
Benjamini-Hochberg step is the repeated p-value min_k p_k / w_k (w_k the share of alpha spent at look k):
valid by the union bound whatever the looks' dependence, so BH runs on it as on a fixed design's p-values.
The control arm (the default measured twice) is measured in every mpirun the cell gets and goes through the
same rule: its false alarms are the adaptive campaign's noise figure as of the fixed one.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field

from scipy import stats


@dataclass(frozen=True)
class Cell:
    collective: str      # key of collectives.def, e.g. "allreduce"
    bytes_lo: int        # lower bound of the power-of-two size bucket (the cell measures it)
    p: int               # communicator size
    layout: str = "-"    # "<nodes>x<ppn>" when known, "-" otherwise

    @property
    def nodes(self) -> int:
        if "x" in self.layout:
            try:
                return max(1, int(self.layout.split("x", 1)[0]))
            except ValueError:
                pass
        return 1


@dataclass(frozen=True)
class CellUsage:
    cell: Cell
    rank_seconds: float  # the users' time in this cell per night, over all ranks


@dataclass(frozen=True)
class CellState:
    cell: Cell
    verdict: str         # "violation" | "none" | "inconclusive"
    age_nights: int
    gain: float = 0.0    # measured speed-up - 1 of the best alternative, when a violation


@dataclass(frozen=True)
class CostModel:
    """Node-hours of measuring one cell for one round: `launch_seconds` per mpirun (start-up and
    synchronisation) plus nrep measurements of each arm, each arm costing the call's time (from the
    usage record's mean time per call, or `default_call_seconds`) plus the per-measurement overhead."""
    launch_seconds: float = 3.0
    nrep: int = 100
    arms: int = 4                  # default, control, and the collective's mock-ups on average
    overhead_seconds: float = 20e-6
    default_call_seconds: float = 1e-3
    mpiruns_per_round: int = 2

    def round_node_hours(self, cell: Cell, call_seconds: float | None = None) -> float:
        t = call_seconds if call_seconds is not None else self.default_call_seconds
        per_mpirun = self.launch_seconds + self.nrep * self.arms * (t + self.overhead_seconds)
        return per_mpirun * self.mpiruns_per_round * cell.nodes / 3600.0


@dataclass
class Choice:
    cell: Cell
    reason: str                    # "covers usage" | "rotating sample"
    expected_saving: float         # rank-seconds per night
    node_hours: float              # cost of the planned rounds


@dataclass
class Plan:
    chosen: list[Choice] = field(default_factory=list)
    kept: list[tuple[Cell, str]] = field(default_factory=list)     # not measured tonight, and why
    budget_node_hours: float = 0.0

    @property
    def spent_node_hours(self) -> float:
        return sum(c.node_hours for c in self.chosen)

    def share_of_time_measured(self, usages: list[CellUsage]) -> float:
        total = sum(u.rank_seconds for u in usages) or 1.0
        chosen = {c.cell for c in self.chosen}
        return sum(u.rank_seconds for u in usages if u.cell in chosen) / total


def default_budget(partition_nodes: int, fraction: float = 0.01) -> float:
    """The default nightly budget: `fraction` (1 %) of the partition's node-hours of a day."""
    return partition_nodes * 24.0 * fraction


def covering_cells(usages: list[CellUsage], share: float) -> list[CellUsage]:
    """The fewest cells, largest first, that hold `share` of the observed time."""
    ordered = sorted(usages, key=lambda u: (-u.rank_seconds, u.cell.collective, u.cell.bytes_lo, u.cell.p))
    total = sum(u.rank_seconds for u in ordered)
    out, acc = [], 0.0
    for u in ordered:
        if total <= 0 or acc >= share * total:
            break
        out.append(u)
        acc += u.rank_seconds
    return out


def _rotation_key(cell: Cell, night: int) -> str:
    return hashlib.sha256(f"{night}:{cell}".encode()).hexdigest()


def plan_night(usages: list[CellUsage], states: dict[Cell, CellState], budget_node_hours: float,
               cost: CostModel | None = None, *, share: float = 0.9, sample_fraction: float = 0.1,
               night: int = 0, refresh_nights: int = 30, prior_violation: float = 0.15,
               prior_gain: float = 0.2, rounds: int = 3, call_seconds: dict[Cell, float] | None = None) -> Plan:
    cost = cost or CostModel()
    call_seconds = call_seconds or {}
    plan = Plan(budget_node_hours=budget_node_hours)
    covered = {u.cell for u in covering_cells(usages, share)}
    rest = sorted((u for u in usages if u.cell not in covered), key=lambda u: _rotation_key(u.cell, night))
    sample = {u.cell for u in rest[:math.ceil(sample_fraction * len(rest))]} if rest else set()
    candidates = []
    for u in usages:
        if u.cell not in covered and u.cell not in sample:
            continue
        st = states.get(u.cell)
        if st and st.verdict in ("violation", "none") and st.age_nights < refresh_nights:
            plan.kept.append((u.cell, f"decided {st.age_nights} night(s) ago: {st.verdict}"))
            continue
        if st and st.verdict == "violation":
            likely, gain = 1.0, max(st.gain, 0.0)
        elif st and st.verdict == "none":
            likely, gain = prior_violation / 2, prior_gain
        else:
            likely, gain = prior_violation, prior_gain
        saving = u.rank_seconds * likely * gain / (1.0 + gain)
        nh = rounds * cost.round_node_hours(u.cell, call_seconds.get(u.cell))
        reason = "covers usage" if u.cell in covered else "rotating sample"
        candidates.append(Choice(u.cell, reason, saving, nh))
    candidates.sort(key=lambda c: (-(c.expected_saving / c.node_hours if c.node_hours > 0 else math.inf),
                                   c.cell.collective, c.cell.bytes_lo, c.cell.p))
    left = budget_node_hours
    for c in candidates:
        if c.node_hours <= left:
            plan.chosen.append(c)
            left -= c.node_hours
        else:
            plan.kept.append((c.cell, f"over budget ({c.node_hours:.3g} node-h, {left:.3g} left)"))
    return plan


# ---------------------------------------------------------------- the group-sequential design

def spent_alpha(t: float, alpha: float, rho: float) -> float:
    """Kim-DeMets power spending function: the error spent up to information fraction t."""
    return alpha * min(1.0, max(0.0, t)) ** rho


@functools.lru_cache(maxsize=256)
def group_sequential_levels(fractions: tuple[float, ...], alpha: float = 0.05, rho: float = 3.0) -> tuple[float, ...]:
    """Nominal two-sided levels of the looks at information `fractions` (increasing, last 1): the boundary c_k
    of |Z_k| is chosen so that P(no crossing before k, crossing at k) = spent(t_k) - spent(t_(k-1)) under the
    joint normal law of the looks (corr(Z_i, Z_j) = sqrt(t_i / t_j)); the level is 2 (1 - Phi(c_k))."""
    import numpy as np
    from scipy.optimize import brentq

    ts = [float(t) for t in fractions]
    if not ts or any(b <= a for a, b in zip(ts, ts[1:])) or not 0 < ts[0] or abs(ts[-1] - 1.0) > 1e-9:
        raise ValueError(f"information fractions must increase to 1, got {fractions}")
    cs: list[float] = []
    levels: list[float] = []
    for k, t in enumerate(ts):
        target = spent_alpha(t, alpha, rho) - spent_alpha(ts[k - 1], alpha, rho) if k else spent_alpha(t, alpha, rho)
        if k == 0:
            c = float(stats.norm.isf(target / 2))
        else:
            cov = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in ts[:k + 1]] for a in ts[:k + 1]])
            prev = np.array(cs)
            inside_before = _rect(cov[:k, :k], prev)

            def excess(c: float) -> float:
                # P(inside before k) - P(inside before k and inside at k) = P(cross first at k)
                return inside_before - _rect(cov, np.append(prev, c)) - target
            c = float(brentq(excess, 0.5, 12.0, xtol=1e-6))
        cs.append(c)
        levels.append(float(2 * stats.norm.sf(c)))
    return tuple(levels)


def _rect(cov, c) -> float:
    """P(|Z_i| < c_i for all i) of a centred normal vector with covariance cov."""
    import numpy as np
    if len(c) == 1:
        return float(1 - 2 * stats.norm.sf(c[0]))
    mvn = stats.multivariate_normal(mean=np.zeros(len(c)), cov=cov, allow_singular=True)
    return float(mvn.cdf(np.asarray(c), lower_limit=-np.asarray(c)))


@dataclass(frozen=True)
class SequentialDesign:
    """How a measured cell is measured: `nrep` repetitions per mpirun, looks after `looks` mpiruns (the last
    is the most a cell gets), each at the nominal level of the group-sequential design."""
    looks: tuple[int, ...] = (3, 4, 6)
    nrep: int = 30          # the campaign's own; 10 of 30 made 4.5x more decisions differ from the fixed one (replay)
    alpha: float = 0.05
    rho: float = 3.0
    min_gain: float = 0.1

    def levels(self) -> tuple[float, ...]:
        return group_sequential_levels(tuple(n / self.looks[-1] for n in self.looks), self.alpha, self.rho)

    def weights(self) -> tuple[float, ...]:
        """The share of alpha spent at each look (the repeated p-value's weights)."""
        fr = [n / self.looks[-1] for n in self.looks]
        spent = [spent_alpha(t, 1.0, self.rho) for t in fr]
        return tuple(b - a for a, b in zip([0.0] + spent[:-1], spent))

    @property
    def threshold(self) -> float:
        """log of the ratio default / alternative a redirect must beat: gain >= min_gain at the interval's
        lower bound (service/analysis/verdicts.redirect_refusal)."""
        return -math.log(1.0 - self.min_gain)


@dataclass(frozen=True)
class ArmLook:
    state: str            # "redirect" | "none" | "undecided" | "inconclusive"
    effect: float         # geometric mean of the per-mpirun ratios default / alternative
    lo: float
    hi: float
    p_value: float        # one-sided "default slower", this look
    mpiruns: int


def look_at_arm(log_ratios: list[float], level: float, threshold: float, final: bool) -> ArmLook:
    """One alternative at one look: the t interval at confidence 1 - level against the threshold."""
    x = [v for v in log_ratios if math.isfinite(v)]
    n = len(x)
    if n < 2:
        m = x[0] if x else float("nan")
        return ArmLook("inconclusive" if final else "undecided", math.exp(m), 0.0, math.inf, 1.0, n)
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
    if sd == 0.0:
        lo = hi = mean
        p = 0.0 if mean > 0 else 1.0
    else:
        half = float(stats.t.isf(level / 2, n - 1)) * sd / math.sqrt(n)
        lo, hi = mean - half, mean + half
        p = float(stats.t.sf(mean / (sd / math.sqrt(n)), n - 1))
    if lo > threshold:
        state = "redirect"
    elif hi < threshold:
        state = "none"
    else:
        state = "inconclusive" if final else "undecided"
    return ArmLook(state, math.exp(mean), math.exp(lo), math.exp(hi), p, n)


@dataclass
class CellOutcome:
    decision: str                      # "redirect" | "default"
    winner: str                        # the redirect's alternative, "" for the default
    mpiruns: int                       # mpiruns the cell was measured in
    arm_mpiruns: dict[str, int]        # per alternative: the mpiruns it was measured in (dropped once decided)
    arms: dict[str, ArmLook]           # per alternative: its deciding (or last) look
    p_value: float                     # the winner's (or the smallest) repeated p-value, for BH
    control: ArmLook | None = None     # the control arm under the same rule (a false alarm if "redirect")
    open: tuple[str, ...] = ()         # alternatives still undecided after the looks taken (more mpiruns due)
    looks: int = 0                     # looks taken


def sequential_cell(log_ratios: dict[str, list[float]], design: SequentialDesign,
                    control: list[float] | None = None, looks_done: int | None = None) -> CellOutcome:
    """The sequential measurement of one cell on per-mpirun log ratios default/alternative (index i: the
    i-th mpirun the cell got). An alternative is measured until it is decided; the cell, until every
    alternative is; the control arm whenever the cell is. The redirect, when any, is the decided alternative
    with the largest effect (as the service takes the fastest). looks_done: only the first looks (what the
    agent has measured so far, scheduler/looks.py); the outcome's `open` then names the alternatives the
    next look must measure, and the decision is final only when `open` is empty."""
    levels, weights = design.levels(), design.weights()
    thr = design.threshold
    open_arms = set(log_ratios)
    last: dict[str, ArmLook] = {}
    measured: dict[str, int] = {a: 0 for a in log_ratios}
    rep_p: dict[str, float] = {a: 1.0 for a in log_ratios}
    n = 0
    taken = 0
    ctrl = None
    upto = len(design.looks) if looks_done is None else max(1, min(looks_done, len(design.looks)))
    for k, n in enumerate(design.looks[:upto]):
        taken = k + 1
        final = k == len(design.looks) - 1
        for a in sorted(open_arms):
            lk = look_at_arm(log_ratios[a][:n], levels[k], thr, final)
            last[a] = lk
            measured[a] = n
            if lk.mpiruns >= 2 and weights[k] > 0:
                rep_p[a] = min(rep_p[a], lk.p_value / weights[k])
        if control is not None:
            ctrl = look_at_arm(control[:n], levels[k], thr, final)
        open_arms = {a for a in open_arms if last[a].state == "undecided"}
        if not open_arms:
            break
    still = tuple(sorted(open_arms))
    winners = sorted((lk.effect, a) for a, lk in last.items() if lk.state == "redirect")
    if winners:
        w = winners[-1][1]
        return CellOutcome("redirect", w, n, measured, last, min(1.0, rep_p[w]), ctrl, still, taken)
    return CellOutcome("default", "", n, measured, last, min([1.0] + list(rep_p.values())), ctrl, still, taken)


def fixed_cell(log_ratios: dict[str, list[float]], alpha: float = 0.05, min_gain: float = 0.1,
               control: list[float] | None = None) -> CellOutcome:
    """The exhaustive (fixed) campaign's decision on the same ratios: every mpirun, one look at alpha."""
    thr = -math.log(1.0 - min_gain)
    arms = {a: look_at_arm(x, alpha, thr, True) for a, x in log_ratios.items()}
    winners = sorted((lk.effect, a) for a, lk in arms.items() if lk.state == "redirect")
    n = max((len(x) for x in log_ratios.values()), default=0)
    ctrl = look_at_arm(control, alpha, thr, True) if control is not None else None
    if winners:
        w = winners[-1][1]
        return CellOutcome("redirect", w, n, {a: n for a in arms}, arms, arms[w].p_value, ctrl)
    return CellOutcome("default", "", n, {a: n for a in arms}, arms,
                       min([1.0] + [lk.p_value for lk in arms.values()]), ctrl)
