"""The native-algorithms page of a library."""
from __future__ import annotations

from flask import jsonify, render_template, request

from service.dashboards import data
from service.dashboards.common import _collective_page, bp, read_access
from service.dashboards.native.data import native_view
from service.store.db import db


@bp.get("/m/<machine>/<lib>/native")
@read_access
def native(machine: str, lib: str):
    """The library's own algorithms: heatmap, the default against the best, the searches' savings."""
    key = request.args.get("key", "allreduce")
    m, l, camp, sels, sel = _collective_page(machine, lib, key)
    v = native_view(db.session, l, camp, key, sel.p, sel.layout)
    if request.args.get("format") == "json":
        return jsonify(machine=m.name, library=l.name, version=l.version, campaign=camp.name if camp else None, **v)
    return render_template("native/native.html", machine=m, lib=l, campaign=camp, sel=sel, sels=sels, v=v,
                           keys=sorted(data.MPI_OF), decision=_decision_file(m, l))


def _decision_file(m, l) -> dict | None:
    """The library's latest native candidate and whether it is live: the profile page tells the rest."""
    from sqlalchemy import select
    from service.dashboards.common import profile_root
    from service.dashboards.profiles.data import native_story
    from service.store.models import ProfileSet
    from service.workflows.publish import history_of
    ps = db.session.scalar(select(ProfileSet).where(ProfileSet.machine_id == m.id, ProfileSet.library_id == l.id))
    if ps is None:
        return None
    story = native_story(db.session, ps, sorted(ps.versions, key=lambda v: v.number),
                         history_of(ps, profile_root()).get("files") or {})
    if not story:
        return None
    return {"set": ps.id, "latest": story[-1], "live": next((n for n in story if n["live"]), None)}
