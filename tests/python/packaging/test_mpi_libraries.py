"""deploy/mpi-libraries.tsv, deploy/install-mpis.sh and deploy/mpi-env.sh: every library of the table is
installed in its own prefix, the environment of an id selects exactly that library (a program built with
its MPICC and run with its MPIRUN reports that family and version through MPI_Get_library_version), and
the shell helper and the Python reader give the same environment."""
from __future__ import annotations

import re
import subprocess

import pytest

from packaging_helpers import ROOT, clean_env
from pgmpi_formats.mpi_libraries import MpiTableError, mpi_library, read_mpi_libraries

pytestmark = [pytest.mark.mpi]
LIBS = read_mpi_libraries()
# what MPI_Get_library_version starts with, per family
BANNER = {"openmpi": r"Open MPI v{v}\b", "mpich": r"MPICH Version:\s+{v}\b", "intelmpi": r"Intel\(R\) MPI Library {v}\b"}
HELLO = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING]; int len, rank, size, one = 1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Get_library_version(v, &len);
    if (rank == 0) printf("sum=%d of %d\n%s\n", sum, size, v);
    MPI_Finalize();
    return 0;
}
"""


def test_table_has_the_five_libraries_of_the_conventions():
    assert [(lib.id, lib.family) for lib in LIBS] == [
        ("openmpi", "openmpi"), ("mpich", "mpich"), ("openmpi5", "openmpi"), ("mpich5", "mpich"),
        ("intelmpi", "intelmpi")]
    assert all(str(lib.prefix) == f"/opt/pgmpi/mpi/{lib.id}" for lib in LIBS)


@pytest.mark.parametrize("row, message", [
    ("x\tmpich\t7.1\tconda:mpich\t/opt/x", r"t\.tsv:3: source 'conda:mpich' unknown \(valid: debian:<packages>, pypi:<requirements>, site\)"),
    ("x\tmpich\tlatest\tpypi:mpich\t/opt/x", r"t\.tsv:3: version 'latest'"),
    ("x\tmpich\t7.1\tpypi:mpich", r"t\.tsv:3: expected 5 tab-separated columns \(id, family, version, source, prefix\), found 4"),
    ("openmpi\tmpich\t7.1\tpypi:mpich\t/opt/x", r"t\.tsv:3: id 'openmpi' appears twice"),
    ("x\tmpich\t7.1\tpypi:mpich\topt/x", r"t\.tsv:3: prefix 'opt/x' is not an absolute path"),
])
def test_bad_rows_are_refused_with_file_line_and_choices(tmp_path, row, message):
    table = tmp_path / "t.tsv"
    table.write_text("id\tfamily\tversion\tsource\tprefix\nopenmpi\topenmpi\t4.1.4\tdebian:openmpi-bin\t/x\n"
                     + row + "\n")
    with pytest.raises(MpiTableError, match=message):
        read_mpi_libraries(table)


def test_unknown_id_names_the_valid_ones():
    with pytest.raises(MpiTableError, match=r"unknown MPI id 'lam' \(valid: openmpi, mpich, openmpi5, mpich5, intelmpi\)"):
        mpi_library("lam")
    res = subprocess.run([str(ROOT / "deploy/mpi-env.sh"), "lam"], capture_output=True, text=True)
    assert res.returncode == 2 and "valid: openmpi, mpich, openmpi5, mpich5, intelmpi" in res.stderr


@pytest.mark.parametrize("lib", LIBS, ids=[lib.id for lib in LIBS])
def test_shell_helper_and_python_reader_agree(lib):
    if not lib.installed:
        pytest.fail(f"{lib.id} is not installed in {lib.prefix}: deploy/install-mpis.sh {lib.id} (make test does)")
    names = ["PATH", "LD_LIBRARY_PATH", "I_MPI_ROOT", "FI_PROVIDER_PATH", "MPI_ROOT", "MPICC", "MPICXX", "MPIF90",
             "MPIRUN", "PGMPI_MPI_ID", "PGMPI_MPI_FAMILY", "PGMPI_MPI_VERSION"]
    base = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/base/lib", "HOME": "/tmp"}
    script = f'eval "$({ROOT}/deploy/mpi-env.sh {lib.id})"\n' + "".join(
        f'printf "%s=%s\\n" {n} "${{{n}-<unset>}}"\n' for n in names)
    out = subprocess.run(["bash", "-c", script], env=base, capture_output=True, text=True, check=True).stdout
    shell = dict(line.split("=", 1) for line in out.splitlines())
    py = lib.environment(base)
    assert shell == {n: py.get(n, "<unset>") for n in names}


@pytest.mark.parametrize("lib", LIBS, ids=[lib.id for lib in LIBS])
def test_environment_of_an_id_builds_and_runs_that_library(lib, tmp_path):
    if not lib.installed:
        pytest.fail(f"{lib.id} is not installed in {lib.prefix}: deploy/install-mpis.sh {lib.id} (make test does)")
    env = lib.environment(clean_env())
    (tmp_path / "hello.c").write_text(HELLO)
    subprocess.run([env["MPICC"], "hello.c", "-o", "hello"], cwd=tmp_path, env=env, check=True, timeout=120)
    flags = ["--oversubscribe"] if lib.family == "openmpi" else []
    res = subprocess.run([env["MPIRUN"], *flags, "-np", "2", "./hello"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "sum=2 of 2" in res.stdout
    version = lib.version if lib.family != "intelmpi" else ".".join(lib.version.split(".")[:2])
    assert re.search(BANNER[lib.family].format(v=re.escape(version)), res.stdout), res.stdout
