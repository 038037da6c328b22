"""Intel MPI's own algorithm choice: the I_MPI_ADJUST_<COLL> variables, written from decisions and read back
strictly against the exact Intel MPI version they are for.

    d = discover(env)                      # Discovery: version, per collective the preset range (impi_info -v)
    text = write(decisions, d)             # native.impi: a version line, then NAME=VALUE lines
    adj = parse(text, source, d)           # AdjustError with the line; adj.lookup("allreduce", 2, 4096) -> 8

Why the variables and not Intel's tuning file: the tuning file (I_MPI_TUNING_BIN, what mpitune_fast writes
and the etc/tuning_*.dat Intel ships) is zlib-compressed binary with no published format, so nothing here
could read back or check what it says; the variables are text, documented, per collective, and take
message-size and process-count ranges: `<preset>:<lo>-<hi>@<pmin>-<pmax>[;...]`.  Intel documents that calls
outside every range keep the library's own choice; 2021.13 does not (with only 3:65536-... set, MPI_Allreduce
at 64 B-32 KiB runs another algorithm than without the variable: fingerprints), which is why the validation
measures every gap at both ends (native_validation.cells_of_impi) and why write() leaves no gap (trim).
Their message size (Intel's documentation) is count x type size for allreduce, bcast and reduce and one block
for allgather, alltoall, gather and scatter -- collectives.def's size.

Intel MPI 2021.13 ignores a bad value with a message only under I_MPI_DEBUG ("Incorrect algorithm:
ALLREDUCE=33, will be ignored"), and accepts inverted or overlapping ranges without a word, so the reader
refuses all of these, and a preset above the range `impi_info -v I_MPI_ADJUST_<COLL>` gives for that
version (presets differ between versions: the first line names the version, a file for another is refused).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

from .native import parse_label

__all__ = ["VARIABLES", "FILE_VAR", "AdjustError", "Discovery", "Adjust", "discover", "trim", "write", "parse", "NAME"]

NAME = "native.impi"
# What the pgmpitunelib module sets to the published file: libpgmpitune's MPI_Init sets the file's variables
# only in a job whose size lies in their process ranges (lib/src/core/native_env.c), never the module itself:
# once set, Intel MPI 2021.13 runs another algorithm even outside every range.
FILE_VAR = "PGMPITUNE_NATIVE_IMPI"
# collectives.def key -> the variable's collective
VARIABLES = {"allgather": "ALLGATHER", "allreduce": "ALLREDUCE", "alltoall": "ALLTOALL", "barrier": "BARRIER",
             "bcast": "BCAST", "gather": "GATHER", "reduce": "REDUCE", "reducescatter": "REDUCE_SCATTER",
             "reducescatterblock": "REDUCE_SCATTER_BLOCK", "scan": "SCAN", "scatter": "SCATTER"}
_KEY_OF = {f"I_MPI_ADJUST_{v}": k for k, v in VARIABLES.items()}
_MAX = 2 ** 31 - 1
_VERSION_LINE = re.compile(r"^# Intel MPI ([0-9][0-9.]*) I_MPI_ADJUST")
_RANGE = re.compile(r"^([0-9]+):([0-9]+)-([0-9]+)@([0-9]+)-([0-9]+)$")


class AdjustError(ValueError):
    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


@dataclass
class Discovery:
    version: str                                        # "2021.13"
    presets: dict[str, int] = field(default_factory=dict)   # key -> highest preset id (0 = the library decides)


def discover(env: dict | None = None, timeout: float = 60) -> Discovery:
    """Asks the installed Intel MPI (its bin/ first on PATH, I_MPI_ROOT and LD_LIBRARY_PATH set)."""
    ver = subprocess.run(["mpirun", "-V"], capture_output=True, text=True, env=env, timeout=timeout).stdout
    m = re.search(r"Version (\d+\.\d+)", ver)
    if not m:
        raise AdjustError("mpirun -V", None, "not an Intel MPI mpirun (no 'Version <x.y>')")
    d = Discovery(m.group(1))
    for key, coll in VARIABLES.items():          # impi_info describes one variable per call
        out = subprocess.run(["impi_info", "-v", f"I_MPI_ADJUST_{coll}"], capture_output=True, text=True, env=env,
                             timeout=timeout).stdout
        mm = re.match(rf"^I_MPI_ADJUST_{coll}\s.*?range:\s*0-(\d+)", out, re.S)
        if mm:
            d.presets[key] = int(mm.group(1))
    if not d.presets:
        raise AdjustError("impi_info -v", None, "no I_MPI_ADJUST_<COLL> preset ranges printed")
    return d


@dataclass
class Adjust:
    version: str
    # key -> [(preset, lo, hi, pmin, pmax)] in file order
    table: dict[str, list[tuple[int, int, int, int, int]]] = field(default_factory=dict)

    def lookup(self, key: str, nprocs: int, nbytes: int) -> int:
        """The preset a call gets (0: the library decides)."""
        for preset, lo, hi, pmin, pmax in self.table.get(key, ()):
            if lo <= nbytes <= hi and pmin <= nprocs <= pmax:
                return preset
        return 0

    def environment(self) -> dict[str, str]:
        return {f"I_MPI_ADJUST_{VARIABLES[k]}": ";".join(f"{a}:{lo}-{hi}@{p}-{q}" for a, lo, hi, p, q in rows)
                for k, rows in self.table.items()}


def _preset(key: str, label: str, d: Discovery) -> int:
    v = parse_label(label)
    if v is None or v.seg is not None or not v.name.isdigit():
        raise ValueError(f"{key}: {label!r} is no Intel MPI preset (native:<preset id>, no segment size)")
    a = int(v.name)
    if not 1 <= a <= d.presets.get(key, 0):
        raise ValueError(f"{key}: Intel MPI {d.version} has presets 1-{d.presets.get(key, 0)}, not {a}")
    return a


def trim(decisions) -> tuple[list, dict[str, str]]:
    """The decisions a native.impi can hold exactly, and {collective: why} for those it must leave to the
    library.  Once I_MPI_ADJUST_<COLL> is set, Intel MPI 2021.13 runs another algorithm outside every range than
    with the variable unset (fingerprints, 2 ranks: with only 3:4096-... set, MPI_Allreduce changes at 16 B and
    64 B-2 KiB; with 0:0-4095 added, the same; preset 0 is a fixed algorithm, not the library's table; Intel's
    JSON tuning file, I_MPI_TUNING, behaves alike: tests/bench/intel_ranges_probe.py), so a range cannot leave
    a size to the library's default, and no
    preset is the default (the default's fingerprint matches 7-19 of the 32 allreduce presets at every size
    measured, and the default switches between measured sizes: tests/bench/intel_fill_probe.py).  So a
    collective is written only where a preset is chosen at every size measured at its process count (its ranges
    then cover 0-2147483647 there): a preset that won, or at a size where the default won, one measured as fast
    as the default there (service/analysis/native_decision.fill_candidate: the decision's fill, validated like
    every range; floating-point result bits may differ from the default's there as under Open MPI's and MPICH's
    native files, integer and exact results never: docs/native-result-bits.md).  A collective with a "default"
    decision left (no preset as fast there) gets no variable at all: the library's own choice, everywhere."""
    by: dict[str, list] = {}
    for dec in decisions:
        by.setdefault(dec.key, []).append(dec)
    keep, why = [], {}
    for key, decs in sorted(by.items()):
        if all(x.label == "default" for x in decs):
            continue
        left = sorted((x.nprocs, x.nbytes) for x in decs if x.label == "default")
        if left:
            why[key] = (f"the library's default won at {', '.join(f'{b} B (p={p})' for p, b in left[:6])}"
                        f"{' ...' if len(left) > 6 else ''} and no preset was measured as fast there; once "
                        f"I_MPI_ADJUST_{VARIABLES.get(key, key.upper())} is set, Intel MPI runs another algorithm "
                        "outside every range, so no range can leave a size to the default")
        else:
            keep += decs
    return keep, why


def write(decisions, d: Discovery, comment: str = "pgmpi analyze native-files") -> str:
    """Decisions (ompi_rules.Decision: key, nprocs, nbytes from which the label holds) -> native.impi text.
    Only collectives whose every decision is a preset are written (trim: a gap would not be the default; the
    decision fills the default's sizes where it can); the others are named in a comment with the reason.
    ValueError when none is left."""
    for dec in decisions:
        if dec.key not in VARIABLES:
            raise ValueError(f"{dec.key}: Intel MPI has no I_MPI_ADJUST variable for it")
    kept, left = trim(decisions)
    if not kept:
        raise ValueError("nothing Intel MPI can hold exactly: " + "; ".join(f"{k}: {w}" for k, w in left.items())
                         if left else "no preset chosen anywhere")
    by: dict[str, dict[int, list]] = {}
    for dec in kept:
        by.setdefault(dec.key, {}).setdefault(dec.nprocs, []).append(dec)
    lines = [f"# Intel MPI {d.version} I_MPI_ADJUST variables, written by pgmpi-site: {comment}",
             "# <preset>:<message bytes lo>-<hi>@<processes min>-<max>.  Ranges cover every size at the process",
             "# counts measured: once a variable is set, Intel MPI 2021.13 runs another algorithm outside every",
             "# range, so where the default won a preset measured as fast fills the size, and a collective where",
             "# none was is left out (no variable: the library's own choice).  At other process counts Intel MPI",
             "# may run another algorithm than its default (not measured)."]
    lines += [f"# left to the library: {k}: {w}" for k, w in sorted(left.items())]
    for key in sorted(by):
        rows = []
        for p in sorted(by[key]):
            decs = sorted(by[key][p], key=lambda x: x.nbytes)
            for i, dec in enumerate(decs):
                hi = decs[i + 1].nbytes - 1 if i + 1 < len(decs) else _MAX
                lo = 0 if i == 0 else dec.nbytes
                a = _preset(key, dec.label, d)
                if rows and rows[-1][0] == a and rows[-1][2] + 1 == lo and rows[-1][3] == p:
                    rows[-1] = (a, rows[-1][1], hi, p, p)
                else:
                    rows.append((a, lo, hi, p, p))
        lines.append(f"I_MPI_ADJUST_{VARIABLES[key]}=" + ";".join(f"{a}:{lo}-{hi}@{p}-{q}" for a, lo, hi, p, q in rows))
    text = "\n".join(lines) + "\n"
    parse(text, "<generated native.impi>", d)
    return text


def parse(text: str, source: str, d: Discovery) -> Adjust:
    """Strict reader: what Intel MPI `d.version` would ignore or read otherwise is refused with the line."""
    lines = text.splitlines()
    m = _VERSION_LINE.match(lines[0]) if lines else None
    if not m:
        raise AdjustError(source, 1, "the first line must name the Intel MPI version (# Intel MPI <x.y> "
                                     "I_MPI_ADJUST ...): presets differ between versions")
    if m.group(1) != d.version:
        raise AdjustError(source, 1, f"written for Intel MPI {m.group(1)}, this is {d.version}: its presets may "
                                     "differ, and Intel MPI ignores one it does not have")
    adj = Adjust(d.version)
    for ln, line in enumerate(lines[1:], 2):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        name, eq, value = body.partition("=")
        if not eq or name not in _KEY_OF:
            raise AdjustError(source, ln, f"{name!r}: not an I_MPI_ADJUST variable pgmpi-site writes; valid: "
                                          + ", ".join(sorted(_KEY_OF)))
        key = _KEY_OF[name]
        if key in adj.table:
            raise AdjustError(source, ln, f"{name} appears twice (the environment keeps one)")
        rows = []
        for part in value.split(";"):
            r = _RANGE.match(part)
            if not r:
                raise AdjustError(source, ln, f"{name}: {part!r} is not <preset>:<lo>-<hi>@<pmin>-<pmax> (Intel MPI "
                                              "ignores a value it cannot read: 'Incorrect adjust value')")
            a, lo, hi, p, q = (int(x) for x in r.groups())
            top = d.presets.get(key, 0)
            if not 1 <= a <= top:
                raise AdjustError(source, ln, f"{name}: preset {a} is outside 1-{top} of Intel MPI {d.version} "
                                              "(it would ignore it: 'Incorrect algorithm')")
            if lo > hi or p > q or hi > _MAX:
                raise AdjustError(source, ln, f"{name}: range {part!r} is inverted or too large (Intel MPI accepts "
                                              "it silently; what it then does is not documented)")
            for a2, lo2, hi2, p2, q2 in rows:
                if lo <= hi2 and lo2 <= hi and p <= q2 and p2 <= q:
                    raise AdjustError(source, ln, f"{name}: {part!r} overlaps {a2}:{lo2}-{hi2}@{p2}-{q2} (which "
                                                  "wins is not documented)")
            rows.append((a, lo, hi, p, q))
        adj.table[key] = rows
    return adj
