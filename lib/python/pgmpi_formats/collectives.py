"""The table of collectives, read from collectives.def (a symlink to lib/src/core/collectives.def that
the wheel ships as package data, so an installed copy reads the same table as a checkout).

    from pgmpi_formats.collectives import COLLECTIVES, by_key, by_mpi_name
    COLLECTIVES[1].key == "allreduce"; by_mpi_name("MPI_Allreduce").size_rule == "BLOCK"

The C library, pgmpi-bench, the agent and the service all read the same file, so ids, keys and the
message-size rule cannot drift apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DEF_PATH = Path(__file__).resolve().parent / "collectives.def"
_LINE = re.compile(r'^\s*PGMPI_COLLECTIVE\(\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*\)')


@dataclass(frozen=True)
class Collective:
    id: int          # index in collectives.def (= the library's enum value)
    enum: str        # e.g. ALLREDUCE
    key: str         # e.g. allreduce
    mpi_name: str    # e.g. MPI_Allreduce
    size_rule: str   # BLOCK or VECTOR


@lru_cache(maxsize=1)
def load(path: str | None = None) -> tuple[Collective, ...]:
    p = Path(path) if path else DEF_PATH
    out = []
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        m = _LINE.match(line)
        if m:
            out.append(Collective(len(out), m.group(1), m.group(2), m.group(3), m.group(4)))
    if not out:
        raise RuntimeError(f"{p}: no PGMPI_COLLECTIVE(...) lines found")
    return tuple(out)


COLLECTIVES: tuple[Collective, ...] = load()
KEYS: tuple[str, ...] = tuple(c.key for c in COLLECTIVES)
_BY_KEY = {c.key: c for c in COLLECTIVES}
_BY_MPI = {c.mpi_name.lower(): c for c in COLLECTIVES}


def by_key(key: str) -> Collective:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown collective {key!r}; valid: {', '.join(KEYS)}") from None


def by_mpi_name(name: str) -> Collective | None:
    """MPI_Allreduce (any case) -> Collective, None for calls outside the table (e.g. MPI_Barrier)."""
    return _BY_MPI.get(name.lower())


def mpi_names() -> dict[str, str]:
    """key -> MPI name, in table order (allreduce -> MPI_Allreduce)."""
    return {c.key: c.mpi_name for c in COLLECTIVES}


def key_of_mockup(name: str) -> str | None:
    """allreduce_as_reduce_bcast -> allreduce; default -> None."""
    if "_as_" in name:
        k = name.split("_as_", 1)[0]
        return k if k in _BY_KEY else None
    return None
