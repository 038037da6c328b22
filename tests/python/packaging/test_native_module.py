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


# the registry's libraries (deploy/mpi-libraries.tsv): the file written for the exact version, published to
# that version's set, set by the module for a job of that library (2 ranks), results checked by pgmpi-bench
REGISTRY = {"openmpi5": ("openmpi", "5.0.11"), "mpich5": ("mpich", "5.0.2")}
DECISIONS_P2 = [Decision("allreduce", 2, 8, "native:recursive_doubling"), Decision("allreduce", 2, 65536, "default"),
                Decision("bcast", 2, 8, "native:binomial"), Decision("allgather", 2, 8, "native:ring")]


@pytest.mark.parametrize("lid", sorted(REGISTRY))
def test_module_load_sets_the_native_file_of_a_registry_library(tmp_path, lid):
    from pgmpi_formats import mpi_libraries as ml
    from pgmpi_formats import native_file
    from plain_module import install_prefix, render
    name_, version = REGISTRY[lid]
    lib = ml.mpi_library(lid)
    install = ROOT / "build" / "install" / lid
    if not lib.installed or not (install / "bin" / "pgmpi-bench").exists():
        pytest.fail(f"{lid}: {lib.prefix} or {install}/bin/pgmpi-bench missing: deploy/install-mpis.sh, "
                    f"deploy/build-lib.sh {lid}")
    prefix = install_prefix(tmp_path / "prefix", lid)
    (tmp_path / "mods" / "pgmpitunelib").mkdir(parents=True)
    (tmp_path / "mods" / "pgmpitunelib" / f"0.1.0-{lid}.lua").write_text(render(prefix, name_, version))
    name, text = native_file.render(name_, DECISIONS_P2, version=version)
    if name_ == "openmpi":
        assert text.startswith("rule-file-version-2\n")        # 5.0.11 reads the header
        want = ("OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename")
    else:
        want = ("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",)
    root = tmp_path / "profiles"
    pub.publish(root, "m1", name_, version, {name: text}, actor="t", validated=True, checker=["/bin/true"],
                mpi=name_, native_validated=True)
    published = root / "m1" / f"{name_}-{version}" / "versions" / "1" / name
    env = clean_env(**{k: v for k, v in lib.environment().items() if k in ("PATH", "LD_LIBRARY_PATH", "MPI_ROOT")},
                    MODULEPATH=str(tmp_path / "mods"), PGMPI_SITE_PROFILE_ROOT=str(root), PGMPI_SITE_MACHINE="m1",
                    PGMPI_SITE_CONFIG="/nonexistent/site.conf", OMPI_MCA_mpi_yield_when_idle="1",
                    OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    np2 = f"{lib.mpirun} -np 2" + (" --oversubscribe" if name_ == "openmpi" else "")
    res = lmod_shell(f"""
module load pgmpitunelib/0.1.0-{lid}
env | grep -E '^({'|'.join(want)})=' | sed 's/^/LOADED /'
{np2} pgmpi-bench --calls=allreduce,bcast,allgather --algorithms=default --sizes=8,64K --nrep=2 --no-barrier-rows --output={tmp_path}/job.txt
""", env=env)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    loaded = dict(re.findall(r"^LOADED (\w+)=(.*)$", out, re.M))
    assert loaded.get(want[-1]) == str(published), out
    checks = [l for l in (tmp_path / "job.txt").read_text().splitlines() if l.startswith("#@pgmpi check")]
    assert len(checks) == 6 and all(l.endswith(" ok") for l in checks), checks
    assert f"#@native_file={published}" in (tmp_path / "job.txt").read_text()
