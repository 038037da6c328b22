"""/m/<machine>/<lib>/usage: the cells of the users' collective time, ranked by the node-hours a violation
there costs them, with the node-hours live redirects gain (service/workflows/usage.py)."""
from __future__ import annotations

from flask import render_template

from service.dashboards.common import _lib_or_404, bp, read_access
from service.workflows.usage import ranking


@bp.get("/m/<machine>/<lib>/usage")
@read_access
def usage(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    ranked, total, jobs, ppn, _, _ = ranking(l)
    return render_template("usage/usage.html", machine=m, lib=l, ranked=ranked[:200], total=total, jobs=jobs,
                           ppn=ppn, lost=sum(r.lost_node_hours for r in ranked),
                           gained=sum(r.gained_node_hours for r in ranked), ncells=len(ranked))
