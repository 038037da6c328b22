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


def test_mockups_run_under_the_modules_native_file_natives_never(tmp_path, slurm_env, mpi_modulepath, bench_root):
    """A module's native_file: the default/mock-up launch runs under it and says so byte for byte (the second
    pass's input, service/analysis/native_decision.py); the launch that forces native algorithms does not."""
    from pgmpi_formats import native_file
    from pgmpi_formats.ompi_rules import Decision
    from service.analysis.native_decision import runs_from_files
    decs = [Decision("bcast", 2, 8, "default"), Decision("bcast", 2, 1024, "native:binomial")]
    files = {}
    for mpi in ("openmpi", "mpich"):
        name, text = native_file.render(mpi, decs, native.FALLBACK["openmpi"] if mpi == "openmpi" else None)
        files[mpi] = tmp_path / f"{mpi}-{name}"
        files[mpi].write_text(text)
    mods = [{"name": f"{m}/{v}", "mpi": m, "modulepath": [str(mpi_modulepath)], "native_file": str(files[m])}
            for m, v in (("openmpi", "4.1.4"), ("mpich", "4.0.2"))]
    cdef = tiny_campaign("natf", "slurmbox", mpi_modulepath, bench_root, mpiruns=1, modules=mods,
                         collectives={"bcast": {"sizes": [1024], "algorithms": ["default", "bcast_as_scatter_allgather"]},
                                      "allreduce": {"sizes": [1024], "algorithms": ["default", "native:recursive_doubling"]}},
                         repetitions={"policy": "fixed", "nrep": 5})
    agent = make_agent(campaign_file(tmp_path / "natf.yaml", **cdef), tmp_path / "state", env=slurm_env, log=None)
    s = agent.run(interval=1.0, timeout=300)
    assert {r["state"] for r in agent.state.jobs("natf")} == {"COMPLETED"}, s
    for mpi, ver in (("openmpi", "4.1.4"), ("mpich", "4.0.2")):
        adir = tmp_path / "state" / "campaigns" / "natf" / f"{mpi}-{ver}-n1x2" / "attempt-1"
        runs = {p.name: read_file(p) for p in adir.glob("run-*.txt")}
        assert sorted(runs) == ["run-0.txt", "run-native-0.txt"]
        under, forced = [runs["run-0.txt"]], [runs["run-native-0.txt"]]
        assert "bcast_as_scatter_allgather" in under[0].algorithms and "MPI_Allreduce" in under[0].tests
        assert under[0].header["native_file_fnv1a64"] == native.file_digest(files[mpi].read_bytes())
        assert "native_file" not in forced[0].header and "native:recursive_doubling" in forced[0].algorithms
        cells = runs_from_files([adir / n for n, r in runs.items()])
        assert cells[("bcast", 1024, 2)][0].native_file == native.file_digest(files[mpi].read_bytes())
        assert sorted(r.native_file is None for r in cells[("allreduce", 1024, 2)]) == [False, True]
