"""What a campaign's verdicts are worth: the control arm, the noise floor, regimes and results checks.

    CONTROL = "default_control"                  # pgmpi-bench's label for the default measured a second time
    control = control_summary(verdicts, alpha, fdr, cfgs)   # -> ControlSummary (per config and overall)
    regime = run_regimes(run_ratios, tolerance)  # how an alternative's mpiruns split: faster / even / slower
    defects = check_failures(result_set, cells)  # `#@pgmpi check <call> <msize> <alg> fail <why>` lines
    why = redirect_refusal(verdict, control, gain)  # None when a pattern verdict may become a redirection

The control arm. pgmpi-bench measures the default twice, interleaved, the second time under the label
`default_control`. The analysis tests it like any mock-up, so every campaign measures the test's false-alarm
rate on its own data (flagged / tested, under the campaign's own decision rule: BH when FDR is on) and the
spread of a ratio whose truth is 1.0:

* null spread: the 95th percentile (the largest, with fewer than 20 control cells) of |r - 1| over the control
  cells, r = the cell's paired ratio (median over mpiruns of default / control in the same mpirun);
* null run spread: the same over the single mpiruns' ratios (what one launch can show by chance).

A campaign whose control is flagged more often than alpha (beyond chance: ControlSummary.trustworthy) is
untrustworthy: it yields no candidate profile.

A redirection (README.md, "Paired verdicts") needs a violated pattern verdict (p, or BH-adjusted p, <= alpha)
and a gain above both the configured minimum (default 10 %) at the lower bound of the effect's 95 % interval
over mpiruns (stats.ratio_ci; no interval from one mpirun, no redirection), and the campaign's null spread; it must also not
lose in any mpirun by more than the null run spread (a mock-up whose cost switches between regimes from one
launch to the next is refused even when it wins on average), and it must have passed pgmpi-bench's results
check. The control label itself is never a redirection.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from pgmpi_formats.footer import Check, records
from pgmpi_formats.native import parse_label

from .regimes import split_regimes

CONTROL = "default_control"
# the floor of the per-mpirun loss tolerance when a campaign has no control arm (the 1-3 % spread of a
# ratio inside one mpirun measured here, with a margin)
RUN_LOSS_FLOOR = 0.05
QUANTILE = 0.95


def is_control(algorithm: str) -> bool:
    return algorithm == CONTROL


@dataclass
class ControlSummary:
    tested: int = 0                  # control pattern verdicts with a p-value
    flagged: int = 0                 # of those, decided violated (after BH when FDR is on)
    flagged_raw: int = 0             # of those, raw p <= alpha (the per-test false-alarm count)
    null_spread: float | None = None       # cell level, as a fraction (0.03 = 3 %)
    null_run_spread: float | None = None   # single-mpirun level
    alpha: float = 0.05
    fdr: bool = False
    per_config: dict[int, dict] = field(default_factory=dict)

    @property
    def present(self) -> bool:
        return self.tested > 0

    @property
    def false_alarm_rate(self) -> float | None:
        return self.flagged_raw / self.tested if self.tested else None

    @property
    def excess_p(self) -> float | None:
        """P(at least `flagged` of `tested` controls flagged | each at rate alpha): binomial tail."""
        if not self.tested:
            return None
        from scipy.stats import binom
        return float(binom.sf(self.flagged - 1, self.tested, self.alpha))

    @property
    def trustworthy(self) -> bool:
        """No control arm: trusted as before (nothing measured against). Else the control must not be flagged
        more often than alpha beyond chance: untrustworthy when the binomial tail of the flagged count at rate
        alpha is <= alpha. (The plain share flagged / tested > alpha would condemn a sound campaign with 3
        control cells for one chance flag, 14 % of them at alpha 0.05.)"""
        return not self.tested or self.excess_p > self.alpha

    def line(self) -> str:
        if not self.tested:
            return "control: none measured (no default_control in the runs)"
        spread = f"{100 * self.null_spread:.1f} %" if self.null_spread is not None else "n/a"
        s = (f"control: {self.flagged} of {self.tested} flagged; null ratio spread {spread} "
             f"(raw false alarms {self.flagged_raw} of {self.tested}")
        s += f", {'BH' if self.fdr else 'no FDR'}, alpha {self.alpha:g}, expected <= {self.alpha * self.tested:.1f})"
        if not self.trustworthy:
            s += " -- UNTRUSTWORTHY: the control is flagged more often than alpha; no candidate"
        return s

    def to_dict(self) -> dict:
        d = asdict(self)
        d["per_config"] = {str(k): v for k, v in self.per_config.items()}
        d.update(present=self.present, false_alarm_rate=self.false_alarm_rate, trustworthy=self.trustworthy,
                 line=self.line())
        return d


def _spread(ratios: list[float]) -> float | None:
    dev = np.abs(np.asarray([r for r in ratios if r and math.isfinite(r)], dtype=float) - 1.0)
    if dev.size == 0:
        return None
    if dev.size < 20:
        return float(dev.max())
    return float(np.quantile(dev, QUANTILE, method="higher"))


def control_summary(verdicts, alpha: float, fdr: bool) -> ControlSummary:
    """Summarise the pattern verdicts of the control label (per config and over the whole analysis)."""
    out = ControlSummary(alpha=alpha, fdr=fdr)
    cells, runs = [], []
    per: dict[int, dict] = {}
    for v in verdicts:
        if v.kind != "pattern" or not is_control(v.algorithm) or v.p_value is None:
            continue
        out.tested += 1
        out.flagged += bool(v.violated)
        out.flagged_raw += bool(v.p_value <= alpha)
        pc = per.setdefault(v.cfg, {"tested": 0, "flagged": 0, "flagged_raw": 0, "_cells": [], "_runs": []})
        pc["tested"] += 1
        pc["flagged"] += bool(v.violated)
        pc["flagged_raw"] += bool(v.p_value <= alpha)
        if v.paired_ratio is not None:
            cells.append(v.paired_ratio)
            pc["_cells"].append(v.paired_ratio)
        runs.extend(v.run_ratios or [])
        pc["_runs"].extend(v.run_ratios or [])
    out.null_spread, out.null_run_spread = _spread(cells), _spread(runs)
    for c, pc in per.items():
        pc["null_spread"], pc["null_run_spread"] = _spread(pc.pop("_cells")), _spread(pc.pop("_runs"))
    out.per_config = per
    return out


def run_tolerance(control: ControlSummary | None) -> float:
    """How much one mpirun may show an alternative slower before it counts as a lost launch."""
    if control is not None and control.null_run_spread is not None:
        return max(control.null_run_spread, 0.02)
    return RUN_LOSS_FLOOR


def run_regimes(run_ratios: list[float] | None, tolerance: float) -> dict:
    """Split the mpiruns of a comparison by the per-mpirun ratio default / alternative: faster (> 1 + tol),
    slower (< 1 / (1 + tol)) and even; with the worst (smallest) ratio; and the cost regimes the ratios cluster
    into (regimes.split_regimes: "clusters", its "line" says how the mpiruns split)."""
    rr = [r for r in (run_ratios or []) if math.isfinite(r)]
    faster = sum(r > 1 + tolerance for r in rr)
    slower = sum(r < 1 / (1 + tolerance) for r in rr)
    split = split_regimes(rr, tolerance)
    return {"runs": len(rr), "faster": faster, "slower": slower, "even": len(rr) - faster - slower,
            "worst": min(rr) if rr else None, "best": max(rr) if rr else None, "tolerance": tolerance,
            "clusters": split.to_dict()["regimes"], "line": split.line(),
            "losing_regimes": len(split.losing(tolerance))}


def redirect_refusal(v, control: ControlSummary | None, gain: float, defects: dict | None = None) -> str | None:
    """Why a violated pattern verdict may not become a redirection (None: it may)."""
    if is_control(v.algorithm):
        return f"{v.algorithm}: the control arm is never a redirection"
    if parse_label(v.algorithm) is not None:
        return (f"{v.algorithm}: the MPI library's own algorithm is chosen through its own decision file "
                "(pgmpi_formats.ompi_rules / mpich_json), never a .prf redirection")
    if defects and (v.cfg, v.mpi_name, v.msize, v.algorithm) in defects:
        return f"{v.algorithm}: failed the results check ({defects[(v.cfg, v.mpi_name, v.msize, v.algorithm)]})"
    ratio = v.paired_ratio if v.paired_ratio is not None else v.slowdown
    if not ratio or ratio <= 0:
        return f"{v.algorithm}: no ratio"
    g = 1 - 1 / ratio
    if g < gain:
        return f"{v.algorithm}: gain {g:.1%} < {gain:.0%}"
    if control is not None and control.null_spread is not None and ratio - 1 <= control.null_spread:
        return (f"{v.algorithm}: {ratio:.3f}x is within the control's null ratio spread "
                f"{100 * control.null_spread:.1f} %")
    reg = run_regimes(v.run_ratios, run_tolerance(control))
    if reg["slower"] or reg["losing_regimes"]:
        return (f"{v.algorithm}: slower in {reg['slower']} of {reg['runs']} mpiruns (worst {reg['worst']:.2f}x; "
                f"{reg['line']}); it must win in every regime measured")
    # the gain the interval guarantees, not only the point estimate's
    low = getattr(v, "ci_low", None)
    if low is None:
        return f"{v.algorithm}: no 95 % interval (fewer than two mpiruns measured both cells)"
    if 1 - 1 / low < gain:
        return (f"{v.algorithm}: gain at the 95 % interval's lower bound {1 - 1 / low:.1%} < {gain:.0%} "
                f"({v.effect:.3f}x, 95 % CI {low:.3f}-{v.ci_high:.3f}x, {v.ci_mpiruns} mpiruns)")
    return None


# ---------------------------------------------------------------- results checks

def check_failures(rs, cells) -> dict[tuple[int, str, int, str], str]:
    """(config index, MPI call, msize, algorithm) -> why, from every run's failed check lines."""
    run_cfg = {}
    for c, runs in enumerate(cells.config_runs):
        for r in runs:
            run_cfg[r] = c
    out: dict[tuple[int, str, int, str], str] = {}
    for ri, run in enumerate(rs.runs):
        for chk in records(run.pgmpi_lines, Check):      # `#@pgmpi check <call> <msize> <alg> ok|fail [why]`
            if chk.status == "fail":
                out.setdefault((run_cfg.get(ri, 0), chk.call, chk.msize, chk.algorithm), chk.why or "wrong result")
    return out
