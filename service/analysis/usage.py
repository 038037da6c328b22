"""Where the users' collective time goes, and what each violation costs them (pure: no database, no Flask).

Input: the usage cells of a library (pgmpi_formats.usage records, summed over jobs) and its violations
(collective, message size, p, the mock-up's speed-up) and live redirects. Output: the cells ranked by the
users' time, each with the node-hours a violation there costs the users (the time they spent in the
default times the share a faster equivalent would have saved: 1 - 1/speed-up), and for cells a live profile
already serves, the node-hours it gained them (time spent under the mock-up times speed-up - 1).
Node-hours: rank-seconds / ranks per node / 3600 (a rank holds 1/ppn of a node for that time).

A cell is (collective, power-of-two size bucket, p). A violation measured at message size n counts for the
bucket that holds n; several violations in one bucket: the largest speed-up (what a redirect would get).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CellTime:
    collective: str          # MPI name, e.g. MPI_Allreduce
    bytes_lo: int
    p: int
    algorithm: str
    calls: int
    rank_seconds: float


@dataclass(frozen=True)
class Speedup:
    collective: str          # MPI name
    msize: int
    p: int
    mockup: str
    speedup: float           # default time / alternative time (> 1: the alternative is faster)
    status: str = "verified"


@dataclass
class RankedCell:
    collective: str
    bytes_lo: int
    p: int
    calls: int = 0
    rank_seconds: float = 0.0
    share: float = 0.0                    # of all collective time of the library
    default_seconds: float = 0.0          # of it, served by the library's default
    tuned_seconds: float = 0.0            # served by a mock-up (a live profile)
    violation: Speedup | None = None
    lost_node_hours: float = 0.0          # what the violation costs the users while unrepaired
    gained_node_hours: float = 0.0        # what the live redirect gains them
    algorithms: dict = field(default_factory=dict)

    @property
    def bytes_hi(self) -> int:
        return 0 if self.bytes_lo == 0 else 2 * self.bytes_lo - 1


def as_mpi_name(collective: str) -> str:
    """The usage records name a collective by its MPI name, the analysis' violations by its key (allreduce):
    both to the MPI name (pgmpi_formats.collectives), so that a violation meets the cell it is in."""
    from pgmpi_formats.collectives import mpi_names
    return mpi_names().get(collective, collective)


def bucket_of(n: int) -> int:
    """The lower bound of the power-of-two bucket holding n bytes (the usage record's cells)."""
    return 0 if n <= 0 else 1 << (int(n).bit_length() - 1)


def rank_cells(cells: list[CellTime], violations: list[Speedup], *, ppn: int,
               live_speedups: list[Speedup] | None = None) -> tuple[list[RankedCell], float]:
    """The cells by what they cost the users (lost node-hours, then time), and the library's total collective
    rank-seconds. `live_speedups`: the validated speed-up of each live redirect (for the gain)."""
    ppn = max(1, ppn)
    by: dict[tuple, RankedCell] = {}
    for c in cells:
        k = (c.collective, c.bytes_lo, c.p)
        r = by.setdefault(k, RankedCell(*k))
        r.calls += c.calls
        r.rank_seconds += c.rank_seconds
        r.algorithms[c.algorithm] = r.algorithms.get(c.algorithm, 0.0) + c.rank_seconds
        if c.algorithm == "default":
            r.default_seconds += c.rank_seconds
        else:
            r.tuned_seconds += c.rank_seconds
    total = sum(r.rank_seconds for r in by.values())
    best: dict[tuple, Speedup] = {}
    for v in violations:
        if v.status != "verified" or v.speedup <= 1.0:
            continue
        k = (as_mpi_name(v.collective), bucket_of(v.msize), v.p)
        if k not in best or v.speedup > best[k].speedup:
            best[k] = v
    live: dict[tuple, Speedup] = {}
    for v in live_speedups or []:
        k = (as_mpi_name(v.collective), bucket_of(v.msize), v.p)
        if k not in live or v.speedup > live[k].speedup:
            live[k] = v
    for k, r in by.items():
        r.share = r.rank_seconds / total if total > 0 else 0.0
        v = best.get(k)
        if v is not None:
            r.violation = v
            r.lost_node_hours = r.default_seconds * (1.0 - 1.0 / v.speedup) / ppn / 3600.0
        lv = live.get(k)
        if lv is not None and lv.speedup > 1.0:
            r.gained_node_hours = r.tuned_seconds * (lv.speedup - 1.0) / ppn / 3600.0
    ranked = sorted(by.values(), key=lambda r: (-r.lost_node_hours, -r.rank_seconds, r.collective, r.bytes_lo, r.p))
    return ranked, total
