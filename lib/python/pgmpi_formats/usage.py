"""The one reader of libpgmpitune's usage records (`*.pgmpi-usage`, written at MPI_Finalize by
lib/src/core/usage.c when PGMPITUNE_USAGE_DIR is set).

A record is a job's collective time, summed over its ranks, per cell (collective, lower bound of the
power-of-two size bucket, communicator size, whether the communicator was MPI_COMM_WORLD, the algorithm
that served). Calls and time are estimates from sampled calls (one in `sample_period` on average); the
`samples` column says how many calls a cell's figures rest on. A record that does not end with its
`#@pgmpi usage end <cells>` line is incomplete and refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SUFFIX = ".pgmpi-usage"
VERSION = 1
COLUMNS = ("collective", "bytes_lo", "p", "world", "algorithm", "calls", "rank_seconds", "samples")
# Header keys whose values are integers / floats; the rest are text.
_INT_KEYS = {"version", "ranks", "sample_period", "overflow_calls"}
_FLOAT_KEYS = {"wall_s", "rank_s"}


class UsageFormatError(ValueError):
    """A usage record that cannot be read: the message names file:line and the field."""


@dataclass(frozen=True)
class UsageCell:
    collective: str      # MPI name, e.g. MPI_Allreduce
    bytes_lo: int        # the bucket [bytes_lo, 2*bytes_lo); 0 = zero-byte calls
    p: int               # communicator size
    world: bool          # the communicator was MPI_COMM_WORLD
    algorithm: str       # "default" or the mock-up that served
    calls: int           # calls over all ranks (estimate)
    rank_seconds: float  # time over all ranks (estimate)
    samples: int         # sampled calls behind the estimate

    @property
    def bytes_hi(self) -> int:
        return 0 if self.bytes_lo == 0 else 2 * self.bytes_lo - 1


@dataclass
class UsageRecord:
    path: str
    header: dict = field(default_factory=dict)
    cells: list[UsageCell] = field(default_factory=list)

    @property
    def library(self) -> str:
        return self.header.get("library", "")

    @property
    def ranks(self) -> int:
        return int(self.header.get("ranks", 0))

    @property
    def rank_seconds(self) -> float:
        """The job's whole time over all ranks (MPI_Init to MPI_Finalize)."""
        return float(self.header.get("rank_s", 0.0))

    @property
    def collective_rank_seconds(self) -> float:
        return sum(c.rank_seconds for c in self.cells)


def parse_usage(text: str, path: str = "<usage>") -> UsageRecord:
    rec = UsageRecord(path=path)
    end_cells = None
    saw_columns = False
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{lineno}"
        if end_cells is not None:
            raise UsageFormatError(f"{where}: text after the end line")
        if not line.strip():
            continue
        if line.startswith("#@pgmpi usage"):
            parts = line.split(None, 3)
            if len(parts) < 3:
                raise UsageFormatError(f"{where}: header line without a key")
            key = parts[2]
            value = parts[3] if len(parts) > 3 else ""
            if key == "end":
                try:
                    end_cells = int(value)
                except ValueError:
                    raise UsageFormatError(f"{where}: end: expected the number of cells, got {value!r}") from None
                continue
            rec.header[key] = _header_value(key, value, where)
            if key == "version" and rec.header[key] != VERSION:
                raise UsageFormatError(f"{where}: version {rec.header[key]} (this reader knows {VERSION})")
            continue
        if line.startswith("#"):
            continue
        fields = line.split()
        if tuple(fields) == COLUMNS:
            saw_columns = True
            continue
        if not saw_columns:
            raise UsageFormatError(f"{where}: a row before the column line ({' '.join(COLUMNS)})")
        if len(fields) != len(COLUMNS):
            raise UsageFormatError(f"{where}: expected {len(COLUMNS)} fields ({' '.join(COLUMNS)}), got {len(fields)}")
        try:
            cell = UsageCell(fields[0], int(fields[1]), int(fields[2]), fields[3] == "1", fields[4],
                             int(fields[5]), float(fields[6]), int(fields[7]))
        except ValueError as e:
            raise UsageFormatError(f"{where}: {e}") from None
        if not cell.collective.startswith("MPI_") or cell.p < 0 or cell.calls < 0 or cell.rank_seconds < 0:
            raise UsageFormatError(f"{where}: implausible cell {line!r}")
        rec.cells.append(cell)
    if "version" not in rec.header:
        raise UsageFormatError(f"{path}:1: not a usage record (no '#@pgmpi usage version' line)")
    if end_cells is None:
        raise UsageFormatError(f"{path}: incomplete: no '#@pgmpi usage end' line")
    if end_cells != len(rec.cells):
        raise UsageFormatError(f"{path}: the end line says {end_cells} cells, the record holds {len(rec.cells)}")
    return rec


def _header_value(key: str, value: str, where: str):
    try:
        if key in _INT_KEYS:
            return int(value)
        if key in _FLOAT_KEYS:
            return float(value)
    except ValueError:
        raise UsageFormatError(f"{where}: {key}: expected a number, got {value!r}") from None
    return value


def read_usage(path: str | Path) -> UsageRecord:
    p = Path(path)
    return parse_usage(p.read_text(encoding="utf-8", errors="strict"), str(p))


def spooled(spool: str | Path) -> list[Path]:
    """The complete records of a spool directory, oldest first (temporaries start with a dot)."""
    d = Path(spool)
    return sorted((f for f in d.iterdir() if f.name.endswith(SUFFIX) and not f.name.startswith(".")),
                  key=lambda f: (f.stat().st_mtime, f.name))
