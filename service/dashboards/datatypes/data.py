"""The numbers of the derived-datatype pages (templates/datatypes/): the GL1-GL4
verdicts an analysis stored (service/store/models.py DtVerdict, computed by service/analysis/datatypes.py)
and the medians of the runs it analysed.  Plain functions over a session; nothing here knows Flask.

Speed-up of a description = the paired ratio reference / description of its verdict (median over the
mpiruns of the per-mpirun ratio), reference = `typed` (`indexed_block` for rowcol); > 1: the description
beats the library's handling of the reference.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from sqlalchemy import select

from service.analysis.datatypes import GUIDELINES, DtCase as Case
from service.store.models import Analysis, Campaign, DtCase, DtVerdict, MpiLibrary, Run, Series

PATTERNS = ("pingpong", "bcast", "allgather")
SHOWN = ("GL1", "GL2/3", "GL4", "repair")      # the heatmap's guidelines; control is the false-alarm line


def _finite(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def reference_of(dt_layout: str) -> str:
    return "indexed_block" if dt_layout.startswith("rowcol") else "typed"


def dt_analysis(s, lib: MpiLibrary, campaign: Campaign | None, analysis_id: int | None = None) -> Analysis | None:
    """The newest analysis of this library (and campaign) that stored datatype verdicts, or the one asked for."""
    q = select(Analysis).where(Analysis.library_id == lib.id,
                               Analysis.id.in_(select(DtVerdict.analysis_id).distinct()))
    if analysis_id is not None:
        q = q.where(Analysis.id == analysis_id)
    elif campaign is not None:
        q = q.where(Analysis.campaign_id == campaign.id)
    return s.scalar(q.order_by(Analysis.created_at.desc(), Analysis.id.desc()).limit(1))


def verdicts(s, a: Analysis) -> list[DtVerdict]:
    return list(s.scalars(select(DtVerdict).where(DtVerdict.analysis_id == a.id).order_by(DtVerdict.id)))


def speedup(v: DtVerdict) -> tuple[str, float] | None:
    """(description, its speed-up over the reference) of one verdict; None without a ratio or a reference."""
    r = _finite(v.ratio)
    ref = reference_of(v.dt_layout)
    if r is None or ref not in (v.slower, v.faster):
        return None
    alt = v.faster if v.slower == ref else v.slower
    return alt, (r if v.faster == alt else 1 / r)


def table(vs: list[DtVerdict]) -> list[dict[str, Any]]:
    """Per (p, guideline, pattern): tested, violated and the largest violation (what holds, what breaks)."""
    acc: dict[tuple, dict[str, Any]] = {}
    for v in vs:
        row = acc.setdefault((v.nprocs, v.layout, v.guideline, v.pattern),
                             {"nprocs": v.nprocs, "layout": v.layout, "guideline": v.guideline, "pattern": v.pattern,
                              "tested": 0, "violated": 0, "worst": None})
        if v.verdict == "n/a":
            continue
        row["tested"] += 1
        if v.verdict == "violated":
            row["violated"] += 1
            if row["worst"] is None or (_finite(v.ratio) or 0) > (_finite(row["worst"].ratio) or 0):
                row["worst"] = v
    order = {g: i for i, g in enumerate(GUIDELINES)}
    pats = {p: i for i, p in enumerate(PATTERNS)}
    return sorted(acc.values(), key=lambda r: (r["nprocs"], r["layout"], order.get(r["guideline"], 9),
                                               pats.get(r["pattern"], 9)))


def panels(vs: list[DtVerdict]) -> list[dict[str, Any]]:
    """One heatmap per (pattern, base type, p): rows the datatype layouts, columns the sizes, each cell the best
    description's speed-up over the reference with the guideline that compared them and whether a verdict of
    GL1/GL2-3/GL4 in that cell is violated."""
    cells: dict[tuple, dict[int, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    bad: set[tuple] = set()
    for v in vs:
        key = (v.pattern, v.basetype, v.nprocs, v.layout)
        if v.verdict == "violated" and v.guideline in ("GL1", "GL2/3", "GL4"):
            bad.add(key + (v.dt_layout, v.msize))
        if v.guideline not in SHOWN:
            continue
        sp = speedup(v)
        if sp is None:
            continue
        cur = cells[key][v.msize].get(v.dt_layout)
        if cur is None or sp[1] > cur["speedup"]:
            cells[key][v.msize][v.dt_layout] = {"best": sp[0], "speedup": sp[1], "guideline": v.guideline,
                                                "p": _finite(v.p_value), "verdict": v.verdict}
    out = []
    pats = {p: i for i, p in enumerate(PATTERNS)}
    for key in sorted(cells, key=lambda k: (pats.get(k[0], 9), k[1], k[2], k[3])):
        pattern, base, nprocs, lay = key
        sizes = sorted(cells[key])
        layouts = sorted({dl for m in sizes for dl in cells[key][m]})
        z, text, hover = [], [], []
        for dl in layouts:
            zr, tr, hr = [], [], []
            for m in sizes:
                c = cells[key][m].get(dl)
                if c is None:
                    zr.append(None), tr.append(""), hr.append("")
                    continue
                star = "*" if key + (dl, m) in bad else ""
                zr.append(round(math.log2(c["speedup"]), 4))
                tr.append(f"{c['speedup']:.2f}{star}")
                hr.append(f"{c['best']} ({c['guideline']}), p = " + (f"{c['p']:.2g}" if c["p"] is not None else "n/a"))
            z.append(zr), text.append(tr), hover.append(hr)
        out.append({"pattern": pattern, "basetype": base, "nprocs": nprocs, "layout": lay, "layouts": layouts,
                    "sizes": sizes, "z": z, "text": text, "hover": hover,
                    "violated": sum(1 for b in bad if b[:4] == key)})
    return out


def _runs(s, a: Analysis) -> list[Run]:
    q = select(Run).where(Run.library_id == a.library_id, Run.validation.is_(None))     # campaign data only
    if a.campaign_id is not None:
        q = q.where(Run.campaign_id == a.campaign_id)
    return list(s.scalars(q.order_by(Run.id)))


def layout_detail(s, a: Analysis, pattern: str, basetype: str, dt_layout: str, nprocs: int) -> dict[str, Any]:
    """Every description of one datatype layout: median run-time (median of the per-mpirun medians) and
    count per size, the verdicts of every guideline with their paired ratios and p-values, the signature."""
    runs = {r.id: r for r in _runs(s, a) if r.nprocs == nprocs}
    tests, signatures, counts = set(), set(), defaultdict(dict)
    if runs:
        for c in s.scalars(select(DtCase).where(DtCase.run_id.in_(list(runs)), DtCase.pattern == pattern,
                                                DtCase.basetype == basetype)):
            label = Case(c.test, c.pattern, c.dt_layout, c.variant, c.block, c.basetype).layout_label
            if label != dt_layout:
                continue
            tests.add(c.test)
            if c.signature:
                signatures.add(c.signature)
            for desc, per in (c.counts or {}).items():
                for m, n in (per or {}).items():
                    counts[desc][str(m)] = n
    med: dict[tuple[str, int], list[float]] = defaultdict(list)
    if tests:
        for alg, m, v in s.execute(select(Series.algorithm, Series.msize, Series.median).where(
                Series.run_id.in_(list(runs)), Series.call.in_(sorted(tests)))):
            if _finite(v) is not None:
                med[(alg, m)].append(v)
    sizes = sorted({m for _, m in med})
    descs = sorted({d for d, _ in med}, key=lambda d: (d != reference_of(dt_layout), d))
    rows = []
    for m in sizes:
        vals = {d: statistics.median(med[(d, m)]) for d in descs if med.get((d, m))}
        fastest = min(vals.values()) if vals else None
        rows.append({"msize": m, "cells": [{"desc": d, "median": vals.get(d), "mpiruns": len(med.get((d, m), [])),
                                            "count": counts.get(d, {}).get(str(m)),
                                            "fastest": vals.get(d) is not None and vals.get(d) == fastest}
                                           for d in descs]})
    vs = [v for v in s.scalars(select(DtVerdict).where(
        DtVerdict.analysis_id == a.id, DtVerdict.pattern == pattern, DtVerdict.basetype == basetype,
        DtVerdict.dt_layout == dt_layout, DtVerdict.nprocs == nprocs).order_by(DtVerdict.msize, DtVerdict.id))]
    order = {g: i for i, g in enumerate(GUIDELINES)}
    vs.sort(key=lambda v: (v.msize, order.get(v.guideline, 9), v.slower, v.faster))
    signatures.update(v.signature for v in vs if v.signature)
    return {"descs": descs, "rows": rows, "verdicts": vs, "signatures": sorted(signatures), "reference":
            reference_of(dt_layout)}
