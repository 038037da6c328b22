"""Alembic migrations from an empty database, one step down and up again, on SQLite and PostgreSQL."""
from __future__ import annotations

import flask_migrate
import pytest
from sqlalchemy import inspect

from service.store.db import db

from conftest import MIGRATIONS, create_pg_database, drop_pg_database, make_app

TABLES = {"machines", "mpi_libraries", "campaigns", "jobs", "uploads", "runs", "series", "barrier_series",
          "analyses", "violations", "profile_sets", "profile_versions", "validation_figures", "users",
          "api_tokens", "audit_log", "library_overview"}
HEAD = "0005_truth22"


@pytest.fixture
def empty_url(backend, request, tmp_path):
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.sqlite'}"
        return
    pg = request.getfixturevalue("postgres_url")
    url = create_pg_database(pg, "mig")
    yield url
    drop_pg_database(pg, url)


def _state(app):
    insp = inspect(db.engine)
    tables = set(insp.get_table_names()) - {"alembic_version"}
    # index names from the catalogue (SQLite's inspector hides indexes that contain the rowid column)
    sql = ("SELECT name FROM sqlite_master WHERE type = 'index'" if db.engine.dialect.name == "sqlite"
           else "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
    with db.engine.connect() as conn:
        idx = set(conn.exec_driver_sql(sql).scalars())
        rev = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() \
            if "alembic_version" in insp.get_table_names() else None
    return tables, idx, rev


def _columns(table: str) -> set[str]:
    return {c["name"] for c in inspect(db.engine).get_columns(table)}


def test_upgrade_from_empty_then_down_one_and_up(empty_url, tmp_path):
    app = make_app(empty_url, tmp_path / "inst")
    with app.app_context():
        assert _state(app)[0] == set()
        flask_migrate.upgrade(directory=MIGRATIONS)
        tables, idx, rev = _state(app)
        assert tables == TABLES and rev == HEAD
        assert {"ix_analyses_library_latest", "ix_analyses_library_created", "ix_runs_library_id"} <= idx
        # the model and the migrated schema agree (nothing left for autogenerate to find)
        from alembic.autogenerate import compare_metadata
        from alembic.migration import MigrationContext
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), db.metadata)
        assert diff == []

        flask_migrate.downgrade(directory=MIGRATIONS, revision="-1")
        tables, idx, rev = _state(app)
        assert rev == "0004" and tables == TABLES and "status" not in _columns("violations")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="-1")
        tables, idx, rev = _state(app)
        assert rev == "0003" and tables == TABLES - {"library_overview"}
        flask_migrate.upgrade(directory=MIGRATIONS)
        tables, idx, rev = _state(app)
        assert rev == HEAD and tables == TABLES
        assert {"status", "status_why", "nights_confirmed", "nights_contradicted"} <= _columns("violations")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="0002")
        tables, idx, rev = _state(app)
        assert rev == "0002" and "kind" not in _columns("violations")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="-1")
        tables, idx, rev = _state(app)
        assert rev == "0001" and tables == TABLES - {"library_overview"} and "ix_analyses_library_latest" not in idx
        flask_migrate.upgrade(directory=MIGRATIONS)
        tables, idx, rev = _state(app)
        assert rev == HEAD and "ix_analyses_library_latest" in idx and "kind" in _columns("violations")

        flask_migrate.downgrade(directory=MIGRATIONS, revision="base")
        assert _state(app)[0] == set()
        flask_migrate.upgrade(directory=MIGRATIONS)
        assert _state(app)[0] == TABLES
        db.engine.dispose()
