"""deploy/mpi-libraries.tsv: the MPI libraries this site installs, one row each (the one reader).

    libs = read()                       # [MpiLibrary(id, family, version, source, prefix)]
    by_id()["intelmpi"].prefix          # /opt/pgmpi/mpi/intelmpi

Columns, tab-separated, `#` starts a comment: id (build dirs build/<id>, install build/install/<id>, the
campaign's `mpi:`), family (openmpi | mpich | intelmpi: how it is launched, scheduler/launchers/), version,
source (debian, or the registry package), prefix (where its bin/ and lib/ are).  PGMPI_MPI_LIBRARIES names
another table (a site whose MPIs live elsewhere).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parents[3] / "deploy" / "mpi-libraries.tsv"
COLUMNS = ("id", "family", "version", "source", "prefix")


class MpiLibrariesError(ValueError):
    pass


@dataclass(frozen=True)
class MpiLibrary:
    id: str
    family: str
    version: str
    source: str
    prefix: str

    @property
    def debian(self) -> bool:
        return self.source == "debian"


def table_path() -> Path:
    return Path(os.environ.get("PGMPI_MPI_LIBRARIES") or TABLE)


def read(path: str | Path | None = None) -> list[MpiLibrary]:
    path = Path(path) if path else table_path()
    try:
        text = path.read_text()
    except OSError as exc:
        raise MpiLibrariesError(f"{path}: cannot read the MPI library table ({exc.strerror})") from None
    out, seen = [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS) or not all(c.strip() for c in cells):
            raise MpiLibrariesError(f"{path}:{n}: expected {len(COLUMNS)} tab-separated columns "
                                    f"({', '.join(COLUMNS)}), got {line!r}")
        lib = MpiLibrary(*(c.strip() for c in cells))
        if lib.id in seen:
            raise MpiLibrariesError(f"{path}:{n}: id {lib.id!r} listed twice")
        seen.add(lib.id)
        out.append(lib)
    return out


def by_id(path: str | Path | None = None) -> dict[str, MpiLibrary]:
    return {lib.id: lib for lib in read(path)}
