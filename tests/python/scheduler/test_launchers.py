"""The registry of MPI families (scheduler/launchers/): every library of deploy/mpi-libraries.tsv has a
family, families are recognised from their MPI_Get_library_version text, a new family file registers
itself, and the campaign file accepts exactly the registered libraries."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pgmpi_formats import mpi_libraries
from scheduler import launchers
from scheduler.campaign import CampaignError, load_campaign

ROOT = Path(__file__).resolve().parents[3]

# First lines of MPI_Get_library_version as the five libraries print them here (measured 2026-11-25)
STRINGS = {
    "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022": ("openmpi", "4.1.4"),
    "Open MPI v5.0.11, package: Open MPI user@localhost Distribution, ident: 5.0.11, repo rev: v5.0.11rc1, "
    "Sep 16, 2026": ("openmpi", "5.0.11"),
    "MPICH Version:      4.0.2\nMPICH Release date: Thu May 26 11:29:42 CDT 2022": ("mpich", "4.0.2"),
    "MPICH Version:      5.0.2\nMPICH Release date: Fri Sep 25 20:45:26 UTC 2026": ("mpich", "5.0.2"),
    "Intel(R) MPI Library 2021.13 for Linux* OS\n": ("intelmpi", "2021.13"),
}


def test_every_library_of_the_table_has_a_family():
    libs = launchers.libraries()
    assert set(libs) >= {"openmpi", "mpich", "openmpi5", "mpich5", "intelmpi"}
    assert {lib.family.name for lib in libs.values()} == {"openmpi", "mpich", "intelmpi"}
    assert libs["openmpi5"].family is libs["openmpi"].family
    assert libs["intelmpi"].mpirun == f"{libs['intelmpi'].prefix}/bin/mpirun"


@pytest.mark.parametrize("text", sorted(STRINGS))
def test_identify_the_library_string(text):
    assert launchers.identify(text) == STRINGS[text]


def test_launch_flags_and_environment_per_family():
    fam = launchers.family
    assert fam("openmpi").pass_env(["A", "B"]) == ["-x", "A", "-x", "B"]
    assert fam("mpich").pass_env(["A", "B"]) == ["-genvlist", "A,B"]
    assert fam("intelmpi").pass_env(["A", "B"]) == ["-genvlist", "A,B"]
    assert fam("openmpi").mpirun_args(2, 2, True) == ["--map-by", "ppr:2:node"]
    assert fam("openmpi").mpirun_args(1, 2, False) == ["--oversubscribe"]
    assert fam("intelmpi").mpirun_args(2, 3, True) == ["-ppn", "3"]
    assert {fam(f).srun_plugin("x") for f in ("openmpi", "mpich", "intelmpi")} == {"pmix", "pmi2"}
    assert fam("openmpi").job_env(1, 2, False, True, 2)["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in fam("openmpi").job_env(1, 2, False, False, 2)
    # without a module: Intel MPI's hydra finds its proxies on PATH, so its bin/ first, and I_MPI_ROOT
    lines = launchers.library("intelmpi").setup_lines()
    prefix = launchers.library("intelmpi").prefix
    assert f"export PATH={prefix}/bin:{prefix}/bin/libfabric${{PATH:+:$PATH}}" in lines
    assert f"export I_MPI_ROOT={prefix}" in lines


def test_what_a_family_does_with_its_own_algorithms_is_declared_once():
    """Intel MPI's two properties, each declared in one registry instead of switches on its name in the planner,
    the validation job and the service: it reads its algorithm choice only at MPI_Init (one mpirun per preset),
    and its file cannot leave a size to the default (a collective where the default won anywhere is left out)."""
    from pgmpi_formats import native_file
    from pgmpi_formats.ompi_rules import Decision
    assert {n for n, f in launchers.FAMILIES.items() if f.native_at_init} == {"intelmpi"}
    assert {lib for lib, f in native_file.FORMATS.items() if f.gapless} == {"intelmpi"}
    assert {lib for lib in native_file.FORMATS if native_file.gap_refuses_collective(lib)} == {"intelmpi"}
    decs = [Decision("allreduce", 2, 8, "native:3"), Decision("allreduce", 2, 4096, "default")]
    assert list(native_file.left_to_library("intelmpi", decs)) == ["allreduce"]
    assert native_file.left_to_library("openmpi", decs) == native_file.left_to_library("mpich", decs) == {}


def _campaign(tmp_path, mpi, **module):
    f = tmp_path / "c.yaml"
    mod = ", ".join(f"{k}: {v}" for k, v in {"mpi": mpi, **module}.items())
    f.write_text(f"name: c\nmachine: m\nbackend: local\nmodules:\n  - {{{mod}}}\n"
                 "layouts: [{nodes: 1, ppn: 2}]\ncollectives: {allreduce: {}}\n")
    return f


@pytest.mark.parametrize("mpi", ["openmpi", "mpich", "openmpi5", "mpich5", "intelmpi"])
def test_campaign_takes_every_library(tmp_path, mpi):
    c = load_campaign(_campaign(tmp_path, mpi))
    assert c.modules[0].family is launchers.library(mpi).family
    assert c.bench_for(c.modules[0]).parts[-3] == mpi          # build/install/<id>/bin/pgmpi-bench


def test_campaign_refuses_an_unknown_library_naming_the_valid_ones(tmp_path):
    with pytest.raises(CampaignError) as e:
        load_campaign(_campaign(tmp_path, "mvapich"))
    msg = str(e.value)
    assert "c.yaml:5: modules[0].mpi" in msg and "'mvapich'" in msg
    assert all(i in msg for i in ("openmpi5", "mpich5", "intelmpi"))


def test_srun_needs_the_slurm_backend(tmp_path):
    with pytest.raises(CampaignError, match="launch: srun needs backend: slurm"):
        load_campaign(_campaign(tmp_path, "mpich5", launch="srun"))


def test_srun_command_takes_the_family_plugin(tmp_path):
    f = _campaign(tmp_path, "openmpi5", launch="srun")
    f.write_text(f.read_text().replace("backend: local", "backend: slurm"))
    assert launchers.command(load_campaign(f).modules[0], 2, 2, True) == "srun -n 4 --ntasks-per-node=2 --mpi=pmix"
    f.write_text(f.read_text().replace("openmpi5", "intelmpi"))
    assert launchers.command(load_campaign(f).modules[0], 1, 2, True) == "srun -n 2 --ntasks-per-node=2 --mpi=pmi2"


def test_a_native_file_needs_a_family_with_native_files(tmp_path):
    with pytest.raises(CampaignError, match="Intel MPI has no native decision file"):
        load_campaign(_campaign(tmp_path, "intelmpi", native_file="/x/native.rules"))


def test_job_script_of_a_registry_library_without_module(tmp_path):
    """No module: the job sets the library's environment from its prefix and calls its own mpirun."""
    from scheduler.backends import render_script
    from scheduler.planner import plan
    c = load_campaign(_campaign(tmp_path, "intelmpi"))
    job = plan(c)[0]
    text = render_script(job, tmp_path, "j", Path("/b/pgmpi-bench"), False)
    prefix = launchers.library("intelmpi").prefix
    assert f"export PATH={prefix}/bin" in text and f"export I_MPI_ROOT={prefix}" in text
    assert f"{prefix}/bin/mpirun -np 2" in text


def test_a_new_family_file_registers_itself(tmp_path):
    """CONTRIBUTING's recipe "An MPI family": one file in scheduler/launchers/ and a row of the table."""
    shutil.copytree(ROOT / "scheduler", tmp_path / "scheduler",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "scheduler" / "launchers" / "mvapich.py").write_text(
        "import re\nfrom . import Family, register\n\n\n@register\nclass MVAPICH(Family):\n"
        "    name = 'mvapich'\n    title = 'MVAPICH'\n    precedence = 1\n"
        "    library_pattern = re.compile(r'MVAPICH2 Version:\\s*(\\S+)')\n\n"
        "    def pass_env(self, names):\n        return ['-genvlist', ','.join(names)]\n")
    table = tmp_path / "libs.tsv"
    table.write_text(mpi_libraries.DEFAULT_TABLE.read_text() + "mvapich\tmvapich\t2.3.7\tpypi:mvapich\t/opt/mvapich\n")
    code = ("from scheduler import launchers as L; lib = L.library('mvapich'); "
            "print(lib.family.title, L.identify('MVAPICH2 Version: 2.3.7'), lib.mpirun)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PGMPI_MPI_LIBRARIES": str(table), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "MVAPICH ('mvapich', '2.3.7') /opt/mvapich/bin/mpirun"


def test_the_table_version_as_the_library_reports_it():
    """The profile path a pgmpitunelib module reads (<family>-<reported version>, deploy/modules.py) is the
    identity the service stores the library's results under (pgmpi-bench reads MPI_Get_library_version)."""
    by_version = {v: text for text, v in STRINGS.items()}
    for lib in launchers.libraries().values():
        ident = (lib.family.name, lib.row.reported_version)
        assert launchers.identify(by_version[ident]) == ident, lib.id
    assert launchers.library("intelmpi").row.reported_version == "2021.13"
