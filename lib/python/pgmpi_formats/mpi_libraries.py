"""deploy/mpi-libraries.tsv: the MPI libraries this site builds for, tests on and launches (one reader).

One row per library id: id, family (openmpi | mpich | intelmpi: scheduler/launchers has one file per family
and refuses a row of a family it does not know), version, source (debian:<packages>,
pypi:<requirements>, or site: installed by the site itself at <prefix>), prefix (the library's own prefix: bin/mpicc, bin/mpirun, lib/). `environment()` is
what selects a library for a child process; deploy/mpi-env.sh and the modules of deploy/modules.sh set the
same variables (tests/python/packaging/test_mpi_libraries.py compares them).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]     # a checkout: lib/python/pgmpi_formats/ -> top
# a checkout's table; an installed copy (pip) ships it as package data next to this module (a symlink in
# the checkout, a file in the wheel), as collectives.def
_CHECKOUT_TABLE = REPO_ROOT / "deploy" / "mpi-libraries.tsv"
DEFAULT_TABLE = _CHECKOUT_TABLE if _CHECKOUT_TABLE.exists() else Path(__file__).with_name("mpi-libraries.tsv")
COLUMNS = ("id", "family", "version", "source", "prefix")
SOURCES = ("debian", "pypi", "site")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


class MpiTableError(ValueError):
    """A row of the table that cannot be used; the message names file:line, the field and the valid choices."""


MpiLibrariesError = MpiTableError      # the name scheduler/launchers uses


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
    def debian(self) -> bool:
        """Debian's packages in /usr: the commands have suffixed names (mpirun.openmpi), <prefix> is a shim."""
        return self.source_kind == "debian"

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
    def reported_version(self) -> str:
        """The version the library gives in MPI_Get_library_version: pgmpi-bench's #@mpi_version, the service's
        identity, the profile path <family>-<version>.  Intel MPI names major.minor only ("Intel(R) MPI Library
        2021.13" for 2021.13.1)."""
        return ".".join(self.version.split(".")[:2]) if self.family == "intelmpi" else self.version

    @property
    def module(self) -> str:
        """The module name of the library itself (deploy/modules.sh): <id>/<version>."""
        return f"{self.id}/{self.version}"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (default os.environ) with this library selected: its bin/ first on PATH, its lib/ first
        on LD_LIBRARY_PATH (registry installs), Intel MPI's I_MPI_ROOT and bundled libfabric, MPICC/MPIRUN."""
        env = dict(os.environ if base is None else base)
        bins, libs = [self.prefix / "bin"], []
        if not self.debian:                 # Debian's libraries are on the default search path
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


def table_path() -> Path:
    """$PGMPI_MPI_LIBRARIES, else the checkout's deploy/mpi-libraries.tsv."""
    return Path(os.environ.get("PGMPI_MPI_LIBRARIES") or DEFAULT_TABLE)


def read_mpi_libraries(path: Path | str | None = None) -> list[MpiLibrary]:
    """The rows of the table in file order (`path` defaults to table_path()). Lines starting with # are
    comments; the header line (id, family, version, source, prefix), commented or not, is skipped."""
    path = Path(path) if path else table_path()
    libs: list[MpiLibrary] = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if tuple(line.lstrip("# ").split("\t")) == COLUMNS:
            continue
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        where = f"{path}:{lineno}"
        if len(fields) != len(COLUMNS):
            raise MpiTableError(f"{where}: expected {len(COLUMNS)} tab-separated columns ({', '.join(COLUMNS)}), "
                                f"found {len(fields)}")
        lid, family, version, source, prefix = fields
        if not _ID.match(lid):
            raise MpiTableError(f"{where}: id '{lid}' must be lower-case letters, digits and _")
        if any(lib.id == lid for lib in libs):
            raise MpiTableError(f"{where}: id '{lid}' appears twice")
        if not version or not all(p.isdigit() for p in version.split(".")):
            raise MpiTableError(f"{where}: version '{version}' is not dotted numbers")
        kind, _, what = source.partition(":")
        if kind not in SOURCES or (kind != "site" and not what):
            raise MpiTableError(f"{where}: source '{source}' unknown (valid: debian:<packages>, pypi:<requirements>, site)")
        if not prefix.startswith("/"):
            raise MpiTableError(f"{where}: prefix '{prefix}' is not an absolute path")
        libs.append(MpiLibrary(lid, family, version, source, Path(prefix)))
    return libs


def read(path: Path | str | None = None) -> list[MpiLibrary]:
    """read_mpi_libraries() by the name scheduler/launchers uses. The family column is checked by the
    caller against the families it knows (scheduler/launchers registers one file per family)."""
    return read_mpi_libraries(path)


def mpi_library(lid: str, path: Path | str | None = None) -> MpiLibrary:
    """The row of one id; an unknown id is refused with the valid ones."""
    libs = read_mpi_libraries(path)
    for lib in libs:
        if lib.id == lid:
            return lib
    raise MpiTableError(f"unknown MPI id '{lid}' (valid: {', '.join(lib.id for lib in libs)})")


# MPI_Get_library_version's text -> (library, version): the rule pgmpi-bench applies to the same text
# (lib/bench/bench_output.c, mpi_identity), so that results, usage records and the launchers' families
# name a library alike. Order matters: Intel MPI and the MPICH derivatives before MPICH.
LIBRARY_MARKERS = (("Open MPI v", "openmpi"), ("CRAY MPICH version", "cray-mpich"),
                   ("MVAPICH2 Version:", "mvapich2"), ("Intel(R) MPI Library", "intelmpi"),
                   ("MPICH Version:", "mpich"))


def library_identity(text: str) -> tuple[str, str]:
    """(library, version) named by MPI_Get_library_version's text; an unknown library is named by its first
    word (lower case), an unreadable version is "unknown"."""
    for marker, name in LIBRARY_MARKERS:
        i = text.find(marker)
        if i >= 0:
            rest = text[i + len(marker):].replace(",", " ").split()
            return name, rest[0] if rest else "unknown"
    words = text.split()
    return (words[0].lower() if words else "unknown"), "unknown"
