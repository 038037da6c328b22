"""Dashboard pages through Flask's test client: data from uploads through the API, roles, downloads."""
from __future__ import annotations

import csv
import io

import pytest

from dash_helpers import analyse, csrf_of, login, measured_candidate, raw_file, upload


def seed(client, tokens, campaigns=("nightly-1",), libs=(("openmpi", "4.1.4"),), ps=(2, 4), mpiruns=3):
    A = tokens["admin"]
    assert client.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 8,
                                                             "interconnect": "shm", "notes": ""}).status_code == 201
    for name, ver in libs:
        client.post("/api/v1/machines/m1/libraries", headers=A, json={"name": name, "version": ver,
                                                                      "module": f"{name}/{ver}"})
    for ci, camp in enumerate(campaigns):
        assert client.post("/api/v1/campaigns", headers=A, json={"name": camp, "machine": "m1", "definition": {},
                                                                  "schedule": ""}).status_code == 201
        for name, ver in libs:
            files = {f"{name}_{camp}_p{p}_{i}.txt": raw_file("m1", name, ver, p, i, camp, seed=ci)
                     for p in ps for i in range(mpiruns)}
            upload(client, A, files, camp)


@pytest.fixture
def seeded(app, tokens):
    c = app.test_client()
    seed(c, tokens)
    analyse(app, c, tokens["admin"], "m1", "openmpi", "nightly-1")
    return c


def test_pages_need_login_when_not_public(app, seeded):
    app.config["PUBLIC_DASHBOARDS"] = False
    c = app.test_client()
    for url in ["/", "/m/m1/openmpi-4.1.4/heatmap", "/campaigns", "/profiles"]:
        r = c.get(url)
        assert r.status_code == 302 and "/auth/login" in r.headers["Location"]
    assert c.get("/alerts.json").status_code == 401


def test_pages_public_by_default(app, seeded):
    c = app.test_client()
    for url in ["/", "/m/m1/openmpi-4.1.4/heatmap", "/campaigns", "/profiles"]:
        r = c.get(url)
        assert r.status_code == 200, (url, r.status_code)


def test_overview_heatmap_detail(app, seeded):
    c = login(seeded, "viewer1", "viewer-password")
    html = c.get("/").get_data(as_text=True)
    assert "m1" in html and "openmpi-4.1.4" in html
    import re
    brave = int(re.search(r"(\d+) brave", html).group(1))
    assert brave >= 4  # Allreduce <= Reduce + Bcast violated at 64 KiB and 1 MiB, p = 2 and 4
    hm = c.get("/m/m1/openmpi-4.1.4/heatmap?p=2").get_data(as_text=True)
    assert "allreduce" in hm and "bcast" in hm
    assert "1.60x *" in hm or "1.59x *" in hm or "1.61x *" in hm
    det = c.get("/m/m1/openmpi-4.1.4/detail/allreduce?p=4").get_data(as_text=True)
    assert "allreduce_as_reduce_bcast" in det and "64 KiB" in det and "1 MiB" in det
    rows = list(csv.DictReader(io.StringIO(c.get("/m/m1/openmpi-4.1.4/detail/allreduce?p=4&format=csv")
                                           .get_data(as_text=True))))
    assert {r["algorithm"] for r in rows} == {"default", "allreduce_as_reduce_bcast"}
    assert all(r["mpiruns"] == "3" for r in rows)
    js = c.get("/m/m1/openmpi-4.1.4/detail/allreduce?p=4&format=json").get_json()
    assert {v["msize"] for v in js["violations"]} == {65536, 1048576}
    # each verdict with its effect and 95 % interval over the mpiruns, and what the figures rest on
    assert all(v["ci95"][0] < v["effect"] < v["ci95"][1] and v["ci_mpiruns"] == 3 for v in js["violations"]
               if v["kind"] == "pattern")
    assert "95 % CI" in det and 'id="reporting"' in det and "3 mpiruns" in js["reporting"]
    # PGMPI's per-guideline table for the collective at p
    kinds = {g["guideline"]: g for g in js["guidelines"]}
    assert set(kinds) == {"pattern", "monotony", "split"} and kinds["pattern"]["violated"] >= 2
    assert 'id="guidelines"' in det
    assert c.get("/m/m1/nope-1/heatmap").status_code == 404


def test_heatmap_side_by_side(app, tokens):
    c = app.test_client()
    seed(c, tokens, campaigns=("n1", "n2"), libs=(("openmpi", "4.1.4"), ("mpich", "4.0.2")), ps=(2,), mpiruns=2)
    login(c, "viewer1", "viewer-password")
    html = c.get("/m/m1/openmpi-4.1.4/heatmap?p=2&vs_lib=mpich-4.0.2").get_data(as_text=True)
    assert "mpich-4.0.2 · n2" in html and "openmpi-4.1.4 · n2" in html
    html = c.get("/m/m1/openmpi-4.1.4/heatmap?p=2&campaign=n2&vs_campaign=n1").get_data(as_text=True)
    assert "openmpi-4.1.4 · n1" in html and "openmpi-4.1.4 · n2" in html


def test_publish_roles(app, seeded):
    from service.store.models import ProfileSet
    with app.app_context():
        from service.store.db import db
        ps = db.session.query(ProfileSet).one()
        set_id, vid = ps.id, measured_candidate(ps).id
    viewer = login(app.test_client(), "viewer1", "viewer-password")
    page = viewer.get(f"/profiles/{set_id}").get_data(as_text=True)
    assert 'id="publish"' not in page and 'id="rollback"' not in page
    r = viewer.post(f"/profiles/{set_id}/publish", data={"version_id": vid, "csrf_token": csrf_of(page),
                                                        "force": "1", "reason": "x"})
    assert r.status_code == 403
    admin = login(app.test_client(), "admin1", "admin-password")
    page = admin.get(f"/profiles/{set_id}").get_data(as_text=True)
    assert 'id="publish"' in page and "force" in page
    # not validated, not forced: refused, nothing published
    r = admin.post(f"/profiles/{set_id}/publish", data={"version_id": vid, "csrf_token": csrf_of(page)})
    assert r.status_code == 303
    page = admin.get(f"/profiles/{set_id}").get_data(as_text=True)
    assert "Not published" in page and '<b id="current-version">nothing</b>' in page


def test_alerts_feed(app, seeded, tokens):
    r = seeded.get("/alerts.json", headers=tokens["viewer"])
    assert r.status_code == 200
    new = [a for a in r.get_json()["alerts"] if a["type"] == "new_violation"]
    assert {(a["msize"], a["nprocs"]) for a in new} == {(65536, 2), (1048576, 2), (65536, 4), (1048576, 4)}


def seed_nightly(c, tokens, n, shift_at, factor=1.5):
    A = tokens["admin"]
    c.post("/api/v1/machines", headers=A, json={"name": "m1", "nodes": 1, "cores_per_node": 8,
                                                "interconnect": "shm", "notes": ""})
    c.post("/api/v1/machines/m1/libraries", headers=A, json={"name": "openmpi", "version": "4.1.4",
                                                             "module": "openmpi/4.1.4"})
    for k in range(n):
        camp = f"night-{k:02d}"
        assert c.post("/api/v1/campaigns", headers=A, json={"name": camp, "machine": "m1", "definition": {},
                                                             "schedule": ""}).status_code == 201
        scale = factor if k >= shift_at else 1.0
        upload(c, A, {f"{camp}_{i}.txt": raw_file("m1", "openmpi", "4.1.4", 2, i, camp, seed=k, scale=scale)
                      for i in range(2)}, camp)


def test_trend_marks_the_shift(app, tokens):
    c = app.test_client()
    seed_nightly(c, tokens, 12, shift_at=8)
    login(c, "viewer1", "viewer-password")
    t = c.get("/m/m1/openmpi-4.1.4/trends?key=allreduce&msize=1024&algorithm=default&p=2&format=json").get_json()
    assert len(t["y"]) == 12
    assert [(s["index"], s["kind"], s["campaign"]) for s in t["shifts"]] == [(8, "regression", "night-08")]
    assert 1.4 < t["shifts"][0]["ratio"] < 1.6
    html = c.get("/m/m1/openmpi-4.1.4/trends?key=allreduce&msize=1024&algorithm=default&p=2").get_data(as_text=True)
    assert "night-08" in html and "regression" in html
    flat = c.get("/m/m1/openmpi-4.1.4/trends?key=bcast&msize=8&algorithm=bcast_as_scatter_allgather&p=2"
                 "&format=json").get_json()
    assert len(flat["y"]) == 12 and flat["shifts"][0]["index"] == 8  # scale applies to every call
    # a series without a shift has none (3 % noise is not a shift); long series are chunked
    from service.dashboards.data import change_points
    import random
    rnd = random.Random(3)
    assert change_points([1e-5 * (1 + 0.03 * rnd.random()) for _ in range(200)]) == []
    long = [1e-5 * (1 + 0.03 * rnd.random()) for _ in range(150)] + [1.3e-5 * (1 + 0.03 * rnd.random()) for _ in range(100)]
    assert [(s["index"], s["kind"]) for s in change_points(long)] == [(150, "regression")]


def test_alert_feed_reports_a_regression_in_the_latest_campaign(app, tokens):
    c = app.test_client()
    # the nightly detector (service/analysis/nightly.py) judges the last two nights against 20 before them
    seed_nightly(c, tokens, 22, shift_at=20, factor=2.0)
    regs = [a for a in c.get("/alerts.json", headers=tokens["viewer"]).get_json()["alerts"]
            if a["type"] == "regression"]
    assert regs and all(a["campaign"] == "night-21" and a["ratio"] > 1.8 for a in regs)
    assert all("slower over the nights night-20 and night-21" in a["change"] for a in regs)
    assert {a["collective"] for a in regs} == {"MPI_Allreduce", "MPI_Bcast"}


def test_cli_publishes_a_stored_candidate(app, seeded, tmp_path, monkeypatch):
    from click.testing import CliRunner
    from service.store.models import ProfileSet
    from service.commands.profile import profile
    from service.store.db import db
    with app.app_context():
        vid = measured_candidate(db.session.query(ProfileSet).one()).id
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    root = tmp_path / "root"
    args = ["publish-candidate", str(vid), "--root", str(root), "--database-url", url, "--actor", "ops"]
    r = CliRunner().invoke(profile, args)
    assert r.exit_code != 0 and "validation" in r.output        # not validated: refused
    r = CliRunner().invoke(profile, args + ["--force", "--reason", "urgent"])
    assert r.exit_code == 0 and "[FORCED]" in r.output, r.output
    with app.app_context():
        from service.store.models import AuditLog, ProfileVersion
        assert db.session.get(ProfileVersion, vid).state == "published"
        e = db.session.query(AuditLog).filter_by(action="publish-forced").one()
        assert e.actor == "ops" and e.details["reason"] == "urgent"
    assert (root / "m1" / "openmpi-4.1.4" / "current").is_symlink()
    # `pgmpi profile rollback` changes the database with the files, as the profile page does
    base = ["--root", str(root), "--machine", "m1", "--mpi", "openmpi", "--mpi-version", "4.1.4",
            "--database-url", url, "--actor", "ops"]
    r = CliRunner().invoke(profile, ["rollback", *base])
    assert r.exit_code == 0 and "rolled back to version 0" in r.output and "files only" not in r.output, r.output
    with app.app_context():
        from service.store.models import AuditLog, ProfileVersion
        assert db.session.get(ProfileVersion, vid).state == "rolled-back"
        assert db.session.query(AuditLog).filter_by(action="rollback").one().actor == "ops"


def _refuse_state(app, state: str | None) -> None:
    """Make the real database refuse (or stop refusing, state=None) to set a profile version's state."""
    from sqlalchemy import text
    from service.store.db import db
    with app.app_context():
        sqlite = db.engine.dialect.name == "sqlite"
        with db.engine.begin() as conn:
            if sqlite:
                conn.execute(text("DROP TRIGGER IF EXISTS refuse_state"))
            else:
                conn.execute(text("ALTER TABLE profile_versions DROP CONSTRAINT IF EXISTS refuse_state"))
            if state is None:
                return
            if sqlite:
                conn.execute(text(f"CREATE TRIGGER refuse_state BEFORE UPDATE OF state ON profile_versions "
                                  f"WHEN NEW.state = '{state}' BEGIN SELECT RAISE(ABORT, 'refused by test'); END"))
            else:
                conn.execute(text(f"ALTER TABLE profile_versions ADD CONSTRAINT refuse_state "
                                  f"CHECK (state <> '{state}') NOT VALID"))


def test_database_refusal_undoes_the_swap(db_app):
    """Publishing and rolling back change the profile root and the database together: when the database
    refuses the commit after `current` was swapped, `current` is swapped back and the admin is told."""
    from dash_helpers import add_users_and_tokens
    from service.profiles import publish as pub
    from service.store.db import db
    from service.store.models import AuditLog, ProfileSet, ProfileVersion
    app = db_app
    tokens = add_users_and_tokens(app)
    c = app.test_client()
    seed(c, tokens)
    analyse(app, c, tokens["admin"], "m1", "openmpi", "nightly-1")
    with app.app_context():
        ps = db.session.query(ProfileSet).one()
        set_id, vid = ps.id, measured_candidate(ps).id
    target = pub.target_dir(app.config["PGMPI_PROFILE_ROOT"], "m1", "openmpi", "4.1.4")
    admin = login(app.test_client(), "admin1", "admin-password")

    def post(action, **data):
        page = admin.get(f"/profiles/{set_id}").get_data(as_text=True)
        r = admin.post(f"/profiles/{set_id}/{action}", data={"csrf_token": csrf_of(page), **data})
        assert r.status_code == 303
        return admin.get(f"/profiles/{set_id}").get_data(as_text=True)

    # 1. the database refuses the publish: current goes back to "nothing published" (empty version 0)
    _refuse_state(app, "published")
    page = post("publish", version_id=vid, force="1", reason="test")
    assert "Not published: the database refused to record the publish" in page
    assert pub.current_version(target) == 0 and list((target / "current").iterdir()) == []
    assert [(e["action"], e["version"]) for e in pub.read_history(target)] == [("publish", 1), ("rollback", 0)]
    with app.app_context():
        assert db.session.get(ProfileVersion, vid).state != "published"
        assert db.session.query(AuditLog).filter(AuditLog.action.like("publish%")).count() == 0
    # 2. accepted: version 2 is current, database and disk agree
    _refuse_state(app, None)
    page = post("publish", version_id=vid, force="1", reason="test")
    assert "Published as version 2" in page and pub.current_version(target) == 2
    with app.app_context():
        assert db.session.get(ProfileVersion, vid).state == "published"
    # 3. the database refuses the rollback: version 2 stays current
    _refuse_state(app, "rolled-back")
    page = post("rollback")
    assert "Not rolled back: the database refused to record the rollback" in page
    assert pub.current_version(target) == 2
    with app.app_context():
        assert db.session.get(ProfileVersion, vid).state == "published"
    _refuse_state(app, None)


def test_first_visit_words_links_and_counts(app, seeded):
    """What a first-time visitor meets: a Log in link and no JSON feed link it cannot open, a glossary
    entry behind every glossary link of the pages, one login error, heatmap counts that add up to the
    overview's, a readable profile history."""
    import re
    anon = app.test_client()
    home = anon.get("/").get_data(as_text=True)
    assert 'class="login"' in home and ">Log in</a>" in home and "alerts.json" not in home
    glossary = anon.get("/glossary").get_data(as_text=True)
    ids = set(re.findall(r'<tr id="([^"]+)"', glossary))
    linked = set()
    for url in ["/", "/m/m1/openmpi-4.1.4/heatmap?p=2", "/m/m1/openmpi-4.1.4/detail/allreduce?p=2"]:
        linked |= set(re.findall(r'href="/glossary#([^"]+)"', anon.get(url).get_data(as_text=True)))
    assert {"brave", "cautious", "quality", "kind"} <= linked and linked <= ids, linked - ids
    assert "monotony" in glossary and "split" in glossary and "**" not in glossary
    page = anon.get("/auth/login").get_data(as_text=True)
    r = anon.post("/auth/login", data={"username": "viewer1", "password": "wrong-password",
                                       "csrf_token": re.search(r'name="csrf_token"[^>]*value="([^"]+)"',
                                                               page).group(1)})
    assert r.status_code == 401 and r.get_data(as_text=True).count("Unknown user name or wrong password") == 1
    viewer = login(app.test_client(), "viewer1", "viewer-password")
    assert "alerts.json" in viewer.get("/").get_data(as_text=True)
    # every heatmap gives the analysis's verified count over all p and guidelines: the overview's brave count
    brave = int(re.search(r"(\d+) brave", home).group(1))
    for p in (2, 4):
        hm = anon.get(f"/m/m1/openmpi-4.1.4/heatmap?p={p}").get_data(as_text=True)
        assert int(re.search(r"\(all p, all guidelines\): (\d+) verified", hm).group(1)) == brave
        assert int(re.search(r"p = %d: (\d+) verified" % p, hm).group(1)) <= brave
    from service.store.db import db
    from service.store.models import ProfileSet
    with app.app_context():
        ps = db.session.query(ProfileSet).one()
        set_id = ps.id
        span_ids = [v.id for v in ps.versions if (v.notes or "").startswith("span:")]
    admin = login(app.test_client(), "admin1", "admin-password")
    # the seeded p = 2 and 4 agree: a span at p = 3 is a version of its own, offered for validation, not publishing
    assert span_ids, "the seeded campaign's p = 2 and 4 agree: the analysis proposes a span at p = 3"
    sp = admin.get(f"/profiles/{set_id}?candidate={span_ids[0]}").get_data(as_text=True)
    assert 'id="span-awaits"' in sp and 'id="publish-form"' not in sp
    page = admin.get(f"/profiles/{set_id}").get_data(as_text=True)
    assert 'id="span-awaits"' not in page      # the page opens on the measured candidate
    admin.post(f"/profiles/{set_id}/publish", data={"version_id": re.search(r'name="version_id" value="(\d+)"',
                                                                            page).group(1),
                                                   "csrf_token": csrf_of(page), "force": "1",
                                                   "reason": "first hour"})
    hist = admin.get(f"/profiles/{set_id}").get_data(as_text=True).split('id="history"')[1].split("</table>")[0]
    assert "<dl class=\"kv\">" in hist and "first hour" in hist and "&#34;" not in hist and '{"' not in hist
