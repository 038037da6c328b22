"""Who may read the pages: anyone when PUBLIC_DASHBOARDS is on (default), only logged-in people
otherwise; publishing always needs an admin."""
from __future__ import annotations

from dash_helpers import make_app


def test_anonymous_cannot_publish(app):
    r = app.test_client().post("/profiles/1/publish", data={})
    assert r.status_code in (302, 400, 401, 403)
    assert r.status_code != 200
