"""What every dashboard area shares: the one blueprint (endpoint names `dash.<page>`), the template filters,
read access, the admin check, and the helpers that turn URL parameters into a library, a campaign and a layout
(404 naming the valid choices).

Charts use plotly.js from the installed `plotly` Python package (a dependency already), served by
this blueprint at /dashboards-static/plotly.min.js with a long cache lifetime: no CDN, no npm
step, and the file's version moves with the Python package that the venv pins.
"""
from __future__ import annotations

import re
from functools import wraps
from pathlib import Path

from flask import Blueprint, Flask, abort, current_app, request, send_file
from flask_login import current_user

from pgmpi_formats import site
from pgmpi_formats.limits import LimitError, check_query_int
from service.dashboards import data
from service.store.db import db
from service.store.models import MpiLibrary

bp = Blueprint("dash", __name__)


def register(app: Flask) -> None:
    """The blueprint with every area's routes (service/dashboards/routes.py imports the areas first), and the
    error pages of the site: a page with the navigation and what went wrong instead of a bare one."""
    app.register_blueprint(bp)
    app.jinja_env.filters["dur"] = fmt_duration
    app.jinja_env.filters["bytes"] = fmt_bytes
    for code in (400, 403, 404, 405):
        app.register_error_handler(code, error_page)


def error_page(e):
    """An HTML error page with the site's navigation; the API's errors stay JSON (service/api/common.py)."""
    from flask import render_template
    if request.path.startswith("/api/") or request.path.endswith(".json") \
            or request.accept_mimetypes.best == "application/json":
        return e
    return render_template("error.html", code=e.code, name=e.name, description=e.description), e.code


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
    try:
        v = check_query_int(request.args.get(name), name)
    except LimitError as e:
        abort(400, description=e.message)
    return default if v is None else v


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


def _selection(sels):
    """The layout switch's choice from ?layout= and ?p= (data.choose_layout); an unmeasured layout is a 404
    that lists the valid ones."""
    try:
        return data.choose_layout(sels, request.args.get("layout") or None, _arg_int("p"))
    except ValueError as e:
        abort(404, description=str(e))
