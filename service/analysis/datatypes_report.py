"""A self-contained HTML report of the derived-datatype guidelines (plotly inlined, nothing from the network):
per library, pattern and base type a layout x size heatmap of the best description's speed-up over the
reference description, then a detail table per layout (median run-time of every description at every
size, the fastest in green, the violated verdicts of that layout).

    html = render(result_set, verdicts)       # verdicts from service.analysis.datatypes.dt_verdicts

Speed-up of a description = the paired ratio reference / description (median over mpiruns, as in the
verdicts); the heatmap shows the largest over the layout's descriptions (control arm excluded), log2-coloured:
red = some description beats the reference (the library's own description is not its best), blue = the
reference is the fastest. A star marks a violated verdict of GL1/GL2-3/GL4 in that cell.
"""
from __future__ import annotations

import html
import json
import math
from collections import defaultdict

from pgmpi_formats.results import ResultSet

from .datatypes import CONTROL, DtVerdict, dt_cases
from .stats import build_cells


def _speedups(verdicts: list[DtVerdict]):
    """(library, pattern, base, layout, msize) -> {description: speed-up over the reference}, and the cells
    with a violated verdict."""
    sp: dict[tuple, dict[str, float]] = defaultdict(dict)
    bad: set[tuple] = set()
    for v in verdicts:
        key = (v.library, v.pattern, v.basetype, v.layout, v.msize)
        if v.verdict == "violated" and v.guideline != "control":
            bad.add(key)
        if v.guideline == "control" or not math.isfinite(v.ratio):
            continue
        ref = "indexed_block" if v.layout.startswith("rowcol") else "typed"
        alt = v.faster if v.slower == ref else v.slower
        s = v.ratio if v.faster == alt else 1 / v.ratio
        sp[key][alt] = s
    return sp, bad


def _medians(rs: ResultSet):
    """(library, pattern, base, layout, msize) -> {description: median run-time of the per-mpirun medians}."""
    cases = dt_cases(rs)
    cells = build_cells(rs)
    out: dict[tuple, dict[str, float]] = defaultdict(dict)
    for i in range(len(cells)):
        case = cases.get(cells.tests[int(cells.test[i])])
        if case is None:
            continue
        c = cells.configs[int(cells.cfg[i])]
        lib = f"{c.library}-{c.version}" if c.version else c.library
        out[(lib, case.pattern, case.basetype, case.layout_label, int(cells.msize[i]))][
            cells.algorithms[int(cells.alg[i])]] = float(cells.median[i])
    return out


def _fmt_t(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def render(rs: ResultSet, verdicts: list[DtVerdict], title: str = "Derived-datatype guidelines") -> str:
    from plotly.offline import get_plotlyjs
    sp, bad = _speedups(verdicts)
    med = _medians(rs)
    panels = sorted({k[:3] for k in med})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<script>{get_plotlyjs()}</script>",
             "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}.bad{color:#b00;"
             "font-weight:bold}.best{color:#070;font-weight:bold}.muted{color:#666}</style></head><body>",
             f"<h1>{html.escape(title)}</h1><p class='muted'>Colour: log2 of the best description's speed-up over the "
             "reference (typed; rowcol: indexed_block), paired per mpirun; red = a description beats the reference, "
             "* = a violated GL1/GL2-3/GL4 verdict in that cell. Click a row for its detail.</p>"]
    for n, (lib, pat, base) in enumerate(panels):
        layouts = sorted({k[3] for k in med if k[:3] == (lib, pat, base)})
        sizes = sorted({k[4] for k in med if k[:3] == (lib, pat, base)})
        z, text, best = [], [], []
        for lay in layouts:
            zr, tr, br = [], [], []
            for m in sizes:
                d = sp.get((lib, pat, base, lay, m), {})
                if d:
                    a, s = max(d.items(), key=lambda kv: kv[1])
                    star = "*" if (lib, pat, base, lay, m) in bad else ""
                    zr.append(math.log2(s)); tr.append(f"{s:.2f}{star}"); br.append(a)
                else:
                    zr.append(None); tr.append(""); br.append("")
            z.append(zr); text.append(tr); best.append(br)
        anchor = f"p{n}"
        parts.append(f"<h2 id='{anchor}'>{html.escape(lib)}, {html.escape(pat)}, {html.escape(base)}</h2>"
                     f"<div id='hm{n}' style='height:{140 + 26 * len(layouts)}px'></div>")
        data = {"z": z, "x": [str(m) for m in sizes], "y": layouts, "text": text,
                "customdata": [[[b, t] for b, t in zip(br, tr)] for br, tr in zip(best, text)]}
        parts.append(
            "<script>(function(){const d=" + json.dumps(data) + ";Plotly.newPlot('hm" + str(n) + "',[{type:'heatmap',"
            "z:d.z,x:d.x,y:d.y,text:d.text,texttemplate:'%{text}',customdata:d.customdata,hovertemplate:"
            "'%{y} %{x} B<br>best: %{customdata[0]}<br>speed-up %{customdata[1]}<extra></extra>',colorscale:'RdBu',"
            "reversescale:false,zmid:0,colorbar:{title:'log2'},xgap:1,ygap:1}],{margin:{l:190,r:20,t:10,b:50},"
            "xaxis:{type:'category',title:'bytes'},yaxis:{autorange:'reversed'}},{displayModeBar:false});"
            "document.getElementById('hm" + str(n) + "').on('plotly_click',e=>{location.hash='d" + str(n) +
            "_'+e.points[0].pointIndex[0];});})();</script>")
        for li, lay in enumerate(layouts):
            descs = sorted({a for m in sizes for a in med.get((lib, pat, base, lay, m), {})})
            parts.append(f"<h3 id='d{n}_{li}'>{html.escape(lay)} <span class='muted'>({html.escape(lib)}, "
                         f"{html.escape(pat)}, {html.escape(base)}; <a href='#{anchor}'>back</a>)</span></h3><table><tr>"
                         "<th>bytes</th>" + "".join(f"<th>{html.escape(a)}</th>" for a in descs) + "</tr>")
            for m in sizes:
                row = med.get((lib, pat, base, lay, m), {})
                if not row:
                    continue
                fastest = min(row.values())
                parts.append(f"<tr><th>{m}</th>" + "".join(
                    f"<td class='{'best' if a in row and row[a] == fastest else ''}'>{_fmt_t(row[a]) if a in row else ''}</td>"
                    for a in descs) + "</tr>")
            parts.append("</table>")
            vs = [v for v in verdicts if (v.library, v.pattern, v.basetype, v.layout) == (lib, pat, base, lay)
                  and v.verdict == "violated"]
            if vs:
                parts.append("<p>" + "<br>".join(
                    f"{v.guideline} at {v.msize} B: {html.escape(v.slower)} {v.ratio:.2f}x slower than "
                    f"{html.escape(v.faster)} (p = {v.p:.2g}, {v.runs} mpiruns)" for v in vs) + "</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
