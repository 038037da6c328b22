"""The virtual multi-node cluster of deploy/cluster.sh (network + UTS namespaces on one machine, one
slurmd each): nodes with their own names and addresses, both MPIs across nodes by srun and by mpirun
inside an allocation, the layout the launcher made recorded by pgmpi-bench, the node-aware mock-ups'
matrices over several layouts (tests/cluster/node-matrix.sh), and 2- and 3-node campaigns through the
agent and Slurm into the service on PostgreSQL. make test brings the cluster up; without it these
tests fail, they do not skip. Timings across virtual nodes on 2 cores are not performance figures."""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from scheduler import launchers
from scheduler.runner import make_agent

from sched_helpers import add_machine, campaign_file, tiny_campaign

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "deploy" / "cluster.sh"
# every MPI launch across virtual nodes goes through it: it launches again only after Open MPI 4.1.4's known
# start-up crash inside PMPI_Init (the script says how it is recognised), never after anything else
AGAIN = [str(ROOT / "tests" / "cluster" / "launch-again-on-init-crash.sh")]
pytestmark = [pytest.mark.cluster, pytest.mark.mpi]
PLUGIN = {mpi: launchers.library(mpi).family.srun_plugin(launchers.library(mpi).version) for mpi in ("openmpi", "mpich")}


@pytest.fixture(scope="session")
def cluster_env() -> dict:
    env = dict(os.environ)
    if subprocess.run([str(CLUSTER), "status"]).returncode != 0:
        pytest.fail("the virtual cluster is not up: start it with `deploy/cluster.sh up` (make test does)")
    for line in subprocess.check_output([str(CLUSTER), "env"], text=True).splitlines():
        for word in shlex.split(line)[1:]:          # export K=V K=V
            k, _, v = word.partition("=")
            env[k] = v
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def headers(text: str) -> dict:
    return dict(line[2:].split("=", 1) for line in text.splitlines() if line.startswith("#@") and "=" in line)


def test_nodes_have_their_own_names_and_addresses(cluster_env):
    out = subprocess.run(["srun", "-N3", "--ntasks-per-node=1", "sh", "-c",
                          "echo $(hostname) $(ip -4 -o addr show eth0 | awk '{print $4}')"],
                         capture_output=True, text=True, env=cluster_env, timeout=60)
    assert out.returncode == 0, out.stderr
    got = sorted(tuple(line.split()) for line in out.stdout.splitlines())
    assert [h for h, _ in got] == ["node1", "node2", "node3"]
    assert len({a for _, a in got}) == 3, got


@pytest.mark.parametrize("launch", ["srun", "mpirun-in-sbatch"])
def test_mpi_across_nodes_records_the_layout(cluster_env, mpi, mpi_prefix, launch, tmp_path):
    bench = f"{mpi_prefix}/bin/pgmpi-bench --calls=allreduce,bcast --sizes=8,4096 --nrep=3"
    if launch == "srun":
        cmd = AGAIN + ["srun", "-N2", "--ntasks-per-node=2", f"--mpi={PLUGIN[mpi]}"] + bench.split()
        res = subprocess.run(cmd, capture_output=True, text=True, env=cluster_env, timeout=300)
        assert res.returncode == 0, res.stderr
        text = res.stdout
    else:
        out = tmp_path / "out.txt"
        script = tmp_path / "job.sh"
        script.write_text(f"#!/bin/bash\n{AGAIN[0]} mpirun.{mpi} -np 4 {bench} --output={out}\n")
        res = subprocess.run(["sbatch", "--wait", "-N2", "--ntasks-per-node=2", f"-o{tmp_path}/slurm.out", str(script)],
                             capture_output=True, text=True, env=cluster_env, timeout=300)
        assert res.returncode == 0, res.stderr + (tmp_path / "slurm.out").read_text()
        text = out.read_text()
    h = headers(text)
    assert h["mpi_library"] == mpi
    assert (h["nprocs"], h["nodes"], h["ppn"], h["nodes_source"]) == ("4", "2", "2", "measured")
    assert (h["hosts"], h["placement"]) == ("node1,node2", "0:2,1:2")


def test_layout_other_than_requested_fails_the_run(cluster_env, mpi, mpi_prefix):
    env = dict(cluster_env, PGMPI_EXPECT_LAYOUT="2x2")
    res = subprocess.run(AGAIN + ["srun", "-N2", "-n3", f"--mpi={PLUGIN[mpi]}", f"{mpi_prefix}/bin/pgmpi-bench",
                          "--calls=bcast", "--sizes=8", "--nrep=2"], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode != 0
    assert "requested 2x2, the launcher made 2 node(s) x 2(uneven) ppn" in res.stderr, res.stderr


def test_node_aware_mockups_matrix_on_layouts(cluster_env):
    """matrix.c (allreduce, bcast, reduce, allgather) and mixed.c at 2x1, 2x2, 3x2, 2x3, 3+2 and
    interleaved 2x2, both MPIs, every count: 0 mismatches, the library's report as predicted."""
    t0 = time.time()
    res = subprocess.run([str(ROOT / "tests/cluster/node-matrix.sh"), "all"], capture_output=True,
                         text=True, env=cluster_env, timeout=3000)
    print(res.stdout, res.stderr, f"node matrix wall time: {time.time() - t0:.0f} s (loaded 2-core machine)")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("mismatches=0 report_mismatches=0") == 2 * (6 + 6)


@pytest.mark.postgres
@pytest.mark.lmod
def test_two_and_three_node_campaigns_reach_the_service_with_their_layout(cluster_env, mpi_modulepath, bench_root,
                                                                        service, tmp_path):
    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import Campaign, Run

    token = add_machine(service, "vcluster")
    (tmp_path / "token").write_text(token)
    cdef = tiny_campaign("layouts", "vcluster", mpi_modulepath, bench_root,
                         layouts=[{"nodes": 2, "ppn": 2}, {"nodes": 3, "ppn": 1}],
                         collectives={"allreduce": {"sizes": [8, 4096]}}, mpiruns=1,
                         repetitions={"policy": "fixed", "nrep": 4},
                         slurm={"partition": "vc", "walltime": "00:05:00"},
                         service={"url": service.url, "token_file": str(tmp_path / "token")})
    agent = make_agent(campaign_file(tmp_path / "c.yaml", **cdef), tmp_path / "state", env=cluster_env, log=print)
    t0 = time.time()
    s = agent.run(interval=1.0, timeout=900)
    print(f"2- and 3-node campaign on both MPIs: {time.time() - t0:.1f} s (virtual nodes on 2 cores)")
    measure = {r["key"]: r["state"] for r in agent.state.jobs("layouts") if r["kind"] == "measure"}
    assert measure == {f"{m}-n{n}x{p}": "COMPLETED" for m in ("openmpi-4.1.4", "mpich-4.0.2")
                       for n, p in ((2, 2), (3, 1))}, measure
    assert s["done"] and s["rejected"] == 0, s

    def _runs():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == "layouts"))
        return [(r.library.name, r.nodes, r.ppn, r.nprocs, r.layout, r.hosts, r.placement,
                 r.headers.get("nodes_source")) for r in db.session.scalars(select(Run).where(Run.campaign_id == cid))]
    got = sorted(service.query(_runs))
    want = sorted((lib, n, p, n * p, f"{n}x{p}", ",".join(f"node{i + 1}" for i in range(n)),
                   ",".join(f"{i}:{p}" for i in range(n)), "measured")
                  for lib in ("openmpi", "mpich") for n, p in ((2, 2), (3, 1)))
    assert got == want


@pytest.mark.postgres
@pytest.mark.lmod
def test_campaign_on_2x2_gives_a_layout_profile_the_library_applies_on_2x2_not_1x4(
        cluster_env, mpi_modulepath, bench_root, service, tmp_path):
    """End to end on the virtual cluster: a campaign on 2 nodes x 2 ranks (Open MPI, its MPI_Allreduce slowed
    at 1024 B by the test-only interposer of tests/python/delay_interposer.py) goes through the agent and
    Slurm into the service; the analysis' candidate holds allreduce_p4_2x2.prf with `#@pgmpi layout 2x2`
    (service/analysis/profiles.py), which is published; the library (both MPIs) then redirects 1024-byte
    Allreduce on 2x2 and keeps the default on 1x4 (lib/docs/profile-format.md, "Per layout").
    Timings across virtual nodes on 2 cores are not performance figures: only the redirection is checked (on the
    interposer's virtual clock, tests/python/delay_interposer.py)."""
    import json
    import urllib.request

    import delay_interposer
    from service.workflows.publish import publish_candidate
    from service.store.db import db
    from service.store.models import ProfileVersion

    # the interposer's virtual clock: every cell the same figure in every mpirun, so only 1024 B can be flagged
    # whatever the virtual nodes' timing on a loaded 2-core machine (one Allreduce there: 30-60 ms)
    so = delay_interposer.build(tmp_path, "openmpi")
    token = add_machine(service, "vclayout")
    (tmp_path / "token").write_text(token)
    launcher = f"mpirun -x LD_PRELOAD={so} -x PGMPI_TEST_DELAY_BYTES=1024"
    cdef = tiny_campaign("layout2x2", "vclayout", mpi_modulepath, bench_root,
                         modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                                   "mpirun": launcher}],
                         layouts=[{"nodes": 2, "ppn": 2}], collectives={"allreduce": {"sizes": [64, 1024]}},
                         algorithms=["default", "allreduce_as_reduce_bcast"], mpiruns=5,
                         repetitions={"policy": "fixed", "nrep": 6},
                         slurm={"partition": "vc", "walltime": "00:05:00"},
                         service={"url": service.url, "token_file": str(tmp_path / "token")})
    agent = make_agent(campaign_file(tmp_path / "c.yaml", **cdef), tmp_path / "state", env=cluster_env, log=print)
    t0 = time.time()
    s = agent.run(interval=1.0, timeout=600)
    print(f"2x2 campaign: {time.time() - t0:.1f} s (virtual nodes on 2 cores: not a performance figure)")
    assert s["done"] and s["rejected"] == 0, s
    # the analysis the agent asks for after a campaign with validation (test_slurm_violation.py runs that chain
    # on one node); here asked directly, so a noisy validation run on this loaded machine cannot hide the layout
    req = urllib.request.Request(f"{service.url}/api/v1/analyses", method="POST",
                                 data=json.dumps({"machine": "vclayout", "library": "openmpi",
                                                  "campaign": "layout2x2"}).encode(),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        analysis = json.loads(r.read())
    assert [(v["layout"], v["msize"]) for v in analysis["violations"] if v["kind"] == "pattern"] == [("2x2", 1024)], \
        analysis["violations"]
    assert len(analysis["profiles"]) == 1, analysis
    root = tmp_path / "published"

    def _publish():
        v = db.session.get(ProfileVersion, analysis["profiles"][0]["id"])
        files = dict(v.files)
        res = publish_candidate(v, root, "test", force=True, reason="cluster test of the layout, not of validation")
        return files, res.target / "current"
    files, current = service.query(_publish)
    assert list(files) == ["allreduce_p4_2x2.prf"], files
    assert "#@pgmpi layout 2x2" in files["allreduce_p4_2x2.prf"] and "1024 1024 1" in files["allreduce_p4_2x2.prf"]

    for mpi in ("openmpi", "mpich"):
        app = [str(ROOT / "build" / mpi / "tests" / "core" / "core_app"), "--counts=256"]   # 1024 B
        env = dict(cluster_env, PGMPITUNE_VERBOSE="1", PGMPITUNE_PROFILE_DIR=str(current))
        on_2x2 = subprocess.run(AGAIN + ["srun", "-N2", "--ntasks-per-node=2", f"--mpi={PLUGIN[mpi]}"] + app,
                                capture_output=True, text=True, env=env, timeout=300)
        assert on_2x2.returncode == 0 and "core_app: OK" in on_2x2.stdout, on_2x2.stdout + on_2x2.stderr
        assert "#@pgmpi alg MPI_Allreduce 1024 allreduce_as_reduce_bcast" in on_2x2.stdout, (mpi, on_2x2.stdout)
        on_1x4 = subprocess.run(AGAIN + ["srun", "-N1", "-n4", f"--mpi={PLUGIN[mpi]}"] + app,
                                capture_output=True, text=True, env=env, timeout=300)
        assert on_1x4.returncode == 0 and "core_app: OK" in on_1x4.stdout, on_1x4.stdout + on_1x4.stderr
        assert "#@pgmpi alg MPI_Allreduce 1024 default" in on_1x4.stdout, (mpi, on_1x4.stdout)
        assert "allreduce_as_reduce_bcast" not in on_1x4.stdout


@pytest.mark.postgres
@pytest.mark.parametrize("lib_id, launch", [("openmpi5", "srun"), ("intelmpi", "mpirun")])
def test_registry_library_campaign_across_nodes(cluster_env, bench_root, service, tmp_path, lib_id, launch):
    """A registry library on 2 virtual nodes x 2 through the agent, one per launch mode (Open MPI 5 started by
    srun --mpi=pmix, Intel MPI by its hydra mpirun -ppn 2; MPICH 5 takes both too: scheduler/README.md):
    pgmpi-bench measures the 2x2 layout the launcher made, under the library's own identity."""
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"no {lib_id} build of lib/ ({bench}): deploy/build-lib.sh {lib_id} (make test does)")
    token = add_machine(service, f"vc-{lib_id}")
    (tmp_path / "token").write_text(token)
    cdef = tiny_campaign(f"vc-{lib_id}", f"vc-{lib_id}", tmp_path, bench_root,
                         modules=[{"mpi": lib_id, "launch": launch}], layouts=[{"nodes": 2, "ppn": 2}],
                         collectives={"allreduce": {"sizes": [8, 1024]}}, algorithms=["default"], mpiruns=1,
                         repetitions={"policy": "fixed", "nrep": 4}, slurm={"partition": "vc", "walltime": "00:05:00"},
                         service={"url": service.url, "token_file": str(tmp_path / "token")})
    agent = make_agent(campaign_file(tmp_path / "c.yaml", **cdef), tmp_path / "state", env=cluster_env, log=print)
    s = agent.run(interval=1.0, timeout=300)
    assert s["done"] and s["rejected"] == 0, s
    row = agent.state.jobs(f"vc-{lib_id}")[0]
    assert row["state"] == "COMPLETED", row["reason"]
    head = headers((Path(row["attempt_dir"]) / "run-0.txt").read_text())
    lib = launchers.library(lib_id)
    assert (head["nodes"], head["ppn"], head["mpi_library"], head["mpi_version"]) == \
        ("2", "2", lib.family.name, lib.row.reported_version), head
