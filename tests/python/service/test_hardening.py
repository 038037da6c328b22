"""Hostile input at every entrance: upload headers and rows, API bodies, stored data that no longer fits the
rules (pages must answer 4xx or 200, never 500), upload_id reuse and concurrent identical uploads."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from sqlalchemy import func, select, update

from service.store.db import db
from service.store.models import Campaign, Machine, MpiLibrary, Run, Series, Upload
from svc_data import results_file


def _upload(client, headers, uid, content, name="r.txt"):
    return client.post("/api/v1/uploads", headers=headers,
                       json={"upload_id": uid, "files": [{"name": name, "content": content}]})


def _runs(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Run))


def _with_header(key: str, value: str) -> str:
    lines = results_file().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"#@{key}="):
            lines[i] = f"#@{key}={value}"
            break
    else:
        lines.insert(1, f"#@{key}={value}")
    return "\n".join(lines) + "\n"


HOSTILE_HEADERS = [
    ("mpi_version", "9" * 151), ("mpi_library", "openmpi" + "x" * 100), ("module", "m" * 10_000),
    ("mpi_library", "bibliothèque"), ("mpi_version", "4.1/../../x"), ("test", "T" * 100),
    ("nodes", "3000000000"), ("nprocs", "1e23"), ("ppn", "-1"), ("campaign", "c" * 300),
    ("comment", "z" * 10_000),
]


HOSTILE_ROWS = [("MPI_Allreduce 0 4294967296 0.00001 default", "msize"),
                ("MPI_Allreduce 0 8 1e300 default", "runtime_sec"),
                ("MPI_Allreduce 0 8 0.00001 " + "a" * 130, "algorithm")]


def test_upload_headers_and_rows_outside_the_limits_are_refused(client, seeded, app):
    """Each hostile header or row alone: 422 naming file:#@header or file:field, nothing stored (one app for
    all cases keeps this cheap)."""
    failures = []
    for key, value in HOSTILE_HEADERS:
        content = _with_header(key, value)
        if key == "test":   # the call name of a file without a test column
            content = content.replace("test nrep", "nrep").replace("MPI_Allreduce ", "").replace("MPI_Barrier ", "")
        r = _upload(client, seeded["agent1"], f"bad-{key}", content)
        if r.status_code != 422 or not r.json["error"].get("field", "").startswith("r.txt:"):
            failures.append((key, len(value), r.status_code, r.json))
    for row, field in HOSTILE_ROWS:
        content = results_file().replace("#@pgmpi config", row + "\n#@pgmpi config")
        r = _upload(client, seeded["agent1"], f"bad-{field}", content)
        if r.status_code != 422 or field not in r.json["error"].get("field", ""):
            failures.append((field, r.status_code, r.json))
    assert failures == []
    assert _runs(app) == 0


def test_api_names_follow_the_publish_rules(client, seeded):
    too_long = "m" * 101        # a path component holds 100 characters
    r = client.post("/api/v1/machines", headers=seeded["admin"],
                    json={"name": too_long, "nodes": 1, "cores_per_node": 1})
    assert r.status_code == 422 and r.json["error"]["field"] == "name"
    r = client.post("/api/v1/machines/m1/libraries", headers=seeded["admin"],
                    json={"name": "openmpi", "version": "4.1.4", "module": "a\r\nb"})
    assert r.status_code == 422 and r.json["error"]["field"] == "module"


def test_deeply_nested_json_is_a_client_error(client, seeded):
    body = '{"upload_id": "n", "files": ' + "[" * 100_000 + "]" * 100_000 + "}"
    r = client.post("/api/v1/uploads", headers={**seeded["agent1"], "Content-Type": "application/json"}, data=body)
    assert 400 <= r.status_code < 500, r.status_code


# ----------------------------------------------------------------- pages over hostile stored data

HOSTILE = {"machine": "m-" + "ж" * 98 + "\r\nX", "library": "библиотека\r\n" + "l" * 60,
           "version": "9" * 80, "module": "\u202e" + "m" * 190, "campaign": "c\r\nSet-Cookie: x=1" + "ü" * 100}


def _seed_hostile(app, client, seeded, campaign_with_runs) -> dict:
    """Valid data through the API, then renamed in the database to values no entrance accepts any more
    (data stored before the rules, or by hand), with huge numbers in a series."""
    from service.analysis.synthetic import Design, simulate, to_text
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.5}, nruns=4, nrep=10,
               machine="m1", campaign="c1", sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    campaign_with_runs([to_text(r) for r in simulate(d, np.random.default_rng(3))])
    r = client.post("/api/v1/analyses", headers=seeded["admin"], json={"machine": "m1", "library": "openmpi"})
    assert r.status_code == 201, r.json
    with app.app_context():
        db.session.execute(update(Machine).where(Machine.name == "m1").values(name=HOSTILE["machine"]))
        db.session.execute(update(MpiLibrary).values(name=HOSTILE["library"], version=HOSTILE["version"],
                                                     module=HOSTILE["module"]))
        db.session.execute(update(Campaign).values(name=HOSTILE["campaign"]))
        sid = db.session.scalar(select(Series.id).order_by(Series.id))
        db.session.execute(update(Series).where(Series.id == sid).values(msize=2**31 - 1, median=1e300, mean=1e300,
                                                                           minimum=1e300))
        lib_id = db.session.scalar(select(MpiLibrary.id))
        db.session.commit()
    return {"lib": f"{HOSTILE['library']}-{HOSTILE['version']}", "lib_id": lib_id}


def test_every_page_and_export_over_hostile_names(app, client, seeded, tmp_path, campaign_with_runs):
    from urllib.parse import quote
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "profiles")
    s = _seed_hostile(app, client, seeded, campaign_with_runs)
    m = quote(HOSTILE["machine"], safe="")
    libs = [quote(s["lib"], safe=""), str(s["lib_id"])]
    with app.app_context():
        set_ids = [row[0] for row in db.session.execute(db.text("SELECT id FROM profile_sets"))]
    assert set_ids, "the analysis stored a candidate profile set"
    urls = ["/", "/campaigns", "/profiles", "/alerts.json", "/profiles/999999999999999999999",
            "/profiles/2147483648", "/?p=99999999999999999999"]
    urls += [f"/profiles/{i}" for i in set_ids]
    by_name, base = f"/m/{m}/{libs[0]}", f"/m/{m}/{libs[1]}"     # a library by its stored name or its id
    urls += [f"{by_name}/heatmap", f"{by_name}/detail/allreduce?format=csv", f"{by_name}/trends"]
    urls += [f"{base}/heatmap", f"{base}/heatmap?p=99999999999999999999", f"{base}/heatmap?p=-5",
             f"{base}/heatmap?campaign={quote(HOSTILE['campaign'], safe='')}",
             f"{base}/heatmap?vs_lib=nope", f"{base}/trends", f"{base}/trends?format=json",
             f"{base}/trends?msize=99999999999999999999&p=99999999999999999999",
             f"{base}/detail/%0D%0Ax", f"{base}/detail/allreduce?p=99999999999999999999"]
    for key in ("allreduce", "nope"):
        urls += [f"{base}/detail/{key}", f"{base}/detail/{key}?format=json", f"{base}/detail/{key}?format=csv"]
    failures = []
    for url in urls:
        r = client.get(url, headers=seeded["viewer"]) if url.endswith(".json") else client.get(url)
        if r.status_code >= 500:
            failures.append((url[:120], r.status_code))
        if "format=csv" in url and r.status_code == 200:
            r.headers["Content-Disposition"].encode("latin-1")    # a header must be Latin-1
    assert failures == []
    page = client.get(f"/m/{m}/{libs[1]}/detail/allreduce?format=csv")
    assert page.status_code == 200 and "filename*=UTF-8''" in page.headers["Content-Disposition"]
    assert client.get("/profiles/999999999999999999999").status_code == 404


# ----------------------------------------------------------------- upload_id reuse and races

def test_upload_id_reuse_with_other_content_is_a_conflict(client, seeded, app):
    assert _upload(client, seeded["agent1"], "u1", results_file()).status_code == 201
    again = _upload(client, seeded["agent1"], "u1", results_file())
    assert again.status_code == 200 and again.json["duplicate"] is True
    other = _upload(client, seeded["agent1"], "u1", results_file(nrep=7))
    assert other.status_code == 409, other.json
    assert "u1" in other.json["error"]["message"] and other.json["error"]["field"] == "upload_id"
    assert _runs(app) == 1


def test_concurrent_identical_uploads_answer_as_duplicates(client, seeded, app, backend):
    """Eight requests with the same upload_id and content at once: one stores it, the others are told it is a
    duplicate (never a 409 to retry); real concurrency on PostgreSQL, serialised writers on SQLite."""
    content = results_file(nrep=200)
    barrier = threading.Barrier(8)
    statuses = []

    def up():
        c = app.test_client()
        barrier.wait()
        r = _upload(c, seeded["agent1"], "same", content)
        statuses.append((r.status_code, (r.json or {}).get("duplicate")))

    threads = [threading.Thread(target=up) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [(200, True)] * 7 + [(201, False)], statuses
    assert _runs(app) == 1


# ----------------------------------------------------------------- the other entrances: campaign files, CLI

def test_campaign_file_and_cli_use_the_same_limits(tmp_path, app):
    from click.testing import CliRunner
    from scheduler.campaign import CampaignError, load_campaign
    from service.auth import add_user, create_token
    from service.commands.profile import profile
    text = ("name: nightly\nmachine: " + "m" * 101 + "\nmodules:\n  - {name: \"openmpi/4.1\\r\\nx\", mpi: openmpi}\n"
            "layouts: [{nodes: 3000000000, ppn: 1}]\ncollectives: {allreduce: {}}\n")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(CampaignError) as err:
        load_campaign(tmp_path / "c.yaml")
    msg = str(err.value)
    assert "machine" in msg and "modules[0].name" in msg and "layouts[0].nodes" in msg, msg
    r = CliRunner().invoke(profile, ["status", "--root", str(tmp_path), "--machine", "m" * 101, "--mpi", "openmpi",
                                     "--mpi-version", "4.1.4"])
    assert r.exit_code == 2 and "--machine" in r.output, r.output
    with app.app_context():
        with pytest.raises(ValueError, match="line breaks"):
            add_user("eve\r\nadmin", "long enough pass", "viewer")
        with pytest.raises(ValueError, match="token name"):
            create_token("t" * 121, "viewer")


# ----------------------------------------------------------------- the body read while it arrives

def test_streamed_body_orders_and_limits(client, seeded, app):
    import json as _json
    hdr = {**seeded["agent1"], "Content-Type": "application/json"}
    two = [{"name": "a.txt", "content": results_file()}, {"name": "b.txt", "content": results_file(nrep=6)}]
    # files before upload_id: held, then stored the same way
    r = client.post("/api/v1/uploads", headers=hdr, data=_json.dumps({"files": two, "upload_id": "late"}))
    assert r.status_code == 201 and r.json["files"] == 2, r.json
    # a campaign after streamed files would change what was stored: refused, nothing written
    r = client.post("/api/v1/uploads", headers=hdr,
                    data=_json.dumps({"upload_id": "c-late", "files": two, "campaign": "c1"}))
    assert r.status_code == 422 and r.json["error"]["field"] == "campaign"
    # broken JSON after the first file was stored: 400, the upload rolled back
    text = _json.dumps({"upload_id": "broken", "files": two})
    r = client.post("/api/v1/uploads", headers=hdr, data=text[:-40])
    assert r.status_code == 400, r.json
    # one file object over the per-file limit: 413
    app.config["MAX_UPLOAD_FILE_BYTES"] = 2000
    r = client.post("/api/v1/uploads", headers=hdr, data=_json.dumps({"upload_id": "big", "files": two}))
    assert r.status_code == 413, r.json
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Upload)) == 1
    assert _runs(app) == 2
