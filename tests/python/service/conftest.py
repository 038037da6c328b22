"""Fixtures of the service tests: the Flask tutorial's `app`, `client`, `runner`, run against SQLite
and against the real PostgreSQL (a scratch database per session, dropped afterwards).

Select a backend with `-k sqlite` / `-k postgres` or PGMPI_TEST_BACKENDS=sqlite,postgres.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

import flask_migrate
from service.store.db import db

sys.path.insert(0, str(Path(__file__).parent))
from svc_helpers import MIGRATIONS, create_pg_database, drop_pg_database, make_app  # noqa: E402

_ALL = [pytest.param("sqlite", id="sqlite"), pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]
_WANT = set(os.environ.get("PGMPI_TEST_BACKENDS", "sqlite,postgres").split(","))
BACKENDS = [p for p in _ALL if p.values[0] in _WANT]
_migrated: set[str] = set()


@pytest.fixture(scope="session")
def pg_scratch(postgres_url):
    url = create_pg_database(postgres_url, "svc")
    yield url
    drop_pg_database(postgres_url, url)


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def database_url(backend, request, tmp_path_factory) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'pgmpi.sqlite'}"
    return request.getfixturevalue("pg_scratch")


@pytest.fixture
def app_config() -> dict:
    """Override in a test module (or parametrize indirectly) to change the app's config."""
    return {}


@pytest.fixture
def app(database_url, tmp_path, app_config):
    app = make_app(database_url, tmp_path / "instance", **app_config)
    with app.app_context():
        if database_url not in _migrated:
            flask_migrate.upgrade(directory=MIGRATIONS)
            _migrated.add(database_url)
    yield app
    with app.app_context():   # empty every table for the next test
        db.session.remove()
        names = [t.name for t in reversed(db.metadata.sorted_tables)]
        with db.engine.begin() as conn:
            if db.engine.dialect.name == "postgresql":
                conn.execute(text("TRUNCATE " + ", ".join(f'"{n}"' for n in names) + " RESTART IDENTITY CASCADE"))
            else:
                for n in names:
                    conn.execute(text(f'DELETE FROM "{n}"'))
        db.engine.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def seeded(app):
    """Machines m1, m2 and tokens: admin, viewer, agent1 (machine m1), agent2 (machine m2).
    Returns {name: Authorization header dict}."""
    from service.auth import create_token
    from service.store.models import Machine
    with app.app_context():
        db.session.add_all([Machine(name="m1", nodes=2, cores_per_node=8, interconnect="tcp", notes=""),
                            Machine(name="m2", nodes=4, cores_per_node=16, interconnect="ib", notes="")])
        db.session.flush()
        out = {}
        for name, role, machine in (("admin", "admin", None), ("viewer", "viewer", None),
                                    ("agent1", "agent", "m1"), ("agent2", "agent", "m2")):
            row, secret = create_token(name, role, machine, actor="test")
            out[name] = {"Authorization": f"Bearer {secret}"}
            out[name + "_id"] = row.id
        db.session.commit()
    return out


@pytest.fixture
def campaign_with_runs(client, seeded):
    """campaign_with_runs(texts, campaign="c1", machine="m1", by="admin", **fields) -> the stored runs' ids: the
    campaign created by `by` (through the API; a second call for the same campaign finds it: 200) with any
    further campaign fields (schedule=...), then one upload per raw file by agent1.  texts: the files' texts
    (named run<i>.txt), or {file name: text}."""
    made: set[str] = set()
    uploads = itertools.count()

    def create(texts, campaign="c1", machine="m1", by="admin", **fields) -> list[int]:
        r = client.post("/api/v1/campaigns", headers=seeded[by],
                        json={"name": campaign, "machine": machine, "definition": {}, **fields})
        assert r.status_code == (200 if campaign in made else 201), r.get_json()
        made.add(campaign)
        files = texts if isinstance(texts, dict) else {f"run{i}.txt": t for i, t in enumerate(texts)}
        runs = []
        for name, text in files.items():
            r = client.post("/api/v1/uploads", headers=seeded["agent1"], json={
                "upload_id": f"{campaign}-u{next(uploads)}", "campaign": campaign,
                "files": [{"name": name, "content": text}]})
            assert r.status_code == 201, r.get_json()
            runs += r.get_json()["runs"]
        return runs
    return create
