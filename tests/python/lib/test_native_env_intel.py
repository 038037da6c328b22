"""Rule 8 of lib/src/core/pgmpitune_core.h on Intel MPI 2021.13: a native.impi decided at 2 ranks reaches Intel
MPI only in a 2-rank job.  The module names the file (PGMPITUNE_NATIVE_IMPI) and libpgmpitune's MPI_Init sets
its I_MPI_ADJUST_<COLL> variables before PMPI_Init only when the launcher's job size (PMI_SIZE) lies in their
process ranges.  Once such a variable is set, Intel MPI runs another algorithm than its default even outside
every range, so exporting the file's lines into every job (the old module) changed 4-rank jobs; the control
arm below shows that on every run.  Evidence: the result fingerprints of pgmpi-bench (linked with the library,
as a user links it), which identify the algorithm that ran a reduction."""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from pgmpi_formats import mpi_libraries as ml

_spec = importlib.util.spec_from_file_location("pgmpi_root_conftest_native_env", Path(__file__).parents[1] / "conftest.py")
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)

pytestmark = pytest.mark.mpi

FILE = ("# Intel MPI 2021.13 I_MPI_ADJUST variables, written by pgmpi-site: test\n"
        "I_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2;1:0-2147483647@5-6   # decided and validated at 2 (and 5-6) ranks\n")
SIZES = "128,512,1024,65536"
# more ranks than the 2 cores: ranks yield when idle (tests/c/CMakeLists.txt, PGMPI_OVERSUB_ENV)
YIELD = {"I_MPI_PIN": "0", "I_MPI_THREAD_YIELD": "2", "I_MPI_SPIN_COUNT": "1"}


@pytest.fixture(scope="module")
def intel(tmp_path_factory):
    lib = ml.mpi_library("intelmpi")
    if not lib.installed:
        pytest.fail(f"intelmpi: {lib.mpicc} missing (deploy/install-mpis.sh installs it)")
    bench = _root.mpi_install("intelmpi") / "bin" / "pgmpi-bench"
    env = {k: v for k, v in lib.environment().items()
           if not k.startswith("I_MPI_ADJUST_") and k not in ("PGMPITUNE_NATIVE_IMPI", "PGMPITUNE_DISABLE")}
    work = tmp_path_factory.mktemp("native_env")
    (work / "native.impi").write_text(FILE)
    return lib, bench, env, work


@pytest.fixture(scope="module")
def default2(intel):
    return run(intel, 2, "default2")[0]


def run(intel, np: int, name: str, **extra) -> tuple[dict, str]:
    """{bytes: fingerprint of MPI_Allreduce} of one mpirun, and its stdout + stderr."""
    lib, bench, env, work = intel
    out = work / f"{name}.txt"
    run_env = {**env, **(YIELD if np > 2 else {}), **extra}
    if "PGMPITUNE_NATIVE_IMPI" not in extra:
        run_env["PGMPI_NATIVE_EVIDENCE"] = "1"      # fingerprints without a file (pgmpi-bench's bench_check.c)
    p = subprocess.run([str(lib.mpirun), "-np", str(np), str(bench), "--calls=allreduce", f"--sizes={SIZES}",
                        "--nrep=3", "--no-barrier-rows", f"--output={out}"], env=run_env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-1500:]
    fp = {}
    for line in out.read_text().splitlines():
        if line.startswith("#@pgmpi fingerprint MPI_Allreduce "):
            _, _, _, size, _, hashes = line.split()
            fp[int(size)] = hashes
    assert sorted(fp) == [int(s) for s in SIZES.split(",")], out.read_text()[-800:]
    return fp, p.stdout + p.stderr


def test_a_2_rank_file_runs_its_preset_at_2_ranks_and_the_default_at_4(intel, default2):
    path = str(intel[3] / "native.impi")
    preset2, _ = run(intel, 2, "preset2", I_MPI_ADJUST_ALLREDUCE="3")
    file2, out = run(intel, 2, "file2", PGMPITUNE_NATIVE_IMPI=path, I_MPI_DEBUG="6")
    assert preset2 != default2                     # preset 3 is told apart from the default at these sizes
    assert file2 == preset2 and "pgmpitune: warning" not in out
    # what Intel MPI read at MPI_Init (its own startup line): only the ranges of this job's size
    assert "MPI startup(): I_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2\n" in out, out[-1500:]
    default4, _ = run(intel, 4, "default4")
    old4, _ = run(intel, 4, "old4", I_MPI_ADJUST_ALLREDUCE="3:0-2147483647@2-2")   # the old module's export
    file4, out = run(intel, 4, "file4", PGMPITUNE_NATIVE_IMPI=path, I_MPI_DEBUG="6")
    assert old4 != default4, "control: Intel MPI no longer changes a 4-rank job outside the ranges"
    assert file4 == default4 and "pgmpitune: warning" not in out and "I_MPI_ADJUST" not in out


def test_the_users_own_variable_is_kept(intel):
    mine, _ = run(intel, 2, "mine", I_MPI_ADJUST_ALLREDUCE="1")
    both, _ = run(intel, 2, "both", I_MPI_ADJUST_ALLREDUCE="1", PGMPITUNE_NATIVE_IMPI=str(intel[3] / "native.impi"))
    assert both == mine


def test_a_bad_file_sets_nothing_and_says_so_once(intel, default2):
    bad = intel[3] / "bad.impi"
    bad.write_text(FILE + "I_MPI_ADJUST_BCAST=1:0-1023@2\n")
    got, err = run(intel, 2, "bad", PGMPITUNE_NATIVE_IMPI=str(bad))
    assert got == default2
    warnings = [line for line in err.splitlines() if line.startswith("pgmpitune: warning:")]
    assert warnings == [f"pgmpitune: warning: {bad}:3: I_MPI_ADJUST_BCAST: '1:0-1023@2' is not "
                        "<preset>:<lo>-<hi>@<pmin>-<pmax>; no I_MPI_ADJUST_* variable of it is set (the MPI "
                        "library's default is used instead)"], err


def test_a_launch_without_a_job_size_sets_nothing_and_runs(intel):
    """A singleton (no launcher: no PMI_SIZE) cannot tell its size from the launcher: nothing is set, one warning
    line, the program runs (srun --mpi=pmix gives no PMI_SIZE either; the site starts Intel MPI with pmi2)."""
    lib, bench, env, work = intel
    p = subprocess.run([str(bench), "--calls=allreduce", "--sizes=128", "--nrep=2", "--no-barrier-rows",
                        f"--output={work / 'single.txt'}"], env={**env, "PGMPITUNE_NATIVE_IMPI": str(work / "native.impi"),
                                                               "I_MPI_DEBUG": "6"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-1500:]
    assert [line for line in p.stderr.splitlines() if line.startswith("pgmpitune: warning:")] == [
        f"pgmpitune: warning: {work / 'native.impi'}: the launcher gives no job size (PMI_SIZE), so it cannot tell "
        "whether this job is one the file was decided for; no I_MPI_ADJUST_* variable of it is set (the MPI "
        "library's default is used instead)"], p.stderr
    assert "I_MPI_ADJUST" not in p.stdout
