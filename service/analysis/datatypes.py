"""Verdicts of the derived-datatype guidelines GL1-GL4 on pgmpi-dtbench results (lib/bench/README.md,
"pgmpi-dtbench"), with the statistics of the collective guidelines (service/analysis/stats.py): one median
per (mpirun, cell), the per-mpirun log ratio of two descriptions measured interleaved in the same mpirun,
a one-sided paired test, optional Benjamini-Hochberg, and a minimum effect.

    cases = dt_cases(result_set)                     # test name -> DtCase (from the #@pgmpi dtcase lines)
    verdicts = dt_verdicts(result_set, alpha=0.05, fdr=False, min_effect=0.10, test="paired_t")
    table = summary(verdicts)                        # per (config, guideline, pattern): tested, violated, worst

The guidelines (the paper's sect. 3), each a comparison of two descriptions of the same layout and size:

* GL1   ``typed`` (c x t) against ``contig`` (one contig(c, t)): expected equal, so both directions are tested;
* GL2/3 ``typed`` against ``packed`` (MPI_Pack + the call on MPI_PACKED + MPI_Unpack, timed whole): violated
  when the datatype is slower than packing by hand;
* repair ``typed`` against ``repaired`` (the typed call through libpgmpitune's repair mock-up): the gain a
  profile selecting the repair would give (a "violated" row = a significant difference, either direction);
* control ``typed`` against ``typed_control``: the campaign's false alarms;
* GL4   the reference description (``typed``; ``indexed_block`` for rowcol) against every other description of
  the layout (vector, nested, tiled_struct, indexed_block, indexed, struct_flat, struct): the library should
  normalise both to its best form, so a difference in either direction is a violation of GL4 for the slower
  description.

A verdict is ``violated`` when p (BH-adjusted with fdr) <= alpha and the paired ratio (the median over the
mpiruns of slower / faster) exceeds 1 + min_effect; ``holds`` otherwise; ``n/a`` with fewer than two mpiruns.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from pgmpi_formats.results import ResultSet

from .stats import DEFAULT_TEST, PAIRED_TESTS, bh_adjust, build_cells, paired_log_ratios, pvalues_paired_greater

GL4_ALTERNATIVES = ("vector", "nested", "tiled_struct", "indexed_block", "indexed", "struct_flat", "struct")
GUIDELINES = ("GL1", "GL2/3", "GL4", "control", "repair")
REPAIRED = "repaired"          # the typed call through libpgmpitune's repair mock-up
CONTROL = "typed_control"      # pgmpi-dtbench's control arm: the reference description measured twice


@dataclass(frozen=True)
class DtCase:
    test: str
    pattern: str
    layout: str
    variant: int
    A: int
    basetype: str

    @property
    def layout_label(self) -> str:
        if self.layout == "contiguous":
            return "contiguous"
        if self.layout in ("altrep", "rowcol"):
            return f"{self.layout} A={self.A}"
        return f"{self.layout} v{self.variant} A={self.A}"

    @property
    def reference(self) -> str:
        return "indexed_block" if self.layout == "rowcol" else "typed"


@dataclass
class DtVerdict:
    config: str
    library: str
    guideline: str
    pattern: str
    basetype: str
    layout: str            # DtCase.layout_label
    msize: int
    slower: str            # description measured slower (median paired ratio)
    faster: str
    ratio: float           # median over mpiruns of slower / faster (the speed-up of using `faster`)
    p: float               # one-sided paired p-value of "slower is slower" (BH-adjusted with fdr)
    runs: int
    verdict: str           # violated | holds | n/a

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = None if not math.isfinite(self.ratio) else round(self.ratio, 4)
        d["p"] = None if not math.isfinite(self.p) else float(self.p)
        return d


def dt_cases(rs: ResultSet) -> dict[str, DtCase]:
    """The cases pgmpi-dtbench declared (`#@pgmpi dtcase <test> pattern=.. layout=.. variant=.. A=.. basetype=..`)."""
    out: dict[str, DtCase] = {}
    for run in rs.runs:
        for line in run.pgmpi_lines:
            parts = line.split()
            if len(parts) < 3 or parts[1] != "dtcase":
                continue
            kv = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
            try:
                out[parts[2]] = DtCase(parts[2], kv["pattern"], kv["layout"], int(kv["variant"]), int(kv["A"]),
                                       kv["basetype"])
            except (KeyError, ValueError):
                continue
    return out


def _pairs(case: DtCase, present: set[str]):
    """(guideline, x, y, both directions?) for the descriptions measured for this case."""
    ref = case.reference
    if ref not in present:
        return
    if "contig" in present and ref == "typed":
        yield "GL1", "typed", "contig", True
    if "packed" in present:
        yield "GL2/3", ref, "packed", False
    if CONTROL in present:      # a ratio whose truth is 1: its violations are the campaign's false alarms
        yield "control", ref, CONTROL, True
    if REPAIRED in present:     # what the library's repair gains (or loses) against the library's own call
        yield "repair", ref, REPAIRED, True
    for alt in GL4_ALTERNATIVES:
        if alt != ref and alt in present:
            yield "GL4", ref, alt, True


def both_sides(guideline: str) -> bool:
    return guideline != "GL2/3"


def dt_verdicts(rs: ResultSet, alpha: float = 0.05, fdr: bool = False, min_effect: float = 0.10,
                test: str = DEFAULT_TEST) -> list[DtVerdict]:
    if test not in PAIRED_TESTS:
        raise ValueError(f"the datatype guidelines compare descriptions of one mpirun: test must be one of "
                         f"{', '.join(PAIRED_TESTS)}")
    cases = dt_cases(rs)
    cells = build_cells(rs)
    index = cells.index()
    # cells of one (config, test, msize): description -> cell index
    groups: dict[tuple[int, int, int], dict[str, int]] = {}
    for (cfg, t, m, a), i in index.items():
        groups.setdefault((cfg, t, m), {})[cells.algorithms[a]] = i
    rows: list[tuple] = []
    ds: list[np.ndarray] = []
    for (cfg, t, m), descs in sorted(groups.items()):
        case = cases.get(cells.tests[t])
        if case is None:
            continue
        for gl, x, y, both in _pairs(case, set(descs)):
            d, _ = paired_log_ratios(cells, descs[x], descs[y])
            # the slower side by the median paired ratio; one-sided test in that direction (GL2/3: typed only)
            med = float(np.median(d)) if d.size else float("nan")
            if both and math.isfinite(med) and med < 0:
                x, y, d, med = y, x, -d, -med
            rows.append((cfg, gl, case, m, x, y, med, d.size))   # GL2/3 with med < 0: the datatype is faster
            ds.append(d)
    p, _ = pvalues_paired_greater(ds, test=test) if ds else (np.zeros(0), None)
    if fdr and len(p):
        p = bh_adjust(p)
    out: list[DtVerdict] = []
    for k, (cfg, gl, case, m, x, y, med, n) in enumerate(rows):
        ratio = math.exp(med) if math.isfinite(med) else float("nan")
        pk = float(p[k]) if len(p) else float("nan")
        if n < 2 or not math.isfinite(pk):
            verdict = "n/a"
        elif pk <= alpha and ratio > 1 + min_effect:
            verdict = "violated"
        else:
            verdict = "holds"
        if not both_sides(gl) and math.isfinite(ratio) and ratio < 1:
            x, y, ratio = y, x, 1 / ratio        # shown as "packed slower than typed"; p still tests typed slower
        c = cells.configs[cfg]
        out.append(DtVerdict(config=c.label, library=f"{c.library}-{c.version}" if c.version else c.library,
                             guideline=gl, pattern=case.pattern, basetype=case.basetype, layout=case.layout_label,
                             msize=int(m), slower=x, faster=y, ratio=ratio, p=pk, runs=int(n), verdict=verdict))
    return out


@dataclass
class DtSummary:
    library: str
    guideline: str
    pattern: str
    tested: int
    violated: int
    worst: DtVerdict | None      # the violated verdict with the largest ratio


def summary(verdicts: list[DtVerdict]) -> list[DtSummary]:
    acc: dict[tuple[str, str, str], DtSummary] = {}
    for v in verdicts:
        s = acc.setdefault((v.library, v.guideline, v.pattern), DtSummary(v.library, v.guideline, v.pattern, 0, 0, None))
        if v.verdict == "n/a":
            continue
        s.tested += 1
        if v.verdict == "violated":
            s.violated += 1
            if s.worst is None or v.ratio > s.worst.ratio:
                s.worst = v
    order = {g: i for i, g in enumerate(GUIDELINES)}
    pats = {"pingpong": 0, "bcast": 1, "allgather": 2}
    return sorted(acc.values(), key=lambda s: (s.library, order.get(s.guideline, 9), pats.get(s.pattern, 9)))
