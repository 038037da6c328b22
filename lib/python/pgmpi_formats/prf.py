""".prf profiles (lib/docs/profile-format.md): the one Python reader and writer. Plain Python, no numpy.

    prof = parse_prf(text, "allreduce_p16.prf")   # {mpi_name, nprocs, algorithms, ranges, meta}
    text = format_prf("MPI_Allreduce", 16, [(8, 1024, "allreduce_as_reduce_bcast")], meta={...})
    redirected_ranges(prof)                       # [(first, last, mock-up)] without "default"

Message sizes: a file holds PGMPITuneLib's message size; everything else in pgmpi-site (raw results,
analysis, validation figures) holds the n of collectives.def. They differ for one collective only:
MPI_Reduce_scatter_block, where PGMPITuneLib keys a profile on the block each process receives
(recvcount x type size) and collectives.def's n is the whole vector (block x p). This module converts at
the edge, both ways, in `to_file_range` / `from_file_bytes`; `ranges` of a parsed profile and the ranges
given to `format_prf` are in collectives.def bytes. The C library converts the same way at its lookup
(pgmpi_profile_key_bytes in lib/src/core/pgmpi_internal.h).

PGMPITuneLib's reader (the anchor the files must stay readable by) reads each line into a 100-byte buffer,
skips only lines whose first character is `#`, and reads the MPI name into 40 bytes, a mock-up name into 60
and the sizes as C ints. The writer keeps every line within `MAX_LINE` characters, writes no blank line,
and refuses names and sizes beyond those limits (tests/python/formats/test_prf.py checks each limit).
"""
from __future__ import annotations

import re

from pgmpi_formats import collectives as _colls
from pgmpi_formats.layouts import parse_layout

MAX_LINE = 98          # + newline + NUL = PGMPITuneLib's 100-byte line buffer
MAX_MPI_NAME = 39      # its 40-byte buffer for the MPI name
MAX_ALG_NAME = 59      # its 60-byte buffer for a mock-up name
MAX_BYTES = 2**31 - 1  # its sizes are C ints
PROFILE_VERSION = 1

_KEY_OK = re.compile(r"^[a-z_]+$")


class ProfileFormatError(ValueError):
    """A profile that cannot be read or written; str() names source:line where there is one."""


def _per_block(mpi_name: str) -> bool:
    c = _colls.by_mpi_name(mpi_name)
    return c is not None and c.enum == "REDUCE_SCATTER_BLOCK"


def to_file_range(mpi_name: str, nprocs: int, lo: int, hi: int) -> tuple[int, int] | None:
    """An inclusive range of collectives.def bytes -> the range a .prf file holds, covering exactly the same
    calls; None when it covers none.  For Reduce_scatter_block a call's n is block x p, so n in [lo, hi]
    exactly when the block is in [ceil(lo / p), floor(hi / p)]."""
    if not _per_block(mpi_name):
        return lo, hi
    a, b = -(-lo // nprocs), hi // nprocs
    return (a, b) if a <= b else None


def from_file_bytes(mpi_name: str, nprocs: int, b: int) -> int:
    """The bytes a .prf file holds -> collectives.def bytes."""
    return b * nprocs if _per_block(mpi_name) else b


def effective_ranges(mpi_name: str, nprocs: int, ranges: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The ranges that cover at least one call (a Reduce_scatter_block range narrower than p bytes may not)."""
    return [r for r in ranges if to_file_range(mpi_name, nprocs, r[0], r[1]) is not None]


def parse_prf(text: str, source: str = "<profile>") -> dict:
    """Read one .prf profile as PGMPITuneLib's reader does: lines starting with `#` skipped, anything after
    a line's first tokens is a comment.  Returns {mpi_name, nprocs, algorithms {id: name}, ranges
    [(first, last, algorithm name)] in collectives.def bytes, meta {#@pgmpi key: value}}; raises
    ProfileFormatError naming source:line."""
    toks: list[tuple[int, list[str]]] = []
    meta: dict[str, str] = {}
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#@pgmpi"):
            parts = s[7:].split(None, 1)
            if parts:
                meta[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
        if s and not s.startswith("#"):
            toks.append((no, s.split("#", 1)[0].split()))
    pos = 0

    def take(n: int, what: str) -> tuple[int, list[str]]:
        nonlocal pos
        if pos >= len(toks):
            raise ProfileFormatError(f"{source}: ends before {what}")
        no, t = toks[pos]
        pos += 1
        if len(t) < n:
            raise ProfileFormatError(f"{source}:{no}: {what} needs {n} field(s)")
        return no, t

    def number(no: int, tok: str, what: str) -> int:
        try:
            return int(tok)
        except ValueError:
            raise ProfileFormatError(f"{source}:{no}: {what}: {tok!r} is not an integer") from None

    _, t = take(1, "the MPI name")
    name = t[0]
    no, t = take(1, "the number of processes")
    nprocs = number(no, t[0], "number of processes")
    if nprocs <= 0:
        raise ProfileFormatError(f"{source}:{no}: number of processes must be > 0, got {nprocs}")
    no, t = take(1, "the number of algorithms")
    algs = {}
    for _ in range(number(no, t[0], "number of algorithms")):
        no, t = take(2, "an `<id> <name>` line")
        algs[number(no, t[0], "algorithm id")] = t[1]
    no, t = take(1, "the number of ranges")
    ranges = []
    for _ in range(number(no, t[0], "number of ranges")):
        no, t = take(3, "a `<first> <last> <id>` range")
        alg = algs.get(number(no, t[2], "algorithm id"))
        if alg is None:
            raise ProfileFormatError(f"{source}:{no}: range names algorithm id {t[2]}, not listed above")
        lo, hi = number(no, t[0], "first byte"), number(no, t[1], "last byte")
        ranges.append((from_file_bytes(name, nprocs, lo), from_file_bytes(name, nprocs, hi), alg))
    return {"mpi_name": name, "nprocs": nprocs, "algorithms": algs, "ranges": ranges, "meta": meta}


def redirected_ranges(prof: dict) -> list[tuple[int, int, str]]:
    """The ranges of a parsed profile that switch away from the default."""
    return [(lo, hi, alg) for lo, hi, alg in prof["ranges"] if alg != "default"]


def profile_layout(prof: dict) -> str:
    """The `#@pgmpi layout` of a parsed profile ("2x2"), "" for a profile of every layout of its p."""
    return prof.get("meta", {}).get("layout", "").strip()


def profile_filename(key: str, nprocs: int, layout: str = "") -> str:
    """`<key>_p<nprocs>.prf`, or `<key>_p<nprocs>_<nodes>x<ppn>.prf` for a layout profile."""
    return f"{key}_p{nprocs}" + (f"_{layout}" if layout else "") + ".prf"


def meta_token(value) -> str:
    """A value as one whitespace-free token (spaces become _)."""
    return "_".join(str(value).split()) or "unknown"


def format_prf(mpi_name: str, nprocs: int, ranges: list[tuple[int, int, str]], *,
               meta: dict[str, object] | None = None, comments: list[str] = (),
               range_notes: list[str] | None = None) -> str:
    """The text of one profile. ranges: [(first, last, mock-up)] in collectives.def bytes, written in
    PGMPITuneLib's bytes; meta: `#@pgmpi` keys (profile_version is added; values that must be one token
    are the caller's to make so, with meta_token); comments: free `#` lines,
    wrapped to MAX_LINE; range_notes: one comment per range, cut to fit its line."""
    if len(mpi_name) > MAX_MPI_NAME or _colls.by_mpi_name(mpi_name) is None:
        raise ProfileFormatError(f"{mpi_name!r}: not a collective of collectives.def")
    if nprocs <= 0:
        raise ProfileFormatError(f"{mpi_name}: number of processes must be > 0, got {nprocs}")
    if nprocs > 0:
        ranges = effective_ranges(mpi_name, nprocs, ranges)
    if not ranges:
        raise ProfileFormatError(f"{mpi_name}: no range that covers a call; PGMPITuneLib needs at least one")
    names: list[str] = []
    for _, _, m in ranges:
        if m not in names:
            if len(m) > MAX_ALG_NAME or not re.fullmatch(r"[a-z0-9_]+", m):
                raise ProfileFormatError(f"{m!r}: not a mock-up name of at most {MAX_ALG_NAME} characters")
            names.append(m)
    ids = {m: k + 1 for k, m in enumerate(names)}
    layout = (meta or {}).get("layout")
    if layout:
        nodes_ppn = parse_layout(str(layout))
        if nodes_ppn is None or nodes_ppn[0] * nodes_ppn[1] != nprocs:
            raise ProfileFormatError(f"{mpi_name}: layout {layout!r} is not <nodes>x<ppn> with nodes x ppn = {nprocs}")
    lines = ["# pgtune profile", f"#@pgmpi profile_version {PROFILE_VERSION}"]
    for key, value in (meta or {}).items():
        if value is None or value == "" or key == "profile_version":
            continue
        if not _KEY_OK.match(key):
            raise ProfileFormatError(f"{key!r}: not a #@pgmpi key")
        lines.append(f"#@pgmpi {key} {' '.join(str(value).split())}"[:MAX_LINE])
    for c in comments:
        lines += _wrap("# ", c)
    lines += [mpi_name, f"{nprocs} # nb. of processes", f"{len(names)} # nb. of mock-up impl."]
    lines += [f"{ids[m]} {m}" for m in names]
    lines.append(f"{len(ranges)} # nb. of ranges")
    for k, (lo, hi, m) in enumerate(ranges):
        a, b = to_file_range(mpi_name, nprocs, lo, hi)
        if not 0 <= a <= b <= MAX_BYTES:
            raise ProfileFormatError(f"{mpi_name}: range {a}..{b} outside 0..{MAX_BYTES} (PGMPITuneLib's int)")
        line = f"{a} {b} {ids[m]}"
        note = range_notes[k] if range_notes else ""
        if note:
            line = (line + " # " + note)[:MAX_LINE].rstrip()
        lines.append(line)
    assert all(0 < len(x) <= MAX_LINE for x in lines)
    return "\n".join(lines) + "\n"


def _wrap(prefix: str, text: str) -> list[str]:
    out, cur = [], prefix
    for word in text.split():
        if len(cur) + len(word) + (0 if cur == prefix else 1) > MAX_LINE and cur != prefix:
            out.append(cur)
            cur = prefix
        cur += ("" if cur == prefix else " ") + word[:MAX_LINE - len(prefix)]
    if cur != prefix:
        out.append(cur)
    return out
