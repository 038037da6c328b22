"""Fixtures of the pgmpi-bench tests: the installed binary of each MPI build and a runner."""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _mpirun_cmd(mpi: str, np: int) -> list[str]:
    # same launch line as tests/python/conftest.py's mpirun_cmd (kept in one place there)
    import importlib.util
    spec = importlib.util.spec_from_file_location("pgmpi_root_conftest_bench", ROOT / "tests/python/conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.mpirun_cmd(mpi, np)


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str


class Bench:
    """Runs build/install/<mpi>/bin/pgmpi-bench under that MPI's mpirun (np=0: without mpirun)."""

    def __init__(self, mpi: str, prefix: Path):
        self.mpi = mpi
        self.prefix = prefix
        self.exe = prefix / "bin" / "pgmpi-bench"
        if not self.exe.exists():
            pytest.fail(f"{self.exe} missing: run `deploy/build-lib.sh {mpi}`")

    def env(self, extra: dict | None = None) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "PGMPI", "OMPI_COMM_WORLD", "PMI_", "PMIX_"))}
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
        env.pop("LOADEDMODULES", None)
        env.update(extra or {})
        return env

    def run(self, args: list[str], np: int = 2, env: dict | None = None, timeout: float = 180,
            input: str | None = None) -> Run:
        cmd = (_mpirun_cmd(self.mpi, np) if np else []) + [str(self.exe)] + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.env(env), timeout=timeout, input=input)
        return Run(p.returncode, p.stdout, p.stderr)

    def mpirun(self, np: int = 2) -> list[str]:
        """The launch line of this MPI (for programs that start mpirun themselves)."""
        return _mpirun_cmd(self.mpi, np)

    def launch(self, program: list[str], np: int = 2, timeout: float = 180) -> Run:
        """Another MPI program under the same mpirun line and environment as pgmpi-bench."""
        p = subprocess.run(_mpirun_cmd(self.mpi, np) + [str(a) for a in program], capture_output=True, text=True,
                           env=self.env(), timeout=timeout)
        return Run(p.returncode, p.stdout, p.stderr)

    def algorithms(self, one_node: bool = True) -> dict[str, list[str]]:
        """MPI name -> algorithm names, from pgmpitune-check --list --json (the library's tables); on one node
        without the node-aware mock-ups, which pgmpi-bench does not measure there."""
        out = subprocess.run([str(self.prefix / "bin" / "pgmpitune-check"), "--list", "--json"],
                             capture_output=True, text=True, check=True, env=self.env()).stdout
        data = json.loads(out)
        return {c["mpi_name"]: [a["name"] for a in c["algorithms"] if not (one_node and a["node_aware"])]
                for c in data["collectives"]}


@pytest.fixture(scope="session")
def bench(mpi, mpi_prefix) -> Bench:
    return Bench(mpi, mpi_prefix)
