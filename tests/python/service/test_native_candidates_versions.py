"""The nightly chain's candidate endpoint for the 5.x libraries: from a campaign's stored runs it renders the
decision file for exactly the version measured -- Open MPI 5.0.11's rules (allgather's `sparbit`, which 4.1.4
does not have) and MPICH 5.0.2's JSON (allreduce's `ring`, which 4.0.2's selection tree does not know) --
checked by that version's reader and by the validation job's precheck; the same choice stored for the 4.x
version is refused before anything is written, and the 5.x file is refused by the 4.x readers."""
from __future__ import annotations

import pytest



def _versions(app) -> int:
    from sqlalchemy import func, select
    from service.store.db import db
    from service.store.models import ProfileVersion
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(ProfileVersion))

pytestmark = [pytest.mark.mpi]

# (service library name, version measured, collective, winning label, the other version of the family)
CASES = [("openmpi", "5.0.11", "MPI_Allgather", "native:sparbit", "4.1.4"),
         ("mpich", "5.0.2", "MPI_Allreduce", "native:ring", "4.0.2")]


def _run(library: str, version: str, call: str, label: str, mpirun: int, campaign: str = "c1") -> str:
    """One mpirun's raw results: the label about twice as fast as the default at 64 KiB (paired, a little
    spread between mpiruns so the paired test has a variance)."""
    lines = ["#@pgmpi_format=1", "#@machine=m1", f"#@mpi_library={library}", f"#@mpi_version={version}",
             f"#@module={library}/{version}", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={mpirun}",
             "#@slurm_job_id=", f"#@campaign={campaign}", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for alg, base in (("default", 2e-4), (label, 1e-4 * (1 + 0.01 * mpirun))):
        lines += [f"{call} {r} 65536 {base + r * 1e-8:.10f} {alg}" for r in range(5)]
    return "\n".join(lines) + "\n"


def _runs(library, version, call, label, campaign="c1") -> list[str]:
    return [_run(library, version, call, label, i, campaign) for i in range(4)]


@pytest.mark.parametrize("library,version,call,label,other", CASES)
def test_candidate_is_rendered_and_prechecked_for_the_exact_version(client, seeded, app, tmp_path, library,
                                                                    version, call, label, other,
                                                                    campaign_with_runs):
    from scheduler.native_validation import precheck
    from service.profiles import publish as pub
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "profiles")
    campaign_with_runs(_runs(library, version, call, label))
    campaign_with_runs(_runs(library, other, call, label))
    ask = {"machine": "m1", "library": library, "campaign": "c1"}

    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json={**ask, "version": version})
    assert r.status_code == 201, r.get_json()
    cand = r.get_json()
    name, text = cand["name"], cand["text"]
    algorithm = label.split(":", 1)[1]
    assert algorithm in text, text
    mpi = {"openmpi": "openmpi5", "mpich": "mpich5"}[library]
    cells = precheck(name, text, mpi, 2, version)          # what the agent does before submitting the job
    assert [(c.key, c.label) for c in cells if c.label != "default"] == [(call[4:].lower(), label)], cells
    pub.check_native_file(name, text, library, version)

    # the same choice stored for the other version: refused before a candidate exists, with the reason
    before = _versions(app)
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json={**ask, "version": other})
    assert r.status_code == 422, r.get_json()
    assert f"{library}-{other} was refused" in r.get_json()["error"]["message"], r.get_json()
    assert _versions(app) == before == 1
    # and the 5.x file is refused by the readers of the 4.x version
    with pytest.raises(ValueError):
        precheck(name, text, library, 2, other)
    with pytest.raises(pub.PublishError):
        pub.check_native_file(name, text, library, other)


def test_intel_candidate_is_an_adjust_file_of_that_version(client, seeded, app, tmp_path, campaign_with_runs):
    """Intel MPI: the campaign's winning preset becomes native.impi (the I_MPI_ADJUST_<COLL> ranges the
    pgmpitunelib module sets), read back strictly for 2021.13 by the agent's precheck (its cells at p=2);
    a preset that version does not have is refused before a candidate exists, and so is the file once it
    claims another Intel MPI version."""
    from scheduler.native_validation import precheck
    from service.profiles import publish as pub
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "profiles")
    campaign_with_runs(_runs("intelmpi", "2021.13.1", "MPI_Allreduce", "native:3"))
    ask = {"machine": "m1", "library": "intelmpi", "campaign": "c1"}
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json={**ask, "version": "2021.13.1"})
    assert r.status_code == 201, r.get_json()
    name, text = r.get_json()["name"], r.get_json()["text"]
    assert name == "native.impi" and "\nI_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2\n" in text, text
    pub.check_native_file(name, text, "intelmpi", "2021.13.1")
    cells = precheck(name, text, "intelmpi", 2, "2021.13.1")
    assert [(c.key, c.label, c.msize) for c in cells] == [("allreduce", "native:3", 8)], cells
    assert precheck(name, text.replace("@2-2", "@4-8"), "intelmpi", 4, "2021.13.1")  # the ranks it names
    with pytest.raises(ValueError, match="selects nothing at communicator size 2"):
        precheck(name, text.replace("@2-2", "@4-8"), "intelmpi", 2, "2021.13.1")
    with pytest.raises(ValueError, match="written for Intel MPI 2021.12"):
        precheck(name, text.replace("Intel MPI 2021.13", "Intel MPI 2021.12"), "intelmpi", 2, "2021.13.1")

    campaign_with_runs(_runs("intelmpi", "2021.13.1", "MPI_Allreduce", "native:33", "c2"), "c2")   # 2021.13 has 0-32
    before = _versions(app)
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"],
                    json={**ask, "campaign": "c2", "version": "2021.13.1"})
    assert r.status_code == 422 and "presets 1-32, not 33" in r.get_json()["error"]["message"], r.get_json()
    assert _versions(app) == before == 1
