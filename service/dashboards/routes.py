"""The dashboard routes: pages (Jinja2, templates/) and the admin's publish/rollback actions.

Charts use plotly.js from the installed `plotly` Python package (a dependency already), served by
this blueprint at /dashboards-static/plotly.min.js with a long cache lifetime: no CDN, no npm
step, and the file's version moves with the Python package that the venv pins.
"""
from __future__ import annotations

import csv
import difflib
import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path

from flask import (Blueprint, Flask, Response, abort, current_app, flash, jsonify, redirect,
                   render_template, request, send_file, url_for)
from functools import wraps

from flask_login import current_user, login_required
from sqlalchemy import select

from pgmpi_formats import site
from pgmpi_formats.limits import INT_MAX
from service.profiles import lifecycle
from service.profiles import publish as pub
from service.dashboards import data
from service.store.db import db
from service.store.models import MpiLibrary, ProfileSet, ProfileVersion

bp = Blueprint("dash", __name__)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    app.jinja_env.filters["dur"] = fmt_duration
    app.jinja_env.filters["bytes"] = fmt_bytes


def fmt_duration(sec) -> str:
    if sec is None:
        return "–"
    sec = float(sec)
    for unit, f in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(sec) >= f:
            return f"{sec / f:.3g} {unit}"
    return f"{sec / 1e-9:.3g} ns"


def fmt_bytes(n) -> str:
    n = int(n)
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def profile_root() -> Path:
    """The app's PGMPI_PROFILE_ROOT setting, else the site's (pgmpi_formats.site: the modules' root)."""
    return site.profile_root(current_app.config.get("PGMPI_PROFILE_ROOT"))


def read_access(fn):
    """Pages are readable by anyone when PUBLIC_DASHBOARDS is on (the default: a site's violation
    figures are no secret, and "anyone browsing the dashboards" is a user); otherwise a login is
    needed. Writes (publish, rollback) always need an admin login."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        if current_app.config.get("PUBLIC_DASHBOARDS", True) or current_user.is_authenticated:
            return fn(*args, **kwargs)
        return current_app.login_manager.unauthorized()
    return wrapper


def is_admin() -> bool:
    return bool(current_user and current_user.is_authenticated and current_user.role == "admin")


@bp.app_context_processor
def _ctx():
    return {"is_admin": is_admin()}


@bp.get("/dashboards-static/plotly.min.js")
def plotly_js():
    import plotly
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    resp = send_file(path, mimetype="application/javascript", max_age=7 * 86400, conditional=True)
    return resp


def _arg_int(name: str, default=None):
    """An integer query parameter within the INTEGER columns' range (else 400, never a database error)."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        abort(400, description=f"query parameter {name!r} must be an integer")
    if not 0 <= v <= INT_MAX:
        abort(400, description=f"query parameter {name!r} must be in 0..{INT_MAX}")
    return v


def _attachment(name: str) -> str:
    """Content-Disposition for a download named after stored names (any characters): an ASCII fallback
    and the exact name RFC 6266 / RFC 5987 encoded; a header must be Latin-1 without line breaks."""
    from urllib.parse import quote
    fallback = re.sub(r"[^A-Za-z0-9._+-]", "_", name)[:150]
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name[:300], safe='')}"


def _lib_or_404(machine: str, lib: str):
    try:
        return data.library(db.session, machine, lib)
    except LookupError as exc:
        abort(404, description=str(exc))


def _campaign(lib: MpiLibrary, name: str | None):
    if name:
        for c in data.campaigns_of(db.session, lib):
            if c.name == name:
                return c
        abort(404, description=f"campaign {name!r} has no runs of {lib.name}-{lib.version}")
    return data.latest_campaign(db.session, lib)


def _collective_page(machine: str, lib: str, key: str):
    """What the per-collective pages (detail, native) start from: the collective key checked (404 listing
    the valid ones), the library, the campaign (?campaign=, else the latest) with its measured layouts, and
    the layout switch's choice (p 0 when nothing is measured). Returns (machine, library, campaign, layouts,
    selection)."""
    if key not in data.MPI_OF:
        abort(404, description=f"no collective {key!r}; valid: {', '.join(sorted(data.MPI_OF))}")
    m, l = _lib_or_404(machine, lib)
    camp = _campaign(l, request.args.get("campaign"))
    sels = data.layouts_of(db.session, l, camp)
    return m, l, camp, sels, _selection(sels) or data.Sel(0, None)


# ----------------------------------------------------------------- pages

@bp.get("/")
@read_access
def overview():
    return render_template("overview.html", ov=data.overview(db.session))


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
                       "lib": l, "campaign": camp, "hm": data.heatmap(db.session, l, camp, p, sel.layout)})
        # side by side: another campaign of this library, or another library of this machine
        other_c = request.args.get("vs_campaign")
        other_l = request.args.get("vs_lib")
        if other_c or other_l:
            l2 = _lib_or_404(machine, other_l)[1] if other_l else l
            c2 = _campaign(l2, other_c) if (other_c or other_l) else None
            panels.append({"title": f"{l2.name}-{l2.version} · {c2.name if c2 else 'all runs'}",
                           "lib": l2, "campaign": c2, "hm": data.heatmap(db.session, l2, c2, p, sel.layout)})
    return render_template("heatmap.html", machine=m, lib=l, campaign=camp, p=p, sel=sel, sels=sels, panels=panels,
                           campaigns=data.campaigns_of(db.session, l)[:60],
                           libs=[x for x in m.libraries if x.id != l.id])


@bp.get("/m/<machine>/<lib>/detail/<key>")
@read_access
def detail(machine: str, lib: str, key: str):
    m, l, camp, sels, sel = _collective_page(machine, lib, key)
    p = sel.p
    d = data.detail(db.session, l, camp, key, p, sel.layout)
    fmt = request.args.get("format")
    if fmt == "json":
        return jsonify(machine=m.name, library=l.name, version=l.version,
                       campaign=camp.name if camp else None, collective=key, nprocs=p, layout=sel.layout or "",
                       measurements=d["rows"], violations=d["violations"])
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["collective", "algorithm", "msize", "nprocs", "layout", "mpiruns",
                                            "median_s", "min_s", "max_s"])
        w.writeheader()
        w.writerows(d["rows"])
        name = f"{m.name}_{l.name}-{l.version}_{key}_p{p}" + (f"_{sel.layout}" if sel.layout else "") + ".csv"
        return Response(buf.getvalue(), mimetype="text/csv",
                        headers={"Content-Disposition": _attachment(name)})
    return render_template("detail.html", machine=m, lib=l, campaign=camp, p=p, sel=sel, sels=sels, d=d,
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
    t = data.trend(db.session, l, key, msize, alg, sel.p, sel.layout)
    if request.args.get("format") == "json":
        return jsonify({k: v for k, v in t.items()})
    return render_template("trends.html", machine=m, lib=l, t=t, sel=sel, sels=sels, keys=sorted(data.MPI_OF))


@bp.get("/m/<machine>/<lib>/native")
@read_access
def native(machine: str, lib: str):
    """The library's own algorithms: heatmap, the default against the best, the searches' savings."""
    from service.dashboards.native_data import native_view
    key = request.args.get("key", "allreduce")
    m, l, camp, sels, sel = _collective_page(machine, lib, key)
    v = native_view(db.session, l, camp, key, sel.p, sel.layout)
    if request.args.get("format") == "json":
        return jsonify(machine=m.name, library=l.name, version=l.version, campaign=camp.name if camp else None, **v)
    return render_template("native.html", machine=m, lib=l, campaign=camp, sel=sel, sels=sels, v=v,
                           keys=sorted(data.MPI_OF))


def _selection(sels):
    """The layout switch's choice from ?layout= and ?p= (data.choose_layout); an unmeasured layout is a 404
    that lists the valid ones."""
    try:
        return data.choose_layout(sels, request.args.get("layout") or None, _arg_int("p"))
    except ValueError as e:
        abort(404, description=str(e))


@bp.get("/glossary")
@read_access
def glossary():
    """Every word the pages use, from docs/glossary.md (the docs site shows the same file)."""
    return render_template("glossary.html", terms=glossary_terms())


def glossary_terms() -> list[dict[str, str]]:
    """(anchor, term, meaning) rows of the table in docs/glossary.md; the meaning's Markdown links and
    code spans become plain text here."""
    import re
    # a symlink to docs/glossary.md in the repository, a copy in a pip install (package data)
    path = Path(__file__).with_name("glossary.md")
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


@bp.get("/alerts.json")
def alerts_feed():
    from service.auth import current_principal
    pr = current_principal()
    if pr is None:
        return jsonify(error="authentication required (bearer token or login)"), 401
    return jsonify(generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   alerts=data.alerts(db.session), libraries=data.library_status(db.session))


@bp.get("/campaigns")
@read_access
def campaigns():
    return render_template("campaigns.html", rows=data.campaigns(db.session))


@bp.get("/profiles")
@read_access
def profiles():
    root = profile_root()
    rows = []
    for d in data.profile_sets(db.session):
        st = lifecycle.history_of(d["set"], root) if "set" in d else \
            lifecycle.history(root, d["machine"].name, d["library"].name, d["library"].version)
        rows.append({**d, "status": st})
    return render_template("profiles.html", rows=rows, root=root)


def _set_or_404(set_id: int) -> ProfileSet:
    ps = db.session.get(ProfileSet, set_id) if 0 <= set_id <= INT_MAX else None
    if ps is None:
        abort(404, description=f"no profile set {set_id}")
    return ps


@bp.get("/profiles/<int:set_id>")
@read_access
def profile_set(set_id: int):
    ps = _set_or_404(set_id)
    st = lifecycle.history_of(ps, profile_root())
    from sqlalchemy.orm import selectinload
    versions = db.session.scalars(select(ProfileVersion).where(ProfileVersion.profile_set_id == ps.id)
                                  .options(selectinload(ProfileVersion.figures))
                                  .order_by(ProfileVersion.number)).all()
    cand_id = _arg_int("candidate")
    cand = next((v for v in versions if v.id == cand_id), None) if cand_id else None
    if cand is None:
        cand = next((v for v in reversed(versions) if v.state in ("candidate", "validated")), None)
    diff = []
    if cand is not None:
        names = sorted(set(st["files"]) | set(cand.files or {}))
        for n in names:
            a = (st["files"].get(n) or "").splitlines()
            b = ((cand.files or {}).get(n) or "").splitlines()
            if a != b:
                diff.extend(difflib.unified_diff(a, b, f"current/{n}", f"candidate/{n}", lineterm=""))
    hist = data.history(db.session, [str(v.id) for v in versions] + [f"set:{ps.id}"])
    return render_template("profile_set.html", ps=ps, st=st, versions=versions, cand=cand, diff=diff,
                           hist=hist)


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
        res = lifecycle.publish_candidate(v, profile_root(), f"user:{current_user.username}", force=force, reason=reason)
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
        res = lifecycle.rollback_set(ps, profile_root(), f"user:{current_user.username}", reason=request.form.get("reason", ""))
    except pub.PublishError as exc:
        db.session.rollback()
        flash(f"Not rolled back: {exc}", "error")
        return redirect(url_for("dash.profile_set", set_id=ps.id)), 303
    flash(f"Rolled back to version {res.version}", "ok")
    return redirect(url_for("dash.profile_set", set_id=ps.id)), 303


# ----------------------------------------------------------------- derived datatypes (GL1-GL4)

@bp.get("/m/<machine>/<lib>/datatypes")
@read_access
def datatypes(machine: str, lib: str):
    from service.dashboards import dt_data
    m, l = _lib_or_404(machine, lib)
    camp = _campaign(l, request.args.get("campaign"))
    a = dt_data.dt_analysis(db.session, l, camp if request.args.get("campaign") else None, _arg_int("analysis"))
    vs = dt_data.verdicts(db.session, a) if a else []
    control = ((a.summary or {}).get("datatypes") or {}).get("control") if a else None
    return render_template("datatypes.html", machine=m, lib=l, a=a, table=dt_data.table(vs),
                           panels=dt_data.panels(vs), control=control if isinstance(control, dict) else None,
                           dt_summary=((a.summary or {}).get("datatypes") or {}) if a else {})


@bp.get("/m/<machine>/<lib>/datatypes/layout")
@read_access
def datatype_layout(machine: str, lib: str):
    from service.dashboards import dt_data
    m, l = _lib_or_404(machine, lib)
    a = dt_data.dt_analysis(db.session, l, None, _arg_int("analysis"))
    args = {k: (request.args.get(k) or "")[:80] for k in ("pattern", "basetype", "layout")}
    p = _arg_int("p", 0)
    d = dt_data.layout_detail(db.session, a, args["pattern"], args["basetype"], args["layout"], p) if a else None
    return render_template("datatype_layout.html", machine=m, lib=l, a=a, d=d, p=p, **args)
