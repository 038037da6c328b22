"""Helpers of the service tests that test modules import (conftest.py uses them too). A module of its own,
not conftest: with several test directories in one pytest call, `from conftest import` would get whichever
directory's conftest was imported last."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from service.app import create_app

ROOT = Path(__file__).resolve().parents[3]
MIGRATIONS = str(ROOT / "migrations")


def _admin_conninfo(url: str) -> str:
    u = make_url(url)
    return f"host={u.host} port={u.port or 5432} user={u.username} password={u.password} dbname={u.database}"


def create_pg_database(postgres_url: str, tag: str) -> str:
    """A new empty database on the test server; returns its SQLAlchemy URL."""
    name = f"pgmpi_test_{tag}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_admin_conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(postgres_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(postgres_url: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(_admin_conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_app(database_url: str, instance: Path, **extra):
    cfg = {"SQLALCHEMY_DATABASE_URI": database_url, "TESTING": True, "SECRET_KEY": "test-secret",
           "INSTANCE_PATH": str(instance), "WTF_CSRF_ENABLED": True}
    cfg.update(extra)
    return create_app(cfg)
