"""The derived-datatype pages (GL1-GL4)."""
from __future__ import annotations

from flask import render_template, request

from service.dashboards.common import _arg_int, _campaign, _lib_or_404, bp, read_access
from service.dashboards.datatypes import data as dt_data
from service.store.db import db


@bp.get("/m/<machine>/<lib>/datatypes")
@read_access
def datatypes(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    camp = _campaign(l, request.args.get("campaign"))
    a = dt_data.dt_analysis(db.session, l, camp if request.args.get("campaign") else None, _arg_int("analysis"))
    vs = dt_data.verdicts(db.session, a) if a else []
    control = ((a.summary or {}).get("datatypes") or {}).get("control") if a else None
    return render_template("datatypes/datatypes.html", machine=m, lib=l, a=a, table=dt_data.table(vs),
                           panels=dt_data.panels(vs), control=control if isinstance(control, dict) else None,
                           dt_summary=((a.summary or {}).get("datatypes") or {}) if a else {})


@bp.get("/m/<machine>/<lib>/datatypes/layout")
@read_access
def datatype_layout(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    a = dt_data.dt_analysis(db.session, l, None, _arg_int("analysis"))
    args = {k: (request.args.get(k) or "")[:80] for k in ("pattern", "basetype", "layout")}
    p = _arg_int("p", 0)
    d = dt_data.layout_detail(db.session, a, args["pattern"], args["basetype"], args["layout"], p) if a else None
    return render_template("datatypes/datatype_layout.html", machine=m, lib=l, a=a, d=d, p=p, **args)
