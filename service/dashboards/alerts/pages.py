"""The alerts feed (JSON, for a token or a login)."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import jsonify

from service.dashboards.alerts import data as adata
from service.dashboards.common import bp
from service.store.db import db


@bp.get("/alerts.json")
def alerts_feed():
    from service.auth import current_principal
    pr = current_principal()
    if pr is None:
        return jsonify(error="authentication required (bearer token or login)"), 401
    return jsonify(generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   alerts=adata.alerts(db.session), libraries=adata.library_status(db.session))
