"""Rule 8 of lib/src/core/pgmpitune_core.h on Intel MPI 2021.13: a native.impi decided at 2 ranks reaches Intel
MPI only in a 2-rank job.  The module names the file (PGMPITUNE_NATIVE_IMPI) and libpgmpitune's MPI_Init sets
its I_MPI_ADJUST_<COLL> variables before PMPI_Init only when the launcher's job size lies in their process
ranges (PMI_SIZE: Intel's mpirun, srun --mpi=pmi2; SLURM_STEP_NUM_TASKS of Slurm's own PMIx step: srun
--mpi=pmix, which sets no PMI_SIZE; native_env.c's launcher_size).  Once such a variable is set, Intel MPI runs another algorithm than its default even outside
every range, so exporting the file's lines into every job (the old module) changed 4-rank jobs; the control
arm below shows that on every run.  Evidence: the result fingerprints of pgmpi-bench (linked with the library,
as a user links it), which identify the algorithm that ran a reduction; its raw header records the file and
what of it Intel MPI read (#@native_file, #@native_impi)."""
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


@pytest.fixture(scope="module")
def preset2(intel):
    return run(intel, 2, "preset2", I_MPI_ADJUST_ALLREDUCE="3")[0]


def run(intel, np: int, name: str, launcher: list[str] | None = None, **extra) -> tuple[dict, str]:
    """{bytes: fingerprint of MPI_Allreduce} of one mpirun (or `launcher` + -n np), and its stdout + stderr."""
    lib, bench, env, work = intel
    out = work / f"{name}.txt"
    run_env = {**env, **(YIELD if np > 2 else {}), **extra}
    if "PGMPITUNE_NATIVE_IMPI" not in extra:
        run_env["PGMPI_NATIVE_EVIDENCE"] = "1"      # fingerprints without a file (pgmpi-bench's bench_check.c)
    start = [*launcher, "-n", str(np)] if launcher else [str(lib.mpirun), "-np", str(np)]
    p = subprocess.run([*start, str(bench), "--calls=allreduce", f"--sizes={SIZES}",
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


def header(intel, name: str) -> dict:
    return dict(line[2:].split("=", 1) for line in (intel[3] / f"{name}.txt").read_text().splitlines()
                if line.startswith("#@") and "=" in line and not line.startswith("#@pgmpi "))


def test_a_2_rank_file_runs_its_preset_at_2_ranks_and_the_default_at_4(intel, default2, preset2):
    from pgmpi_formats import native
    path = str(intel[3] / "native.impi")
    file2, out = run(intel, 2, "file2", PGMPITUNE_NATIVE_IMPI=path, I_MPI_DEBUG="6")
    assert preset2 != default2                     # preset 3 is told apart from the default at these sizes
    assert file2 == preset2 and "pgmpitune: warning" not in out
    # what Intel MPI read at MPI_Init (its own startup line): only the ranges of this job's size, without the
    # process range (Intel MPI 2021.13 matches no message range that carries one: native_env.c)
    assert "MPI startup(): I_MPI_ADJUST_ALLREDUCE=3:0-2147483647\n" in out, out[-1500:]
    # the raw file says which file and what of it this job ran (as for Open MPI's and MPICH's files)
    h = header(intel, "file2")
    assert (h.get("native_file"), h.get("native_file_fnv1a64"), h.get("native_impi")) == (
        path, native.file_digest(FILE), "I_MPI_ADJUST_ALLREDUCE=3:0-2147483647"), h
    assert "native_file" not in header(intel, "preset2")
    default4, _ = run(intel, 4, "default4")
    old4, _ = run(intel, 4, "old4", I_MPI_ADJUST_ALLREDUCE="3:0-2147483647@2-2")   # the old module's export
    file4, out = run(intel, 4, "file4", PGMPITUNE_NATIVE_IMPI=path, I_MPI_DEBUG="6")
    assert old4 != default4, "control: Intel MPI no longer changes a 4-rank job outside the ranges"
    assert file4 == default4 and "pgmpitune: warning" not in out and "I_MPI_ADJUST" not in out
    assert (header(intel, "file4").get("native_file"), header(intel, "file4").get("native_impi")) == (path, "")


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


NO_SIZE = ("the launcher gives no job size (PMI_SIZE; under srun --mpi=pmix SLURM_STEP_NUM_TASKS with Slurm's "
           "PMIX_NAMESPACE), so it cannot tell whether this job is one the file was decided for; no I_MPI_ADJUST_* "
           "variable of it is set (the MPI library's default is used instead)")


def test_a_launch_without_a_job_size_sets_nothing_and_runs(intel):
    """A singleton (no launcher: no PMI_SIZE) cannot tell its size from the launcher: nothing is set, one warning
    line, the program runs."""
    lib, bench, env, work = intel
    p = subprocess.run([str(bench), "--calls=allreduce", "--sizes=128", "--nrep=2", "--no-barrier-rows",
                        f"--output={work / 'single.txt'}"], env={**env, "PGMPITUNE_NATIVE_IMPI": str(work / "native.impi"),
                                                               "I_MPI_DEBUG": "6"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-1500:]
    assert [line for line in p.stderr.splitlines() if line.startswith("pgmpitune: warning:")] == [
        f"pgmpitune: warning: {work / 'native.impi'}: {NO_SIZE}"], p.stderr
    assert "I_MPI_ADJUST" not in p.stdout


@pytest.mark.slurm
def test_srun_pmix_gives_the_size_of_its_step_srun_without_pmi_gives_none(intel, default2, preset2, slurm_env):
    """srun --mpi=pmix sets neither PMI_SIZE nor PMIX_SIZE (measured): the size is SLURM_STEP_NUM_TASKS, taken
    because PMIX_NAMESPACE is Slurm's own for this very step, so the 2-rank file runs its preset.  srun
    --mpi=none starts two singletons of size 1 with the same SLURM_STEP_NUM_TASKS=2 and no PMIx namespace:
    nothing is set, one warning per singleton (a size read from the step alone would have set the preset)."""
    path = str(intel[3] / "native.impi")
    conf = {"SLURM_CONF": slurm_env["SLURM_CONF"]}
    pmix, out = run(intel, 2, "pmix", ["srun", "--mpi=pmix"], PGMPITUNE_NATIVE_IMPI=path, I_MPI_DEBUG="6", **conf)
    assert pmix == preset2 and "pgmpitune: warning" not in out, out[-1500:]
    assert "MPI startup(): I_MPI_ADJUST_ALLREDUCE=3:0-2147483647\n" in out, out[-1500:]
    lib, bench, env, work = intel
    p = subprocess.run(["srun", "-n", "2", "--mpi=none", str(bench), "--calls=allreduce", "--sizes=128", "--nrep=2",
                        "--no-barrier-rows", "--output=/dev/null"],
                       env={**env, **conf, "PGMPITUNE_NATIVE_IMPI": path, "I_MPI_DEBUG": "6"},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-1500:]
    assert [line for line in p.stderr.splitlines() if line.startswith("pgmpitune: warning:")] == [
        f"pgmpitune: warning: {path}: {NO_SIZE}"] * 2, p.stderr
    assert "I_MPI_ADJUST" not in p.stdout


FORTRAN = """program native_env_fortran
  integer ierr, rank
  ! no include 'mpif.h': the registry's Intel MPI ships none; 1140850688 is its MPI_COMM_WORLD handle
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(1140850688, rank, ierr)
  if (rank == 0) print '(a)', 'fortran: init ok'
  call MPI_FINALIZE(ierr)
end program native_env_fortran
"""


def test_a_fortran_program_gets_the_file_through_the_preloaded_library(intel, tmp_path):
    """Intel MPI's Fortran MPI_INIT (libmpifort's mpi_init_) calls the C MPI_Init, not PMPI_Init, so the library
    the module preloads sees a Fortran program's start and sets the file's variables before Intel MPI reads them.
    The control without the preload shows the variable does not come from elsewhere."""
    import shutil
    lib, bench, env, work = intel
    gfortran = shutil.which("gfortran")
    if not gfortran:
        pytest.fail("no gfortran (deploy/install-packages.sh installs it)")
    (tmp_path / "f.f90").write_text(FORTRAN)
    libdir = lib.prefix / "lib"
    subprocess.run([gfortran, "f.f90", "-o", "f", f"-L{libdir}", "-lmpifort", "-lmpi", f"-Wl,-rpath,{libdir}"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    so = _root.mpi_install("intelmpi") / "lib" / "libpgmpitune.so"

    def launch(preload: str) -> str:
        p = subprocess.run([str(lib.mpirun), "-n", "2", "-genv", "LD_PRELOAD", preload, str(tmp_path / "f")],
                           env={**env, "PGMPITUNE_NATIVE_IMPI": str(work / "native.impi"), "I_MPI_DEBUG": "6"},
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "fortran: init ok" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
        return p.stdout + p.stderr
    assert "MPI startup(): I_MPI_ADJUST_ALLREDUCE=3:0-2147483647\n" in launch(str(so))
    assert "I_MPI_ADJUST" not in launch("")
