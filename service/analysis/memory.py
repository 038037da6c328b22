"""Extra memory a mock-up needs per process, from the library itself (`pgmpitune-check --list --json`, what
decides its fallback at run time; read by pgmpi_formats.mockups), never from a copy.

    mm = MemoryModel.auto();  mm.needs("allgather_as_alltoall", 1024, 16, elem=1) -> (msg bytes, int bytes)

`msize` is the n of collectives.def (bytes). The message pool is PGMPITuneLib's size_msg_buffer_bytes, the
int pool size_int_buffer_bytes (the library's pools, lib/src/core/runtime.c). Without a built library
MemoryModel.auto() raises pgmpi_formats.checker.CheckerError (a RuntimeError) saying how to build it: a
profile must not be judged on figures the library does not use.
"""
from __future__ import annotations

from pgmpi_formats.checker import find_checker
from pgmpi_formats.mockups import Listing, library_listing

# The 24 mock-ups of PGMPITuneLib's pattern guidelines (its table 1), in table order: the names the analysis
# simulates (synthetic.py) and maps ReproMPI's GL_* tests to; the library implements every one of them
# (tests/python/analysis/test_views_profiles.py).
KNOWN = (
    "allgather_as_gather_bcast", "allgather_as_alltoall", "allgather_as_allreduce", "allgather_as_allgatherv",
    "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather",
    "allreduce_as_reducescatter_allgatherv", "alltoall_as_alltoallv", "bcast_as_allgatherv",
    "bcast_as_scatter_allgather", "gather_as_allgather", "gather_as_gatherv", "gather_as_reduce",
    "reduce_as_allreduce", "reduce_as_reducescatterblock_gather", "reduce_as_reducescatter_gatherv",
    "reducescatterblock_as_reduce_scatter", "reducescatterblock_as_reducescatter",
    "reducescatterblock_as_allreduce", "reducescatter_as_allreduce", "reducescatter_as_reduce_scatterv",
    "scan_as_exscan_reducelocal", "scatter_as_bcast", "scatter_as_scatterv",
)


class MemoryModel:
    """Pool bytes a mock-up needs, from the library's checker (one listing per (p, msize, elem), cached)."""

    source = "library"

    def __init__(self, checker):
        self.checker = checker
        self._cache: dict[tuple[int, int, int], Listing] = {}

    @classmethod
    def auto(cls) -> "MemoryModel":
        checker = find_checker()
        if checker is None:
            library_listing(None, 1, 1)          # raises: how to get the library
        return cls(checker)

    def probe(self) -> "MemoryModel":
        """One listing now: a checker that cannot run says so before an analysis reads any run."""
        self.listing(2, 1)
        return self

    def listing(self, p: int, msize: int, elem: int = 1) -> Listing:
        key = (p, msize, elem)
        if key not in self._cache:
            self._cache[key] = library_listing(self.checker, p, msize, elem)
        return self._cache[key]

    def needs(self, mockup: str, msize: int, p: int, elem: int = 1) -> tuple[int, int]:
        return self.listing(p, msize, elem).needs(mockup)
