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

When to stop measuring a cell. A cell is measured in rounds of mpiruns. After each round the paired log
ratios default/alternative, one per mpirun, give a t interval at level 1 - alpha / max_looks: the cell is
decided once that interval lies wholly above log(1 + min_gain) (violation) or wholly below it (no
redirect worth it). Testing at alpha / max_looks at every look bounds the cell's error over all its looks
by alpha (union bound), so stopping early does not inflate it; the p-value a cell reports is the smallest
over its looks times max_looks (a valid, conservative p-value), on which the service's BH step runs as
for a fixed design. The control arm (the default measured twice) runs in every round and goes through
the same rule: its false alarms are the noise figure of the adaptive campaign as of the fixed one.
"""
from __future__ import annotations

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


@dataclass(frozen=True)
class Decision:
    state: str            # "violation" | "none" | "undecided" | "inconclusive"
    ratio: float          # geometric mean of the paired ratios default / alternative
    lo: float             # interval at level 1 - alpha / max_looks
    hi: float
    p_value: float        # one-sided "default slower than the alternative", times max_looks (capped at 1)
    mpiruns: int


def sequential_decision(paired_ratios: list[float], *, min_gain: float = 0.1, alpha: float = 0.05,
                        max_looks: int = 5, final: bool = False) -> Decision:
    """One look of the sequential rule on the per-mpirun paired ratios default/alternative (> 1: the
    alternative is faster). `final`: the last look; an undecided cell is then inconclusive (the library's
    default stays)."""
    x = [math.log(r) for r in paired_ratios if r > 0 and math.isfinite(r)]
    n = len(x)
    if n < 2:
        return Decision("inconclusive" if final else "undecided", math.exp(x[0]) if x else float("nan"),
                        0.0, math.inf, 1.0, n)
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
    level = alpha / max_looks
    if sd == 0.0:
        lo = hi = mean
        p = 0.0 if mean > 0 else 1.0
    else:
        se = sd / math.sqrt(n)
        t = stats.t.ppf(1 - level / 2, n - 1)
        lo, hi = mean - t * se, mean + t * se
        p = float(stats.t.sf(mean / se, n - 1))
    threshold = math.log(1.0 + min_gain)
    if lo > threshold:
        state = "violation"
    elif hi < threshold:
        state = "none"
    else:
        state = "inconclusive" if final else "undecided"
    return Decision(state, math.exp(mean), math.exp(lo), math.exp(hi), min(1.0, p * max_looks), n)
