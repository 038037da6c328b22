"""Helpers of the packaging tests: shim prefixes for Debian's two MPIs, hand-written
external MPI modules, a source tarball of the library, Lmod shells."""
from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LMOD_INIT = "/usr/share/lmod/lmod/init/bash"
VERSION = "0.1.0"
# name, version, EasyBuild's software name
MPIS = {"openmpi": ("4.1.4", "OpenMPI"), "mpich": ("4.0.2", "MPICH")}
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def make_shim(dest: Path, mpi: str) -> Path:
    subprocess.run([str(HERE / "mkshim.sh"), str(dest), mpi], check=True)
    return dest


def write_external_module(modroot: Path, mpi: str, shim: Path) -> Path:
    """The site's own module of a system MPI, as an admin writes it by hand."""
    version = MPIS[mpi][0]
    path = modroot / mpi / f"{version}.lua"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""-- {mpi} {version} from Debian, exposed through a shim prefix
family("mpi")
prepend_path("PATH", "{shim}/bin")
setenv("MPI_ROOT", "{shim}")
setenv("MPICC", "{shim}/bin/mpicc")
setenv("MPICXX", "{shim}/bin/mpicxx")
setenv("MPIF90", "{shim}/bin/mpif90")
setenv("MPIFC", "{shim}/bin/mpif90")
setenv("MPIRUN", "{shim}/bin/mpirun")
""")
    return path


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
