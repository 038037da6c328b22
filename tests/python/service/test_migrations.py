"""Alembic migrations from an empty database, one step down and up again, on SQLite and PostgreSQL."""
from __future__ import annotations

import flask_migrate
import pytest
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from service.store.db import db

from svc_helpers import MIGRATIONS, create_pg_database, drop_pg_database, make_app

def _head() -> str:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


HEAD = _head()      # the newest migration (each branch chains its own onto main's)
TABLES = {"machines", "mpi_libraries", "campaigns", "jobs", "uploads", "runs", "series", "barrier_series",
          "analyses", "violations", "profile_sets", "profile_versions", "validation_figures", "users",
          "api_tokens", "audit_log", "library_overview", "login_failures", "native_validations", "dt_cases",
          "dt_verdicts", "usage_jobs", "usage_cells"}
DT = {"dt_cases", "dt_verdicts"}     # 0009_dtsvc
USAGE = {"usage_jobs", "usage_cells"}   # 0012_usage33
NATIVE = {"native_validations"}      # 0008_npub


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


def _seed_machine(conn, nodes: int, libraries: int) -> None:
    """The rows a data migration test starts from: machine 1 ('m', `nodes` x 2 cores) and Open MPI 4.1.4
    libraries 1..`libraries` on it (module m<id>). Plain SQL: the models describe the head, not the revision
    the test stops at."""
    conn.execute(text("INSERT INTO machines (id, name, nodes, cores_per_node, interconnect, notes, created_at) "
                      "VALUES (1, 'm', :nodes, 2, '', '', CURRENT_TIMESTAMP)"), {"nodes": nodes})
    for lid in range(1, libraries + 1):
        conn.execute(text("INSERT INTO mpi_libraries (id, machine_id, name, version, module, created_at) "
                          "VALUES (:id, 1, 'openmpi', '4.1.4', :module, CURRENT_TIMESTAMP)"),
                     {"id": lid, "module": f"m{lid}"})


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

        flask_migrate.downgrade(directory=MIGRATIONS, revision="0004")
        tables, idx, rev = _state(app)
        assert rev == "0004" and tables == TABLES - {"login_failures"} - DT - NATIVE - USAGE and "status" not in _columns("violations")
        assert "layout" not in _columns("runs") and "digest" not in _columns("uploads")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="-1")
        tables, idx, rev = _state(app)
        assert rev == "0003" and tables == TABLES - {"library_overview", "login_failures"} - DT - NATIVE - USAGE
        flask_migrate.upgrade(directory=MIGRATIONS)
        tables, idx, rev = _state(app)
        assert rev == HEAD and tables == TABLES and "directory" in _columns("profile_sets")
        assert {"status", "status_why", "nights_confirmed", "nights_contradicted"} <= _columns("violations")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="0002")
        tables, idx, rev = _state(app)
        assert rev == "0002" and "kind" not in _columns("violations")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="-1")
        tables, idx, rev = _state(app)
        assert rev == "0001" and tables == TABLES - {"library_overview", "login_failures"} - DT - NATIVE - USAGE \
            and "ix_analyses_library_latest" not in idx
        flask_migrate.upgrade(directory=MIGRATIONS)
        tables, idx, rev = _state(app)
        assert rev == HEAD and "ix_analyses_library_latest" in idx and "kind" in _columns("violations")

        flask_migrate.downgrade(directory=MIGRATIONS, revision="base")
        assert _state(app)[0] == set()
        flask_migrate.upgrade(directory=MIGRATIONS)
        assert _state(app)[0] == TABLES
        db.engine.dispose()


def test_layout_columns_are_filled_from_what_runs_recorded(empty_url, tmp_path):
    """0007_layout17: runs stored before it get their layout label from nodes x ppn (when that is their p) and
    hosts / placement from their #@ headers; down removes the columns."""
    app = make_app(empty_url, tmp_path / "inst")
    with app.app_context():
        flask_migrate.upgrade(directory=MIGRATIONS, revision="0006_harden19")
        with db.engine.begin() as conn:
            _seed_machine(conn, nodes=3, libraries=1)
            conn.execute(text("INSERT INTO uploads (id, upload_id, machine_id, actor, n_files, n_timings, created_at) "
                              "VALUES (1, 'u', 1, 'a', 2, 0, CURRENT_TIMESTAMP)"))
            for rid, nodes, ppn, nprocs, hdr in (
                    (1, 2, 2, 4, '{"hosts": "node1,node2", "placement": "0:2,1:2"}'),
                    (2, 2, 3, 5, '{"hosts": "node1,node2", "placement": "0:3,1:2"}')):
                conn.execute(text(
                    "INSERT INTO runs (id, upload_pk, machine_id, library_id, file_name, slurm_job_id, mpirun_index, "
                    "nodes, ppn, nprocs, state, reason, created_at, headers, footer) VALUES "
                    f"({rid}, 1, 1, 1, 'f{rid}', '', 0, {nodes}, {ppn}, {nprocs}, 'COMPLETED', '', CURRENT_TIMESTAMP, "
                    f"'{hdr}', '[]')"))
        flask_migrate.upgrade(directory=MIGRATIONS, revision="0007_layout17")
        with db.engine.connect() as conn:
            got = conn.execute(text("SELECT id, layout, hosts, placement FROM runs ORDER BY id")).all()
        assert [tuple(r) for r in got] == [(1, "2x2", "node1,node2", "0:2,1:2"), (2, "", "node1,node2", "0:3,1:2")]
        assert "layout" in _columns("violations") and "layout" in _columns("validation_figures")
        flask_migrate.downgrade(directory=MIGRATIONS, revision="0006_harden19")
        assert "layout" not in _columns("runs") and "layout" not in _columns("violations")
        db.engine.dispose()


def test_earlier_published_versions_become_superseded(empty_url, tmp_path):
    """0015_mends_superseded: of a set's several published versions the one its last publish / rollback in the
    audit log made current stays published (set 1: rolled back to version 1, older than version 2), else the
    newest (set 2, no audit rows); the others are superseded.  Down: published again."""
    app = make_app(empty_url, tmp_path / "inst")
    with app.app_context():
        flask_migrate.upgrade(directory=MIGRATIONS, revision="0014_nativesizes35")
        with db.engine.begin() as conn:
            _seed_machine(conn, nodes=1, libraries=2)
            for sid in (1, 2):
                conn.execute(text("INSERT INTO profile_sets (id, machine_id, library_id, created_at) "
                                  f"VALUES ({sid}, 1, {sid}, CURRENT_TIMESTAMP)"))
            for vid, sid, n, state, day in ((1, 1, 1, "published", 1), (2, 1, 2, "published", 2),
                                            (3, 1, 3, "rolled-back", 3), (4, 2, 1, "published", 1),
                                            (5, 2, 2, "published", 2), (6, 2, 3, "candidate", None)):
                conn.execute(text(
                    "INSERT INTO profile_versions (id, profile_set_id, number, state, files, created_at, published_at, "
                    f"published_path, actor, notes) VALUES ({vid}, {sid}, {n}, '{state}', '{{}}', CURRENT_TIMESTAMP, "
                    + (f"'2026-11-0{day} 02:00:00', '/p/m/s{sid}/versions/{n}'" if day else "NULL, NULL")
                    + ", 'a', '')"))
            for aid, action, details in ((1, "publish", '{"set": 1, "fs_version": 1}'),
                                         (2, "publish", '{"set": 1, "fs_version": 2}'),
                                         (3, "publish-forced", '{"set": 1, "fs_version": 3}'),
                                         (4, "rollback", '{"set": 1, "fs_version": 1, "previous": 3}')):
                conn.execute(text("INSERT INTO audit_log (id, at, actor, action, entity, entity_id, details) VALUES "
                                  f"({aid}, CURRENT_TIMESTAMP, 'a', '{action}', 'profile', 'x', '{details}')"))
        flask_migrate.upgrade(directory=MIGRATIONS, revision="0015_mends_superseded")

        def states():
            with db.engine.connect() as conn:
                return dict(conn.execute(text("SELECT id, state FROM profile_versions")).all())
        assert states() == {1: "published", 2: "superseded", 3: "rolled-back", 4: "superseded", 5: "published",
                            6: "candidate"}
        flask_migrate.downgrade(directory=MIGRATIONS, revision="0014_nativesizes35")
        assert states() == {1: "published", 2: "published", 3: "rolled-back", 4: "published", 5: "published",
                            6: "candidate"}
        db.engine.dispose()
