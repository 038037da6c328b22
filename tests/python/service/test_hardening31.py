"""Issue 31, the second hardening round: each of D1-D15 as the probe sent it, and the design decisions
(docs/admin-guide.md, "Security").  Every test failed on main at f7532e5."""
from __future__ import annotations

import io
import json
import os
import re
import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select, update

from service.store.db import db
from service.store.models import ApiToken, LoginFailure, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run, User
from svc_data import results_file

PRF = {"MPI_Allreduce.prf": "MPI_Allreduce\n2\n2\n0 default\n1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}


@pytest.fixture
def app_config():
    return {"PASSWORD_HASH_METHOD": "pbkdf2:sha256:1000"}


def _upload(client, headers, uid, files):
    return client.post("/api/v1/uploads", headers=headers, json={"upload_id": uid, "files": files})


def _with_header(key: str, value: str, text: str | None = None) -> str:
    lines = (text or results_file()).splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"#@{key}="):
            lines[i] = f"#@{key}={value}"
            break
    else:
        lines.insert(1, f"#@{key}={value}")
    return "\n".join(lines) + "\n"


def _runs(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Run))


def _csrf(client) -> str:
    html = client.get("/auth/login").get_data(as_text=True)
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', html).group(1)


def _user(app, name="alice", password="correct horse battery", role="admin"):
    from service.auth import add_user
    with app.app_context():
        add_user(name, password, role)
        db.session.commit()


def _login(client, user="alice", password="correct horse battery", next_=None, addr="10.0.0.1"):
    url = "/auth/login" + (f"?next={next_}" if next_ is not None else "")
    return client.post(url, data={"username": user, "password": password, "csrf_token": _csrf(client)},
                       environ_base={"REMOTE_ADDR": addr})


class _Counting(io.RawIOBase):
    """A request body that counts what the server reads of it."""

    def __init__(self, size: int):
        self.size, self.read_bytes, self.pos = size, 0, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):    # the test client measures the length this way
        self.pos = self.size + offset if whence == 2 else offset
        return self.pos

    def tell(self):
        return self.pos

    def readinto(self, b):
        n = min(len(b), self.size - self.pos)
        b[:n] = b"x" * n
        self.pos += n
        self.read_bytes += n
        return n


# ----------------------------------------------------------------- D1 body limits

def test_d1_anonymous_form_posts_cost_a_small_constant(client, app):
    """An anonymous form POST over the form limit is refused before it is read (413), on the login form and
    on the admin's publish form (CSRF reads the form before the login check)."""
    for path in ("/auth/login", "/profiles/1/publish", "/profiles/1/rollback", "/auth/logout"):
        body = _Counting(50_000_000)
        r = client.post(path, input_stream=body, content_length=50_000_000,
                        content_type="application/x-www-form-urlencoded")
        assert r.status_code == 413, (path, r.status_code)
        assert body.read_bytes == 0, (path, body.read_bytes)


def test_d1_api_bodies_read_only_after_the_token(client, seeded):
    """Anonymous API writes are answered 401 without reading the body; an authenticated JSON write other
    than an upload is limited to API_MAX_BODY_BYTES, an upload to MAX_CONTENT_LENGTH."""
    for path in ("/api/v1/uploads", "/api/v1/analyses", "/api/v1/machines", "/api/v1/native/validations"):
        body = _Counting(200_000_000)
        r = client.post(path, input_stream=body, content_length=200_000_000, content_type="application/json")
        assert r.status_code == 401 and body.read_bytes == 0, (path, r.status_code, body.read_bytes)
    body = _Counting(100_000_000)
    r = client.post("/api/v1/machines", headers=seeded["admin"], input_stream=body, content_length=100_000_000,
                    content_type="application/json")
    assert r.status_code == 413 and body.read_bytes == 0 and "33554432" in r.json["error"]["message"]


# ----------------------------------------------------------------- D2 symlinks in the profile root

def _publish(root, **kw):
    from service.profiles import publish as pub
    return pub.publish(root, "m1", "openmpi", "4.1.4", PRF, actor="test", validated=True, checker=["/bin/true"], **kw)


@pytest.mark.parametrize("planted", ["versions", "history.jsonl", ".lock", "machine"])
def test_d2_symlinks_in_the_profile_root_are_refused(tmp_path, planted):
    from service.profiles import publish as pub
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    target = root / "m1" / "openmpi-4.1.4"
    if planted == "machine":
        (root).mkdir()
        os.symlink(outside, root / "m1")
    else:
        target.mkdir(parents=True)
        os.symlink(outside / planted.strip("."), target / planted)
        if planted == "versions":
            (outside / "versions").mkdir()
        if planted == "history.jsonl":
            (outside / "history.jsonl").write_text("")
    with pytest.raises(pub.PublishError, match="symbolic link|outside the profile root"):
        _publish(root)
    assert sorted(p.name for p in outside.rglob("*")) in ([], ["versions"], ["history.jsonl"])
    if planted == "history.jsonl":
        assert (outside / "history.jsonl").read_text() == ""


def test_d2_symlinked_version_or_file_is_not_shown(app, seeded, client, tmp_path, monkeypatch):
    """versions/<n> or a file there replaced by a symlink: the page says so and shows nothing of it."""
    from service.workflows import publish as publishing
    monkeypatch.setenv("PGMPITUNE_CHECK", "/bin/true")
    root = tmp_path / "profiles"
    app.config["PGMPI_PROFILE_ROOT"] = str(root)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == "m1"))
        lib = MpiLibrary(machine_id=m.id, name="openmpi", version="4.1.4", module="openmpi/4.1.4")
        db.session.add(lib)
        db.session.flush()
        ps = ProfileSet(machine_id=m.id, library_id=lib.id)
        db.session.add(ps)
        db.session.flush()
        v = ProfileVersion(profile_set_id=ps.id, number=1, state="validated", files=PRF,
                           validated_at=datetime.now(timezone.utc))
        v2 = ProfileVersion(profile_set_id=ps.id, number=2, state="candidate", files=PRF)
        db.session.add_all([v, v2])
        db.session.flush()
        res = publishing.publish_candidate(v, root, "test")
        db.session.commit()
        set_id, cand = ps.id, v2.id
    vdir = res.target / "versions" / "1"
    (vdir / "MPI_Allreduce.prf").unlink()
    os.symlink(secret, vdir / "MPI_Allreduce.prf")
    r = client.get(f"/profiles/{set_id}?candidate={cand}")
    assert r.status_code == 200 and "TOP-SECRET" not in r.get_data(as_text=True)
    assert "cannot be read" in r.get_data(as_text=True)
    (vdir / "MPI_Allreduce.prf").unlink()
    os.rmdir(vdir)
    os.symlink(secret.parent, vdir)
    r = client.get(f"/profiles/{set_id}?candidate={cand}")
    assert r.status_code == 200 and "TOP-SECRET" not in r.get_data(as_text=True)


# ----------------------------------------------------------------- D3 degenerate timings

def test_d3_all_zero_timings_are_not_testable(client, seeded):
    text = re.sub(r"^(MPI_Allreduce \d+ \d+) [0-9.e-]+ allreduce_as", r"\1 0.0000000000 allreduce_as",
                  results_file(nrep=5), flags=re.M)
    assert text.count(" 0.0000000000 allreduce_as") == 10
    files = [{"name": f"r{i}.txt", "content": _with_header("mpirun_index", str(i), text)} for i in range(3)]
    assert _upload(client, seeded["agent1"], "zeros", files).status_code == 201
    for test in ("welch", "mannwhitney", "ks", "paired_t", "wilcoxon"):
        r = client.post("/api/v1/analyses", headers=seeded["admin"],
                        json={"machine": "m1", "library": "openmpi", "test": test})
        assert r.status_code == 201, (test, r.status_code, r.get_data(as_text=True)[:300])
        assert r.json["n_violations"] == 0


# ----------------------------------------------------------------- D4, D5, D15: upload text and numbers

def test_d4_lone_surrogates_in_headers_are_refused(client, seeded, app):
    for key in ("hosts", "placement", "slurm_job_id"):
        r = _upload(client, seeded["agent1"], f"s-{key}", [{"name": "r.txt", "content": _with_header(key, "a\ud800b")}])
        assert r.status_code == 422, (key, r.status_code)
        r = _upload(client, seeded["agent1"], f"j-{key}",
                    [{"name": "r.txt", "headers": {"machine": "m1", "mpi_library": "openmpi", "nprocs": 2,
                                                   key: "a\udc00"}, "rows": [["MPI_Allreduce", 0, 8, 1e-5, "default"]]}])
        assert r.status_code == 422, (key, r.status_code)
    assert _runs(app) == 0


def test_d5_huge_json_integers_are_a_client_error(client, seeded):
    body = '{"upload_id": "big", "files": [{"name": "r.txt", "headers": {"machine": "m1", "mpi_library": "openmpi", ' \
           '"nprocs": ' + "9" * 5000 + '}, "rows": [["MPI_Allreduce", 0, 8, 1e-5, "default"]]}]}'
    r = client.post("/api/v1/uploads", headers={**seeded["agent1"], "Content-Type": "application/json"}, data=body)
    assert r.status_code == 400 and "digits" in r.json["error"]["message"]
    r = client.post("/api/v1/machines", headers={**seeded["admin"], "Content-Type": "application/json"},
                    data='{"name": "m9", "nodes": ' + "9" * 5000 + ', "cores_per_node": 1}')
    assert r.status_code == 400


def test_d15_line_breaks_in_json_headers_and_cells_are_refused(client, seeded, app):
    head = {"machine": "m1", "mpi_library": "openmpi", "nprocs": 2}
    cases = [({**head, "comment": "x\n#@machine=m2"}, [["MPI_Allreduce", 0, 8, 1e-5, "default"]], "headers"),
             ({**head, "a\nb": "1"}, [["MPI_Allreduce", 0, 8, 1e-5, "default"]], "headers"),
             (head, [["MPI_Allreduce", 0, 8, 1e-5, "default\nMPI_Allreduce 1 8 0.5 default"]], "rows.0"),
             (head, [["MPI_Allreduce\nx", 0, 8, 1e-5, "default"]], "rows.0")]
    for headers, rows, field in cases:
        r = _upload(client, seeded["agent1"], "lb", [{"name": "r.txt", "headers": headers, "rows": rows}])
        err = r.json["error"]
        assert r.status_code == 422 and field.split(".")[0] in err["field"] and field in err["message"], (headers, rows, err)
    assert _runs(app) == 0


# ----------------------------------------------------------------- D6 NUL in page URLs and the login name

def test_d6_nul_in_page_urls_and_login_is_a_client_error(client, app):
    _user(app)
    for url in ("/m/a%00b/openmpi-4.1.4/heatmap", "/m/m1/x%00/trends", "/m/m1/1/trends?key=a%00b",
                "/m/m1/1/trends?algorithm=%00", "/m/m1/1/detail/allreduce?campaign=%00",
                "/api/v1/runs?machine=%00", "/profiles/1?candidate=%00"):
        r = client.get(url)
        assert r.status_code == 400, (url, r.status_code)
    r = _login(client, "ali\x00ce")
    assert r.status_code == 400


# ----------------------------------------------------------------- D7 layout labels of real machines

def test_d7_uneven_64_node_run_is_stored_with_a_label_that_fits(client, seeded, app):
    placement = ",".join(f"{i}:32" for i in range(63)) + ",63:16"
    text = _with_header("placement", placement, _with_header("nodes", "64", _with_header("ppn", "32", _with_header(
        "nprocs", str(63 * 32 + 16)))))
    r = _upload(client, seeded["agent1"], "uneven", [{"name": "r.txt", "content": text}])
    assert r.status_code == 201, r.json
    with app.app_context():
        assert db.session.scalar(select(Run.layout)) == "63x32+16"


# ----------------------------------------------------------------- D8 counts that overflow

def test_d8_huge_counts_are_refused(client, seeded, app):
    text = results_file().replace("test nrep msize runtime_sec algorithm", "test nrep count runtime_sec algorithm")
    text = _with_header("datatype", "MPI_DOUBLE", text)
    for count in (2 ** 60, 2 ** 61 + 1, 2 ** 28):     # 2^28 doubles = 2^31 bytes: over the column too
        bad = re.sub(r"^(MPI_Allreduce \d+) 1024 ", rf"\1 {count} ", text, count=1, flags=re.M)
        r = _upload(client, seeded["agent1"], f"c{count}", [{"name": "r.txt", "content": bad}])
        assert r.status_code == 422 and r.json["error"]["field"].startswith("r.txt"), (count, r.json)
    assert _runs(app) == 0


# ----------------------------------------------------------------- D9 publishing errors

def test_d9_an_uncreatable_root_is_a_message(tmp_path):
    from service.profiles import publish as pub
    blocker = tmp_path / "file"
    blocker.write_text("")
    for root in (blocker / "root", tmp_path / "ro"):
        if root.name == "ro":
            root.mkdir()
            (root / "m1").write_text("a file where the machine directory goes")
        with pytest.raises(pub.PublishError):
            _publish(root)


# ----------------------------------------------------------------- D10, D11 admin form and ?next=

def test_d10_d11_publish_form_and_next(client, app):
    _user(app)
    r = _login(client, next_="/profiles%0d%0aX-Injected:%201")
    assert r.status_code == 302 and r.headers["Location"] in ("/", "http://localhost/")
    assert "X-Injected" not in str(r.headers)
    with app.app_context():
        m = Machine(name="m1", nodes=1, cores_per_node=1, interconnect="", notes="")
        db.session.add(m)
        db.session.flush()
        lib = MpiLibrary(machine_id=m.id, name="openmpi", version="4.1.4", module="")
        db.session.add(lib)
        db.session.flush()
        ps = ProfileSet(machine_id=m.id, library_id=lib.id)
        db.session.add(ps)
        db.session.commit()
        set_id = ps.id
    token = _csrf(client)
    for vid in (str(2 ** 31), str(2 ** 63), "-1", "99999999999999999999999"):
        r = client.post(f"/profiles/{set_id}/publish", data={"version_id": vid, "csrf_token": token})
        assert r.status_code == 400, (vid, r.status_code)


# ----------------------------------------------------------------- D12 atomic login limit

def test_d12_concurrent_wrong_passwords_cannot_exceed_the_limit(app):
    from service.auth import LoginRefused, check_login
    app.config.update(LOGIN_MAX_FAILURES_PER_USER=5, LOGIN_MAX_FAILURES_PER_ADDRESS=100,
                      PASSWORD_HASH_METHOD="pbkdf2:sha256:200000")     # slow enough to overlap
    _user(app)
    n, checked, refused = 12, [], []
    start = threading.Barrier(n)

    def guess(i):
        with app.test_request_context():
            start.wait()
            try:
                assert check_login("alice", f"wrong{i}", f"10.0.0.{i}") is None
                checked.append(i)
            except LoginRefused:
                refused.append(i)
            finally:
                db.session.remove()
    threads = [threading.Thread(target=guess, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(checked) <= 5 and len(checked) + len(refused) == n, (checked, refused)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(LoginFailure)) <= 5


# ----------------------------------------------------------------- D13 token lifetimes and inactive users

def test_d13_expired_tokens_and_inactive_users_are_refused(app, client, database_url, tmp_path, monkeypatch):
    from service.auth import create_token
    _user(app, "bob", "correct horse battery", "viewer")
    with app.app_context():
        row, secret = create_token("bob-script", "viewer", user="bob", expires_days=30)
        assert (row.expires_at.replace(tzinfo=None) - datetime.utcnow()).days in (29, 30)
        _, old = create_token("old", "viewer", expires_days=1)
        db.session.commit()
        db.session.execute(update(ApiToken).where(ApiToken.name == "old").values(
            expires_at=datetime.now(timezone.utc) - timedelta(seconds=1)))
        db.session.commit()
    auth = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/me", headers=auth).status_code == 200
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {old}"}).status_code == 401
    with app.app_context():
        db.session.execute(update(User).where(User.username == "bob").values(active=False))
        db.session.commit()
    assert client.get("/api/v1/me", headers=auth).status_code == 401
    with app.app_context():
        with pytest.raises(ValueError):
            create_token("forever", "viewer", expires_days=0)
    from click.testing import CliRunner
    from service.cli import main
    monkeypatch.setenv("PGMPI_INSTANCE", str(tmp_path / "inst"))
    opt = ["--database-url", database_url]
    r = CliRunner().invoke(main, ["token", "create", "cli-t", "--role", "viewer", "--expires-days", "7", *opt])
    assert r.exit_code == 0, r.output
    listing = CliRunner().invoke(main, ["token", "list", *opt]).output
    assert re.search(r"cli-t\tviewer.*\tactive\t20\d\d-", listing), listing
    assert re.search(r"\told\tviewer.*\texpired\t", listing) and re.search(r"bob-script.*\tuser inactive\t", listing)


# ----------------------------------------------------------------- D14 native validations

def test_d14_native_validation_names_follow_the_rules(client, seeded):
    base = {"machine": "m1", "library": "openmpi", "version": "4.1.4", "name": "native.rules", "text": "",
            "nprocs": 2, "figures": {}}
    for field, value in (("library", "open\nmpi"), ("version", "4.1.4 <b>"), ("library", "x" * 81),
                         ("machine", "m1\r\n")):
        r = client.post("/api/v1/native/validations", headers=seeded["agent1"], json={**base, field: value})
        assert r.status_code == 422 and r.json["error"]["field"] == field, (field, r.json)


# ----------------------------------------------------------------- design decisions (admin guide, Security)

def test_no_store_and_csp(client, app, seeded):
    _user(app)
    r = client.get("/")
    csp = r.headers.get("Content-Security-Policy", "")
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers.get("X-Content-Type-Options") == "nosniff"
    assert "no-store" in client.get("/api/v1/me", headers=seeded["viewer"]).headers.get("Cache-Control", "")
    assert _login(client).status_code == 302
    assert "no-store" in client.get("/").headers.get("Cache-Control", "")


def test_passwords_need_twelve_characters(app):
    from service.auth import add_user
    with app.app_context():
        with pytest.raises(ValueError, match="12"):
            add_user("carol", "elevenchars", "viewer")


def test_concurrent_identical_campaign_and_job_reports_are_idempotent(app, seeded):
    n = 6
    statuses: list[int] = []
    start = threading.Barrier(n)
    body = {"name": "c-race", "machine": "m1", "definition": {"x": 1}, "schedule": "nightly"}

    def call(i):
        c = app.test_client()
        start.wait()
        r = c.post("/api/v1/campaigns", headers=seeded["agent1"], json=body)
        statuses.append(r.status_code)
        start.wait()
        r = c.put("/api/v1/campaigns/c-race/jobs/j1", headers=seeded["agent1"], json={"state": "RUNNING"})
        statuses.append(r.status_code)
    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(statuses) == 2 * n and set(statuses) <= {200, 201}, statuses


def test_anonymous_visitors_see_no_actors_log_tails_or_root(app, client, seeded, tmp_path):
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "secret-root-path")
    assert client.post("/api/v1/campaigns", headers=seeded["agent1"],
                       json={"name": "c1", "machine": "m1", "definition": {}}).status_code == 201
    assert client.put("/api/v1/campaigns/c1/jobs/j1", headers=seeded["agent1"],
                      json={"state": "FAILED", "log_tail": "LOG-TAIL-LINE"}).status_code == 201
    for url in ("/campaigns", "/profiles", "/"):
        html = client.get(url).get_data(as_text=True)
        assert "secret-root-path" not in html and "LOG-TAIL-LINE" not in html and "agent1" not in html, url
