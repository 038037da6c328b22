"""What is tuned now, per library: the live redirects and native choices with the validation's measured gain,
what validation dropped and why, what was found but not acted on and why (service/workflows/live.py)."""
from __future__ import annotations

from flask import jsonify, render_template, request

from service.dashboards.common import _lib_or_404, bp, profile_root, read_access
from service.workflows.live import tuned_now
from service.store.db import db


@bp.get("/m/<machine>/<lib>/tuned")
@read_access
def tuned(machine: str, lib: str):
    m, l = _lib_or_404(machine, lib)
    now = tuned_now(db.session, l, profile_root())
    if request.args.get("format") == "json":
        return jsonify(now)
    return render_template("tuned/tuned.html", machine=m, lib=l, now=now)
