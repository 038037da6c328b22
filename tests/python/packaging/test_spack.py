"""Spack: `spack install pgmpitunelib ^<mpi>` (from a clone of this checkout's HEAD without local branches)
against MPI libraries of deploy/mpi-libraries.tsv (externals, one prefix per MPI; packaging_helpers.packaging_mpis(): a representative subset in `make test`, tests/README.md),
build-time tests, `spack test run`, and `spack module lmod refresh` producing the MPI hierarchy whose
modules compute PGMPITUNE_PROFILE_DIR at load time.

Spack is in none of the package registries here: the test uses the vendored snapshot (spack_setup.sh
unpacks it into build/spack; clingo comes with the test extras of .venv) and FAILS when the snapshot is missing. Set
PGMPI_SPACK_CACHE to reuse Spack's user cache between runs."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from packaging_helpers import (DEFAULT_SPACK_MPIS, HERE, clean_env, lmod_shell, packaging_mpis, profile_label,
                               write_published_profile)

pytestmark = [pytest.mark.spack, pytest.mark.lmod, pytest.mark.mpi]
LIBS = packaging_mpis(DEFAULT_SPACK_MPIS)
# Spack's package of each family
SPACK_NAMES = {"openmpi": "openmpi", "mpich": "mpich", "intelmpi": "intel-oneapi-mpi"}


@pytest.fixture(scope="module")
def spack_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("spack")
    env = dict(os.environ)
    if env.get("PGMPI_SPACK_CACHE"):
        env["SPACK_USER_CACHE_PATH"] = env["PGMPI_SPACK_CACHE"]
    else:
        env.pop("SPACK_USER_CACHE_PATH", None)
    res = subprocess.run([str(HERE / "spack_scenario.sh"), str(work), *[lib.id for lib in LIBS]], env=env,
                         capture_output=True, text=True, timeout=3600)
    log = res.stdout + res.stderr
    (work / "scenario.log").write_text(log)
    if res.returncode == 3:
        pytest.fail(f"the vendored Spack snapshot is missing: {log[-2000:]}")
    assert res.returncode == 0, f"spack scenario failed (log {work}/scenario.log):\n{log[-6000:]}"
    print("\n".join(line for line in log.splitlines() if line.startswith("TIME ")))
    return work, log


def test_spack_builds_each_mpi_against_its_own_library(spack_run):
    work, log = spack_run
    # from a checkout without any local branch (a CI checkout's detached HEAD): the recipe builds its HEAD
    # commit; until 2026-11-26 it cloned the local branch "main" and the install failed there
    assert re.search(r"^local branches: 0$", log, re.M) and re.search(r"^HEAD [0-9a-f]{40}$", log, re.M), log[:2000]
    libs = re.findall(r"^\$ ldd (\S+) \| grep.*# pgmpitunelib \^(\S+)@(\S+)\n((?:\s+lib\S+ => .*\n)+)", log, re.M)
    assert len(libs) == len(LIBS), log[-4000:]
    by_spec = {(name, version): text for _, name, version, text in libs}
    for lib in LIBS:
        text = by_spec[(SPACK_NAMES[lib.family], lib.version)]
        if lib.id == "mpich":
            assert "libmpich.so.12" in text and "libmpi.so" not in text, text
        else:   # libmpi.so.40 (Open MPI) or .12 (MPICH 4.1+, Intel MPI) from the library's own prefix
            # Intel MPI's external is a shim <work>/shims/intelmpi/mpi/<x.y> -> its prefix (spack_scenario.sh)
            where = re.escape(str(lib.prefix)) if lib.family != "intelmpi" else rf"\S*/shims/{lib.id}/mpi/[0-9.]+"
            assert re.search(rf"libmpi\.so\.(40|12) => {where}/", text) or \
                (lib.source_kind == "debian" and "libmpi.so.40 => /lib" in text), (lib.id, text)
    # the recipe's build-time tests (check(): the core CTest suite) under the first MPI (spack_scenario.sh)
    assert re.search(r"^100% tests passed, 0 tests failed out of [1-9]", log, re.M), log[-4000:]
    # `spack test run` (stand-alone tests: pgmpitune-check --list, an MPI program following a profile)
    n = len(LIBS)
    assert re.search(rf"{n} passed of {n} specs?", log), log[-4000:]


def test_spack_lmod_hierarchy_loads_and_swaps(spack_run, tmp_path):
    work, _ = spack_run
    cores = sorted(Path(work, "modules").glob("*/Core"))
    assert cores, f"no Core level under {work}/modules"
    core = cores[0]
    mods = sorted(str(p.relative_to(core.parent)) for p in core.parent.rglob("*.lua"))
    # the MPI level: <arch>/openmpi/5.0.11-<hash>/Core/pgmpitunelib/main-openmpi-5.0.11.lua
    for lib in LIBS:
        name, v = SPACK_NAMES[lib.family], re.escape(lib.version)
        assert any(re.search(rf"^{name}/{v}[^/]*/.*pgmpitunelib/main-{name}-{v}\.lua$", m) for m in mods), (lib.id, mods)
    a, b = LIBS[0], LIBS[-1]
    na, nb = SPACK_NAMES[a.family], SPACK_NAMES[b.family]
    profiles = tmp_path / "profiles"
    write_published_profile(profiles, "spackmachine", profile_label(a))
    res = lmod_shell(f"""
module load {na}/{a.version} pgmpitunelib
echo "A=$PGMPITUNE_PROFILE_DIR MPI=$PGMPITUNE_MPI"
module swap {na} {nb}/{b.version} 2>&1
echo "B=$PGMPITUNE_PROFILE_DIR MPI=$PGMPITUNE_MPI"
module -t list 2>&1
""", env=clean_env(MODULEPATH=str(core), PGMPI_SITE_PROFILE_ROOT=str(profiles),
                   PGMPI_SITE_MACHINE="spackmachine", PGMPI_SITE_CONFIG="/nonexistent"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"A={profiles}/spackmachine/{profile_label(a)}/current MPI={profile_label(a)}" in out
    assert f"B={profiles}/spackmachine/{profile_label(b)}/current MPI={profile_label(b)}" in out
    assert f"pgmpitunelib/main-{nb}-{b.version}" in out and f"pgmpitunelib/main-{na}" not in out.split("B=")[1]
