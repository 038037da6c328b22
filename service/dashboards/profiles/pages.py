"""The profile pages: the sets, one set's versions with the candidate's diff, and the admin's publish and
rollback actions (through service/workflows/publish.py)."""
from __future__ import annotations

import difflib

from flask import abort, flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required
from sqlalchemy import select

from pgmpi_formats.limits import INT_MAX
from service.dashboards.common import _arg_int, bp, is_admin, profile_root, read_access
from service.dashboards.profiles import data as pdata
from service.workflows import publish as publishing
from service.profiles import publish as pub
from service.store.db import db
from service.store.models import ProfileSet, ProfileVersion


@bp.get("/profiles")
@read_access
def profiles():
    root = profile_root()
    rows = []
    for d in pdata.profile_sets(db.session):
        st = publishing.history_of(d["set"], root) if "set" in d else \
            publishing.history(root, d["machine"].name, d["library"].name, d["library"].version)
        rows.append({**d, "status": st})
    # a row per library, also for one without a profile set: what is live, or why nothing is
    from service.workflows.live import tuned_now
    nows = {l.id: tuned_now(db.session, l, root) for l in pdata.libraries(db.session)}
    for r in rows:
        r["now"] = nows.get(r["library"].id)
    with_set = {r["library"].id for r in rows}
    for l in pdata.libraries(db.session):
        if l.id not in with_set:
            rows.append({"machine": l.machine, "library": l, "versions": [], "status": {"current": None, "files": {}},
                         "now": nows[l.id]})
    rows.sort(key=lambda d: (d["machine"].name, d["library"].name, d["library"].version))
    return render_template("profiles/profiles.html", rows=rows, root=root)


def _set_or_404(set_id: int) -> ProfileSet:
    ps = db.session.get(ProfileSet, set_id) if 0 <= set_id <= INT_MAX else None
    if ps is None:
        abort(404, description=f"no profile set {set_id}")
    return ps


@bp.get("/profiles/<int:set_id>")
@read_access
def profile_set(set_id: int):
    ps = _set_or_404(set_id)
    st = publishing.history_of(ps, profile_root())
    from sqlalchemy.orm import selectinload
    versions = db.session.scalars(select(ProfileVersion).where(ProfileVersion.profile_set_id == ps.id)
                                  .options(selectinload(ProfileVersion.figures))
                                  .order_by(ProfileVersion.number)).all()
    spans = pdata.span_story(versions)
    cand_id = _arg_int("candidate")
    cand = next((v for v in versions if v.id == cand_id), None) if cand_id else None
    if cand is None:        # the newest measured candidate; a span (an addition at its own count) when asked for
        open_ = [v for v in reversed(versions) if v.state in ("candidate", "validated")]
        cand = next((v for v in open_ if not spans.get(v.id)), open_[0] if open_ else None)
    diff = []
    if cand is not None:
        names = sorted(set(st["files"]) | set(cand.files or {}))
        for n in names:
            a = (st["files"].get(n) or "").splitlines()
            b = ((cand.files or {}).get(n) or "").splitlines()
            if a != b:
                diff.extend(difflib.unified_diff(a, b, f"current/{n}", f"candidate/{n}", lineterm=""))
    hist = pdata.history(db.session, [str(v.id) for v in versions] + [f"set:{ps.id}"])
    from service.workflows import live
    roles = {}          # version id -> [(figure, live | dropped | control)]
    gains = {}          # version id -> the smallest gain inside its redirected ranges (None: no figure there)
    for v in versions:
        ranges, dropped = live.ranges_of(v.files), live._dropped(live.validation_record(db.session, v))
        roles[v.id] = [(f, live.figure_role(f, ranges, dropped)) for f in v.figures]
        g = [f.speedup for f, role in roles[v.id] if role == "live"]
        gains[v.id] = min(g) if g else None
    natives = pdata.native_story(db.session, ps, versions, st.get("files") or {})
    return render_template("profiles/profile_set.html", ps=ps, st=st, versions=versions, cand=cand, diff=diff,
                           hist=hist, roles=roles, gains=gains, natives=natives, spans=spans)


def _require_admin():
    if not is_admin():
        abort(403, description="only admins publish or roll back profiles")


@bp.post("/profiles/<int:set_id>/publish")
@login_required
def publish_version(set_id: int):
    _require_admin()
    ps = _set_or_404(set_id)
    vid = request.form.get("version_id", type=int)
    v = db.session.get(ProfileVersion, vid) if vid is not None and 0 < vid <= INT_MAX else None
    if v is None or v.profile_set_id != ps.id:
        abort(400, description="version_id: not a version of this profile set")
    force = request.form.get("force") == "1"
    reason = request.form.get("reason", "").strip()
    try:
        res = publishing.publish_candidate(v, profile_root(), f"user:{current_user.username}", force=force, reason=reason)
    except pub.PublishError as exc:
        db.session.rollback()
        flash(f"Not published: {exc}", "error")
        return redirect(url_for("dash.profile_set", set_id=ps.id, candidate=v.id)), 303
    flash(f"Published as version {res.version}" + (" (forced)" if res.forced else ""), "ok")
    return redirect(url_for("dash.profile_set", set_id=ps.id)), 303


@bp.post("/profiles/<int:set_id>/rollback")
@login_required
def rollback_set(set_id: int):
    _require_admin()
    ps = _set_or_404(set_id)
    try:
        res = publishing.rollback_set(ps, profile_root(), f"user:{current_user.username}", reason=request.form.get("reason", ""))
    except pub.PublishError as exc:
        db.session.rollback()
        flash(f"Not rolled back: {exc}", "error")
        return redirect(url_for("dash.profile_set", set_id=ps.id)), 303
    flash(f"Rolled back to version {res.version}", "ok")
    return redirect(url_for("dash.profile_set", set_id=ps.id)), 303
