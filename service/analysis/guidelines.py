"""Guideline verification: pattern, monotony and split-robustness verdicts with barrier warnings.

    a = analyze(result_set, alpha=0.05, test="paired_t", fdr=False, split_tolerance=0.05)
    a.verdicts        -> list[Verdict] (every check made, violated or not)
    a.violations()    -> the violated ones;  a.counts() -> brave / cautious counts per kind
    a.control         -> verdicts.ControlSummary (the default_control arm: false alarms, null ratio spread)
    a.defects         -> {(cfg, MPI call, msize, algorithm): why} from failed results checks

Pattern (PGMPI IV-C3): for every collective, size and mock-up, H0 "the default is not slower than the mock-up"
is tested against H1 "the default is slower" with the chosen one-sided test; a rejection at level alpha is a
violation. The paired tests (default) compare, mpirun by mpirun, the two cells' medians of the same mpirun
(stats.paired_log_ratios); the unpaired ones compare the two sets of per-mpirun medians. Monotony (IV-C1): for
adjacent measured sizes m_i < m_j of the default, H1 "T(m_i) is greater than T(m_j)" (paired: in the same
mpirun). Split-robustness (IV-C2): for every size m_j and every smaller m_i, k = ceil(m_j / m_i) (the smallest
multiple with k*m_i >= m_j); violated when T(m_j) / (k T(m_i)) > 1 + tolerance, with the paired tests as the
median over mpiruns of that ratio in each mpirun AND the one-sided paired test of
log(T(m_j) / (k T(m_i))) > log(1 + tolerance) over those mpiruns at alpha (so a split hit is a tested
violation like the others), otherwise on the medians (no test, as the paper does); only the largest
violating m_i is reported for each m_j (PGMPI's rule). With fdr=True the p-values of all pattern, monotony
and split tests of the analysis (one campaign) are Benjamini-Hochberg adjusted and compared against alpha
(then the FDR target).

Barrier warnings (pgchecker thesis ch. 3/4): when MPI_Barrier rows exist, a measured cell is flagged when the
barrier's median at that size >= the cell's median; a verdict is flagged when any cell it compares is.
Brave counting counts every violation; cautious counting drops violations with a barrier warning.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from pgmpi_formats import collectives as _colls
from pgmpi_formats.results import BARRIER, ResultSet
from .stats import (DEFAULT_TEST, PAIRED_TESTS, TESTS, Cells, bh_adjust, build_cells, paired_log_ratios,
                    pvalues_greater, pvalues_paired_greater, ratio_ci)
from . import verdicts as _vd
from .reporting import reporting as _reporting

KINDS = ("pattern", "monotony", "split")


@dataclass
class Verdict:
    kind: str                 # pattern | monotony | split
    cfg: int                  # index into Analysis.cells.configs
    collective: str           # collectives.def key
    mpi_name: str
    msize: int                # pattern: the size; monotony/split: the larger size m_j
    algorithm: str            # pattern: the mock-up; otherwise "default"
    ref_msize: int | None     # monotony/split: the smaller size m_i
    k: int | None             # split: the multiple
    default_median: float     # pattern: default; monotony/split: median at msize (m_j)
    other_median: float       # pattern: mock-up; monotony/split: median at ref_msize (split: k times it)
    default_mean: float
    other_mean: float
    nruns_default: int
    nruns_other: int
    nmeas_default: int
    nmeas_other: int
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    violated: bool
    slowdown: float           # pattern: default/mock-up; monotony: T(m_i)/T(m_j); split: T(m_j)/(k T(m_i))
    barrier_warning: bool | None   # None: no barrier measurements
    barrier_median: float | None
    # paired view: per-mpirun ratio (default / mock-up; monotony T(m_i)/T(m_j); split T(m_j)/(k T(m_i))) in the
    # mpiruns that measured both cells, and its median (None: no common mpirun)
    paired_ratio: float | None = None
    run_ratios: list[float] | None = None
    regime: dict | None = None        # verdicts.run_regimes: how the mpiruns split (faster / even / slower)
    defect: str | None = None         # the mock-up failed pgmpi-bench's results check here
    control: bool = False             # the verdict compares the default with its own control arm
    # effect size with its 95 % interval over the mpiruns (stats.ratio_ci: geometric mean of run_ratios, t on
    # their logs); None without a common mpirun (ci_low/ci_high: None with fewer than two)
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_mpiruns: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        return d


@dataclass
class Analysis:
    cells: Cells
    verdicts: list[Verdict]
    alpha: float
    test: str
    fdr: bool
    split_tolerance: float
    barrier: dict[tuple[int, int], float] = field(default_factory=dict)   # (cfg, msize) -> barrier median
    memory_config: dict[int, dict[str, int]] = field(default_factory=dict)  # cfg -> #@pgmpi config ints
    datatype_bytes: dict[int, int] = field(default_factory=dict)            # cfg -> bytes of #@datatype
    control: _vd.ControlSummary = field(default_factory=_vd.ControlSummary)
    defects: dict[tuple[int, str, int, str], str] = field(default_factory=dict)
    reporting: dict[int, dict] = field(default_factory=dict)   # cfg -> reporting.reporting: stated with figures

    @property
    def configs(self):
        return self.cells.configs

    def violations(self, kind: str | None = None, cautious: bool = False, control: bool = False) -> list[Verdict]:
        """Violated verdicts; the control arm's (false alarms by construction) only with control=True."""
        return [v for v in self.verdicts if v.violated and (kind is None or v.kind == kind)
                and not (cautious and v.barrier_warning) and (control or not v.control)]

    def counts(self) -> dict[str, dict[str, int]]:
        """{kind: {checks, brave, cautious, barrier_warnings}} plus "all" (the control arm is counted apart,
        in Analysis.control)."""
        out = {}
        for kind in KINDS + ("all",):
            vs = [v for v in self.verdicts if (kind == "all" or v.kind == kind) and not v.control]
            out[kind] = {"checks": len(vs), "brave": sum(v.violated for v in vs),
                         "cautious": sum(v.violated and not v.barrier_warning for v in vs),
                         "barrier_warnings": sum(bool(v.barrier_warning) for v in vs)}
        return out

    def guideline_summary(self) -> list[dict]:
        """PGMPI's table per guideline and collective (config by config): checks tested, violated (brave),
        violated without a barrier warning (cautious), and the worst factor among the violations with its
        interval (pattern: default / mock-up; monotony: T(m_i) / T(m_j); split: T(m_j) / (k T(m_i))). The
        control arm is left out (Analysis.control)."""
        rows: dict[tuple, dict] = {}
        for v in self.verdicts:
            if v.control:
                continue
            r = rows.setdefault((v.cfg, v.kind, v.collective), {
                "cfg": v.cfg, "config": self.configs[v.cfg].label, "guideline": v.kind, "collective": v.collective,
                "mpi_name": v.mpi_name, "tested": 0, "violated": 0, "cautious": 0, "worst_factor": None,
                "worst_ci95": None, "worst_at": None})
            r["tested"] += 1
            if not v.violated:
                continue
            r["violated"] += 1
            r["cautious"] += not v.barrier_warning
            f = v.effect if v.effect is not None else v.slowdown
            if f is not None and math.isfinite(f) and (r["worst_factor"] is None or f > r["worst_factor"]):
                r["worst_factor"] = f
                r["worst_ci95"] = [v.ci_low, v.ci_high] if v.ci_low is not None else None
                r["worst_at"] = (f"{v.msize} B vs {v.algorithm}" if v.kind == "pattern" else
                                 f"{v.msize} B vs {v.ref_msize} B" if v.kind == "monotony" else
                                 f"{v.msize} B vs {v.k} x {v.ref_msize} B")
        order = {k: n for n, k in enumerate(KINDS)}
        return sorted(rows.values(), key=lambda r: (r["cfg"], order[r["guideline"]], r["collective"]))

    def to_dict(self) -> dict:
        return {"alpha": self.alpha, "test": self.test, "fdr": self.fdr, "split_tolerance": self.split_tolerance,
                "guideline_summary": self.guideline_summary(),
                "configs": [asdict(c) | {"label": c.label} for c in self.configs],
                "counts": self.counts(), "verdicts": [v.to_dict() for v in self.verdicts],
                "control": self.control.to_dict(),
                "reporting": {str(c): r for c, r in self.reporting.items()},
                "defects": [{"cfg": c, "call": call, "msize": ms, "algorithm": alg, "why": why}
                            for (c, call, ms, alg), why in sorted(self.defects.items())]}


def analyze(rs: ResultSet | Cells, alpha: float = 0.05, test: str = DEFAULT_TEST, fdr: bool = False,
            split_tolerance: float = 0.05, kinds=KINDS) -> Analysis:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; valid: {', '.join(TESTS)}")
    cells = rs if isinstance(rs, Cells) else build_cells(rs)
    mem_cfg: dict[int, dict[str, int]] = {}
    dt_bytes: dict[int, int] = {}
    if isinstance(rs, ResultSet):
        from pgmpi_formats.results import DATATYPE_BYTES
        for ci, runs in enumerate(cells.config_runs):
            for ri in runs:
                dt = rs.runs[ri].header.get("datatype")
                if dt in DATATYPE_BYTES:
                    dt_bytes[ci] = DATATYPE_BYTES[dt]
                for key, val in rs.runs[ri].config.items():
                    if val.strip().isdigit():
                        mem_cfg.setdefault(ci, {})[key] = min(int(val), mem_cfg.get(ci, {}).get(key, int(val)))
    alg_default = cells.algorithms.index("default") if "default" in cells.algorithms else -1
    paired = test in PAIRED_TESTS
    if paired and cells.runs is None:
        raise ValueError(f"the paired test {test!r} needs the mpirun of each median (cells from build_cells)")

    # barrier medians per (cfg, msize)
    barrier: dict[tuple[int, int], float] = {}
    bsel = np.nonzero(cells.coll == BARRIER)[0]
    for i in bsel.tolist():
        key = (int(cells.cfg[i]), int(cells.msize[i]))
        barrier[key] = min(barrier.get(key, np.inf), float(cells.median[i]))
    has_barrier = {c for c, _ in barrier}

    def bwarn(i: int) -> tuple[bool | None, float | None]:
        c = int(cells.cfg[i])
        if c not in has_barrier:
            return None, None
        b = barrier.get((c, int(cells.msize[i])))
        if b is None:
            return None, None
        return bool(b >= cells.median[i]), b

    # group cells of known collectives: (cfg, coll) -> {alg: {msize: cell}}
    groups: dict[tuple[int, int], dict[int, dict[int, int]]] = {}
    for i in np.nonzero(cells.coll >= 0)[0].tolist():
        groups.setdefault((int(cells.cfg[i]), int(cells.coll[i])), {}).setdefault(
            int(cells.alg[i]), {})[int(cells.msize[i])] = i

    pairs: list[tuple[str, int, int, int]] = []      # (kind, cell x (slower under H1), cell y, aux)
    split_verdicts: list[Verdict] = []
    for (c, coll), by_alg in groups.items():
        dflt = by_alg.get(alg_default, {})
        if "pattern" in kinds:
            for a, sizes in by_alg.items():
                if a == alg_default:
                    continue
                for ms, j in sizes.items():
                    if ms in dflt:
                        pairs.append(("pattern", dflt[ms], j, 0))
        sizes_sorted = sorted(dflt)
        if "monotony" in kinds:
            for mi, mj in zip(sizes_sorted, sizes_sorted[1:]):
                pairs.append(("monotony", dflt[mi], dflt[mj], 0))
        if "split" in kinds:
            for jj, mj in enumerate(sizes_sorted):
                cj = dflt[mj]
                chosen = None
                sp = sst = None
                for mi in reversed(sizes_sorted[:jj]):      # largest smaller size first
                    if mi <= 0:
                        continue
                    k = -(-mj // mi)
                    ci = dflt[mi]
                    if _split_ratio(cells, cj, ci, k, paired) > 1 + split_tolerance:
                        if paired:
                            # and significantly so, in the same mpiruns: H1 log(T(m_j) / (k T(m_i))) > log(1 + tol)
                            dd, _ = paired_log_ratios(cells, cj, ci)
                            pp, ss = pvalues_paired_greater([dd - math.log(k) - math.log1p(split_tolerance)], test)
                            if not (np.isfinite(pp[0]) and pp[0] <= alpha):
                                continue
                            sp, sst = float(pp[0]), float(ss[0])
                        chosen = (mi, k, ci)
                        break
                if chosen is None and jj > 0:
                    # record the check at the adjacent smaller size as passed
                    mi = sizes_sorted[jj - 1]
                    if mi > 0:
                        chosen = (mi, -(-mj // mi), dflt[mi])
                        violated = False
                    else:
                        continue
                elif chosen is None:
                    continue
                else:
                    violated = True
                mi, k, ci = chosen
                w1, b1 = bwarn(cj)
                w2, _ = bwarn(ci)
                d, _ = paired_log_ratios(cells, cj, ci)
                sv = _verdict(cells, "split", c, coll, cj, ci, "default", mi, k, sst if violated else None,
                              sp if violated else None, violated, cells.median[cj] / (k * cells.median[ci]),
                              _or(w1, w2), b1, other_scale=k)
                _set_paired(sv, d - math.log(k))
                split_verdicts.append(sv)
    # per-mpirun log ratios x / y of every tested pair (also kept with an unpaired test: the gain and regime
    # rules of verdicts.redirect_refusal use them)
    ds = [paired_log_ratios(cells, x, y)[0] for _, x, y, _ in pairs]
    if paired:
        p, stat = pvalues_paired_greater(ds, test)
    else:
        p, stat = pvalues_greater([cells.sample(x) for _, x, _, _ in pairs],
                                  [cells.sample(y) for _, _, y, _ in pairs], test)
    # a cell whose median is not > 0 measured nothing (timings of 0: below the clock's resolution, or a
    # broken run): its comparisons are not testable (p = nan, never violated), not a division by zero later
    measured = np.array([cells.median[x] > 0 and cells.median[y] > 0 for _, x, y, _ in pairs], dtype=bool)
    p = np.where(measured, p, np.nan) if len(pairs) else p
    # one BH family per analysis: pattern, monotony and the split tests (their chosen pairs)
    sp_all = np.array([v.p_value if v.p_value is not None else np.nan for v in split_verdicts], dtype=float)
    padj_all = bh_adjust(np.r_[p, sp_all]) if fdr else np.full(len(p) + len(sp_all), np.nan)
    padj = padj_all[:len(p)]
    if fdr:
        for v, q in zip(split_verdicts, padj_all[len(p):]):
            if v.p_value is not None:
                v.p_adjusted = float(q)
                v.violated = bool(q <= alpha)
    decide = padj if fdr else p
    verdicts: list[Verdict] = []
    for t, (kind, x, y, _) in enumerate(pairs):
        c, coll = int(cells.cfg[x]), int(cells.coll[x])
        violated = bool(np.isfinite(decide[t]) and decide[t] <= alpha)
        wx, bx = bwarn(x)
        wy, _ = bwarn(y)
        if kind == "pattern":
            alg = cells.algorithms[int(cells.alg[y])]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = cells.median[x] / cells.median[y]
            v = _verdict(cells, "pattern", c, coll, x, y, alg, None, None, stat[t], p[t], violated,
                         ratio, _or(wx, wy), bx, padj=padj[t])
            v.control = _vd.is_control(alg)
        else:   # monotony: x = smaller size (slower under H1), y = larger size
            wy2, by = bwarn(y)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = cells.median[x] / cells.median[y]
            v = _verdict(cells, "monotony", c, coll, y, x, "default", int(cells.msize[x]), None,
                         stat[t], p[t], violated, ratio, _or(wx, wy2), by, padj=padj[t])
        _set_paired(v, ds[t])
        verdicts.append(v)
    verdicts.extend(split_verdicts)
    order = {k: n for n, k in enumerate(KINDS)}
    verdicts.sort(key=lambda v: (v.cfg, v.collective, order[v.kind], v.msize, v.algorithm))
    control = _vd.control_summary(verdicts, alpha, fdr)
    tol = _vd.run_tolerance(control)
    defects = _vd.check_failures(rs, cells) if isinstance(rs, ResultSet) else {}
    for v in verdicts:
        if v.run_ratios:
            v.regime = _vd.run_regimes(v.run_ratios, tol)
        if v.kind == "pattern":
            v.defect = defects.get((v.cfg, v.mpi_name, v.msize, v.algorithm))
    return Analysis(cells=cells, verdicts=verdicts, alpha=alpha, test=test, fdr=fdr,
                    split_tolerance=split_tolerance, barrier=barrier, memory_config=mem_cfg,
                    datatype_bytes=dt_bytes, control=control, defects=defects,
                    reporting=_reporting(rs if isinstance(rs, ResultSet) else None, cells, defects))


def _set_paired(v: Verdict, d: np.ndarray) -> None:
    if d.size:
        v.run_ratios = [float(r) for r in np.exp(d)]
        v.paired_ratio = float(np.exp(np.median(d)))
        ci = ratio_ci(d)
        v.effect, v.ci_low, v.ci_high, v.ci_mpiruns = ci.effect, ci.low, ci.high, ci.mpiruns


def _split_ratio(cells: Cells, cj: int, ci: int, k: int, paired: bool) -> float:
    """T(m_j) / (k T(m_i)): median over mpiruns of the ratio in each mpirun (paired), else of the medians."""
    if paired:
        d, _ = paired_log_ratios(cells, cj, ci)
        if d.size:
            return float(np.exp(np.median(d))) / k
    return float(cells.median[cj] / (k * cells.median[ci]))


def _or(a, b):
    if a is None and b is None:
        return None
    return bool(a) or bool(b)


def _f(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _verdict(cells: Cells, kind, c, coll, main, other, alg, ref, k, stat, p, violated, slowdown, warn, bmed,
             padj=None, other_scale=1) -> Verdict:
    col = _colls.COLLECTIVES[coll]
    return Verdict(kind=kind, cfg=c, collective=col.key, mpi_name=col.mpi_name, msize=int(cells.msize[main]),
                   algorithm=alg, ref_msize=ref, k=k, default_median=float(cells.median[main]),
                   other_median=float(cells.median[other]) * other_scale, default_mean=float(cells.mean[main]),
                   other_mean=float(cells.mean[other]) * other_scale, nruns_default=int(cells.nruns[main]),
                   nruns_other=int(cells.nruns[other]), nmeas_default=int(cells.nmeas[main]),
                   nmeas_other=int(cells.nmeas[other]), statistic=_f(stat), p_value=_f(p), p_adjusted=_f(padj),
                   violated=bool(violated), slowdown=float(slowdown), barrier_warning=warn,
                   barrier_median=_f(bmed))
