"""The MPI library's own collective algorithms ("native" algorithms): their names as the library gives
them, and the labels pgmpi-bench measures them under.

    label = format_label("segmented_ring", seg=8192)   # "native:segmented_ring:seg=8192"
    parse_label(label) -> NativeVariant(name, seg) | None (None: not a native label)
    d = parse_ompi_info(text)        # `ompi_info --param coll tuned --level 9 --parsable`
    d = parse_listing(text)          # `pgmpi-bench --list-native` (MPI_T, both libraries)
    d = discover(library, bench=..., mpirun=[...])   # runs one of the two above
    d.to_json() / Discovery.from_json(obj)           # recorded with a campaign
    d.names("allreduce") -> ("basic_linear", ...); d.value("allreduce", "ring") -> 4

Discovery reads the library itself: Open MPI's coll/tuned MCA enumerations (0 "ignore" = the library
decides, not an algorithm), MPICH's MPIR_CVAR_<COLL>_INTRA_ALGORITHM (its value is the position in the
variable's list, "auto" = 0).  FALLBACK holds the lists of the builds on these machines (Open MPI 4.1.4,
MPICH 4.0.2) for a reader that has no library at hand; tests/python/formats/test_native.py checks that
it agrees with the installed libraries.  No numpy, no service, no agent.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field

from .collectives import KEYS

__all__ = ["NativeVariant", "NativeAlgorithm", "Discovery", "DiscoveryError", "LABEL_RE", "format_label",
           "parse_label", "parse_ompi_info", "parse_listing", "discover", "FALLBACK", "OMPI_KEYS", "ORDER_UNSAFE"]

# "native:<name>[:seg=<bytes>]"; names as the libraries spell them (Open MPI has "in-order_binary")
LABEL_RE = re.compile(r"^native:([A-Za-z0-9][A-Za-z0-9_.-]*)(?::seg=([0-9]+))?$")

# collectives.def key -> Open MPI coll/tuned name (coll_tuned_<name>_algorithm) and MPICH CVAR stem
OMPI_KEYS = {"allgather": "allgather", "allreduce": "allreduce", "alltoall": "alltoall", "bcast": "bcast",
             "gather": "gather", "reduce": "reduce", "reducescatterblock": "reduce_scatter_block",
             "reducescatter": "reduce_scatter", "scan": "scan", "scatter": "scatter", "barrier": "barrier"}
_OMPI_TO_KEY = {v: k for k, v in OMPI_KEYS.items()}


class DiscoveryError(RuntimeError):
    pass


@dataclass(frozen=True)
class NativeVariant:
    name: str
    seg: int | None = None      # Open MPI segment size in bytes; None: not given (the library's own)

    @property
    def label(self) -> str:
        return format_label(self.name, self.seg)


@dataclass(frozen=True)
class NativeAlgorithm:
    name: str
    value: int                  # the control variable's value that selects it


def format_label(name: str, seg: int | None = None) -> str:
    label = f"native:{name}" + (f":seg={int(seg)}" if seg is not None else "")
    if not LABEL_RE.match(label):
        raise ValueError(f"not a native algorithm name: {name!r}")
    return label


def parse_label(label: str) -> NativeVariant | None:
    m = LABEL_RE.match(label)
    if not m:
        return None
    return NativeVariant(m.group(1), int(m.group(2)) if m.group(2) is not None else None)


@dataclass
class Discovery:
    """What one MPI library offers, per collective key (collectives.def keys, plus "barrier")."""
    library: str                                   # openmpi | mpich
    source: str                                    # ompi_info | mpi_t | fallback
    version: str = ""
    algorithms: dict[str, tuple[NativeAlgorithm, ...]] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)        # key -> control variable
    segment_variables: dict[str, str] = field(default_factory=dict)  # key -> segment-size variable
    chain_fanout: dict[str, int] = field(default_factory=dict)       # Open MPI: key -> forced fan-out (ompi_info)

    def names(self, key: str) -> tuple[str, ...]:
        return tuple(a.name for a in self.algorithms.get(key, ()))

    def value(self, key: str, name: str) -> int:
        for a in self.algorithms.get(key, ()):
            if a.name == name:
                return a.value
        raise KeyError(f"{self.library} has no {key} algorithm {name!r}; it offers: "
                       f"{', '.join(self.names(key)) or '(none)'}")

    def has_segments(self, key: str) -> bool:
        return key in self.segment_variables

    def to_json(self) -> dict:
        return {"library": self.library, "source": self.source, "version": self.version,
                "algorithms": {k: [[a.name, a.value] for a in v] for k, v in sorted(self.algorithms.items())},
                "variables": dict(sorted(self.variables.items())),
                "segment_variables": dict(sorted(self.segment_variables.items())),
                "chain_fanout": dict(sorted(self.chain_fanout.items()))}

    @classmethod
    def from_json(cls, obj: dict) -> "Discovery":
        return cls(obj["library"], obj["source"], obj.get("version", ""),
                   {k: tuple(NativeAlgorithm(n, int(v)) for n, v in algs) for k, algs in obj["algorithms"].items()},
                   dict(obj.get("variables", {})), dict(obj.get("segment_variables", {})),
                   {k: int(v) for k, v in obj.get("chain_fanout", {}).items()})

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)


def parse_ompi_info(text: str, version: str = "") -> Discovery:
    """`ompi_info --param coll tuned --level 9 --parsable`: the coll_tuned_<coll>_algorithm enumerators
    (value 0, "ignore", is the library's own decision) and which collectives have a segment size."""
    d = Discovery("openmpi", "ompi_info", version)
    enum = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm:enumerator:value:(\d+):(\S+)$")
    seg = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm_segmentsize:value:")
    fan = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm_chain_fanout:value:(\d+)$")
    found: dict[str, list[NativeAlgorithm]] = {}
    for line in text.splitlines():
        m = enum.match(line.strip())
        if m and m.group(1) in _OMPI_TO_KEY and int(m.group(2)) != 0:
            found.setdefault(_OMPI_TO_KEY[m.group(1)], []).append(NativeAlgorithm(m.group(3), int(m.group(2))))
            continue
        m = fan.match(line.strip())
        if m and m.group(1) in _OMPI_TO_KEY:
            d.chain_fanout[_OMPI_TO_KEY[m.group(1)]] = int(m.group(2))
            continue
        m = seg.match(line.strip())
        if m and m.group(1) in _OMPI_TO_KEY:
            d.segment_variables[_OMPI_TO_KEY[m.group(1)]] = f"coll_tuned_{m.group(1)}_algorithm_segmentsize"
    if not found:
        raise DiscoveryError("ompi_info printed no coll_tuned_<collective>_algorithm enumerators "
                             "(is coll/tuned part of this Open MPI?)")
    for k, algs in found.items():
        d.algorithms[k] = tuple(sorted(algs, key=lambda a: a.value))
        d.variables[k] = f"coll_tuned_{OMPI_KEYS[k]}_algorithm"
    return d


def parse_listing(text: str, version: str = "") -> Discovery:
    """`pgmpi-bench --list-native`: `native <library> <key> <name> <value> <variable> <segment variable|->`
    lines (and `cvar` lines with the variables' current values, ignored here)."""
    lib = None
    d = None
    m = re.search(r"^#@mpi_library_string=.*?(?:MPICH Version:|Open MPI v)\s*([0-9][\w.]*)", text, re.M)
    ver = m.group(1) if m else ""
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if line.startswith("#@native_flavor="):
            lib = line.split("=", 1)[1].strip()
            if lib == "none":
                raise DiscoveryError("this MPI library exposes no algorithm control variables through MPI_T")
            d = Discovery(lib, "mpi_t", version or ver)
        elif parts and parts[0] == "native":
            if d is None or len(parts) != 7 or parts[2] not in OMPI_KEYS or not parts[4].isdigit():
                raise DiscoveryError(f"--list-native output line {lineno}: unexpected {line!r}")
            key = parts[2]
            d.algorithms[key] = d.algorithms.get(key, ()) + (NativeAlgorithm(parts[3], int(parts[4])),)
            d.variables[key] = parts[5]
            if parts[6] != "-":
                d.segment_variables[key] = parts[6]
    if d is None or not d.algorithms:
        raise DiscoveryError("pgmpi-bench --list-native printed no algorithms")
    return d


def discover(library: str, bench: str | None = None, mpirun: list[str] | None = None,
             env: dict | None = None, timeout: float = 60, version: str | None = None) -> Discovery:
    """Asks the installed library.  Open MPI: ompi_info (no MPI job); MPICH: pgmpi-bench --list-native
    under `mpirun` (one process), since MPICH's lists live in its MPI_T control variables.  `env` selects
    the library (mpi_libraries.MpiLibrary.environment()); with `version` the library that answered must be
    that version (DiscoveryError otherwise): Open MPI 4.1 and 5.0 offer different algorithms under the
    same variable names, so a file checked against the wrong one is checked against the wrong list."""
    if library == "openmpi":
        out = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9", "--parsable"],
                             capture_output=True, text=True, timeout=timeout, env=env)
        if out.returncode != 0:
            raise DiscoveryError(f"ompi_info failed ({out.returncode}): {out.stderr.strip()[:300]}")
        ver = subprocess.run(["ompi_info", "--parsable"], capture_output=True, text=True, timeout=timeout,
                             env=env).stdout
        m = re.search(r"ompi:version:full:(\S+)", ver)
        d = parse_ompi_info(out.stdout, m.group(1) if m else "")
    else:
        if not bench:
            raise DiscoveryError(f"discovering {library}'s algorithms needs pgmpi-bench (--list-native)")
        cmd = list(mpirun or []) + [bench, "--list-native"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if out.returncode != 0:
            raise DiscoveryError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[:300]}")
        d = parse_listing(out.stdout)
    if version and d.version != version:
        raise DiscoveryError(f"asked for {library} {version}'s algorithms, but the library found answered as "
                             f"{d.library} {d.version or '(no version)'}: select it with its environment "
                             "(deploy/mpi-libraries.tsv, pgmpi_formats.mpi_libraries)")
    return d


# (collectives.def key, name) of the algorithms that reorder a reduction's operands, so give wrong results
# for non-commutative operations: measured by pgmpi-bench's check round (`#@pgmpi check ... fail
# noncommutative`) at 4 ranks, tests/python/bench/test_native.py keeps this in step.  Open MPI's own
# decision avoids them for such operations; a rules file cannot (it applies to every operation).
ORDER_UNSAFE = {
    "openmpi": frozenset({("allreduce", "ring"), ("allreduce", "segmented_ring"), ("reduce", "chain"),
                          ("reduce", "pipeline"), ("reduce", "binary"), ("reduce", "binomial")}),
    "mpich": frozenset(),
}


def _table(rows: dict[str, str]) -> dict[str, tuple[NativeAlgorithm, ...]]:
    return {k: tuple(NativeAlgorithm(n, int(v)) for n, v in (it.split("=") for it in s.split()))
            for k, s in rows.items()}


# The builds on these machines (Debian 12: Open MPI 4.1.4, MPICH 4.0.2), for readers without a library
# (e.g. the service rendering an old campaign).  Checked against the installed libraries by
# tests/python/formats/test_native.py; a campaign records what it discovered and never uses this.
FALLBACK = {
    "openmpi": Discovery("openmpi", "fallback", "4.1.4", _table({
        "allgather": "linear=1 bruck=2 recursive_doubling=3 ring=4 neighbor=5 two_proc=6",
        "allreduce": "basic_linear=1 nonoverlapping=2 recursive_doubling=3 ring=4 segmented_ring=5 rabenseifner=6",
        "alltoall": "linear=1 pairwise=2 modified_bruck=3 linear_sync=4 two_proc=5",
        "bcast": "basic_linear=1 chain=2 pipeline=3 split_binary_tree=4 binary_tree=5 binomial=6 knomial=7 "
                 "scatter_allgather=8 scatter_allgather_ring=9",
        "gather": "basic_linear=1 binomial=2 linear_sync=3",
        "reduce": "linear=1 chain=2 pipeline=3 binary=4 binomial=5 in-order_binary=6 rabenseifner=7",
        "reducescatterblock": "basic_linear=1 recursive_doubling=2 recursive_halving=3 butterfly=4",
        "reducescatter": "non-overlapping=1 recursive_halving=2 ring=3 butterfly=4",
        "scan": "linear=1 recursive_doubling=2",
        "scatter": "basic_linear=1 binomial=2 linear_nb=3",
        "barrier": "linear=1 double_ring=2 recursive_doubling=3 bruck=4 two_proc=5 tree=6"})),
    "mpich": Discovery("mpich", "fallback", "4.0.2", _table({
        "allgather": "brucks=1 nb=2 recursive_doubling=3 ring=4",
        "allreduce": "nb=1 smp=2 recursive_doubling=3 reduce_scatter_allgather=4",
        "alltoall": "brucks=1 nb=2 pairwise=3 pairwise_sendrecv_replace=4 scattered=5",
        "bcast": "binomial=1 nb=2 smp=3 scatter_recursive_doubling_allgather=4 scatter_ring_allgather=5",
        "gather": "binomial=1 nb=2",
        "reduce": "binomial=1 nb=2 smp=3 reduce_scatter_gather=4",
        "reducescatterblock": "noncommutative=1 recursive_doubling=2 pairwise=3 recursive_halving=4 nb=5",
        "reducescatter": "nb=1 noncommutative=2 pairwise=3 recursive_doubling=4 recursive_halving=5",
        "scan": "nb=1 smp=2 recursive_doubling=3",
        "scatter": "binomial=1 nb=2",
        "barrier": "nb=1 smp=2 dissemination=3"})),
}
for _lib, _d in FALLBACK.items():
    _d.variables = {k: (f"coll_tuned_{OMPI_KEYS[k]}_algorithm" if _lib == "openmpi"
                        else f"MPIR_CVAR_{OMPI_KEYS[k].upper()}_INTRA_ALGORITHM") for k in _d.algorithms}
    if _lib == "openmpi":
        _d.segment_variables = {k: f"coll_tuned_{OMPI_KEYS[k]}_algorithm_segmentsize" for k in _d.algorithms
                                if k not in ("scan", "barrier")}
assert set(OMPI_KEYS) == set(KEYS) | {"barrier"}, "collectives.def and OMPI_KEYS disagree"


# ------------------------------------------------------------------ the decision file a process runs under

# What makes each library read its decision file (the pgmpitunelib module sets the same for users:
# spack-repo/packages/pgmpitunelib/pgmpitune-site.lua).
FILE_VARS = {"openmpi": ("OMPI_MCA_coll_tuned_dynamic_rules_filename",),
             "mpich": ("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",)}


def file_env(library: str, path: str) -> dict[str, str]:
    """The environment under which `library` reads the decision file at `path`."""
    if library == "openmpi":
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", FILE_VARS["openmpi"][0]: path}
    if library == "mpich":
        return {FILE_VARS["mpich"][0]: path}
    raise ValueError(f"no decision file for {library!r}; valid: {', '.join(FILE_VARS)}")


def file_digest(data: str | bytes) -> str:
    """FNV-1a 64 over the file's bytes, as pgmpi-bench records it (#@native_file_fnv1a64, lib/bench/bench_output.c)."""
    h = 1469598103934665603
    for b in data.encode() if isinstance(data, str) else data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def governing_component(library: str, version: str, nodes: int) -> str:
    """Which part of the library a native decision file governs for a communicator over `nodes` nodes.
    Open MPI 5.0 gives coll/han (priority 35) communicators that span nodes; han disqualifies itself on a
    single-node one ("comm has only local processes", coll_base_verbose on 5.0.11), so there tuned -- and its
    rules file -- serves the call.  Across nodes tuned's rules govern only han's per-level sub-communicators:
    a choice measured there is not what the file makes the top-level call run.  Open MPI 4.1 ships han with
    priority 0 (off).  MPICH's selection file governs the MPIR level on any communicator."""
    if library == "openmpi":
        m = re.match(r"^(\d+)\.", version or "")
        return "han" if (m and int(m.group(1)) >= 5 and nodes > 1) else "tuned"
    return {"mpich": "mpir"}.get(library, library)
