"""The nightly native chain, hands-off, on the real Slurm: `pgmpi agent nightly` with a campaign file whose
Open MPI module searches the library's own Allreduce algorithms runs until it is idle, and in between nobody
types a command: the search job, the upload, the analysis, the decision file as a candidate of the library's
profile set (POST /native/candidates), its validation job as users load it (the pgmpitunelib module, through
the Slurm backend), the service's verdict, and the publication into the same versioned set as the .prf
profiles.

The outcome must not hang on timing luck: the ranks carry delay_interposer.py's virtual clock, and at 64 KiB
every one of Open MPI's own Allreduce algorithms but rabenseifner (ompi_coll_base_allreduce_intra_
redscat_allgather) is slowed by 20 ms of virtual time, whichever way it is selected -- forced by the search,
chosen by the library, or by the published rules file -- so rabenseifner wins there, and the validation's
"used" and "not slower" checks see the file's choice in the job that loaded it.  At 8 B rabenseifner wins
the search too but takes twice the delay under the rules file: the first candidate fails there (its rule from
0 B, which the validation measures at 8 B), that cell goes back into the decision, and the second candidate
(64 KiB only) is validated and published.  At 8 KiB nothing is slowed: the library's default stays."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

WINS = 65536       # rabenseifner wins the search and the validation
LOSES = 8          # rabenseifner wins the search and loses where the rules file selects it


def test_nightly_campaign_ends_in_a_published_native_file(tmp_path, slurm_env, mpi_modulepath, bench_root,
                                                         service, monkeypatch):
    from scheduler.cli import agent as agent_cli
    from service.profiles import publish as pub
    so = delay_interposer.build(tmp_path, "openmpi")
    token = add_machine(service, "nightbox", role="agent")
    (tmp_path / "token").write_text(token)
    root = tmp_path / "profiles"
    monkeypatch.setitem(service.app.config, "PGMPI_PROFILE_ROOT", str(root))
    for k, v in slurm_env.items():
        monkeypatch.setenv(k, v)
    cdef = tiny_campaign(
        "nn", "nightbox", mpi_modulepath, bench_root,
        modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                  "env": {"LD_PRELOAD": str(so), "PGMPI_TEST_FAST_ALGORITHM": "redscat_allgather",
                          "PGMPI_TEST_ALGORITHM_BYTES": f"{LOSES},{WINS}",
                          "PGMPI_TEST_FILE_SLOW_BYTES": str(LOSES)}}],
        collectives={"allreduce": {"sizes": [LOSES, 8192, WINS], "search": "exhaustive"}},
        mpiruns=2, repetitions={"policy": "fixed", "nrep": 5},
        service={"url": service.url, "token_file": str(tmp_path / "token")},
        validation={"enabled": True, "nrep": 5},
        native={"tunelib_module": "pgmpitunelib/0.1.0", "modulepath": [str(tunelib_modules(tmp_path, "openmpi"))],
                "rounds": 5, "nrep": 3, "publish": True})
    f = campaign_file(tmp_path / "nightly.yaml", **cdef)
    r = CliRunner().invoke(agent_cli, ["nightly", "--campaign", str(f), "--state-dir", str(tmp_path / "state"),
                                       "--interval", "0.5", "--date", "20261126", "--max-hours", "0.2"])
    assert r.exit_code == 0, r.output

    from scheduler.state import State
    st = State(tmp_path / "state")
    jobs = {row["key"]: row for row in st.jobs("nn-20261126")}
    # two candidates: the first fails at 8 B, which goes back into the decision; the second is validated
    native_jobs = sorted((row for row in jobs.values() if row["kind"] == "native-validate"), key=lambda x: x["key"])
    assert [(row["key"], row["state"]) for row in native_jobs] == [
        ("native-openmpi-4.1.4-c1", "COMPLETED"), ("native-openmpi-4.1.4-c2", "COMPLETED")], r.output
    specs = [json.loads(row["spec"]) for row in native_jobs]
    assert all(x["module"]["name"] == "openmpi/4.1.4" and x["kind"] == "native-validate" for x in specs)  # as users load it
    first, vid = (x["native"]["profile_version"] for x in specs)
    assert specs[1]["native"]["refused"] and not specs[0]["native"]["refused"], specs
    # both arms measure with the campaign's method (sync: auto on one node), as the decision was measured
    assert all(ln["argv"].count("--proc-sync=dissem") == 1 for x in specs for ln in x["launches"]), specs

    # published without a command: the set's current version holds the native file, its rule at 64 KiB
    live = pub.published_files(root, "nightbox", "openmpi", "4.1.4")
    assert set(live) == {"native.rules"}, r.output
    rules = [line.split()[:2] for line in live["native.rules"].splitlines()]
    assert [str(WINS), "6"] in rules, live["native.rules"]                           # 6: rabenseifner
    assert ["0", "6"] not in rules, live["native.rules"]     # the rule from 0 B (measured at 8 B) went back

    def _records():
        from sqlalchemy import select
        from service.store.db import db
        from service.store.models import NativeValidation, ProfileVersion
        v, f = db.session.get(ProfileVersion, vid), db.session.get(ProfileVersion, first)
        recs = db.session.scalars(select(NativeValidation).where(NativeValidation.machine == "nightbox")
                                  .order_by(NativeValidation.id)).all()
        return v.state, v.published_path, f.state, [(x.state, x.verdict["cells"]) for x in recs]
    state, path, first_state, recs = service.query(_records)
    assert state == "published" and path.startswith(str(root)), (state, path)
    assert first_state == "failed" and [x[0] for x in recs] == ["failed", "passed"], (first_state, recs)
    dropped = [(c["msize"], c["label"]) for c in recs[0][1] if c["problems"]]
    assert dropped == [(LOSES, "native:rabenseifner")], recs[0]
    used = [c for c in recs[1][1] if c["label"] == "native:rabenseifner"]
    assert [c["msize"] for c in used] == [WINS] and not used[0]["problems"], recs[1]

    # the profile page tells it like a mock-up profile: what was chosen, what validation kept, what is live
    def _set_id():
        from service.store.db import db
        from service.store.models import ProfileVersion
        return db.session.get(ProfileVersion, vid).profile_set_id
    client = service.app.test_client()
    page = client.get(f"/profiles/{service.query(_set_id)}").get_data(as_text=True)
    native = page[page.index('id="native"'):]
    native = native[:native.index("</table>")]
    assert "allreduce 64 KiB p=2 → native:rabenseifner" in native and "live" in native, native
    assert "allreduce 8 B p=2 native:rabenseifner: (" in native and "refused: allreduce 8 B" in native, native
    lib_page = client.get("/m/nightbox/openmpi-4.1.4/native?key=allreduce").get_data(as_text=True)
    assert "live: candidate #" in lib_page and f"/profiles/{service.query(_set_id)}#native" in lib_page, lib_page[:3000]
    # and what the campaign gave, as `make demo` and the command line print it
    from service.workflows import publish as publishing
    text = "\n".join(service.query(lambda: publishing.report_lines(publishing.campaign_report("nn-20261126"))))
    assert "candidate #1 failed: native.rules" in text and "published candidate #2" in text, text


def test_a_validation_job_failing_in_slurm_fails_its_candidate(tmp_path, slurm_env, mpi_modulepath, bench_root,
                                                              service, monkeypatch):
    """The validation job dies in Slurm (its module cannot be loaded: no figures, so no verdict): it is
    retried once, then the candidate is marked failed with the job's reason instead of staying a candidate."""
    from scheduler.cli import agent as agent_cli
    so = delay_interposer.build(tmp_path, "openmpi")
    token = add_machine(service, "failbox", role="agent")
    (tmp_path / "token").write_text(token)
    monkeypatch.setitem(service.app.config, "PGMPI_PROFILE_ROOT", str(tmp_path / "profiles"))
    for k, v in slurm_env.items():
        monkeypatch.setenv(k, v)
    cdef = tiny_campaign(
        "nf", "failbox", mpi_modulepath, bench_root,
        modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                  "env": {"LD_PRELOAD": str(so), "PGMPI_TEST_FAST_ALGORITHM": "redscat_allgather",
                          "PGMPI_TEST_ALGORITHM_BYTES": str(WINS)}}],
        collectives={"allreduce": {"sizes": [WINS], "search": "exhaustive"}},
        mpiruns=2, repetitions={"policy": "fixed", "nrep": 5},
        service={"url": service.url, "token_file": str(tmp_path / "token")},
        validation={"enabled": True, "nrep": 5},
        native={"tunelib_module": "pgmpitunelib/0.0-absent",       # planted: `module load` fails in the job
                "modulepath": [str(tunelib_modules(tmp_path, "openmpi"))], "rounds": 2, "nrep": 3, "publish": True})
    f = campaign_file(tmp_path / "nightly.yaml", **cdef)
    r = CliRunner().invoke(agent_cli, ["nightly", "--campaign", str(f), "--state-dir", str(tmp_path / "state"),
                                       "--interval", "0.5", "--date", "20261126", "--max-hours", "0.2"])
    assert r.exit_code == 0, r.output

    from scheduler.state import State
    rows = [row for row in State(tmp_path / "state").jobs("nf-20261126") if row["kind"] == "native-validate"]
    assert [(row["key"], row["state"], row["attempt"]) for row in rows] == [
        ("native-openmpi-4.1.4-c1", "FAILED", 2)], r.output                     # retried once, then given up
    vid = json.loads(rows[0]["spec"])["native"]["profile_version"]

    def _candidate():
        from service.store.db import db
        from service.store.models import ProfileVersion
        v = db.session.get(ProfileVersion, vid)
        return v.state, v.notes
    state, notes = service.query(_candidate)
    assert state == "failed", (state, notes, r.output)
    assert "validation job slurm:" in notes and "module load pgmpitunelib/0.0-absent failed" in notes, notes
