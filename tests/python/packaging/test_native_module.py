"""The module sets the MPI library's own decision file of the published set at load time (pgmpitune-site.lua,
plain template spack-repo/modules/pgmpitunelib.lua.in): a job after `module load` runs with it, the tuned
collectives correct at 4 ranks; unloading removes the variables; a set without the file sets none."""
from __future__ import annotations

import re

import pytest

from pgmpi_formats import mpich_json as mj
from pgmpi_formats import ompi_rules as orr
from pgmpi_formats.ompi_rules import Decision
from service.profiles import publish as pub

from packaging_helpers import ROOT, clean_env, lmod_shell
from plain_module import module_tree

pytestmark = pytest.mark.mpi
VERSIONS = {"openmpi": "4.1.4", "mpich": "4.0.2"}
DECISIONS = [Decision("allreduce", 4, 8, "native:recursive_doubling"), Decision("allreduce", 4, 65536, "default"),
             Decision("bcast", 4, 8, "native:binomial"), Decision("allgather", 4, 8, "native:ring")]


@pytest.mark.parametrize("mpi", list(VERSIONS))
def test_module_load_sets_the_published_native_file_for_the_job(tmp_path, mpi):
    install = ROOT / "build" / "install" / mpi
    if not (install / "bin" / "pgmpi-bench").exists():
        pytest.fail(f"{install}/bin/pgmpi-bench missing: run deploy/build-lib.sh {mpi}")
    module_tree(tmp_path, mpi, f"0.1.0-{mpi}.lua")
    if mpi == "openmpi":
        name, text = "native.rules", orr.write_rules(DECISIONS, pub._installed("openmpi"))
        want = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": None}
    else:
        t = pub._installed("mpich")
        base, known = t.base, t.known
        name, text = "native.json", mj.dumps(mj.generate(DECISIONS, base, known))
        want = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": None}
    root = tmp_path / "profiles"
    pub.publish(root, "m1", mpi, VERSIONS[mpi], {name: text}, actor="t", validated=True, checker=["/bin/true"], mpi=mpi,
                native_validated=True)
    published = root / "m1" / f"{mpi}-{VERSIONS[mpi]}" / "versions" / "1" / name
    np4 = f"mpirun.{mpi} -np 4" + (" --oversubscribe" if mpi == "openmpi" else "")
    env = clean_env(MODULEPATH=str(tmp_path / "mods"), PGMPI_SITE_PROFILE_ROOT=str(root), PGMPI_SITE_MACHINE="m1",
                    PGMPI_SITE_CONFIG="/nonexistent/site.conf", OMPI_MCA_mpi_yield_when_idle="1")
    script = f"""
module load pgmpitunelib/0.1.0-{mpi}
env | grep -E '^({'|'.join(want)})=' | sed 's/^/LOADED /'
{np4} pgmpi-bench --calls=allreduce,bcast,allgather,reduce --algorithms=default --sizes=64K --nrep=2 --no-barrier-rows --output={tmp_path}/job.txt
module unload pgmpitunelib
env | grep -E '^({'|'.join(want)})=' | sed 's/^/AFTER /' || true
"""
    res = lmod_shell(script, env=env)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    loaded = dict(re.findall(r"^LOADED (\w+)=(.*)$", out, re.M))
    assert set(loaded) == set(want), out
    for k, v in want.items():
        assert loaded[k] == (v or str(published)), out       # the version current at load, not `current`
    assert "AFTER " not in out
    checks = [l for l in (tmp_path / "job.txt").read_text().splitlines() if l.startswith("#@pgmpi check")]
    assert len(checks) == 4 and all(l.endswith(" ok") for l in checks), checks
    # a set without the file: the module sets nothing
    pub.publish(root, "m1", mpi, VERSIONS[mpi], {"MPI_Allreduce.prf": "MPI_Allreduce\n4\n2\n0 default\n"
                "1 allreduce_as_reduce_bcast\n1\n1 1024 1\n"}, actor="t", validated=True, checker=["/bin/true"])
    res = lmod_shell(f"module load pgmpitunelib/0.1.0-{mpi}\nenv | grep -cE '^({'|'.join(want)})=' || true", env=env)
    assert res.stdout.strip().splitlines()[-1] == "0", res.stdout + res.stderr
