"""The alerts: the page people read (/alerts) and the feed scripts read (/alerts.json, for a token or a login;
the same as GET /api/v1/alerts of the OpenAPI document)."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import jsonify, render_template

from service.dashboards.alerts import data as adata
from service.dashboards.common import bp, profile_root, read_access
from service.store.db import db


def feed() -> dict:
    """The feed's body: every alert (what changed since the last night, whether a live profile covers it)
    and each library's counts."""
    return {"generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "alerts": [{k: v for k, v in a.items() if k != "library_id"}
                       for a in adata.alerts(db.session, profile_root())],
            "libraries": adata.library_status(db.session)}


@bp.get("/alerts.json")
def alerts_feed():
    from service.auth import current_principal
    pr = current_principal()
    if pr is None:
        return jsonify(error="authentication required (bearer token or login)"), 401
    return jsonify(feed())


@bp.get("/alerts")
@read_access
def alerts_page():
    from service.workflows.notify import Settings, line
    try:
        settings, conf_error = Settings.from_site(), None
    except ValueError as exc:
        settings, conf_error = None, str(exc)
    alerts = adata.alerts(db.session, profile_root())
    by_lib: dict[str, list] = {}
    for a in alerts:
        by_lib.setdefault(f"{a['machine']} {a['library']}-{a['version']}", []).append({**a, "line": line(a)})
    return render_template("alerts/alerts.html", by_lib=by_lib, settings=settings, conf_error=conf_error,
                           types=adata.TYPES)
