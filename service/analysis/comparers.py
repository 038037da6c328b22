"""The comparer views of pgchecker (thesis ch. 3.3) plus a guideline list, as tables for terminal, CSV and JSON.

    v = view(analysis, "absolute" | "relative" | "violation" | "detailed" | "grouped" | "guidelines")
    v.columns, v.rows                    # raw values: seconds, bytes, ratios, p-values (None = empty cell)
    render_table(v) -> rich.table.Table  # readable units (ns/us/ms/s, B/KiB/MiB), aligned
    to_csv(v) -> str;  to_json(v) -> list[dict]  (raw SI values, machine readable)
    heatmap(analysis, cfg) -> dict       # DASHBOARDS: collectives x sizes, slowdown of the fastest violating mock-up

absolute: median (of the per-mpirun medians) and mean of every (collective, size, algorithm).
relative: median of the default / median of the algorithm (> 1: the algorithm is faster; the default is 1).
Every verdict view carries the effect (geometric mean over mpiruns of the per-mpirun ratio) with its 95 %
interval (stats.ratio_ci) and the reporting fields (reporting.py: sync method, mpiruns, measurements per
mpirun, NREP policy, statistic, exclusions).
violation: like absolute plus the test statistic, p-value and the verdict for each mock-up; an asterisk after
           the mock-up marks a barrier warning (MPI_Barrier at that size takes at least as long).
detailed: one row per mock-up and size with default and mock-up mean/median side by side, slowdown
          (default median / mock-up median), the barrier warning in its own column.
grouped: one row per (collective, size): the default's median and, when violated, the fastest violating
         mock-up with its slowdown and median.
guidelines: every violated verdict of all three classes (pattern, monotony, split-robustness).
summary: PGMPI's table per guideline and collective: tested, violated (brave), cautious, the worst factor with
         its 95 % interval and where (Analysis.guideline_summary).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from .guidelines import Analysis
from pgmpi_formats import collectives as _colls

VIEWS = ("absolute", "relative", "violation", "detailed", "grouped", "guidelines", "summary")


@dataclass
class Column:
    name: str
    kind: str = "text"     # text | int | bytes | time | ratio | p | bool | stat


@dataclass
class View:
    name: str
    columns: list[Column]
    rows: list[list]


def _cfg_cols():
    return [Column("machine"), Column("library"), Column("p", "int"), Column("N", "int"), Column("ppn", "int")]


def _cfg_vals(a: Analysis, c: int):
    cf = a.configs[c]
    lib = f"{cf.library}-{cf.version}" if cf.version else cf.library
    return [cf.machine, lib, cf.nprocs, cf.nodes, cf.ppn]


def _rep_cols():
    """The reporting fields every exported figure carries (reporting.py)."""
    return [Column("sync"), Column("clock"), Column("mpiruns", "int"), Column("meas_per_mpirun"),
            Column("nrep_policy"), Column("nrep_source"), Column("summary_statistic"), Column("excluded")]


def _rep_vals(a: Analysis, c: int):
    r = a.reporting.get(c)
    if not r:
        return [None] * 8
    rp, ex = r["repetitions"], r["exclusions"]
    per = (str(rp["per_mpirun_min"]) if rp["per_mpirun_min"] == rp["per_mpirun_max"]
           else f"{rp['per_mpirun_min']}-{rp['per_mpirun_max']}")
    return [r["sync"], r.get("clock"), r["mpiruns"], per, rp["nrep_policy"], rp.get("source"),
            "median per mpirun; geometric mean of paired ratios",
            f"{ex['results_check_failures']} results-check failures; {ex['cells_in_one_mpirun']} cells in one mpirun"]


def _ci_cols():
    return [Column("effect", "ratio"), Column("ci95_low", "ratio"), Column("ci95_high", "ratio"),
            Column("ci_mpiruns", "int")]


def _ci_vals(v):
    if v is None:
        return [None] * 4
    return [v.effect, v.ci_low, v.ci_high, v.ci_mpiruns]


def _cells_rows(a: Analysis):
    cells = a.cells
    out = []
    for i in range(len(cells)):
        coll = int(cells.coll[i])
        if coll < 0:
            continue
        out.append(i)
    out.sort(key=lambda i: (int(cells.cfg[i]), int(cells.coll[i]), cells.algorithms[int(cells.alg[i])] != "default",
                            cells.algorithms[int(cells.alg[i])], int(cells.msize[i])))
    return out


def view(a: Analysis, name: str) -> View:
    if name not in VIEWS:
        raise ValueError(f"unknown view {name!r}; valid: {', '.join(VIEWS)}")
    return globals()["_v_" + name](a)


def _v_absolute(a: Analysis) -> View:
    cells = a.cells
    cols = _cfg_cols() + [Column("collective"), Column("msize", "bytes"), Column("algorithm"),
                          Column("median", "time"), Column("mean", "time"), Column("nrep", "int"), Column("runs", "int")]
    rows = [_cfg_vals(a, int(cells.cfg[i])) + [_colls.COLLECTIVES[int(cells.coll[i])].mpi_name, int(cells.msize[i]),
            cells.algorithms[int(cells.alg[i])], float(cells.median[i]), float(cells.mean[i]), int(cells.nmeas[i]),
            int(cells.nruns[i])] for i in _cells_rows(a)]
    return View("absolute", cols, rows)


def _default_medians(a: Analysis):
    cells = a.cells
    d = {}
    for i in range(len(cells)):
        if cells.algorithms[int(cells.alg[i])] == "default":
            d[(int(cells.cfg[i]), int(cells.coll[i]), int(cells.msize[i]))] = float(cells.median[i])
    return d


def _v_relative(a: Analysis) -> View:
    cells = a.cells
    dm = _default_medians(a)
    cols = _cfg_cols() + [Column("collective"), Column("msize", "bytes"), Column("algorithm"),
                          Column("relative_runtime", "ratio")]
    rows = []
    for i in _cells_rows(a):
        k = (int(cells.cfg[i]), int(cells.coll[i]), int(cells.msize[i]))
        rel = dm[k] / float(cells.median[i]) if k in dm and cells.median[i] > 0 else None
        rows.append(_cfg_vals(a, k[0]) + [_colls.COLLECTIVES[k[1]].mpi_name, k[2], cells.algorithms[int(cells.alg[i])],
                                          rel])
    return View("relative", cols, rows)


def _pattern(a: Analysis):
    return {(v.cfg, v.mpi_name, v.msize, v.algorithm): v for v in a.verdicts if v.kind == "pattern"}


def _v_violation(a: Analysis) -> View:
    cells = a.cells
    pv = _pattern(a)
    cols = _cfg_cols() + [Column("collective"), Column("mockup"), Column("msize", "bytes"), Column("nrep", "int"),
                          Column("mean", "time"), Column("median", "time"), Column("statistic", "stat"),
                          Column("p_value", "p"), Column("p_adjusted", "p"), Column("vio", "bool")] + _ci_cols() \
        + _rep_cols()
    rows = []
    for i in _cells_rows(a):
        c, coll, ms = int(cells.cfg[i]), int(cells.coll[i]), int(cells.msize[i])
        alg = cells.algorithms[int(cells.alg[i])]
        name = _colls.COLLECTIVES[coll].mpi_name
        v = pv.get((c, name, ms, alg))
        warn = None
        if a.barrier.get((c, ms)) is not None:
            warn = a.barrier[(c, ms)] >= float(cells.median[i])
        label = alg + ("*" if warn else "")
        rows.append(_cfg_vals(a, c) + [name, label, ms, int(cells.nmeas[i]), float(cells.mean[i]),
                                       float(cells.median[i]), v.statistic if v else None, v.p_value if v else None,
                                       v.p_adjusted if v else None, (v.violated if v else None)]
                    + _ci_vals(v) + _rep_vals(a, c))
    return View("violation", cols, rows)


def _v_detailed(a: Analysis) -> View:
    cols = _cfg_cols() + [Column("collective"), Column("mockup"), Column("msize", "bytes"), Column("nrep", "int"),
                          Column("def_mean", "time"), Column("def_med", "time"), Column("alt_mean", "time"),
                          Column("alt_med", "time"), Column("statistic", "stat"), Column("p_value", "p"),
                          Column("p_adjusted", "p"), Column("vio", "bool"), Column("slowdown", "ratio"),
                          Column("barrier_warning", "bool"), Column("barrier_med", "time")] + _ci_cols() + _rep_cols()
    rows = [_cfg_vals(a, v.cfg) + [v.mpi_name, v.algorithm, v.msize, v.nmeas_other, v.default_mean, v.default_median,
                                   v.other_mean, v.other_median, v.statistic, v.p_value, v.p_adjusted, v.violated,
                                   v.slowdown, v.barrier_warning, v.barrier_median] + _ci_vals(v) + _rep_vals(a, v.cfg)
            for v in a.verdicts if v.kind == "pattern"]
    return View("detailed", cols, rows)


def _grouped_entries(a: Analysis):
    groups: dict[tuple[int, str, int], list] = {}
    for v in a.verdicts:
        if v.kind == "pattern":
            groups.setdefault((v.cfg, v.mpi_name, v.msize), []).append(v)
    out = []
    for (c, name, ms), vs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        viol = sorted((v for v in vs if v.violated), key=lambda v: v.other_median)
        out.append((c, name, ms, vs[0], viol[0] if viol else None))
    return out


def _v_grouped(a: Analysis) -> View:
    cols = _cfg_cols() + [Column("collective"), Column("msize", "bytes"), Column("nrep", "int"),
                          Column("def_med", "time"), Column("slowdown", "ratio"), Column("mockup"),
                          Column("alt_med", "time")] + _ci_cols() + _rep_cols()
    rows = []
    for c, name, ms, v0, best in _grouped_entries(a):
        rows.append(_cfg_vals(a, c) + [name, ms, v0.nmeas_default, v0.default_median,
                                       best.slowdown if best else None,
                                       (best.algorithm + ("*" if best.barrier_warning else "")) if best else None,
                                       best.other_median if best else None] + _ci_vals(best) + _rep_vals(a, c))
    return View("grouped", cols, rows)


def _v_guidelines(a: Analysis) -> View:
    cols = _cfg_cols() + [Column("kind"), Column("collective"), Column("msize", "bytes"),
                          Column("compared_with"), Column("median", "time"), Column("other_median", "time"),
                          Column("slowdown", "ratio"), Column("p_value", "p"), Column("p_adjusted", "p"),
                          Column("barrier_warning", "bool")] + _ci_cols() + _rep_cols()
    rows = []
    for v in a.violations():
        if v.kind == "pattern":
            other = v.algorithm
        elif v.kind == "monotony":
            other = f"msize {v.ref_msize}"
        else:
            other = f"{v.k} x msize {v.ref_msize}"
        rows.append(_cfg_vals(a, v.cfg) + [v.kind, v.mpi_name, v.msize, other, v.default_median, v.other_median,
                                           v.slowdown, v.p_value, v.p_adjusted, v.barrier_warning]
                    + _ci_vals(v) + _rep_vals(a, v.cfg))
    return View("guidelines", cols, rows)


def _v_summary(a: Analysis) -> View:
    cols = _cfg_cols() + [Column("guideline"), Column("collective"), Column("tested", "int"),
                          Column("violated", "int"), Column("cautious", "int"), Column("worst_factor", "ratio"),
                          Column("worst_ci95_low", "ratio"), Column("worst_ci95_high", "ratio"),
                          Column("worst_at")] + _rep_cols()
    rows = [_cfg_vals(a, r["cfg"]) + [r["guideline"], r["mpi_name"], r["tested"], r["violated"], r["cautious"],
                                      r["worst_factor"], (r["worst_ci95"] or [None, None])[0],
                                      (r["worst_ci95"] or [None, None])[1], r["worst_at"]] + _rep_vals(a, r["cfg"])
            for r in a.guideline_summary()]
    return View("summary", cols, rows)


# ---------------------------------------------------------------- formatting

def fmt_time(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return ""
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= f:
            return f"{s / f:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return ""
    n = int(n)
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            v = n / f
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"


def fmt(value, kind: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if kind == "time":
        return fmt_time(value)
    if kind == "bytes":
        return fmt_bytes(value)
    if kind == "ratio":
        return f"{value:.3f}"
    if kind == "p":
        return f"{value:.3g}"
    if kind == "stat":
        return f"{value:.4g}"
    if kind == "bool":
        return "1" if value else "0"
    return str(value)


def render_table(v: View, title: str | None = None):
    from rich.table import Table
    t = Table(title=title or f"{v.name} view", show_lines=False, header_style="bold")
    for c in v.columns:
        t.add_column(c.name, justify="left" if c.kind == "text" else "right", no_wrap=True)
    for r in v.rows:
        t.add_row(*(fmt(x, c.kind) for x, c in zip(r, v.columns)))
    return t


def to_csv(v: View) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([_csv_name(c) for c in v.columns])
    for r in v.rows:
        w.writerow(["" if x is None else (int(x) if isinstance(x, bool) else x) for x in r])
    return buf.getvalue()


def _csv_name(c: Column) -> str:
    return c.name + "_sec" if c.kind == "time" else c.name


def to_json(v: View) -> list[dict]:
    out = []
    for r in v.rows:
        out.append({_csv_name(c): (None if isinstance(x, float) and not math.isfinite(x) else x)
                    for c, x in zip(v.columns, r)})
    return out


def heatmap(a: Analysis, cfg: int) -> dict:
    """Collectives x measured sizes of one config; slowdown of the fastest violating mock-up (1.0 = none)."""
    entries = [e for e in _grouped_entries(a) if e[0] == cfg]
    colls = sorted({e[1] for e in entries})
    sizes = sorted({e[2] for e in entries})
    slow = [[None] * len(sizes) for _ in colls]
    mock = [[None] * len(sizes) for _ in colls]
    warn = [[None] * len(sizes) for _ in colls]
    for _, name, ms, v0, best in entries:
        r, c = colls.index(name), sizes.index(ms)
        slow[r][c] = best.slowdown if best else 1.0
        mock[r][c] = best.algorithm if best else None
        warn[r][c] = best.barrier_warning if best else None
    cf = a.configs[cfg]
    return {"config": cf.label, "collectives": colls, "sizes": sizes, "slowdown": slow, "mockup": mock,
            "barrier_warning": warn}
