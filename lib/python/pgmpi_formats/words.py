"""How a person names a collective and a size on a command line, read the way pgmpi-bench reads them
(lib/bench/bench_options.c: --calls, --sizes), so `pgmpi explain ... MPI_Scan 1KiB 2` means what
`pgmpi-bench --calls=MPI_Scan --sizes=1KiB` measured.

    collective_key("MPI_Scan") -> "scan"      collective_key("allreduce") -> "allreduce"
    parse_bytes("1KiB") -> 1024               parse_bytes("64K") -> 65536     parse_bytes("8") -> 8
"""
from __future__ import annotations

import re

from .collectives import COLLECTIVES

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tib": 1 << 40, "tb": 1 << 40}
_BYTES = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """Bytes as pgmpi-bench reads them: a number with an optional unit (K, KiB, KB = 1024; M, G, T alike; B).
    Raises ValueError naming the accepted forms."""
    m = _BYTES.match(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise ValueError(f"bad size {text!r} (expected bytes like 8, 1K, 64KiB, 1M, 2G)")
    v = float(m.group(1)) * _UNITS[unit]
    if v != int(v):
        raise ValueError(f"bad size {text!r}: not a whole number of bytes")
    return int(v)


def collective_key(name: str) -> str:
    """The collective's key from its key or its MPI name, any case ('MPI_Scan', 'scan', 'Reduce_scatter_block').
    Raises ValueError listing the valid keys."""
    low = str(name).strip().lower()
    for c in COLLECTIVES:
        if low in (c.key, c.mpi_name.lower(), c.mpi_name.lower().removeprefix("mpi_")):
            return c.key
    raise ValueError(f"unknown collective {name!r}; valid: {', '.join(c.key for c in COLLECTIVES)} "
                     "(or their MPI names, e.g. MPI_Allreduce)")
