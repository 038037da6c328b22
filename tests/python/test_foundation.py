"""The front door itself: the CLI installs and answers, the layout holds."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_pgmpi_command_answers_help():
    out = subprocess.run([str(Path(sys.executable).parent / "pgmpi"), "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "pgmpi-site" in out


@pytest.mark.parametrize("folder", ["spack-repo", "lib", "scheduler", "service", "migrations",
                                    "templates", "tests", "deploy", "docs"])
def test_top_level_layout(folder):
    assert (ROOT / folder).is_dir()


def test_collective_table_is_shared_with_the_library():
    # One table for library, benchmark, agent and service: the Python side reads the C file (and the wheel
    # ships a copy of it as pgmpi_formats' package data).
    link = ROOT / "lib/python/pgmpi_formats/collectives.def"
    assert link.resolve() == (ROOT / "lib/src/core/collectives.def").resolve()


@pytest.mark.postgres
def test_postgres_is_real(postgres_url):
    import sqlalchemy as sa
    with sa.create_engine(postgres_url).connect() as conn:
        assert conn.execute(sa.text("select version()")).scalar().startswith("PostgreSQL")


@pytest.mark.slurm
def test_slurm_runs_a_job(slurm_env, tmp_path):
    out = tmp_path / "job.out"
    subprocess.run(["sbatch", "--wait", "-o", str(out), "--wrap", "echo hello-from-slurm"],
                   env=slurm_env, check=True, capture_output=True, timeout=120)
    assert "hello-from-slurm" in out.read_text()
