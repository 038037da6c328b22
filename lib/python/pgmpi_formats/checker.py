"""Finding pgmpitune-check, the C library's own profile reader (lib/tools/pgmpitune-check.c)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

CHECKER_NAME = "pgmpitune-check"
REPO_ROOT = Path(__file__).resolve().parents[3]     # a checkout: lib/python/pgmpi_formats/ -> top


def find_checker(mpi: str | None = None, root: Path | None = None) -> Path | None:
    """$PGMPITUNE_CHECK, then <root>/build/install/<mpi>/bin (both MPIs when mpi is None), then PATH."""
    env = os.environ.get("PGMPITUNE_CHECK")
    if env:
        return Path(env)
    root = root or REPO_ROOT
    for m in ([mpi] if mpi else ["openmpi", "mpich"]):
        c = root / "build" / "install" / m / "bin" / CHECKER_NAME
        if c.is_file() and os.access(c, os.X_OK):
            return c
    w = shutil.which(CHECKER_NAME)
    return Path(w) if w else None


def mpi_flavor(name: str) -> str | None:
    """The one mapping of an MPI library's name to the build flavour of lib/ (build/install/<flavour>):
    "Open MPI", "openmpi", "open-mpi", "ompi" -> openmpi; "MPICH", "mpich-4.0.2" -> mpich; others None."""
    n = "".join(ch for ch in name.lower() if ch.isalnum())
    if n.startswith("openmpi") or n == "ompi":
        return "openmpi"
    if n.startswith("mpich"):
        return "mpich"
    return None
