"""One decision per call: per (collective, size, p) the fastest of the default, the MPI library's own
algorithms and the mock-ups, with the paired statistics the verdicts use (service/analysis/stats.py,
verdicts.py, regimes.py), written as the library's own decision file *or* a `.prf` range, never both.

    runs = [{"default": 1.2e-5, "native:binomial": 1.0e-5, "default_control": 1.21e-5, ...}, ...]  # per mpirun
    cells = {(key, size, p): runs}
    result = decide(cells, alpha=0.05, min_gain=0.05)
    result.decisions[(key, size, p)].choice / .reason / .candidates
    result.native_decisions() -> [ompi_rules.Decision]   # for ompi_rules.write_rules / mpich_json.generate
    result.prf_ranges() -> {(key, p): [(first, last, mock-up)]}   # for pgmpi_formats.prf.format_prf

A candidate wins only when (1) the one-sided paired t-test of log(default / candidate) over the mpiruns that
measured both is significant at alpha, (2) its paired ratio beats the default by more than both min_gain and
the campaign's null spread at the cell's size class (the control arm: default / default_control per mpirun,
95th percentile of |r - 1| over the campaign's cells of that class, SIZE_CLASSES: < 1 KiB, < 64 KiB, larger;
a class where the campaign measured no control arm takes the spread over all its cells),
(3) no mpirun regime of it loses by more than that tolerance (regimes.split_regimes), (4) the lower bound of
its 95 % interval over mpiruns (stats.ratio_ci) beats that threshold too, and (5) it passed
pgmpi-bench's results check (a failed variant has no rows: it is no candidate).  The fastest winner by paired
ratio is the choice; otherwise the default.

Two passes.  The first judges every candidate on the runs under no decision file and fixes the native file:
per cell the fastest winning native algorithm, unless a mock-up whose parts no native choice touches beats it
(the cell is the .prf's; never both).  A mock-up whose parts that file retunes (any of its parts' collectives
has a native choice at this p) was measured with the library's default for its parts, so its measurement no
longer says what it will cost.  The second pass judges mock-ups on the runs measured under exactly that file
(`Run.native_file`, pgmpi-bench's #@native_file_fnv1a64, compared with `file_digest` of the text written;
a campaign module's native_file runs them so), against the default there, which is the file's choice, with
those runs' own control arm; runs under any other file are ignored.  A mock-up with retuned parts and no such
run is refused.  A mock-up that wins under the file where the file has a native choice takes the call, and
the file keeps its rule (the file is the one it was measured under).

A gapless file (Intel MPI's native.impi: once a variable is set, a size outside its ranges does not keep the
library's default) holds a collective only where it sets a preset at every size measured at a p: there each size
where the default won is filled with a preset measured as fast as the default (fill_candidate; the cell's
choice, `fill`), and a collective with a size no preset fills is left to the library (native_file.left_to_library).
What may change in the results is docs/native-result-bits.md's.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from pgmpi_formats import native_file
from pgmpi_formats.arms import TUNED
from pgmpi_formats.collectives import KEYS
from pgmpi_formats.native import parse_label
from pgmpi_formats.native_search import WARMUP_BYTES

from .regimes import split_regimes
from .stats import pvalues_paired_greater, ratio_ci
from .verdicts import CONTROL, QUANTILE, RUN_LOSS_FLOOR


@dataclass
class Candidate:
    label: str
    kind: str                        # default | native | mockup
    median: float                    # median over mpiruns of the per-mpirun medians
    runs: int                        # mpiruns that measured it
    paired_ratio: float | None = None      # median over mpiruns of default / candidate (same mpirun)
    run_ratios: list[float] = field(default_factory=list)
    p_value: float | None = None
    ci: tuple[float, float] | None = None  # 95 % t interval of the paired ratio (geometric)
    regimes: str = ""
    refused: str | None = None       # why it cannot win (None: it may)
    under: str | None = None         # judged on the runs under this native file (its digest): second pass
    fill: str | None = None          # why it stands in for the default at a size the default won (fill_candidate)


@dataclass
class CellDecision:
    key: str
    size: int
    nprocs: int
    choice: str                      # default | native:... | <key>_as_...
    kind: str
    reason: str
    candidates: list[Candidate]
    left_to_library: bool = False    # a native choice won here, but the file leaves the collective to the library
    fill: bool = False               # the default won here; a gapless file runs this preset, measured as fast


def kind_of(label: str) -> str:
    """default (the control arm too), native or mockup; the validation arm `tuned` is measured with a profile
    loaded and never reaches a cell (pgmpi_formats.arms; the readers of cells leave it out)."""
    if label in ("default", CONTROL):
        return "default"
    return "native" if parse_label(label) else "mockup"


def mockup_parts(label: str) -> set[str]:
    """The collectives a mock-up calls, from its name (<key>_as_<part>_<part>...; lib/docs/mockup-names.md)."""
    _, _, rest = label.partition("_as_")
    return {t for t in rest.split("_") if t in KEYS}


def null_spread(cells: dict) -> float:
    """The control arm's spread: 95th percentile (the largest below 20 cells) of |r - 1| over the per-mpirun
    ratios default / default_control of every cell (0 without a control arm)."""
    dev = sorted(abs(r["default"] / r[CONTROL] - 1) for runs in cells.values() for r in runs
                 if CONTROL in r and "default" in r and r[CONTROL] > 0)
    if not dev:
        return 0.0
    return dev[-1] if len(dev) < 20 else float(np.quantile(dev, QUANTILE))


# Size classes of the threshold (rule 2): the control arm's spread is taken per class, since two medians of
# the same algorithm at a few hundred nanoseconds differ far more than at a few milliseconds, and a campaign
# measures its control arm where its design puts it -- every cell (exhaustive) or only the cells it confirms
# (a race: mostly the noisy small ones).  One spread over all cells made the threshold depend on that mix.
SIZE_CLASSES = (1024, 65536)            # < 1 KiB, 1 KiB - < 64 KiB, >= 64 KiB


def size_class(size: int) -> int:
    return sum(size >= b for b in SIZE_CLASSES)


def null_spreads(cells: dict) -> dict[int, float]:
    """{size class: null_spread of the cells of that class}; a class without a control-arm ratio takes the
    spread over every cell (the campaign's), so no class is judged without one."""
    every = null_spread(cells)
    out = {}
    for k in range(len(SIZE_CLASSES) + 1):
        part = {c: runs for c, runs in cells.items() if size_class(c[1]) == k}
        has = any(CONTROL in r and "default" in r for runs in part.values() for r in runs)
        out[k] = null_spread(part) if has else every
    return out


def _candidate(label: str, runs: list[dict]) -> Candidate:
    mine = [r[label] for r in runs if label in r and math.isfinite(r[label])]
    c = Candidate(label, kind_of(label), statistics.median(mine) if mine else math.inf, len(mine))
    if label == "default" or not mine:
        return c
    c.run_ratios = [r["default"] / r[label] for r in runs if label in r and "default" in r and r[label] > 0]
    if c.run_ratios:
        c.paired_ratio = statistics.median(c.run_ratios)
        d = np.log(np.array(c.run_ratios))
        p, _ = pvalues_paired_greater([d])
        c.p_value = None if math.isnan(p[0]) else float(p[0])
        ci = ratio_ci(d)            # the analysis' one interval method (stats.ratio_ci)
        if ci.low is not None:
            c.ci = (ci.low, ci.high)
    return c


@dataclass
class Result:
    decisions: dict = field(default_factory=dict)      # (key, size, p) -> CellDecision
    tolerance: float = RUN_LOSS_FLOOR
    threshold: float = 0.0
    spread: float = 0.0                                # the control arm's null spread, largest of the classes
    spreads: dict = field(default_factory=dict)        # size class -> its null spread (null_spreads)
    min_gain: float = 0.05
    file: list = field(default_factory=list)           # [ompi_rules.Decision]: the native file's choices
    file_digest: str | None = None                     # the digest its text has (decide's file_digest)
    spread_under_file: float = 0.0                     # the second pass's control arm null spread
    left_to_library: dict = field(default_factory=dict)  # {collective: why} the file cannot hold (decide's library)

    def at(self, size: int) -> "Result":
        """The thresholds that judge a cell of this size: its size class's spread (rule 2)."""
        sp = self.spreads.get(size_class(size), self.spread)
        return Result(tolerance=max(RUN_LOSS_FLOOR, sp), threshold=max(self.min_gain, sp), spread=sp)

    def spread_line(self) -> str:
        names = ("< 1 KiB", "1-64 KiB", ">= 64 KiB")
        return ", ".join(f"{names[k]} {100 * v:.1f} %" for k, v in sorted(self.spreads.items()))

    def native_decisions(self):
        """The native file: per cell the fastest winning native algorithm, else "default" -- fixed before the
        second pass, so the file written is the one the second pass's mock-ups were measured under."""
        return list(self.file)

    def prf_ranges(self) -> dict:
        """Consecutive measured sizes with the same winning mock-up merge into one inclusive range."""
        out: dict = {}
        by = {}
        for d in sorted(self.decisions.values(), key=lambda d: (d.key, d.nprocs, d.size)):
            by.setdefault((d.key, d.nprocs), []).append(d)
        for kp, ds in by.items():
            ranges = []
            for prev, d in zip([None] + ds[:-1], ds):
                if d.kind != "mockup":
                    continue
                if ranges and prev is not None and prev.kind == "mockup" and ranges[-1][2] == d.choice:
                    ranges[-1] = (ranges[-1][0], d.size, d.choice)
                else:
                    ranges.append((d.size, d.size, d.choice))
            if ranges:
                out[kp] = ranges
        return out


def _judge(c: Candidate, alpha: float, res: Result, why_refused: str | None = None) -> None:
    """The verdict rules of the module doc on one candidate (sets c.refused, c.regimes)."""
    if c.label == "default":
        return
    if why_refused:
        c.refused = why_refused
    elif c.runs == 0:
        c.refused = "no measurement (failed pgmpi-bench's results check)"
    elif c.p_value is None:
        c.refused = f"no paired test: {len(c.run_ratios)} mpirun(s) measured it with the default (need 2)"
    elif c.p_value > alpha:
        c.refused = f"not significant: p = {c.p_value:.3g} > alpha {alpha}"
    elif c.paired_ratio - 1 <= res.threshold:
        c.refused = (f"gain {100 * (c.paired_ratio - 1):.1f} % <= {100 * res.threshold:.1f} % "
                     f"(max of min_gain and the control arm's null spread at this size class)")
    else:
        rg = split_regimes(c.run_ratios, res.tolerance)
        c.regimes = rg.line()
        if rg.losing(res.tolerance):
            c.refused = f"loses in some mpiruns ({rg.line()})"
        elif c.ci is None or c.ci[0] - 1 <= res.threshold:
            # the gain the 95 % interval guarantees, not only the point estimate's
            c.refused = (f"gain at the 95 % interval's lower bound "
                         f"{100 * (c.ci[0] - 1) if c.ci else float('nan'):.1f} % <= {100 * res.threshold:.1f} % "
                         f"(CI {c.ci[0]:.3f}-{c.ci[1]:.3f}x over {len(c.run_ratios)} mpiruns)" if c.ci else
                         "no 95 % interval (fewer than two mpiruns)")
    if not c.regimes and c.run_ratios:
        c.regimes = split_regimes(c.run_ratios, res.tolerance).line()


def fill_candidate(cands: list[Candidate], size: int, res: Result, refused_here: bool) -> Candidate | None:
    """The preset a gapless file (Intel MPI's native.impi) runs at a size where the default won, so that the
    collective can keep its ranges where a preset won (native_file.FORMATS; docs/native-result-bits.md): among
    the native candidates measured there, passed pgmpi-bench's results check and not refused by a validation
    job, those measured as fast as the default -- the lower bound of the 95 % interval of the paired ratio
    default / candidate over mpiruns (stats.ratio_ci) not below 1 / (1 + the control arm's null spread at this
    size class), and no mpirun regime losing by more than the decision's tolerance (rule 3) -- the fastest by
    paired ratio.  None when none is, or when a validation job refused a native choice at this cell
    (refused_here): what validation drops goes back to the library, as without fills."""
    if refused_here:
        return None
    at = res.at(size)
    ok = [c for c in cands if c.kind == "native" and c.runs > 0 and c.ci is not None and c.paired_ratio
          and c.ci[0] >= 1 / (1 + at.spread) and not split_regimes(c.run_ratios, at.tolerance).losing(at.tolerance)]
    return max(ok, key=lambda c: (c.paired_ratio, c.ci[0])) if ok else None


def decide(cells: dict, alpha: float = 0.05, min_gain: float = 0.05, refused: dict | None = None,
           file_digest=None, library: str | None = None, fill: bool = True) -> Result:
    """cells: {(key, size, p): [per-mpirun {label: median seconds}]} -> Result (module doc).  refused:
    {(key, size, p, label): reason} -- candidates an independent measurement contradicted (a native file's
    validation job, validation_refusals): they cannot win, the cell falls to the next candidate.
    file_digest(native decisions) -> the digest (pgmpi_formats.native.file_digest) of the library's file
    written from them: runs measured under exactly that file (Run.native_file) judge the mock-ups (second
    pass, module doc); without it, or without such runs, no mock-up with retuned parts can win.
    library: the family whose file is written (pgmpi_formats.native_file.FORMATS); for a gapless one (intelmpi)
    the collectives its file must leave to the library (native_file.left_to_library) are not retuned here
    either: their native choices are refused, unless every size where the default won there is filled by a
    preset measured as fast (fill_candidate; fill=False: never, as before fills -- for comparisons,
    tests/bench/intel_fill_tables.py).  None (or a library without a native file): every native choice counts
    as written."""
    refused = refused or {}
    # each pass is judged against its own runs' control arm (their conditions may differ)
    # (rule 2: per size class, null_spreads; res.spread / threshold: the largest class's, for the summaries)
    spreads = null_spreads({c: [r for r in runs if native_file_of(r) is None] for c, runs in cells.items()})
    spread = max(spreads.values())
    res = Result(tolerance=max(RUN_LOSS_FLOOR, spread), threshold=max(min_gain, spread), spread=spread,
                 spreads=spreads, min_gain=min_gain)
    # first pass: every candidate on the runs under no decision file (the library's own default)
    staged = {}
    for (key, size, p), runs in cells.items():
        plain = [r for r in runs if native_file_of(r) is None]
        labels = sorted({a for r in plain for a in r if a != CONTROL} | {"default"})
        cands = [_candidate(a, plain) for a in labels]
        for c in cands:
            _judge(c, alpha, res.at(size), refused.get((key, size, p, c.label)))
        staged[(key, size, p)] = cands
    # the native file: per cell the fastest winning native algorithm, unless a mock-up whose parts no native
    # choice touches beats it there (then the cell is the .prf's and the file keeps the default: never both).
    # A gapless format (Intel MPI's native.impi, native_file.left_to_library) cannot hold a collective where the
    # default won anywhere: such a collective gets no setting at all, so its native choices are refused, its
    # cells go to the next candidate (a mock-up that won there too) and mock-ups built from its parts are
    # measured against what really runs (the library's default).  Refusing them can let a mock-up take another
    # collective's cell, which may leave that one to the library in turn: repeated until nothing more is left.
    left: dict[str, str] = {}

    def leaves(key):
        return f"{native_file.NAMES[library]} leaves {key} to the library: {res.left_to_library[key]}"
    frozen: list = []           # the file's entries of each collective left out, as it was decided then
    from pgmpi_formats.ompi_rules import Decision
    gapless = fill and library in native_file.FORMATS and native_file.FORMATS[library].gapless
    default = Candidate("default", "default", math.inf, 0)
    while True:
        maybe: dict[int, set[str]] = {}
        for (key, size, p), cands in staged.items():
            if any(c.kind == "native" and c.refused is None for c in cands):
                maybe.setdefault(p, set()).add(key)
        best_native: dict = {}
        retuned: dict[int, set[str]] = {}
        for cell, cands in staged.items():
            ok = [c for c in cands if c.kind == "native" and c.refused is None]
            mock = [c for c in cands if c.kind == "mockup" and c.refused is None
                    and not mockup_parts(c.label) & maybe.get(cell[2], set())]
            if ok:
                nat = max(ok, key=lambda c: c.paired_ratio)
                if mock and max(c.paired_ratio for c in mock) > nat.paired_ratio:
                    continue
                best_native[cell] = nat
                retuned.setdefault(cell[2], set()).add(cell[0])
        # a gapless file: where a preset won at some size of a collective at p, each size there where nothing
        # won gets a preset measured as fast as the default (fill_candidate), else the collective is left out
        fills: dict = {}
        if gapless:
            won = {(k, p) for (k, _s, p) in best_native}
            for cell, cands in staged.items():
                k, size, p = cell
                if ((k, p) in won and k not in left and cell not in best_native
                        and not any(c.refused is None for c in cands if c.label != "default")):
                    f = fill_candidate(cands, size, res, any((k, size, p, c.label) in refused for c in cands
                                                             if c.kind == "native"))
                    if f is not None:
                        fills[cell] = f
        # the file covers the cells where the library's own algorithms were measured, nothing else: so a
        # campaign of mock-ups alone (the second pass) leaves it, and its digest, as they were
        file = [Decision(k, p, size, (best_native.get((k, size, p)) or fills.get((k, size, p)) or default).label)
                for (k, size, p) in sorted(staged, key=lambda c: (c[0], c[2], c[1]))
                if k not in left and any(c.kind == "native" for c in staged[(k, size, p)])]
        more = native_file.left_to_library(library, file) if library in native_file.FORMATS else {}
        if not more:
            break
        left.update(more)
        res.left_to_library = left
        frozen += [d for d in file if d.key in more]
        for (key, size, p), cands in staged.items():
            for c in cands:
                if key in more and c.kind == "native" and c.refused is None:
                    c.refused = leaves(key)
    for (key, size, p), f in fills.items():   # the fills of the collectives the file holds
        f.fill = (f"fills a size where the default won ({f.refused}): {native_file.NAMES[library]} sets a preset "
                  f"at every size of {key} at p={p} once it sets one, and this one was measured as fast as the "
                  f"default: {f.paired_ratio:.3f}x (paired over {len(f.run_ratios)} mpiruns, 95 % CI "
                  f"{f.ci[0]:.3f}-{f.ci[1]:.3f}x, lower bound >= 1 / (1 + {100 * res.at(size).spread:.1f} %), "
                  "the control arm's null spread)")
        f.refused = None
        best_native[(key, size, p)] = f
    for cell, cands in staged.items():      # the file decides what runs there: no other native choice can win
        for c in cands:
            if c.kind == "native" and c.refused is None and (cell not in best_native or c is not best_native[cell]):
                c.refused = ("a faster candidate won this cell in the first pass" if cell in best_native else
                             "a mock-up won this cell in the first pass, so the native file keeps the default here")
    # a collective left to the library keeps its entries as decided, so the writer names it and says why
    res.file = sorted(file + frozen, key=lambda d: (d.key, d.nprocs, d.nbytes))
    res.left_to_library = left
    res.file_digest = file_digest(res.file) if (file_digest and best_native) else None
    # second pass: a mock-up whose parts the file retunes competes only on runs measured under that very file
    spreads2 = null_spreads({c: [r for r in runs if res.file_digest and native_file_of(r) == res.file_digest]
                             for c, runs in cells.items()})
    spread2 = max(spreads2.values())
    pass2 = Result(tolerance=max(RUN_LOSS_FLOOR, spread2), threshold=max(min_gain, spread2), spread=spread2,
                   spreads=spreads2, min_gain=min_gain)
    res.spread_under_file = spread2
    for (key, size, p), cands in staged.items():
        under = [r for r in cells[(key, size, p)] if res.file_digest and native_file_of(r) == res.file_digest]
        have = {c.label for c in cands}
        cands += [Candidate(a, "mockup", math.inf, 0) for a in sorted({a for r in under for a in r} - have)
                  if kind_of(a) == "mockup"]                         # measured under the file only
        for i, c in enumerate(cands):
            if c.kind != "mockup":
                continue
            if under and any(c.label in r for r in under):
                u = _candidate(c.label, under)
                u.under = res.file_digest
                _judge(u, alpha, pass2.at(size), refused.get((key, size, p, c.label)))
                cands[i] = u
                continue
            parts = mockup_parts(c.label) & retuned.get(p, set())
            if c.refused is None and parts:
                c.refused = (f"its parts ({', '.join(sorted(parts))}) are natively retuned at p={p}: measured "
                             "with their defaults, it is judged only on runs under the native file "
                             + (f"{res.file_digest} (none measured it)" if res.file_digest else "(none given)"))
    for (key, size, p), cands in staged.items():
        native = best_native.get((key, size, p))
        # a ratio against the library's own default, to compare across passes: under the file the default
        # is the file's choice here, itself `native.paired_ratio` faster than the library's default
        def vs_library(c):
            return c.paired_ratio * (native.paired_ratio if (c.under and native) else 1.0)
        ok = [c for c in cands if c.label != "default" and c.refused is None]
        if ok:
            best = max(ok, key=vs_library)
            where = f" under native file {best.under}" if best.under else ""
            ci = f", 95 % CI {best.ci[0]:.3f}-{best.ci[1]:.3f}x" if best.ci else ""
            why = best.fill or (f"{best.paired_ratio:.3f}x faster than the default{where} (paired over "
                                f"{len(best.run_ratios)} mpiruns{ci}, p = {best.p_value:.3g}), the fastest of "
                                f"{len(ok)} winning candidate(s)")
            if best.under and native:
                why += f"; it beats the file's {native.label} there, whose rule stays (the mock-up takes the call)"
        else:
            best = next(c for c in cands if c.label == "default")
            why = "no candidate beats the default significantly and by more than the threshold"
        # a native choice that won here and was refused only because the file leaves its collective out
        trimmed = key in res.left_to_library and any(c.kind == "native" and c.refused == leaves(key) for c in cands)
        if trimmed and best.label == "default":
            why = f"the library's default: {leaves(key)}"
        res.decisions[(key, size, p)] = CellDecision(key, size, p, best.label, best.kind, why, cands, trimmed,
                                                     fill=best.fill is not None)
    return res


def validation_refusals(verdict: dict, cells: dict, source: str, gap_refuses_collective: bool = False) -> dict:
    """A native file's validation verdict (service/analysis/native_validation.judge) -> the `refused` of
    decide(): every campaign cell inside a failed rule's range [lo, hi] of that collective at that p, for the
    rule's label, with the job's reason.  The search measured the label interleaved with the others in one
    mpirun; the job measured the file alone, as users run it, and that decides.
    gap_refuses_collective (Intel MPI's native.impi): a failed "default" cell (a gap between or after the
    ranges) is the variable's doing, not a range's -- once I_MPI_ADJUST_<COLL> is set, Intel MPI changes its
    choice outside every range -- so every native choice of that collective at that p is refused; otherwise
    nothing would change and the next candidate would be the same file."""
    out = {}
    for c in verdict.get("cells", []):
        if not c.get("problems") or c.get("label") is None:
            continue
        lo, hi = c["range"]
        why = f"failed validation ({source}: {c['msize']} B): " + "; ".join(c["problems"])
        if c["label"] == "default":
            if not gap_refuses_collective:
                continue
            why = (f"failed validation ({source}: {c['msize']} B, a size the file leaves to the library, where "
                   "the set variable changed the library's choice): " + "; ".join(c["problems"]))
            for (key, size, p), runs in cells.items():
                if key == c["collective"] and p == c["nprocs"]:
                    for label in sorted({a for r in runs for a in r if str(a).startswith("native:")}):
                        out.setdefault((key, size, p, label), why)
            continue
        for (key, size, p) in cells:
            if key == c["collective"] and p == c["nprocs"] and lo <= size and (hi is None or size <= hi):
                out[(key, size, p, c["label"])] = why
    return out


class Run(dict):
    """One mpirun's medians {label: seconds} (or one round of alone mpiruns paired), with the digest of the
    native decision file it ran under (pgmpi-bench's #@native_file_fnv1a64; None: none)."""

    def __init__(self, medians=(), native_file: str | None = None, alone: bool = False):
        super().__init__(medians)
        self.native_file = native_file
        self.alone = alone          # paired from mpiruns that each measured one algorithm alone


def native_file_of(run) -> str | None:
    return getattr(run, "native_file", None)


def alone_label(algorithms) -> str | None:
    """The one algorithm a file measured alone -- "default" (with or without its control arm) or one native
    variant -- or None when it interleaved several (a search round, a mock-up campaign)."""
    labels = set(algorithms) - {TUNED}
    if labels and labels <= {"default", CONTROL}:
        return "default"
    if len(labels) == 1 and parse_label(next(iter(labels))):
        return next(iter(labels))
    return None


class Blocks(dict):
    """One cell's medians {label: seconds} of an mpirun that measured its algorithms one after the other, each
    all its repetitions alone (pgmpi-bench --serve "cell ... alone": native_driver's confirmation round) --
    paired within that mpirun, like an interleaved run, yet none measured next to another."""


def mark_blocks(per_cell: dict, footer) -> dict:
    """One mpirun's {(key, size, p): {label: median}} and its `#@pgmpi` lines -> the same, a cell as Blocks
    where pgmpi-bench --serve measured it label by label alone: two or more commands there, each naming one
    label ("cell ... alone"), or one command measuring its labels each alone in alternating short blocks
    ("cell ... blocks=<k>"), and nothing measured beyond the labels named (a plain "cell" command also
    measures the default and the control arm next to its labels, interleaved).  A round's warm-up cell (WARMUP_BYTES, the default
    alone in one command) is left out."""
    from pgmpi_formats.collectives import by_key
    from pgmpi_formats.footer import Served, records
    served: dict = {}
    for r in records(map(str, footer or ()), Served):
        served.setdefault((r.call, r.msize), []).append(r)
    out = {}
    for (key, size, p), medians in per_cell.items():
        cmds = served.get((by_key(key).mpi_name, size), [])
        if size == WARMUP_BYTES and [c.labels for c in cmds] == [("default",)] and set(medians) == {"default"}:
            continue            # a confirmation round's warm-up (native_driver.Launcher.confirm): no cell
        one_by_one = (len(cmds) >= 2 and all(len(c.labels) == 1 and not c.blocks for c in cmds)
                      and set(medians) == {c.labels[0] for c in cmds})
        # one "cell ... blocks=<k>" command: its labels alone in alternating short blocks, nothing else there
        in_blocks = len(cmds) == 1 and cmds[0].blocks > 0 and set(medians) == set(cmds[0].labels)
        out[(key, size, p)] = Blocks(medians) if one_by_one or in_blocks else medians
    return out


def cells_of_mpiruns(mpiruns) -> dict:
    """[(pairing key, native file digest, {(key, size, p): {label: median}})] one per mpirun ->
    {(key, size, p): [Run]}.

    An mpirun that measured one algorithm alone at each of its cells (native_driver's confirmations: the
    default at every cell in one mpirun, each cell's chosen variant in another -- one algorithm per cell, as
    under a decision file, different cells may have different ones -- all with the round's #@mpirun_index)
    is paired with the others of its round (same pairing key: campaign, module, p, #@mpirun_index; same
    native file) into one Run per cell.  A cell given as Blocks (mark_blocks: a confirmation round in one
    mpirun, the default, the variant and the control arm alone one after the other) is such a Run already.
    Where a label has such alone measurements at a cell, its interleaved measurements there are dropped: the
    search measured it next to other algorithms, which can make it look faster than an application will
    ever see it (tests/bench/native_interleave.py); the alone pairs decide."""
    cells: dict = {}
    alone: dict = {}            # (pairing key, digest) -> {cell: {label: median}}
    confirmed: dict = {}
    for pair_key, digest, per_cell in mpiruns:
        # a confirmation round in one mpirun (Blocks): default, variant and control arm alone one after the
        # other at a cell -- the pair is within the mpirun, so no pairing across mpiruns is needed
        for cell, medians in list(per_cell.items()):
            if isinstance(medians, Blocks):
                cells.setdefault(cell, []).append(Run(medians, digest, alone=True))
                confirmed.setdefault(cell, set()).update(a for a in medians if a not in ("default", CONTROL))
                per_cell = {c: m for c, m in per_cell.items() if c != cell}
        if per_cell and all(alone_label(medians) is not None for medians in per_cell.values()):
            pair = alone.setdefault((tuple(map(str, pair_key)), str(digest)), {})
            for cell, medians in per_cell.items():
                pair.setdefault(cell, {}).update(medians)
        else:
            for cell, medians in per_cell.items():
                cells.setdefault(cell, []).append(Run(medians, digest))
    for (_, digest), per_cell in sorted(alone.items()):
        for cell, medians in per_cell.items():
            cells.setdefault(cell, []).append(Run(medians, None if digest == "None" else digest, alone=True))
            confirmed.setdefault(cell, set()).update(a for a in medians if a not in ("default", CONTROL))
    for cell, labels in confirmed.items():
        for r in cells[cell]:
            if not r.alone:
                for a in labels & set(r):
                    del r[a]
    return cells


def runs_from_files(files) -> dict:
    """Raw result files -> {(key, size, p): [per-mpirun Run {label: median}]} (one entry per file; alone
    measurements paired per round: cells_of_mpiruns)."""
    from pgmpi_formats.collectives import by_mpi_name
    from pgmpi_formats.results import read_file
    mpiruns = []
    for f in files:
        run = read_file(f)
        p = int(run.header.get("nprocs", 0))
        groups: dict = {}
        for t, m, a, x in zip(run.test, run.msize, run.algorithm, run.runtime):
            groups.setdefault((run.tests[t], int(m)), {}).setdefault(run.algorithms[a], []).append(float(x))
        per_cell = {}
        for (name, m), algs in groups.items():
            c = by_mpi_name(name)
            if c is None:
                continue
            per_cell[(c.key, m, p)] = {a: statistics.median(xs) for a, xs in algs.items() if a != TUNED}   # no validation arm
        per_cell = mark_blocks(per_cell, run.pgmpi_lines)
        h = run.header
        mpiruns.append(((h.get("campaign", ""), h.get("module", ""), p, h.get("mpirun_index", "")),
                        h.get("native_file_fnv1a64"), per_cell))
    return cells_of_mpiruns(mpiruns)


def explain_lines(d: CellDecision, path_lines: list[str] | None = None) -> list[str]:
    """The evidence of one cell, as `pgmpi explain` prints it."""
    out = [f"{d.key} {d.size} B p={d.nprocs}: {len(d.candidates)} candidates",
           f"{'candidate':44} {'median us':>10} {'runs':>4} {'ratio':>7} {'95% CI':>15} {'p':>9}  verdict / regimes"]
    for c in sorted(d.candidates, key=lambda c: c.median):
        ci = f"{c.ci[0]:.3f}-{c.ci[1]:.3f}" if c.ci else "-"
        verdict = "reference" if c.label == "default" else (f"refused: {c.refused}" if c.refused else
                                                            "fills: as fast as the default" if c.fill else "wins")
        if c.under:
            verdict = f"[under native file {c.under}] {verdict}"
        out.append(f"{c.label:44} {c.median * 1e6:>10.2f} {c.runs:>4} "
                   f"{(f'{c.paired_ratio:.3f}' if c.paired_ratio else '-'):>7} {ci:>15} "
                   f"{(f'{c.p_value:.2g}' if c.p_value is not None else '-'):>9}  {verdict}"
                   + (f"; {c.regimes}" if c.regimes and c.label != "default" else ""))
    out += path_lines or []
    out.append(f"chosen: {d.choice} ({d.kind}): {d.reason}")
    return out
