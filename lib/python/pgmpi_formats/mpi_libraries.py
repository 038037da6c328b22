"""deploy/mpi-libraries.tsv: the MPI libraries this site builds for, tests on and launches (one reader).

One row per library id: id, family (openmpi | mpich | intelmpi), version, source (debian:<packages> or
pypi:<requirements>), prefix (the library's own prefix: bin/mpicc, bin/mpirun, lib/). `environment()` is
what selects a library for a child process; deploy/mpi-env.sh and the modules of deploy/modules.sh set the
same variables (tests/python/packaging/test_mpi_libraries.py compares them).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]     # a checkout: lib/python/pgmpi_formats/ -> top
DEFAULT_TABLE = REPO_ROOT / "deploy" / "mpi-libraries.tsv"
COLUMNS = ("id", "family", "version", "source", "prefix")
FAMILIES = ("openmpi", "mpich", "intelmpi")
SOURCES = ("debian", "pypi")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


class MpiTableError(ValueError):
    """A row of the table that cannot be used; the message names file:line, the field and the valid choices."""


@dataclass(frozen=True)
class MpiLibrary:
    id: str
    family: str
    version: str
    source: str
    prefix: Path

    @property
    def source_kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def mpicc(self) -> Path:
        return self.prefix / "bin" / "mpicc"

    @property
    def mpirun(self) -> Path:
        return self.prefix / "bin" / "mpirun"

    @property
    def installed(self) -> bool:
        return os.access(self.mpicc, os.X_OK)

    @property
    def module(self) -> str:
        """The module name of the library itself (deploy/modules.sh): <id>/<version>."""
        return f"{self.id}/{self.version}"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (default os.environ) with this library selected: its bin/ first on PATH, its lib/ first
        on LD_LIBRARY_PATH (registry installs), Intel MPI's I_MPI_ROOT and bundled libfabric, MPICC/MPIRUN."""
        env = dict(os.environ if base is None else base)
        bins, libs = [self.prefix / "bin"], []
        if self.source_kind == "pypi":
            libs.append(self.prefix / "lib")
        if self.family == "intelmpi":
            bins.append(self.prefix / "bin" / "libfabric")
            libs.append(self.prefix / "lib" / "libfabric")
            env["I_MPI_ROOT"] = str(self.prefix)
            env["FI_PROVIDER_PATH"] = str(self.prefix / "lib" / "libfabric" / "prov")

        def prepend(var: str, dirs: list[Path]) -> None:
            old = env.get(var)
            env[var] = ":".join([str(d) for d in dirs] + ([old] if old else []))

        prepend("PATH", bins)
        if libs:
            prepend("LD_LIBRARY_PATH", libs)
        env["MPI_ROOT"] = str(self.prefix)
        env["MPICC"] = str(self.mpicc)
        env["MPICXX"] = str(self.prefix / "bin" / "mpicxx")
        f90 = self.prefix / "bin" / "mpif90"
        if f90.exists():
            env["MPIF90"] = str(f90)
        else:
            env.pop("MPIF90", None)
        env["MPIRUN"] = str(self.mpirun)
        env.update(PGMPI_MPI_ID=self.id, PGMPI_MPI_FAMILY=self.family, PGMPI_MPI_VERSION=self.version)
        return env


def read_mpi_libraries(path: Path | str | None = None) -> list[MpiLibrary]:
    """The rows of the table in file order. `path` defaults to $PGMPI_MPI_LIBRARIES, then the checkout's."""
    path = Path(path or os.environ.get("PGMPI_MPI_LIBRARIES") or DEFAULT_TABLE)
    libs: list[MpiLibrary] = []
    header_seen = False
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        where = f"{path}:{lineno}"
        if not header_seen:
            if tuple(fields) != COLUMNS:
                raise MpiTableError(f"{where}: header must be the tab-separated columns {', '.join(COLUMNS)}")
            header_seen = True
            continue
        if len(fields) != len(COLUMNS):
            raise MpiTableError(f"{where}: {len(fields)} tab-separated fields, expected {len(COLUMNS)} "
                                f"({', '.join(COLUMNS)})")
        lid, family, version, source, prefix = fields
        if not _ID.match(lid):
            raise MpiTableError(f"{where}: id '{lid}' must be lower-case letters, digits and _")
        if any(lib.id == lid for lib in libs):
            raise MpiTableError(f"{where}: id '{lid}' appears twice")
        if family not in FAMILIES:
            raise MpiTableError(f"{where}: family '{family}' unknown (valid: {', '.join(FAMILIES)})")
        if not version or not all(p.isdigit() for p in version.split(".")):
            raise MpiTableError(f"{where}: version '{version}' is not dotted numbers")
        kind, _, what = source.partition(":")
        if kind not in SOURCES or not what:
            raise MpiTableError(f"{where}: source '{source}' unknown (valid: debian:<packages>, pypi:<requirements>)")
        if not prefix.startswith("/"):
            raise MpiTableError(f"{where}: prefix '{prefix}' is not an absolute path")
        libs.append(MpiLibrary(lid, family, version, source, Path(prefix)))
    if not header_seen:
        raise MpiTableError(f"{path}: no header line ({', '.join(COLUMNS)})")
    return libs


def mpi_library(lid: str, path: Path | str | None = None) -> MpiLibrary:
    """The row of one id; an unknown id is refused with the valid ones."""
    libs = read_mpi_libraries(path)
    for lib in libs:
        if lib.id == lid:
            return lib
    raise MpiTableError(f"unknown MPI id '{lid}' (valid: {', '.join(lib.id for lib in libs)})")
