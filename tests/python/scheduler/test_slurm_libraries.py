"""Campaigns on the registry's libraries through the agent and the real Slurm into the service, one per
launcher kind: Open MPI 5 by its PRRTE mpirun and MPICH 5 by `srun --mpi=pmi2`, both without a module (the
job selects the library from the table's prefix), Intel MPI by its own hydra mpirun after `module load`;
each stored and analysed under its own identity (library, version from MPI_Get_library_version).  One
new library per launcher kind keeps the suite's time small; the guideline campaigns of scheduler/README.md
ran on all three."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler import launchers
from scheduler.runner import make_agent

from sched_helpers import ROOT, add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

# id, launch, through an Lmod module, the identity the service must store it under
CASES = [("openmpi5", "mpirun", False, ("openmpi", "5.0.11")),
         ("mpich5", "srun", False, ("mpich", "5.0.2")),
         ("intelmpi", "mpirun", True, ("intelmpi", "2021.13"))]


def library_module(top: Path, lib_id: str) -> tuple[str, Path]:
    """The site's Lmod module of the library (deploy/modules.py: the table reader's environment)."""
    subprocess.run([sys.executable, str(ROOT / "deploy" / "modules.py"), "--root", str(top), lib_id], check=True,
                   capture_output=True)
    lib = launchers.library(lib_id)
    assert (top / "Core" / lib.id / f"{lib.version}.lua").is_file()
    return f"{lib.id}/{lib.version}", top / "Core"


@pytest.mark.parametrize("lib_id, launch, with_module, identity", CASES, ids=[c[0] for c in CASES])
def test_campaign_on_a_registry_library(tmp_path, slurm_env, bench_root, service, lib_id, launch, with_module,
                                        identity):
    bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"no {lib_id} build of lib/ ({bench}): deploy/install-mpis.sh {lib_id} && "
                    f"deploy/build-lib.sh {lib_id} (make test does)")
    module = {"mpi": lib_id, "launch": launch}
    if with_module:
        name, path = library_module(tmp_path / "modules", lib_id)
        module.update(name=name, modulepath=[str(path)])
    machine = f"box-{lib_id}"
    token = add_machine(service, machine)
    (tmp_path / "token").write_text(token)
    cdef = tiny_campaign(f"lib-{lib_id}", machine, tmp_path, bench_root, modules=[module],
                         collectives={"allreduce": {"sizes": [8, 1024]}},
                         algorithms=["default", "allreduce_as_reduce_bcast"], mpiruns=2,
                         repetitions={"policy": "fixed", "nrep": 5}, control=True,
                         service={"url": service.url, "token_file": str(tmp_path / "token")},
                         validation={"enabled": True, "nrep": 5, "mpiruns": 1})
    agent = make_agent(campaign_file(tmp_path / "c.yaml", **cdef), tmp_path / "state", env=slurm_env, log=print)
    summary = agent.run(interval=1.0, timeout=300)
    assert summary["done"] and summary["rejected"] == 0, summary
    rows = agent.state.jobs(f"lib-{lib_id}")
    measure = [r for r in rows if r["kind"] == "measure"]
    assert [r["state"] for r in measure] == ["COMPLETED"], [(r["key"], r["state"], r["reason"]) for r in rows]

    # launched the family's way
    script = (Path(measure[0]["attempt_dir"]) / "job.sh").read_text()
    lib = launchers.library(lib_id)
    if launch == "srun":
        assert f"srun -n 2 --ntasks-per-node=2 --mpi={lib.family.srun_plugin(lib.version)}" in script
    elif with_module:
        assert f"module load {lib.id}/{lib.version}" in script and "mpirun -np 2" in script
    else:
        assert f"{lib.prefix}/bin/mpirun -np 2" in script
    if not with_module:
        assert f"export PATH={shlex.quote(lib.prefix + '/bin')}" in script      # selected without a module

    # stored and analysed under the library's own identity (MPI_Get_library_version), not the family's
    def _q():
        from sqlalchemy import select
        from service.store.db import db
        from service.store.models import Campaign, Run
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == f"lib-{lib_id}"))
        return sorted({(r.library.name, r.library.version, r.nprocs, r.headers.get("layout", ""))
                       for r in db.session.scalars(select(Run).where(Run.campaign_id == cid))
                       if not (r.headers or {}).get("pgmpi_validation")})
    assert service.query(_q)[0][:3] == (*identity, 2)
    analysis = json.loads(agent.state.campaign(f"lib-{lib_id}")["analysis"])
    assert list(analysis) == [f"{identity[0]}-{identity[1]}"], analysis
    assert isinstance(analysis[f"{identity[0]}-{identity[1]}"]["analysis_id"], int), analysis
