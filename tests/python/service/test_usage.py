"""Usage records in the service (issue 33): upload (all-or-nothing, idempotent, machine-bound), the ranking of
a library's cells by the node-hours a violation costs the users, and the page -- on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from service.analysis.usage import CellTime, Speedup, bucket_of, rank_cells
from service.store.db import db

pytestmark = pytest.mark.postgres


def record(cells, ranks=4, library="Open MPI v4.1.4, package: Debian OpenMPI", extra=""):
    rows = "".join(f"{c} {b} {p} 1 {a} {n} {t} {max(1, n // 64) if isinstance(n, int) else 1}\n"
                   for c, b, p, a, n, t in cells)
    return (f"#@pgmpi usage version 1\n#@pgmpi usage library {library}\n#@pgmpi usage host n1\n"
            f"#@pgmpi usage ranks {ranks}\n#@pgmpi usage layout 1x{ranks}\n#@pgmpi usage wall_s 10.0\n"
            f"#@pgmpi usage rank_s 40.0\n#@pgmpi usage sample_period 64\n#@pgmpi usage identity job\n{extra}"
            "collective bytes_lo p world algorithm calls rank_seconds samples\n" + rows +
            f"#@pgmpi usage end {len(cells)}\n")


def post(client, headers, text, machine="m1", name="a.pgmpi-usage"):
    return client.post(f"/api/v1/machines/{machine}/usage", json={"name": name, "record": text}, headers=headers)


CELLS = [("MPI_Allreduce", 8, 4, "default", 80000, 12.0), ("MPI_Bcast", 65536, 4, "default", 1200, 3.0),
         ("MPI_Allgather", 1048576, 4, "default", 80, 1.0)]


def test_upload_is_idempotent_bound_to_the_machine_and_all_or_nothing(client, seeded):
    r = post(client, seeded["agent1"], record(CELLS))
    assert r.status_code == 201, r.get_json()
    assert r.get_json()["library"] == "openmpi-4.1.4" and r.get_json()["cells"] == 3
    again = post(client, seeded["agent1"], record(CELLS))
    assert again.status_code == 200 and again.get_json()["duplicate"] and again.get_json()["id"] == r.get_json()["id"]
    assert post(client, seeded["agent2"], record(CELLS)).status_code == 403        # m1's record, m2's token
    assert post(client, seeded["viewer"], record(CELLS)).status_code == 403
    assert post(client, {}, record(CELLS)).status_code == 401
    # a record cut short, a bad cell, a line break in a header value: refused, nothing stored
    from service.store.models import UsageJob, UsageCell
    for bad, why in ((record(CELLS).rsplit("#@pgmpi usage end", 1)[0], "incomplete"),
                     (record(CELLS + [("MPI_Bcast", 8, 4, "default", "x", 1.0)]), "invalid literal"),
                     (record(CELLS + [("MPI_Bcast;drop", 8, 4, "default", 5, 1.0)]), "collective"),
                     (record(CELLS, library="MPICH Version:\t4.0.2\x00"), "version")):
        r = post(client, seeded["agent1"], bad, name="bad.pgmpi-usage")
        assert r.status_code == 422, (why, r.get_json())
        assert why in r.get_json()["error"]["message"], r.get_json()
        assert "bad.pgmpi-usage" in r.get_json()["error"]["message"]
    with client.application.app_context():
        assert db.session.query(UsageJob).count() == 1 and db.session.query(UsageCell).count() == 3
    big = client.post("/api/v1/machines/m1/usage", data=b"x" * (5 << 20),
                      headers={**seeded["agent1"], "Content-Type": "application/json"})
    assert big.status_code == 413


def test_the_ranking_puts_the_violation_that_costs_most_first(client, seeded, app):
    """Two jobs; a verified 2x violation at allreduce 8 B and a 1.2x one at bcast 64 KiB: allreduce's cell
    holds 12+12 rank-seconds in the default -> 12 rank-s lost, bcast 6 * (1 - 1/1.2) = 1 rank-s."""
    assert post(client, seeded["agent1"], record(CELLS)).status_code == 201
    assert post(client, seeded["agent1"], record(CELLS, extra="#@pgmpi usage slurm_job_id 7\n")).status_code == 201
    from service.store.models import Analysis, MpiLibrary, Violation
    with app.app_context():
        lib = db.session.query(MpiLibrary).one()
        a = Analysis(machine_id=lib.machine_id, library_id=lib.id, alpha=0.05, test="paired_t", fdr=True, actor="t")
        db.session.add(a)
        db.session.flush()
        db.session.add_all([
            Violation(analysis_id=a.id, collective="MPI_Allreduce", mockup="allreduce_as_reduce_bcast", msize=8,
                      nprocs=4, default_time=2e-6, mockup_time=1e-6, slowdown=2.0, kind="pattern"),
            Violation(analysis_id=a.id, collective="MPI_Bcast", mockup="bcast_as_scatter_allgather", msize=98304,
                      nprocs=4, default_time=1.2e-4, mockup_time=1e-4, slowdown=1.2, kind="pattern")])
        db.session.commit()
    j = client.get("/api/v1/machines/m1/libraries/openmpi-4.1.4/usage", headers=seeded["viewer"]).get_json()
    assert j["jobs"] == 2 and j["ppn"] == 8
    first, second = j["cells"][0], j["cells"][1]
    assert (first["collective"], first["bytes_lo"]) == ("MPI_Allreduce", 8)
    assert first["lost_node_hours"] == pytest.approx(24.0 * 0.5 / 8 / 3600)
    assert (second["collective"], second["bytes_lo"]) == ("MPI_Bcast", 65536)
    assert second["lost_node_hours"] == pytest.approx(6.0 * (1 - 1 / 1.2) / 8 / 3600)
    assert sum(c["share"] for c in j["cells"]) == pytest.approx(1.0)
    page = client.get("/m/m1/openmpi-4.1.4/usage", headers=seeded["viewer"]).get_data(as_text=True)
    assert "2 job(s)" in page and "allreduce_as_reduce_bcast" in page
    assert page.index("MPI_Allreduce") < page.index("MPI_Bcast") < page.index("MPI_Allgather")


def test_a_library_without_records_says_where_they_come_from(client, seeded, app):
    from service.store.models import Machine, MpiLibrary
    with app.app_context():
        m = db.session.query(Machine).filter_by(name="m1").one()
        db.session.add(MpiLibrary(machine_id=m.id, name="mpich", version="4.0.2", module=""))
        db.session.commit()
    page = client.get("/m/m1/mpich-4.0.2/usage", headers=seeded["viewer"]).get_data(as_text=True)
    assert "No usage records yet" in page and "PGMPITUNE_USAGE_DIR" in page


def test_rank_cells_counts_only_verified_violations_and_redirected_time():
    cells = [CellTime("MPI_Scan", 64, 2, "default", 100, 10.0), CellTime("MPI_Scan", 64, 2, "scan_as_x", 100, 5.0)]
    v = [Speedup("MPI_Scan", 100, 2, "scan_as_x", 2.0, "verified"), Speedup("MPI_Scan", 64, 2, "y", 3.0, "unconfirmed")]
    ranked, total = rank_cells(cells, v, ppn=1, live_speedups=v[:1])
    (c,) = ranked
    assert total == 15.0 and c.lost_node_hours == pytest.approx(10.0 * 0.5 / 3600)
    assert c.gained_node_hours == pytest.approx(5.0 * 1.0 / 3600)
    assert bucket_of(100) == 64 and bucket_of(64) == 64 and bucket_of(0) == 0


def test_the_agent_uploads_a_spool_once_and_resumes(client, seeded, app, tmp_path):
    """pgmpi agent's upload_usage against the app: sent records move to uploaded/, a refused one to rejected/
    with its reason, a stale temporary of a killed writer is removed, a fresh one is left alone, and a second
    run sends nothing again."""
    import os
    import time
    from scheduler.uploader import ServiceClient, upload_usage
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "1.n1.10.1.pgmpi-usage").write_text(record(CELLS))
    (spool / "2.n1.11.2.pgmpi-usage").write_text(record(CELLS[:1], extra="#@pgmpi usage slurm_job_id 2\n"))
    (spool / "3.n1.12.3.pgmpi-usage").write_text(record(CELLS).replace("end 3", "end 4"))
    old = spool / ".n1.9.0.tmp"
    old.write_text("#@pgmpi usage version 1\n")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    fresh = spool / ".n1.13.4.tmp"
    fresh.write_text("#@pgmpi usage version 1\n")
    agent = ServiceClient(app=app, token=seeded["agent1"]["Authorization"].split()[1])
    out = upload_usage(agent, spool, "m1")
    assert (out["sent"], out["rejected"], out["stale_removed"], out["unreachable"]) == (2, 1, 1, False), out
    assert sorted(f.name for f in (spool / "uploaded").iterdir()) == ["1.n1.10.1.pgmpi-usage", "2.n1.11.2.pgmpi-usage"]
    assert "says 4 cells" in (spool / "rejected" / "3.n1.12.3.pgmpi-usage.why").read_text()
    assert fresh.exists() and not old.exists()
    again = upload_usage(agent, spool, "m1")
    assert again["sent"] == again["rejected"] == 0
    # the same record spooled twice (a re-run of the agent after a crash before the move): stored once
    (spool / "1.n1.10.1.pgmpi-usage").write_text(record(CELLS))
    assert upload_usage(agent, spool, "m1")["duplicates"] == 1
    j = client.get("/api/v1/machines/m1/libraries/openmpi-4.1.4/usage", headers=seeded["viewer"]).get_json()
    assert j["jobs"] == 2


def test_a_violation_as_the_analysis_stores_it_meets_the_users_cell(client, seeded, app):
    """The analysis names a violation by the collective's key (allreduce) and stores it under the library row of
    the campaign's module (openmpi/4.1.4); a usage record names the MPI function and has no module: the ranking
    still joins them (one library of the machine, one collective)."""
    assert post(client, seeded["agent1"], record(CELLS)).status_code == 201
    from service.store.models import Analysis, MpiLibrary, Violation
    with app.app_context():
        users = db.session.query(MpiLibrary).one()
        lib = MpiLibrary(machine_id=users.machine_id, name="openmpi", version="4.1.4", module="openmpi/4.1.4")
        db.session.add(lib)
        db.session.flush()
        a = Analysis(machine_id=lib.machine_id, library_id=lib.id, alpha=0.05, test="paired_t", fdr=True, actor="t")
        db.session.add(a)
        db.session.flush()
        db.session.add(Violation(analysis_id=a.id, collective="allreduce", mockup="allreduce_as_reduce_bcast", msize=8,
                                 nprocs=4, default_time=2e-6, mockup_time=1e-6, slowdown=2.0, kind="pattern"))
        db.session.commit()
    j = client.get("/api/v1/machines/m1/libraries/openmpi-4.1.4/usage", headers=seeded["viewer"]).get_json()
    first = j["cells"][0]
    assert (first["collective"], first["bytes_lo"], first["layout"]) == ("MPI_Allreduce", 8, "1x4"), first
    assert first["violation"]["mockup"] == "allreduce_as_reduce_bcast"
    assert first["lost_node_hours"] == pytest.approx(12.0 * 0.5 / 8 / 3600)
    assert first["verdict"] is None          # no campaign measured it here: no verdict with an age
