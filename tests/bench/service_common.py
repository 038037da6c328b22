"""Helpers of the service benchmarks: scratch PostgreSQL databases on the server of deploy/postgres.sh."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def server_url() -> str:
    url = os.environ.get("PGMPI_TEST_DATABASE_URL")
    if url:
        return url
    return subprocess.check_output([str(ROOT / "deploy/postgres.sh"), "url"], text=True).strip()


def _conninfo(url: str) -> str:
    u = make_url(url)
    return f"host={u.host} port={u.port or 5432} user={u.username} password={u.password} dbname={u.database}"


@contextmanager
def scratch_database(tag: str, keep: bool = False):
    """A new empty database; dropped on exit unless keep."""
    base = server_url()
    name = f"pgmpi_bench_{tag}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(_conninfo(base), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        if not keep:
            with psycopg.connect(_conninfo(base), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(url: str) -> None:
    import flask_migrate

    from service.app import create_app
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench"})
    with app.app_context():
        flask_migrate.upgrade(directory=str(ROOT / "migrations"))
        from service.store.db import db
        db.engine.dispose()
