"""The library's own table of collectives, mock-ups and their pool memory: the JSON of
`pgmpitune-check --list --json --p=P --bytes=N --elem=E` (lib/tools/pgmpitune-check.c), read into typed records.

    listing = library_listing(checker, p=16, msize=1024, elem=4)
    listing.needs("allgather_as_alltoall") -> (message-pool bytes, int-pool bytes)

The figures are what decides the library's fallback at run time (its descriptor tables,
lib/src/collectives/<key>.c), for P ranks, N message bytes (collectives.def's n) and E-byte elements.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .checker import BUILD_HINT, CheckerError, not_found


@dataclass(frozen=True)
class Algorithm:
    index: int               # 0 = default
    name: str
    msg_pool_bytes: int
    int_pool_bytes: int
    node_aware: bool


@dataclass(frozen=True)
class Collective:
    key: str
    mpi_name: str
    size_rule: str
    algorithms: tuple[Algorithm, ...]


@dataclass(frozen=True)
class Listing:
    p: int
    msize: int
    elem: int
    collectives: tuple[Collective, ...]

    def algorithms(self) -> dict[str, Algorithm]:
        return {a.name: a for c in self.collectives for a in c.algorithms}

    def needs(self, name: str) -> tuple[int, int]:
        a = self.algorithms().get(name)
        if a is None:
            raise KeyError(f"the library has no algorithm {name!r}")
        return a.msg_pool_bytes, a.int_pool_bytes


def _field(d: dict, key: str, kind, where: str):
    if not isinstance(d, dict) or key not in d:
        raise ValueError(f"{where}: field {key!r} missing")
    v = d[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        raise ValueError(f"{where}: field {key!r} must be a non-negative integer, not {v!r}")
    if kind is not int and not isinstance(v, kind):
        raise ValueError(f"{where}: field {key!r} must be {kind.__name__}, not {v!r}")
    return v


def parse_listing(text: str, source: str = "<pgmpitune-check --list --json>") -> Listing:
    """One reader of the listing; ValueError naming the source and the field on anything malformed."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}:{e.lineno}: not JSON ({e.msg})") from None
    colls = []
    for i, c in enumerate(_field(d, "collectives", list, source)):
        where = f"{source}: collectives[{i}]"
        algs = tuple(
            Algorithm(_field(a, "index", int, f"{where}.algorithms[{j}]"), _field(a, "name", str, f"{where}.algorithms[{j}]"),
                      _field(a, "msg_pool_bytes", int, f"{where}.algorithms[{j}]"),
                      _field(a, "int_pool_bytes", int, f"{where}.algorithms[{j}]"),
                      _field(a, "node_aware", bool, f"{where}.algorithms[{j}]"))
            for j, a in enumerate(_field(c, "algorithms", list, where)))
        colls.append(Collective(_field(c, "key", str, where), _field(c, "mpi_name", str, where),
                                _field(c, "size_rule", str, where), algs))
    return Listing(_field(d, "p", int, source), _field(d, "bytes", int, source), _field(d, "elem_bytes", int, source),
                   tuple(colls))


def library_listing(checker: Path | str | None, p: int, msize: int, elem: int = 1) -> Listing:
    """Runs the library's checker; CheckerError (a RuntimeError) saying what to do when there is none, it cannot
    run, fails or prints what parse_listing refuses."""
    if checker is None:
        raise CheckerError(not_found() + " (the mock-ups' memory needs come from the library itself)")
    args = [str(checker), "--list", "--json", f"--p={p}", f"--bytes={msize}", f"--elem={elem}"]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise CheckerError(f"{checker}: cannot run ({e.strerror}); {BUILD_HINT}") from None
    except subprocess.TimeoutExpired:
        raise CheckerError(f"{' '.join(args)}: no answer within 30 s; {BUILD_HINT}") from None
    if r.returncode != 0:
        raise CheckerError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[:500]}; {BUILD_HINT}")
    try:
        return parse_listing(r.stdout, f"{checker} --list --json")
    except ValueError as e:     # a checker of another build than this reader: rebuild it
        raise CheckerError(f"{e}; {BUILD_HINT}") from None
