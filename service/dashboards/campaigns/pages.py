"""The campaigns page."""
from __future__ import annotations

from flask import render_template

from service.dashboards.campaigns import data as cdata
from service.dashboards.common import bp, read_access
from service.store.db import db


@bp.get("/campaigns")
@read_access
def campaigns():
    return render_template("campaigns/campaigns.html", rows=cdata.campaigns(db.session))
