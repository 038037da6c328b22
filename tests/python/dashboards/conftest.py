"""Fixtures of the dashboard tests (helpers in dash_helpers.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import os
import uuid

import psycopg
from sqlalchemy.engine import make_url

from dash_helpers import _conninfo, add_users_and_tokens, make_app  # noqa: E402
from service.store.db import db  # noqa: E402


@pytest.fixture
def app(tmp_path):
    app = make_app(f"sqlite:///{tmp_path / 'pgmpi.sqlite'}", tmp_path / "instance")
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def tokens(app) -> dict:
    return add_users_and_tokens(app)


@pytest.fixture
def pg_database(postgres_url):
    name = f"pgmpi_dash_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    yield url
    with psycopg.connect(_conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=[pytest.param("sqlite", id="sqlite"),
                        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)])
def db_app(request, tmp_path):
    """The app on SQLite and on a scratch database of the real PostgreSQL."""
    url = request.getfixturevalue("pg_database") if request.param == "postgres" else \
        f"sqlite:///{tmp_path / 'pgmpi.sqlite'}"
    app = make_app(url, tmp_path / "instance")
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
