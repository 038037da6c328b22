"""The Lmod hierarchy of deploy/modules.py: a module per MPI library of deploy/mpi-libraries.tsv (family "mpi",
the environment of deploy/mpi-env.sh, its level on MODULEPATH) and one pgmpitunelib under each. A user job
after `module load <mpi> pgmpitunelib` runs the library of that MPI (the redirect shows in the #@pgmpi
report, the result is right); a pgmpitunelib next to another MPI's module is refused with a message."""
from __future__ import annotations

import subprocess

import pytest

from packaging_helpers import ROOT, clean_env, lmod_shell
from pgmpi_formats.mpi_libraries import read_mpi_libraries

pytestmark = [pytest.mark.lmod, pytest.mark.mpi]
LIBS = read_mpi_libraries()
HELLO = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, x[3] = {1, 2, 3}, y[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("sums %d %d %d\n", y[0], y[1], y[2]);
    MPI_Finalize();
    return 0;
}
"""
# how each family passes a variable to the ranks (scheduler/ owns this for campaigns)
PASS = {"openmpi": lambda k, v: f"-x {k}={v}", "mpich": lambda k, v: f"-genv {k} {v}",
        "intelmpi": lambda k, v: f"-genv {k} {v}"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    for lib in LIBS:
        if not lib.installed:
            pytest.fail(f"{lib.id} is not installed in {lib.prefix}: deploy/install-mpis.sh {lib.id} (make test does)")
        if not (ROOT / "build" / "install" / lib.id / "lib" / "libpgmpitune.so").exists():
            pytest.fail(f"libpgmpitune is not built for {lib.id}: deploy/build-lib.sh {lib.id} (make test does)")
    root = tmp_path_factory.mktemp("modules")
    subprocess.run(["python3", str(ROOT / "deploy/modules.py"), "--root", str(root)], check=True)
    return root


def env_for(tree):
    return clean_env(MODULEPATH=str(tree / "Core"), PGMPI_SITE_CONFIG="/nonexistent",
                     PGMPI_SITE_PROFILE_ROOT="/nonexistent", PGMPI_SITE_MACHINE="testbox")


@pytest.mark.parametrize("lib", LIBS, ids=[lib.id for lib in LIBS])
def test_module_load_gives_the_environment_and_a_job_is_redirected(tree, lib, tmp_path):
    (tmp_path / "hello.c").write_text(HELLO)
    flags = "--oversubscribe" if lib.family == "openmpi" else ""
    pass_ = PASS[lib.family]
    env_names = ["PATH", "LD_LIBRARY_PATH", "I_MPI_ROOT", "MPICC", "MPIRUN"]
    res = lmod_shell(f"""
cd {tmp_path}
module load {lib.id} pgmpitunelib
{''.join(f'echo "ENV {n}=${{{n}-<unset>}}"; ' for n in env_names)}
echo "MPI=$PGMPITUNE_MPI FAMILY=$LMOD_FAMILY_MPI/$LMOD_FAMILY_MPI_VERSION"
$MPICC hello.c -o hello
mpirun {flags} -np 2 {pass_("LD_PRELOAD", "$PGMPITUNE_PRELOAD")} {pass_("PGMPITUNE_VERBOSE", "1")} \\
  {pass_("PGMPITUNE_MODULES", "allreduce=alg:allreduce_as_reduce_bcast")} ./hello
""", env=env_for(tree), timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"MPI={lib.family}-{lib.reported_version} FAMILY={lib.id}/{lib.version}" in out   # the profile path's
    want = lib.environment({"PATH": "<base>"})
    for n in env_names:
        line = next(x for x in out.splitlines() if x.startswith(f"ENV {n}="))
        val = line.split("=", 1)[1]
        if n in ("PATH", "LD_LIBRARY_PATH"):
            if n not in want:        # Debian's: nothing of the MPI's own (pgmpitunelib's lib/ only)
                assert "/opt/pgmpi/mpi" not in val, (n, val)
                continue
            # the MPI's directories, in the same order, ahead of the caller's (pgmpitunelib's come first)
            mine = want[n].replace(":<base>", "")
            assert f":{mine}:" in f":{val}:", (n, val)
        else:
            assert val == want.get(n, "<unset>"), (n, val)
    assert "sums 2 4 6" in out
    assert "#@pgmpi alg MPI_Allreduce 12 allreduce_as_reduce_bcast" in out, out


def test_pgmpitunelib_of_another_mpi_is_refused(tree, tmp_path):
    """A site that also keeps flat modules (one directory, pgmpitunelib/<mpi> side by side, as the demo's
    tree): Open MPI 5's build loaded next to Intel MPI is refused, and nothing of it is set."""
    flat = tmp_path / "flat" / "pgmpitunelib"
    flat.mkdir(parents=True)
    (flat / "openmpi5.lua").symlink_to(tree / "MPI" / "openmpi5" / "5.0.11" / "pgmpitunelib" / "0.1.0.lua")
    env = env_for(tree)
    env["MODULEPATH"] += f":{tmp_path / 'flat'}"
    res = lmod_shell("""
module load intelmpi
module load pgmpitunelib/openmpi5 2>&1 || echo "REFUSED rc=$?"
echo "PGMPITUNE_MPI=${PGMPITUNE_MPI-<unset>}"
module load pgmpitunelib/0.1.0 && echo "RIGHT PAIR PGMPITUNE_MPI=$PGMPITUNE_MPI"
""", env=env)
    out = res.stdout + res.stderr
    assert "REFUSED" in out, out
    assert "built for openmpi-5.0.11, but the loaded MPI module is intelmpi/2021.13.1" in " ".join(out.split()), out
    assert "PGMPITUNE_MPI=<unset>" in out, out
    assert "RIGHT PAIR PGMPITUNE_MPI=intelmpi-2021.13" in out, out      # as Intel MPI reports itself
