"""A native campaign on the real Slurm with Lmod modules: each job lists the library's own algorithms first
(pgmpi-bench --list-native inside the allocation, after `module load`), measures them next to the default,
and the campaign keeps the lists."""
from __future__ import annotations

import json

import pytest

from pgmpi_formats import native
from pgmpi_formats.results import read_file
from scheduler.runner import make_agent

from sched_helpers import campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.lmod]


def test_native_campaign_on_slurm(tmp_path, slurm_env, mpi_modulepath, bench_root):
    cdef = tiny_campaign("nat", "slurmbox", mpi_modulepath, bench_root, mpiruns=1,
                         collectives={"allreduce": {"sizes": [1024], "algorithms": ["default", "native:all"]}},
                         repetitions={"policy": "fixed", "nrep": 5})
    agent = make_agent(campaign_file(tmp_path / "nat.yaml", **cdef), tmp_path / "state", env=slurm_env, log=None)
    s = agent.run(interval=1.0, timeout=300)
    jobs = {r["key"]: r for r in agent.state.jobs("nat")}
    assert {k: r["state"] for k, r in jobs.items()} == {"openmpi-4.1.4-n1x2": "COMPLETED",
                                                       "mpich-4.0.2-n1x2": "COMPLETED"}, s
    camp = tmp_path / "state" / "campaigns" / "nat"
    for mpi, ver in (("openmpi", "4.1.4"), ("mpich", "4.0.2")):
        adir = camp / f"{mpi}-{ver}-n1x2" / "attempt-1"
        assert "--list-native" in (adir / "job.sh").read_text()
        d = native.Discovery.from_json(json.loads((camp / f"native-{mpi}-{ver}.json").read_text()))
        assert d.library == mpi and d.names("allreduce") == native.FALLBACK[mpi].names("allreduce")
        run = read_file(next(adir.glob("run-0*.txt")))
        labels = set(run.algorithms)
        safe = {f"native:{n}" for n in d.names("allreduce")
                if ("allreduce", n) not in native.ORDER_UNSAFE[mpi]}
        # the order-unsafe ones failed their check (default_control: the campaign's control arm)
        assert labels - {"default_control"} == {"default"} | safe, labels
        assert run.header["module"] == f"{mpi}/{ver}" and d.version == ver
