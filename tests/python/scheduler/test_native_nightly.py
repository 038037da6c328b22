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
"used" and "not slower" checks see the file's choice in the job that loaded it.  At 8 B nothing is slowed:
the library's default stays."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

WINS = 65536


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
                          "PGMPI_TEST_ALGORITHM_BYTES": str(WINS)}}],
        collectives={"allreduce": {"sizes": [8, WINS], "search": "exhaustive"}},
        mpiruns=2, repetitions={"policy": "fixed", "nrep": 5},
        service={"url": service.url, "token_file": str(tmp_path / "token")},
        validation={"enabled": True, "nrep": 5},
        native={"tunelib_module": "pgmpitunelib/0.1.0", "modulepath": [str(tunelib_modules(tmp_path, "openmpi"))],
                "rounds": 5, "nrep": 3, "publish": True})
    f = campaign_file(tmp_path / "nightly.yaml", **cdef)
    r = CliRunner().invoke(agent_cli, ["nightly", "--campaign", str(f), "--state-dir", str(tmp_path / "state"),
                                       "--interval", "0.5", "--date", "20261126", "--max-hours", "0.05"])
    assert r.exit_code == 0, r.output

    from scheduler.state import State
    st = State(tmp_path / "state")
    jobs = {row["key"]: row for row in st.jobs("nn-20261126")}
    native_jobs = [row for row in jobs.values() if row["kind"] == "native-validate"]
    assert [row["state"] for row in native_jobs] == ["COMPLETED"], {k: (v["kind"], v["state"]) for k, v in jobs.items()}
    assert json.loads(native_jobs[0]["spec"])["module"]["name"] == "openmpi/4.1.4"   # as users load it
    analysis = json.loads(st.campaign("nn-20261126")["analysis"])["openmpi-4.1.4"]
    vid = analysis["native"]["candidate"]

    # published without a command: the set's current version holds the native file, its rule at 64 KiB
    live = pub.published_files(root, "nightbox", "openmpi", "4.1.4")
    assert set(live) == {"native.rules"}, r.output
    rules = live["native.rules"].splitlines()
    assert any(line.split()[:2] == [str(WINS), "6"] for line in rules), live["native.rules"]   # 6: rabenseifner

    def _records():
        from sqlalchemy import select
        from service.store.db import db
        from service.store.models import NativeValidation, ProfileVersion
        v = db.session.get(ProfileVersion, vid)
        recs = db.session.scalars(select(NativeValidation).where(NativeValidation.machine == "nightbox")).all()
        return v.state, v.published_path, [(x.state, x.verdict["cells"]) for x in recs]
    state, path, recs = service.query(_records)
    assert state == "published" and path.startswith(str(root)), (state, path)
    assert len(recs) == 1 and recs[0][0] == "passed", recs
    used = next(c for c in recs[0][1] if c["label"] == "native:rabenseifner")
    assert used["msize"] == WINS and not used["problems"], used

    # the profile page tells it like a mock-up profile: what was chosen, what validation kept, what is live
    def _set_id():
        from service.store.db import db
        from service.store.models import ProfileVersion
        return db.session.get(ProfileVersion, vid).profile_set_id
    page = service.app.test_client().get(f"/profiles/{service.query(_set_id)}").get_data(as_text=True)
    native = page[page.index('id="native"'):]
    native = native[:native.index("</table>")]
    assert "allreduce 64 KiB p=2 → native:rabenseifner" in native and "live" in native, native
