"""/m/<machine>/<lib>/usage: the cells of the users' collective time, ranked by the node-hours a violation
there costs them, with the node-hours live redirects gain (service/workflows/usage.py)."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import render_template

from service.dashboards.common import _lib_or_404, bp, read_access
from service.workflows.usage import ranking


@bp.get("/m/<machine>/<lib>/usage")
@read_access
def usage(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    ranked, total, jobs, ppn, verdicts, _ = ranking(l)
    now = datetime.now(timezone.utc)
    ages = {k: (state, max(0, (now - (at if at.tzinfo else at.replace(tzinfo=timezone.utc))).days))
            for k, (state, at) in verdicts.items()}
    return render_template("usage/usage.html", machine=m, lib=l, ranked=ranked[:200], total=total, jobs=jobs, ages=ages,
                           ppn=ppn, lost=sum(r.lost_node_hours for r in ranked),
                           gained=sum(r.gained_node_hours for r in ranked), ncells=len(ranked))
