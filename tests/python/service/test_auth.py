"""Web login with hashed passwords and CSRF-protected forms; sessions only read through the API."""
from __future__ import annotations

import re

from sqlalchemy import select

from service.auth import add_user
from service.store.db import db
from service.store.models import User


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', html).group(1)


def test_login_logout_with_csrf(client, app):
    with app.app_context():
        add_user("alice", "correct horse", "viewer")
        db.session.commit()
        stored = db.session.scalar(select(User.password_hash).where(User.username == "alice"))
    assert "correct horse" not in stored and stored.startswith(("scrypt:", "pbkdf2:"))

    page = client.get("/auth/login")
    assert page.status_code == 200 and b"csrf_token" in page.data
    token = _csrf(page.get_data(as_text=True))
    # no CSRF token: refused, not logged in
    r = client.post("/auth/login", data={"username": "alice", "password": "correct horse"})
    assert r.status_code == 400
    assert client.get("/api/v1/me").status_code == 401
    # wrong password
    r = client.post("/auth/login", data={"username": "alice", "password": "wrong", "csrf_token": token})
    assert r.status_code == 401 and b"wrong password" in r.data
    r = client.post("/auth/login?next=/api/v1/me",
                    data={"username": "alice", "password": "correct horse", "csrf_token": token})
    assert r.status_code == 302 and r.headers["Location"].endswith("/api/v1/me")
    assert client.get("/api/v1/me").json["name"] == "user:alice"
    # a session never writes through the API (no CSRF surface there): bearer tokens only
    r = client.post("/api/v1/machines", json={"name": "x", "nodes": 1, "cores_per_node": 1})
    assert r.status_code == 401
    # open redirects are not followed
    r = client.post("/auth/login?next=//evil.example/", data={"username": "alice", "password": "correct horse",
                                                              "csrf_token": token})
    assert r.headers["Location"] == "/"
    assert client.post("/auth/logout", data={}).status_code == 400       # CSRF again
    assert client.post("/auth/logout", data={"csrf_token": token}).status_code == 302
    assert client.get("/api/v1/me").status_code == 401


def test_add_user_validates(app):
    import pytest
    with app.app_context():
        with pytest.raises(ValueError, match="role"):
            add_user("bob", "long enough pass", "root")
        with pytest.raises(ValueError, match="12 characters"):
            add_user("bob", "short", "viewer")
        add_user("bob", "long enough pass", "admin")
        with pytest.raises(ValueError, match="exists"):
            add_user("bob", "long enough pass", "admin")
