"""The library pages: overview, heatmap, detail (JSON/CSV downloads), trends, glossary."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from flask import Response, jsonify, render_template, request

from service.dashboards import data
from service.dashboards.common import (_arg_int, _attachment, _campaign, _collective_page, _lib_or_404, _selection,
                                       bp, profile_root, read_access)
from service.dashboards.library import data as ldata
from service.store.db import db


def _live(lib) -> list[dict]:
    from service.workflows.live import tuned_now
    return tuned_now(db.session, lib, profile_root())["live"]


def csv_number(v):
    """A float as a CSV cell: 6 significant digits (the timer's resolution is far coarser), so a median reads
    1.1945e-06, not 1.1945000000000002e-06; other values unchanged."""
    return float(f"{v:.6g}") if isinstance(v, float) else v


@bp.get("/")
@read_access
def overview():
    return render_template("library/overview.html", ov=ldata.overview(db.session, profile_root()))


@bp.get("/m/<machine>/<lib>/heatmap")
@read_access
def heatmap(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    camp = _campaign(l, request.args.get("campaign"))
    sels = data.layouts_of(db.session, l, camp)
    sel = _selection(sels)
    p = sel.p if sel else None
    panels = []
    if p is not None:
        panels.append({"title": f"{l.name}-{l.version} · {camp.name if camp else 'all runs'}",
                       "lib": l, "campaign": camp, "hm": ldata.heatmap(db.session, l, camp, p, sel.layout, _live(l))})
        # side by side: another campaign of this library, or another library of this machine
        other_c = request.args.get("vs_campaign")
        other_l = request.args.get("vs_lib")
        if other_c or other_l:
            l2 = _lib_or_404(machine, other_l)[1] if other_l else l
            c2 = _campaign(l2, other_c) if (other_c or other_l) else None
            panels.append({"title": f"{l2.name}-{l2.version} · {c2.name if c2 else 'all runs'}",
                           "lib": l2, "campaign": c2, "hm": ldata.heatmap(db.session, l2, c2, p, sel.layout, _live(l2))})
    return render_template("library/heatmap.html", machine=m, lib=l, campaign=camp, p=p, sel=sel, sels=sels, panels=panels,
                           campaigns=data.campaigns_of(db.session, l)[:60],
                           libs=[x for x in m.libraries if x.id != l.id])


@bp.get("/m/<machine>/<lib>/detail/<key>")
@read_access
def detail(machine: str, lib: str, key: str):
    m, l, camp, sels, sel = _collective_page(machine, lib, key)
    p = sel.p
    d = ldata.detail(db.session, l, camp, key, p, sel.layout)
    fmt = request.args.get("format")
    if fmt == "json":
        return jsonify(machine=m.name, library=l.name, version=l.version,
                       campaign=camp.name if camp else None, collective=key, nprocs=p, layout=sel.layout or "",
                       measurements=d["rows"], violations=d["violations"], reporting=d["reporting"],
                       reporting_fields=d["reporting_fields"], guidelines=d["guidelines"])
    if fmt == "csv" and request.args.get("table") == "verdicts":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=ldata.VERDICT_COLUMNS)
        w.writeheader()
        w.writerows({k: csv_number(v) for k, v in r.items()} for r in ldata.verdict_rows(d))
        name = f"{m.name}_{l.name}-{l.version}_{key}_p{p}" + (f"_{sel.layout}" if sel.layout else "") + "_verdicts.csv"
        return Response(buf.getvalue(), mimetype="text/csv", headers={"Content-Disposition": _attachment(name)})
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["collective", "algorithm", "msize", "nprocs", "layout", "mpiruns",
                                            "median_s", "min_s", "max_s"])
        w.writeheader()
        w.writerows({k: csv_number(v) for k, v in r.items()} for r in d["rows"])
        name = f"{m.name}_{l.name}-{l.version}_{key}_p{p}" + (f"_{sel.layout}" if sel.layout else "") + ".csv"
        return Response(buf.getvalue(), mimetype="text/csv",
                        headers={"Content-Disposition": _attachment(name)})
    return render_template("library/detail.html", machine=m, lib=l, campaign=camp, p=p, sel=sel, sels=sels, d=d,
                           keys=sorted(data.MPI_OF))


@bp.get("/m/<machine>/<lib>/trends")
@read_access
def trends(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    sels = data.layouts_of(db.session, l, None)
    key = request.args.get("key", "allreduce")
    sel = _selection(sels) or data.Sel(0, None)
    msize = _arg_int("msize") or 1024
    alg = request.args.get("algorithm", "default")
    t = ldata.trend(db.session, l, key, msize, alg, sel.p, sel.layout)
    if request.args.get("format") == "json":
        return jsonify({k: v for k, v in t.items()})
    return render_template("library/trends.html", machine=m, lib=l, t=t, sel=sel, sels=sels, keys=sorted(data.MPI_OF))


@bp.get("/glossary")
@read_access
def glossary():
    """Every word the pages use, from docs/glossary.md (the docs site shows the same file)."""
    return render_template("library/glossary.html", terms=glossary_terms())


def glossary_terms() -> list[dict[str, str]]:
    """(anchor, term, meaning) rows of the table in docs/glossary.md; the meaning's Markdown links and
    code spans become plain text here."""
    import re
    # a symlink to docs/glossary.md in the repository, a copy in a pip install (package data)
    path = Path(__file__).parents[1] / "glossary.md"
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] in ("term", "") or set(cells[0]) <= set("-: "):
            continue
        term = cells[0]
        meaning = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", cells[1]).replace("`", "").replace("**", "")
        anchor = re.sub(r"[^a-z0-9]+", "-", re.split(r"[,(/:]", term.lower())[0]).strip("-")
        rows.append({"anchor": anchor, "term": term, "meaning": meaning})
    return rows
