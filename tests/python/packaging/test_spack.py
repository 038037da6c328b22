"""Spack: `spack install pgmpitunelib ^openmpi` and `^mpich` against Debian's MPIs (externals behind
shim prefixes), build-time tests, `spack test run`, and `spack module lmod refresh` producing the MPI
hierarchy whose modules compute PGMPITUNE_PROFILE_DIR at load time.

Spack is in none of the package registries here, so this runs only when a `spack` command is on PATH
(see deploy/site/INSTALL.md for how the development machine got one); otherwise it says so and skips --
the one skip the suite allows.  Set PGMPI_SPACK_CACHE to reuse Spack's user cache between runs."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from packaging_helpers import HERE, clean_env, lmod_shell, write_published_profile

pytestmark = [pytest.mark.spack, pytest.mark.lmod, pytest.mark.mpi]


@pytest.fixture(scope="module")
def spack_run(tmp_path_factory):
    if not shutil.which("spack"):
        pytest.skip("no `spack` command on PATH: the Spack packaging test did not run")
    work = tmp_path_factory.mktemp("spack")
    env = dict(os.environ)
    if env.get("PGMPI_SPACK_CACHE"):
        env["SPACK_USER_CACHE_PATH"] = env["PGMPI_SPACK_CACHE"]
    else:
        env.pop("SPACK_USER_CACHE_PATH", None)
    res = subprocess.run([str(HERE / "spack_scenario.sh"), str(work)], env=env,
                         capture_output=True, text=True, timeout=3600)
    log = res.stdout + res.stderr
    (work / "scenario.log").write_text(log)
    assert res.returncode == 0, f"spack scenario failed (log {work}/scenario.log):\n{log[-6000:]}"
    return work, log


def test_spack_builds_each_mpi_against_its_own_library(spack_run):
    work, log = spack_run
    libs = re.findall(r"^\$ ldd (\S+) \| grep.*\n((?:\s+lib\S+ => .*\n)+)", log, re.M)
    assert len(libs) == 2, log[-4000:]
    by_mpi = {("mpich" if "mpich" in path.split("/pgmpitunelib-")[0] or "mpich" in text else "openmpi"): text
              for path, text in libs}
    assert any("libmpich.so" in t and "libmpi.so.40" not in t for t in by_mpi.values()), libs
    assert any("libmpi.so.40" in t and "libmpich.so" not in t for t in by_mpi.values()), libs
    # `spack test run` (stand-alone tests: pgmpitune-check --list, an MPI program following a profile)
    assert log.count("1 passed of 1 spec") == 2, log[-4000:]


def test_spack_lmod_hierarchy_loads_and_swaps(spack_run, tmp_path):
    work, _ = spack_run
    cores = sorted(Path(work, "modules").glob("*/Core"))
    assert cores, f"no Core level under {work}/modules"
    core = cores[0]
    mods = sorted(str(p.relative_to(core.parent)) for p in core.parent.rglob("*.lua"))
    # the MPI level: <arch>/openmpi/4.1.4-<hash>/Core/pgmpitunelib/main-openmpi-4.1.4.lua
    assert any(re.search(r"^openmpi/4\.1\.4[^/]*/.*pgmpitunelib/main-openmpi-4\.1\.4\.lua$", m) for m in mods), mods
    assert any(re.search(r"^mpich/4\.0\.2[^/]*/.*pgmpitunelib/main-mpich-4\.0\.2\.lua$", m) for m in mods), mods
    profiles = tmp_path / "profiles"
    write_published_profile(profiles, "spackmachine", "openmpi-4.1.4")
    res = lmod_shell("""
module load openmpi pgmpitunelib
echo "A=$PGMPITUNE_PROFILE_DIR MPI=$PGMPITUNE_MPI"
module swap openmpi mpich 2>&1
echo "B=$PGMPITUNE_PROFILE_DIR MPI=$PGMPITUNE_MPI"
module -t list 2>&1
""", env=clean_env(MODULEPATH=str(core), PGMPI_SITE_PROFILE_ROOT=str(profiles),
                   PGMPI_SITE_MACHINE="spackmachine", PGMPI_SITE_CONFIG="/nonexistent"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"A={profiles}/spackmachine/openmpi-4.1.4/current MPI=openmpi-4.1.4" in out
    assert f"B={profiles}/spackmachine/mpich-4.0.2/current MPI=mpich-4.0.2" in out
    assert "pgmpitunelib/main-mpich-4.0.2" in out and "pgmpitunelib/main-openmpi" not in out.split("B=")[1]
