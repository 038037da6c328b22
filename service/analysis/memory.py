"""Extra memory a mock-up needs per process (PGMPITuneLib paper, table 1), in our message-size terms.

    extra_bytes(mockup, msize, p) -> (message-pool bytes, int-pool bytes)

`msize` is the n of collectives.def (bytes). Table 1 counts n as the elements in the *send buffer of a
process*; for Scatter that is the root's whole buffer (p blocks), so our per-rank block b becomes n = p*b
there. Padding "c" (to a multiple of p) is ceil(n/p)*p - n. I = sizeof(int) = 4. The message pool is
PGMPITuneLib's size_msg_buffer_bytes, the int pool size_int_buffer_bytes (the library's pools, lib/src/core/runtime.c).
"""
from __future__ import annotations

INT = 4


def _padded(n: int, p: int) -> int:
    return -(-n // p) * p if p > 0 else n


def _table(n: int, b: int, pad: int, p: int) -> dict[str, tuple[int, int]]:
    """Table 1 for one (n, p): mock-up -> (message-pool bytes, int-pool bytes)."""
    q = max(p, 1)
    return {
        "allgather_as_gather_bcast": (0, 0),
        "allgather_as_alltoall": (p * n, 0),
        "allgather_as_allreduce": (p * n, 0),
        "allgather_as_allgatherv": (0, 2 * p * INT),
        "allreduce_as_reduce_bcast": (0, 0),
        "allreduce_as_reducescatterblock_allgather": (pad // q + pad, 0),
        "allreduce_as_reducescatter_allgatherv": (0, 2 * p * INT),
        "alltoall_as_alltoallv": (0, 2 * p * INT),
        "bcast_as_allgatherv": (0, 2 * p * INT),
        "bcast_as_scatter_allgather": (pad // q + pad, 0),
        "gather_as_allgather": (p * n, 0),
        "gather_as_gatherv": (0, 2 * p * INT),
        "gather_as_reduce": (p * n, 0),
        "reduce_as_allreduce": (n, 0),
        "reduce_as_reducescatterblock_gather": (pad // q + pad, 0),
        "reduce_as_reducescatter_gatherv": (pad, 2 * p * INT),
        "reducescatterblock_as_reduce_scatter": (n, 0),
        "reducescatterblock_as_reducescatter": (0, p * INT),
        "reducescatterblock_as_allreduce": (n, 0),
        "reducescatter_as_allreduce": (n, 0),
        "reducescatter_as_reduce_scatterv": (n, 2 * p * INT),
        "scan_as_exscan_reducelocal": (0, 0),
        "scatter_as_bcast": (p * b, 0),
        "scatter_as_scatterv": (0, 2 * p * INT),
    }


# The 24 mock-ups of the pattern guidelines, in table order (the library's own list is checked against this
# in tests/python/analysis/test_views_profiles.py).
KNOWN = tuple(_table(1, 1, 1, 1))


def _node_aware(n: int, p: int) -> dict[str, tuple[int, int]]:
    """The node-aware mock-ups (not in table 1; their need functions in lib/src/collectives/)."""
    return {
        "allgather_as_nodegather_leaderallgatherv_nodebcast": (2 * p * n, 2 * p * INT),
        "allreduce_as_nodereduce_leaderallreduce_nodebcast": (0, 0),
        "bcast_as_leaderbcast_nodebcast": (n, 0),
        "reduce_as_nodereduce_leaderreduce": (2 * n, 0),
    }


def extra_bytes(mockup: str, msize: int, p: int) -> tuple[int, int]:
    if mockup == "default":
        return (0, 0)
    table = _table(msize, msize, _padded(msize, p), p) | _node_aware(msize, p)
    if mockup not in table:
        raise KeyError(f"no memory rule for mock-up {mockup!r}; known: {', '.join(sorted(table))}")
    return table[mockup]


def fits(mockup: str, msize: int, p: int, msg_budget: int | None, int_budget: int | None) -> bool:
    m, i = extra_bytes(mockup, msize, p)
    return (msg_budget is None or m <= msg_budget) and (int_budget is None or i <= int_budget)


class MemoryModel:
    """Pool bytes a mock-up needs: from the library itself (`pgmpitune-check --list --json --p --bytes --elem`,
    what decides the run-time fallback) when a checker is available, else from table 1 above.

        mm = MemoryModel.auto();  mm.needs("allgather_as_alltoall", 1024, 16, elem=1) -> (msg bytes, int bytes)
        mm.source -> "library" | "table1"
    """

    def __init__(self, checker=None):
        self.checker = checker
        self.source = "library" if checker else "table1"
        self._cache: dict[tuple[int, int, int], dict[str, tuple[int, int]]] = {}

    @classmethod
    def auto(cls) -> "MemoryModel":
        from pgmpi_formats.checker import find_checker
        return cls(find_checker())

    def _library(self, p: int, msize: int, elem: int) -> dict[str, tuple[int, int]]:
        key = (p, msize, elem)
        if key not in self._cache:
            import json
            import subprocess
            r = subprocess.run([str(self.checker), "--list", "--json", f"--p={p}", f"--bytes={msize}",
                                f"--elem={elem}"], capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                raise RuntimeError(f"{self.checker} --list --json failed: {r.stderr.strip()}")
            d = json.loads(r.stdout)
            self._cache[key] = {a["name"]: (int(a["msg_pool_bytes"]), int(a["int_pool_bytes"]))
                                for c in d["collectives"] for a in c["algorithms"]}
        return self._cache[key]

    def needs(self, mockup: str, msize: int, p: int, elem: int = 1) -> tuple[int, int]:
        if self.checker:
            lib = self._library(p, msize, elem)
            if mockup in lib:
                return lib[mockup]
            raise KeyError(f"the library has no mock-up {mockup!r}")
        return extra_bytes(mockup, msize, p)
