"""Finding pgmpitune-check, the C library's own profile reader (lib/tools/pgmpitune-check.c)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

CHECKER_NAME = "pgmpitune-check"
REPO_ROOT = Path(__file__).resolve().parents[3]     # a checkout: lib/python/pgmpi_formats/ -> top
BUILD_HINT = "build it with deploy/build-lib.sh all (or deploy/build-lib.sh <id>), or set PGMPITUNE_CHECK to its path"


class CheckerError(RuntimeError):
    """pgmpitune-check is missing, cannot run, fails or prints what its readers do not take: the message says
    which and how to get a working one (the service answers 503 with it, never a 500)."""


def _ids(mpi: str | None) -> list[str]:
    """The build ids to look in: mpi alone, else every library of deploy/mpi-libraries.tsv (openmpi and mpich
    first, as the table lists them): a tree where only intelmpi was built has its checker there."""
    if mpi:
        return [mpi]
    from .mpi_libraries import MpiTableError, read_mpi_libraries
    try:
        ids = [lib.id for lib in read_mpi_libraries()]
    except (MpiTableError, OSError):
        ids = []
    return ids or ["openmpi", "mpich"]


def find_checker(mpi: str | None = None, root: Path | None = None) -> Path | None:
    """$PGMPITUNE_CHECK, then <root>/build/install/<mpi>/bin (every library of the table when mpi is None),
    then PATH."""
    env = os.environ.get("PGMPITUNE_CHECK")
    if env:
        return Path(env)
    root = root or REPO_ROOT
    for m in _ids(mpi):
        c = root / "build" / "install" / m / "bin" / CHECKER_NAME
        if c.is_file() and os.access(c, os.X_OK):
            return c
    w = shutil.which(CHECKER_NAME)
    return Path(w) if w else None


def not_found(mpi: str | None = None) -> str:
    """What find_checker looked for and did not find, and how to get it."""
    return (f"{CHECKER_NAME} not found: no executable build/install/<id>/bin/{CHECKER_NAME} for "
            f"{', '.join(_ids(mpi))}, none on PATH and PGMPITUNE_CHECK unset; {BUILD_HINT}")


def mpi_flavor(name: str) -> str | None:
    """The one mapping of an MPI library's name to the build flavour of lib/ (build/install/<flavour>):
    "Open MPI", "openmpi", "open-mpi", "ompi" -> openmpi; "MPICH", "mpich-4.0.2" -> mpich; others None."""
    n = "".join(ch for ch in name.lower() if ch.isalnum())
    if n.startswith("openmpi") or n == "ompi":
        return "openmpi"
    if n.startswith("mpich"):
        return "mpich"
    return None
