"""Native validation measures each rule where its decision was made.  A campaign measured Open MPI 4.1.4's
allreduce at 32 B (recursive_doubling about 1.5x faster) and at 4 KiB (nothing wins): the rules file runs
recursive_doubling from 0 B to 4095 B.  The candidate carries the cells its decision measured; the agent's
precheck and the service's judgement both measure that rule at 32 B -- not at 8 B, which nobody measured
(before, the service asked for 8 B, found it unmeasured and failed the file) -- and the default rule at 4 KiB.
Every guarantee stays: a file arm slower than the default at 32 B, a wrong result, or a fingerprint showing
the choice did not run still fails."""
from __future__ import annotations

import copy

import pytest

pytestmark = [pytest.mark.mpi]

LABEL = "native:recursive_doubling"


def _run(mpirun: int) -> str:
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
             "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={mpirun}",
             "#@slurm_job_id=", "#@campaign=c1", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    spread = 1 + 0.01 * mpirun
    for size, times in ((32, {"default": 2.6e-6, LABEL: 1.5e-6 * spread}),
                        (4096, {"default": 9e-6, LABEL: 9e-6 * spread})):
        for alg, base in times.items():
            lines += [f"MPI_Allreduce {r} {size} {base + r * 1e-9:.12f} {alg}" for r in range(5)]
    return "\n".join(lines) + "\n"


def _figures(sizes, rounds=5, file_t=1.5e-6) -> dict:
    """A validation job's figures at these allreduce sizes: recursive_doubling (fingerprint "rd") 1.7x faster
    than the default ("def") at 32 B and ran under the file; the default kept at 4 KiB."""
    out = {}
    for m in sizes:
        changed = m < 4096
        f = file_t if changed else 9e-6
        rs = {str(r): {"file": f * (1.01 if r % 2 else 0.99), "default": (2.6e-6 if changed else 9e-6),
                       LABEL: 1.5e-6} for r in range(1, rounds + 1)}
        out[f"allreduce:{m}"] = {
            "key": "allreduce", "msize": m, "rounds": rs, "noncommutative": list(range(1, rounds + 1)),
            "checks": {a: ["ok"] * rounds for a in ("file", "default", LABEL)},
            "fingerprints": {"file": ["rd" if changed else "def"] * rounds, "default": ["def"] * rounds,
                             LABEL: ["rd"] * rounds}}
    return out


def test_a_rule_is_validated_at_the_size_its_decision_measured(client, seeded, app, tmp_path,
                                                               campaign_with_runs):
    from scheduler.native_validation import precheck
    app.config["PGMPI_PROFILE_ROOT"] = str(tmp_path / "profiles")
    campaign_with_runs([_run(i) for i in range(4)])
    ask = {"machine": "m1", "library": "openmpi", "version": "4.1.4"}
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json={**ask, "campaign": "c1"})
    assert r.status_code == 201, r.get_json()
    cand = r.get_json()
    assert cand["decided_at"] == [["allreduce", 32, 2], ["allreduce", 4096, 2]]

    # the agent measures the rules where the decision did (the same cells the service judges on)
    cells = precheck(cand["name"], cand["text"], "openmpi", 2, "4.1.4", cand["decided_at"])
    assert [(c.label, c.lo, c.hi, c.msize) for c in cells] == [(LABEL, 0, 4095, 32), ("default", 4096, None, 4096)]
    assert [c.msize for c in precheck(cand["name"], cand["text"], "openmpi", 2, "4.1.4")] == [8, 4096]  # before

    def post(figs, cand_id=cand["id"]):
        return client.post("/api/v1/native/validations", headers=seeded["agent1"], json={
            **ask, "name": cand["name"], "text": cand["text"], "nprocs": 2, "figures": figs, "job": "t:1",
            "profile_version": cand_id})

    # the job that measured where the decision did passes; the candidate is validated (and nothing at 8 B)
    v = post(_figures([32, 4096])).get_json()
    assert v["state"] == "passed", v["problems"]
    assert [(c["msize"], c["label"], c["range"]) for c in v["cells"]] == [(32, LABEL, [0, 4095]),
                                                                         (4096, "default", [4096, None])]
    assert v["candidate"]["state"] == "validated"
    # planted defects at the decided size are still caught (a record each; the passing one above stays)
    slow = _figures([32, 4096], file_t=3.2e-6)
    slow["allreduce:32"]["fingerprints"]["file"] = ["rd"] * 5
    v = post(slow).get_json()
    assert v["state"] == "failed" and any(p.startswith("allreduce 32 B") and "(c) tuned slower" in p
                                          for p in v["problems"]), v
    wrong = _figures([32, 4096])
    wrong["allreduce:32"]["checks"]["file"][1] = "fail wrong_result rank=1 byte=0"
    assert "(a) file: wrong result" in post(wrong).get_json()["problems"][0]
    ignored = _figures([32, 4096])
    ignored["allreduce:32"]["fingerprints"]["file"] = ["def"] * 5
    assert "(b) the file's choice did not run" in post(ignored).get_json()["problems"][0]
