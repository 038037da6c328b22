"""libpgmpitune's plain Lmod module (spack-repo/modules/pgmpitunelib.lua.in), rendered over the build
tree's install as a site without Spack or EasyBuild installs it. The one renderer of the template for
the tests and the benchmark scripts that `module load pgmpitunelib`."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.1.0"
MPI_VERSIONS = {"openmpi": "4.1.4", "mpich": "4.0.2", "intelmpi": "2021.13"}


def render(prefix: Path | str, mpi: str, mpi_version: str | None = None, preload: bool = False) -> str:
    """The template's text with its placeholders filled."""
    text = (ROOT / "spack-repo/modules/pgmpitunelib.lua.in").read_text()
    for key, val in {"@PREFIX@": str(prefix), "@VERSION@": VERSION, "@MPI_NAME@": mpi,
                     "@MPI_VERSION@": mpi_version or MPI_VERSIONS[mpi], "@PRELOAD@": "true" if preload else "false"}.items():
        text = text.replace(key, val)
    return text


def install_prefix(prefix: Path, mpi: str) -> Path:
    """A pgmpitunelib prefix over build/install/<mpi>: its bin, lib and include, and the site file."""
    (prefix / "share" / "pgmpitunelib").mkdir(parents=True)
    (prefix / "share" / "pgmpitunelib" / "pgmpitune-site.lua").write_text(
        (ROOT / "spack-repo/packages/pgmpitunelib/pgmpitune-site.lua").read_text())
    for d in ("bin", "lib", "include"):
        (prefix / d).symlink_to(ROOT / "build" / "install" / mpi / d)
    return prefix


def module_tree(top: Path, mpi: str, filename: str = f"{VERSION}.lua") -> Path:
    """top/prefix and top/mods/pgmpitunelib/<filename>; returns the module tree (top/mods)."""
    prefix = install_prefix(top / "prefix", mpi)
    (top / "mods" / "pgmpitunelib").mkdir(parents=True, exist_ok=True)
    (top / "mods" / "pgmpitunelib" / filename).write_text(render(prefix, mpi))
    return top / "mods"
