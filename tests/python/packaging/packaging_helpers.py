"""Helpers of the packaging tests: the MPI libraries they run on (deploy/mpi-libraries.tsv), the site's
own MPI modules (deploy/modules.py), a source tarball of the library, Lmod shells."""
from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from pgmpi_formats.mpi_libraries import MpiLibrary, read_mpi_libraries

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LMOD_INIT = "/usr/share/lmod/lmod/init/bash"
VERSION = "0.1.0"
# EasyBuild's software name of each MPI family (EASYBUILD_EXTERNAL_MODULES_METADATA)
EB_NAMES = {"openmpi": "OpenMPI", "mpich": "MPICH", "intelmpi": "impi"}
# The libraries the Spack and EasyBuild tests install against in `make test`: a representative subset
# (tests/README.md says why); PGMPI_PACKAGING_MPIS="all" or a list of ids runs others.
DEFAULT_PACKAGING_MPIS = ("mpich", "openmpi5", "intelmpi")
# Spack's real installs cost about 40 s per library on top of a 44 s solve (clean clone, idle machine): it
# installs against the two whose recipe paths differ most (an external in /usr, another Spack package)
DEFAULT_SPACK_MPIS = ("mpich", "intelmpi")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def packaging_mpis(default: tuple[str, ...] = DEFAULT_PACKAGING_MPIS) -> list[MpiLibrary]:
    """The rows of deploy/mpi-libraries.tsv named by $PGMPI_PACKAGING_MPIS (default: `default`, a subset
    above); a library that is not installed fails the test that needs it (deploy/install-mpis.sh)."""
    want = os.environ.get("PGMPI_PACKAGING_MPIS", " ".join(default)).split()
    libs = read_mpi_libraries()
    if want != ["all"]:
        unknown = set(want) - {lib.id for lib in libs}
        if unknown:
            raise ValueError(f"PGMPI_PACKAGING_MPIS: unknown id(s) {sorted(unknown)} "
                             f"(valid: all, {', '.join(lib.id for lib in libs)})")
        libs = [lib for lib in libs if lib.id in want]
    return libs


def mpi_label(lib: MpiLibrary) -> str:
    """The MPI part of pgmpitunelib's module names and easyconfigs: <family>-<version of the table>."""
    return f"{lib.family}-{lib.version}"


def profile_label(lib: MpiLibrary) -> str:
    """The library of published profiles and of PGMPITUNE_MPI: <family>-<version the library reports>
    (Intel MPI 2021.13.1 reports 2021.13)."""
    return f"{lib.family}-{lib.reported_version}"


def write_mpi_modules(modroot: Path) -> Path:
    """The site's own modules of the MPIs (<id>/<version>, family "mpi"), as deploy/modules.py writes
    them, without pgmpitunelib under them (the tests install that with Spack or EasyBuild)."""
    subprocess.run(["python3", str(ROOT / "deploy/modules.py"), "--root", str(modroot),
                    "--builds", str(modroot / "no-builds")], check=True, capture_output=True)
    return modroot / "Core"


def write_published_profile(root: Path, machine: str, label: str, nprocs: int = 2) -> Path:
    """A profile set in the published layout <root>/<machine>/<label>/versions/1 + current."""
    target = root / machine / label
    vdir = target / "versions" / "1"
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / f"allreduce_p{nprocs}.prf").write_text(
        "# pgtune profile\n"
        "#@pgmpi profile_version 1\n"
        f"#@pgmpi machine {machine}\n"
        "MPI_Allreduce\n"
        f"{nprocs}\n"
        "1\n"
        "1 allreduce_as_reduce_bcast\n"
        "1\n"
        "0 1048576 1\n")
    cur = target / "current"
    if not cur.is_symlink():
        cur.symlink_to("versions/1")
    return cur


def make_source_tarball(dest_dir: Path) -> Path:
    """pgmpitunelib-<version>.tar.gz: the committed lib/ (git archive HEAD) plus the module site logic."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    plain = dest_dir / f"pgmpitunelib-{VERSION}.tar"
    prefix = f"pgmpitunelib-{VERSION}/"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", f"--prefix={prefix}",
                    "-o", str(plain), "HEAD", "lib"], check=True)
    site_lua = ROOT / "spack-repo/packages/pgmpitunelib/pgmpitune-site.lua"
    with tarfile.open(plain, "a") as tar:
        tar.add(site_lua, arcname=prefix + "spack-repo/packages/pgmpitunelib/pgmpitune-site.lua")
    gz = dest_dir / f"pgmpitunelib-{VERSION}.tar.gz"
    subprocess.run(["gzip", "-f", str(plain)], check=True)
    return gz


def lmod_shell(script: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run a bash script with Lmod initialised (set -e), return the completed process."""
    if not Path(LMOD_INIT).exists():
        pytest.fail("Lmod is not installed (/usr/share/lmod): deploy/install-packages.sh cluster")
    full = f"set -euo pipefail\n. {LMOD_INIT}\n{script}\n"
    return subprocess.run(["bash", "-c", full], env=env, capture_output=True, text=True, timeout=timeout)


def clean_env(**extra) -> dict:
    """The caller's environment without anything module- or library-related leaking in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PGMPITUNE_", "PGMPI_SITE_", "LMOD", "MODULE", "_LMFILES_", "LOADEDMODULES",
                                "EASYBUILD_", "SRUN_EXPORT_ENV", "OMPI_MCA_mca_base_env_list", "__LMOD"))
           and k not in ("LD_PRELOAD",)}
    env.update(ROOT_ENV)
    env.update(extra)
    return env
