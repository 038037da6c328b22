"""Per-mpirun medians, cells and one-sided two-sample tests (numpy + scipy.stats).

    cells = build_cells(result_set)          # one cell per (config, call, msize, algorithm)
    cells.sample(i) -> np.ndarray            # the R per-mpirun medians of cell i (one per mpirun)
    pvalues_greater(xs, ys, test="mannwhitney") -> np.ndarray   # H1: x stochastically greater (slower) than y
    bh_adjust(pvalues) -> np.ndarray         # Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control)

A *config* is one (machine, mpi_library, mpi_version, nprocs, nodes, ppn, layout): the same p on 1x4 and 2x2
are two configs, never mixed. Following PGMPI (paper IV-C), the
measurements of one (mpirun, call, msize, algorithm) are first reduced to their median; the R medians of the
R mpiruns form the sample a test compares. Tests: "mannwhitney" (Wilcoxon rank-sum / Mann-Whitney U, default),
"welch" (Welch's t-test), "ks" (two-sample Kolmogorov-Smirnov); all one-sided.

Paired tests (the default): the mpirun-to-mpirun drift of a node (7-19 % here) is shared by every algorithm
measured interleaved in one mpirun, while the ratio of two algorithms in one mpirun varies by 1-3 %. So the
sample of a comparison is d_r = log(median_r(x) / median_r(y)) over the mpiruns r that measured both cells;
"paired_t" is the one-sample t-test of mean(d) > 0, "wilcoxon" the Wilcoxon signed-rank test of d > 0
(scipy.stats.ttest_1samp / wilcoxon, one-sided).

    d, runs = paired_log_ratios(cells, x, y)           # per-mpirun log(x / y) over the mpiruns both measured
    pvalues_paired_greater(ds, test="paired_t")        # H1: x slower than y (d > 0), per list entry
    ci = ratio_ci(d)                                   # effect size with its 95 % interval over the mpiruns

Intervals (ratio_ci, the one method of the analysis, README.md "Intervals"): the effect of a comparison is the
geometric mean over mpiruns of the per-mpirun ratio, exp(mean d), and its 95 % confidence interval is Student's
t interval on the mean of d, exp(mean d +- t_{n-1, 0.975} s_d / sqrt(n)) (scipy.stats.t), n = the mpiruns
that measured both cells. One mpirun gives no interval (None); identical ratios in every mpirun give the
point itself. The mpirun is the unit, as in the tests: the measurements inside one mpirun are not independent
draws of what the next launch will show.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from pgmpi_formats.results import ResultSet

# Paired tests (on the per-mpirun log ratios of two cells of the same mpiruns) first; "paired_t" is the default
# (README.md, "Paired verdicts", and tests/bench/analysis_power.py for the measurement behind the choice).
PAIRED_TESTS = ("paired_t", "wilcoxon")
UNPAIRED_TESTS = ("mannwhitney", "welch", "ks")
TESTS = PAIRED_TESTS + UNPAIRED_TESTS
DEFAULT_TEST = "paired_t"


@dataclass
class Config:
    machine: str
    library: str
    version: str
    nprocs: int
    nodes: int
    ppn: int
    layout: str = ""        # pgmpi_formats.layouts: "2x2", "3+2", "2x2-interleaved"; "" unknown
    # the measurement method (pgmpi_formats.results.sync_method): runs of different methods are different
    # configs, so no verdict ever pairs or pools their cells
    sync: str = ""

    @property
    def label(self) -> str:
        v = f"-{self.version}" if self.version else ""
        lay = f" ({self.layout})" if self.layout else ""
        # pgmpi-bench's default (dissemination barrier) and an unknown method keep the plain label
        sy = f" [{self.sync}]" if self.sync not in ("", "dissem_barrier") else ""
        return f"{self.machine} {self.library}{v} p={self.nprocs}{lay}{sy}"


@dataclass
class Cells:
    """Columnar table of cells; the samples (per-mpirun medians) are stored CSR-style."""
    configs: list[Config]
    tests: list[str]          # call names (from the ResultSet)
    algorithms: list[str]
    cfg: np.ndarray           # config index per cell
    coll: np.ndarray          # collectives.def id, BARRIER or OTHER
    test: np.ndarray          # call-name code
    msize: np.ndarray
    alg: np.ndarray           # algorithm code
    median: np.ndarray        # median of the per-mpirun medians
    mean: np.ndarray          # mean over all raw measurements of the cell
    nmeas: np.ndarray         # number of raw measurements
    nruns: np.ndarray         # number of mpiruns (= sample size)
    offsets: np.ndarray       # sample of cell i = values[offsets[i]:offsets[i+1]]
    values: np.ndarray        # per-mpirun medians, grouped by cell
    config_runs: list[list[int]]   # run indices (into ResultSet.runs) per config
    runs: np.ndarray | None = None  # run index (into ResultSet.runs) of each entry of `values`

    def __len__(self) -> int:
        return int(self.cfg.shape[0])

    def sample(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i]:self.offsets[i + 1]]

    def sample_runs(self, i: int) -> np.ndarray:
        """The run index of each value of sample(i) (same order)."""
        return self.runs[self.offsets[i]:self.offsets[i + 1]]

    def index(self) -> dict[tuple[int, int, int, int], int]:
        """(cfg, test code, msize, alg code) -> cell index."""
        return {k: i for i, k in enumerate(zip(self.cfg.tolist(), self.test.tolist(), self.msize.tolist(),
                                               self.alg.tolist()))}


def refuse_mixed_methods(configs: list[Config]) -> None:
    """ValueError when two configs differ only in their measurement method: one profile, one stored verdict
    per (library, p, layout) cannot stand for figures that mean different things (a barrier run-time is the
    longest rank's own duration, a window run-time spans the ranks' global start and end). Each campaign
    measures with one method (scheduler campaign `sync:`); analyse them separately."""
    seen: dict[tuple, Config] = {}
    for c in configs:
        k = (c.machine, c.library, c.version, c.nprocs, c.nodes, c.ppn, c.layout)
        o = seen.setdefault(k, c)
        if o.sync != c.sync:
            raise ValueError(f"{c.machine} {c.library} p={c.nprocs}: runs measured with different synchronisation "
                             f"methods ({o.sync or 'unknown'} and {c.sync or 'unknown'}); their verdicts are never "
                             "mixed: analyse each method's runs on their own (one campaign per method)")


def _group_starts(sorted_keys: list[np.ndarray]) -> np.ndarray:
    n = sorted_keys[0].shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    return np.nonzero(change)[0]


def _segment_medians(vals_sorted: np.ndarray, starts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    ends = np.r_[starts[1:], n]
    lens = ends - starts
    lo = starts + (lens - 1) // 2
    hi = starts + lens // 2
    return (vals_sorted[lo] + vals_sorted[hi]) * 0.5, lens


def build_cells(rs: ResultSet) -> Cells:
    # configs of the runs
    cfg_keys: dict[tuple, int] = {}
    run_cfg = np.zeros(len(rs.runs), dtype=np.int64)
    configs: list[Config] = []
    config_runs: list[list[int]] = []
    for ri in range(len(rs.runs)):
        key = (rs.machines[rs.run_machine[ri]], rs.libraries[rs.run_library[ri]], rs.versions[rs.run_version[ri]],
               int(rs.run_nprocs[ri]), int(rs.run_nodes[ri]), int(rs.run_ppn[ri]), rs.runs[ri].layout,
               rs.runs[ri].sync)
        if key not in cfg_keys:
            cfg_keys[key] = len(configs)
            configs.append(Config(*key))
            config_runs.append([])
        run_cfg[ri] = cfg_keys[key]
        config_runs[cfg_keys[key]].append(ri)

    n = len(rs)
    # 1) per-(run, test, alg, msize) medians: one composite int64 key, then sort by (key, runtime)
    sizes, size_code = np.unique(rs.msize, return_inverse=True)
    nt, na, ns = max(len(rs.tests), 1), max(len(rs.algorithms), 1), max(len(sizes), 1)
    key = ((rs.run.astype(np.int64) * nt + rs.test) * na + rs.algorithm) * ns + size_code.reshape(-1)
    order = np.lexsort((rs.runtime, key))
    key_s, rt_s = key[order], rs.runtime[order]
    starts = _group_starts([key_s])
    med, cnt = _segment_medians(rt_s, starts, n)
    sums = np.add.reduceat(rt_s, starts) if n else np.zeros(0)
    gk = key_s[starts]
    g_size_code = gk % ns
    gk //= ns
    g_alg = gk % na
    gk //= na
    g_test = gk % nt
    g_run = gk // nt
    g_msize = sizes[g_size_code] if n else np.zeros(0, dtype=np.int64)
    g_cfg = run_cfg[g_run] if n else np.zeros(0, dtype=np.int64)

    # 2) cells = (cfg, test, msize, alg); sample = medians over runs
    order2 = np.lexsort((med, g_msize, g_alg, g_test, g_cfg))
    c_cfg, c_test, c_alg, c_msize, c_med = g_cfg[order2], g_test[order2], g_alg[order2], g_msize[order2], med[order2]
    c_run = g_run[order2] if n else np.zeros(0, dtype=np.int64)
    c_cnt, c_sum = cnt[order2], sums[order2]
    m = c_cfg.shape[0]
    cstarts = _group_starts([c_cfg, c_test, c_alg, c_msize]) if m else np.zeros(0, dtype=np.int64)
    cell_median, nruns = _segment_medians(c_med, cstarts, m) if m else (np.zeros(0), np.zeros(0, dtype=np.int64))
    nmeas = np.add.reduceat(c_cnt, cstarts) if m else np.zeros(0, dtype=np.int64)
    tot = np.add.reduceat(c_sum, cstarts) if m else np.zeros(0)
    from pgmpi_formats.results import _coll_id
    coll_of_test = np.array([_coll_id(t) for t in rs.tests] or [0], dtype=np.int16)
    test_codes = c_test[cstarts]
    return Cells(configs=configs, tests=list(rs.tests), algorithms=list(rs.algorithms),
                 cfg=c_cfg[cstarts], coll=coll_of_test[test_codes] if m else np.zeros(0, dtype=np.int16),
                 test=test_codes, msize=c_msize[cstarts], alg=c_alg[cstarts], median=cell_median, mean=tot / nmeas
                 if m else np.zeros(0), nmeas=nmeas, nruns=nruns, offsets=np.r_[cstarts, m].astype(np.int64),
                 values=c_med, config_runs=config_runs, runs=c_run)


def pvalues_greater(xs: list[np.ndarray], ys: list[np.ndarray], test: str = "mannwhitney") -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values and statistics for H1 "x is stochastically greater (slower) than y", pairwise.

    Pairs with the same sample sizes are tested in one vectorised scipy call. A pair with fewer than two
    values on a side gets p = nan (no verdict)."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; valid: {', '.join(TESTS)}")
    k = len(xs)
    p = np.full(k, np.nan)
    stat = np.full(k, np.nan)
    groups: dict[tuple[int, int], list[int]] = {}
    for i in range(k):
        nx, ny = len(xs[i]), len(ys[i])
        if nx >= 2 and ny >= 2:
            groups.setdefault((nx, ny), []).append(i)
    for (nx, ny), idx in groups.items():
        X = np.stack([xs[i] for i in idx])
        Y = np.stack([ys[i] for i in idx])
        with np.errstate(all="ignore"):
            if test == "mannwhitney":
                r = _st.mannwhitneyu(X, Y, alternative="greater", axis=1)
            elif test == "welch":
                r = _st.ttest_ind(X, Y, equal_var=False, alternative="greater", axis=1)
            else:
                # x slower <=> the CDF of x lies below the CDF of y somewhere
                r = _st.ks_2samp(X, Y, alternative="less", axis=1)
        pv = np.asarray(r.pvalue, dtype=float).reshape(-1)
        sv = np.asarray(r.statistic, dtype=float).reshape(-1)
        if test == "welch":
            # identical constant samples give nan; no evidence of a difference
            same = np.all(X == X[:, :1], axis=1) & np.all(Y == Y[:, :1], axis=1)
            pv = np.where(same & np.isnan(pv), np.where(X[:, 0] > Y[:, 0], 0.0, 1.0), pv)
        p[idx] = pv
        stat[idx] = sv
    return p, stat


def paired_log_ratios(cells: Cells, x: int, y: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-mpirun log(median_x / median_y) over the mpiruns that measured both cells, and those runs."""
    rx, ry = cells.sample_runs(x), cells.sample_runs(y)
    common, ix, iy = np.intersect1d(rx, ry, assume_unique=True, return_indices=True)
    vx, vy = cells.sample(x)[ix], cells.sample(y)[iy]
    ok = (vx > 0) & (vy > 0)
    return np.log(vx[ok]) - np.log(vy[ok]), common[ok]


def pvalues_paired_greater(ds: list[np.ndarray], test: str = DEFAULT_TEST) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values and statistics for H1 "d > 0" (x slower than y in the same mpiruns), per entry.

    Entries with the same length are tested in one vectorised scipy call; fewer than two values give nan.
    A sample whose values are all equal (no spread) gets p = 0 when they are > 0, else 1."""
    if test not in PAIRED_TESTS:
        raise ValueError(f"unknown paired test {test!r}; valid: {', '.join(PAIRED_TESTS)}")
    k = len(ds)
    p = np.full(k, np.nan)
    stat = np.full(k, np.nan)
    groups: dict[int, list[int]] = {}
    for i in range(k):
        if len(ds[i]) >= 2:
            groups.setdefault(len(ds[i]), []).append(i)
    for n, idx in groups.items():
        D = np.stack([ds[i] for i in idx])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            # identical values (flat below) make scipy warn about precision; their p is set below
            warnings.simplefilter("ignore", RuntimeWarning)
            if test == "paired_t":
                r = _st.ttest_1samp(D, 0.0, alternative="greater", axis=1)
            else:
                r = _st.wilcoxon(D, alternative="greater", axis=1, zero_method="zsplit")
        pv = np.asarray(r.pvalue, dtype=float).reshape(-1)
        sv = np.asarray(r.statistic, dtype=float).reshape(-1)
        flat = np.all(D == D[:, :1], axis=1)
        pv = np.where(flat, np.where(D[:, 0] > 0, 0.0, 1.0), pv)
        p[idx] = pv
        stat[idx] = sv
    return p, stat


CI_LEVEL = 0.95
CI_METHOD = "t interval on per-mpirun log paired ratios (geometric mean over mpiruns)"


@dataclass
class RatioCI:
    effect: float | None          # exp(mean d): geometric mean of the per-mpirun ratios
    low: float | None
    high: float | None
    mpiruns: int
    level: float = CI_LEVEL
    method: str = CI_METHOD

    def to_dict(self) -> dict:
        return {"effect": self.effect, "ci_low": self.low, "ci_high": self.high, "ci_mpiruns": self.mpiruns,
                "ci_level": self.level, "ci_method": self.method}

    def text(self, unit: str = "x") -> str:
        """'1.42x (95 % CI 1.31-1.55x, 10 mpiruns)'; without an interval '1.42x (1 mpirun, no interval)'."""
        if self.effect is None:
            return "no ratio"
        if self.low is None:
            return f"{self.effect:.3g}{unit} ({self.mpiruns} mpirun{'s' if self.mpiruns != 1 else ''}, no interval)"
        return (f"{self.effect:.3g}{unit} ({100 * self.level:.0f} % CI {self.low:.3g}-{self.high:.3g}{unit}, "
                f"{self.mpiruns} mpiruns)")


def ratio_ci(d, level: float = CI_LEVEL) -> RatioCI:
    """Effect (geometric mean ratio) and its t interval from per-mpirun log ratios d (module doc)."""
    d = np.asarray([x for x in np.asarray(d, dtype=float).reshape(-1) if np.isfinite(x)])
    n = int(d.size)
    if n == 0:
        return RatioCI(None, None, None, 0, level)
    m = float(d.mean())
    if n < 2:
        return RatioCI(math.exp(m), None, None, n, level)
    s = float(d.std(ddof=1))
    half = float(_st.t.ppf(0.5 + level / 2, n - 1)) * s / math.sqrt(n) if s > 0 else 0.0
    return RatioCI(math.exp(m), math.exp(m - half), math.exp(m + half), n, level)


def ratios_ci(ratios, level: float = CI_LEVEL) -> RatioCI:
    """ratio_ci of per-mpirun ratios (the logs of the positive ones)."""
    return ratio_ci([math.log(r) for r in (ratios or []) if r is not None and r > 0 and math.isfinite(r)], level)


def bh_adjust(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values; nan entries stay nan and do not count as tests."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = _st.false_discovery_control(p[ok], method="bh")
    return out
