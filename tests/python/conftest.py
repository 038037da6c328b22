"""Shared pytest fixtures and the component report of `make test`.

Real components only: a test that needs PostgreSQL, Slurm, an MPI build or Lmod
gets it from the services that tests/run-all.sh started (deploy/ scripts), and
FAILS with a clear message when it is missing -- it never skips silently (Spack too: the vendored snapshot,
tests/python/packaging/test_spack.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
MPIS = ("openmpi", "mpich")

# marker -> the real component it exercises, as printed in the summary
COMPONENTS = {
    "postgres": "PostgreSQL",
    "slurm": "Slurm (munge, slurmctld, slurmd)",
    "mpi": "Open MPI + MPICH",
    "lmod": "Lmod",
    "browser": "headless Chromium",
    "easybuild": "EasyBuild + Lmod",
    "spack": "Spack",
    "cluster": "virtual multi-node Slurm cluster (deploy/cluster.sh)",
    "guest": "emulated GenuineIntel guest (deploy/intel-guest.sh, QEMU)",
}
ALLOWED_SKIP_MARKERS: set[str] = set()


def pytest_addoption(parser):
    parser.addoption("--pgmpi-report", default=None, help="write per-test components + outcome as JSON")


def pytest_configure(config):
    config._pgmpi_entries = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    markers = {m.name for m in item.iter_markers()}
    if rep.when == "call" or (rep.when == "setup" and rep.outcome != "passed"):
        result = rep.outcome
        # In CI nothing may be skipped silently: a skip is a failure unless allowed.
        if result == "skipped" and os.environ.get("CI") and not (markers & ALLOWED_SKIP_MARKERS):
            rep.outcome = "failed"
            rep.longrepr = f"skipped in CI, which is not allowed: {rep.longrepr}"
            result = "failed"
        item.config._pgmpi_entries.append({
            "nodeid": item.nodeid,
            "outcome": result,
            "components": sorted(COMPONENTS[m] for m in markers if m in COMPONENTS),
        })


def pytest_sessionfinish(session):
    path = session.config.getoption("--pgmpi-report")
    if path:
        Path(path).write_text(json.dumps(session.config._pgmpi_entries, indent=1))


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of the real PostgreSQL that deploy/postgres.sh started."""
    url = os.environ.get("PGMPI_TEST_DATABASE_URL")
    if not url:
        res = subprocess.run([str(ROOT / "deploy/postgres.sh"), "status"])
        if res.returncode != 0:
            pytest.fail("PostgreSQL is not running: start it with `deploy/postgres.sh up` (make test does)")
        url = subprocess.check_output([str(ROOT / "deploy/postgres.sh"), "url"], text=True).strip()
    return url


@pytest.fixture(scope="session")
def slurm_env() -> dict:
    """Environment for Slurm clients talking to the cluster of deploy/slurm.sh."""
    env = dict(os.environ)
    if not env.get("SLURM_CONF"):
        env["SLURM_CONF"] = str(ROOT / ".state/slurm/etc/slurm.conf")
    res = subprocess.run([str(ROOT / "deploy/slurm.sh"), "status"], env=env)
    if res.returncode != 0:
        pytest.fail("Slurm is not running: start it with `deploy/slurm.sh up` (make test does)")
    return env


def mpi_install(mpi: str) -> Path:
    prefix = BUILD / "install" / mpi
    if not (prefix / "bin").is_dir():
        pytest.fail(f"no {mpi} build of lib/ in {prefix}: run `deploy/build-lib.sh {mpi}` (make test does)")
    return prefix


@pytest.fixture(scope="session", params=MPIS)
def mpi(request) -> str:
    """Parametrises a test over both MPI libraries."""
    return request.param


@pytest.fixture(scope="session")
def mpi_prefix(mpi) -> Path:
    return mpi_install(mpi)


def mpirun_cmd(mpi: str, np: int) -> list[str]:
    """mpirun of the given MPI for np ranks on this 2-core machine."""
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


@pytest.fixture(scope="session")
def lmod_init() -> str:
    init = Path("/usr/share/lmod/lmod/init/bash")
    if not init.exists() or not shutil.which("bash"):
        pytest.fail("Lmod is not installed: deploy/install-packages.sh cluster")
    return str(init)
