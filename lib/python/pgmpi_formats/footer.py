"""The one reader of the `#@pgmpi <kind> ...` footer records of a raw-results file (lib/bench/README.md,
"Output"; lib/docs/results-format.md): each line a typed record.  The results reader keeps the raw lines
in RunResult.pgmpi_lines (and the service in runs.footer); every consumer reads them through here.

    for rec in records(run.pgmpi_lines, Check):          # only the check lines, typed
        if rec.status == "fail": ...
    rec = parse_line("#@pgmpi served 3 MPI_Bcast 4096 native:bcast_binomial")   # -> Served(...)

A line of a kind this module does not know, or a malformed line of a known kind, reads as None (the
consumers skip it, as they always did); read_line raises FooterError on a malformed line instead (the
results reader refuses a bad `alg` line with its file:line).

| kind           | written by                 | record                                                   |
|----------------|----------------------------|----------------------------------------------------------|
| alg            | libpgmpitune's report      | Alg(call, msize, algorithm)                              |
| count          | libpgmpitune's report      | Count(call, msize, algorithm, n)                         |
| fallback       | libpgmpitune's report      | Fallback(call, msize, algorithm, n)                      |
| config         | libpgmpitune's report      | Config(key, value)                                       |
| nrep           | pgmpi-bench                | Nrep(call, msize, n)                                     |
| check          | pgmpi-bench's check round  | Check(call, msize, algorithm, status, why)               |
| noncommutative | pgmpi-bench's check round  | NonCommutative(call, msize, algorithm)                   |
| fingerprint    | pgmpi-bench's check round  | Fingerprint(call, msize, algorithm, value)               |
| served         | pgmpi-bench --serve        | Served(seq, call, msize, labels, blocks)                 |
| dtcase         | pgmpi-dtbench              | DtCase(test, pattern, layout, variant, A, basetype, signature) |
| dtsig          | pgmpi-dtbench              | DtSig(test, msize, description, signature, message)      |
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, TypeVar

SIGNATURE_RE = re.compile(r"^[0-9a-f]{16}$")     # libpgmpitune's layout signature: 16 lowercase hex digits


class FooterError(ValueError):
    """A malformed line of a known kind; the message says what the kind expects."""


@dataclass(frozen=True)
class Alg:
    call: str          # MPI name as written (MPI_Allreduce)
    msize: int
    algorithm: str


@dataclass(frozen=True)
class Count:
    call: str
    msize: int
    algorithm: str
    n: int


@dataclass(frozen=True)
class Fallback(Count):
    """n calls of the cell fell back to the library's own (the rows labelled with the algorithm are not it)."""


@dataclass(frozen=True)
class Config:
    key: str
    value: str         # the rest of the line, single-spaced ("" when none)


@dataclass(frozen=True)
class Nrep:
    call: str
    msize: int
    n: int


@dataclass(frozen=True)
class Check:
    call: str
    msize: int
    algorithm: str
    status: str        # ok | fail
    why: str = ""      # "<reason> <details>" of a failure

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class NonCommutative:
    call: str
    msize: int
    algorithm: str


@dataclass(frozen=True)
class Fingerprint:
    call: str
    msize: int
    algorithm: str
    value: str         # "<hash rank 0>:<hash rank 1>..." or "unstable"


@dataclass(frozen=True)
class Served:
    seq: int           # the n-th cell pgmpi-bench --serve measured on request
    call: str
    msize: int
    labels: tuple[str, ...]    # the algorithms measured in that cell ("-": none named)
    blocks: int = 0    # "cell ... blocks=<k>": each label alone in alternating blocks of k repetitions (0: not)


@dataclass(frozen=True)
class DtCase:
    test: str
    pattern: str
    layout: str
    variant: int
    A: int
    basetype: str
    signature: str = ""    # the layout signature pgmpi-dtbench recorded (lib/docs/profile-format.md); "" none

    @property
    def layout_label(self) -> str:
        if self.layout == "contiguous":
            return "contiguous"
        if self.layout in ("altrep", "rowcol"):
            return f"{self.layout} A={self.A}"
        return f"{self.layout} v{self.variant} A={self.A}"

    @property
    def reference(self) -> str:
        return "indexed_block" if self.layout == "rowcol" else "typed"


@dataclass(frozen=True)
class DtSig:
    test: str
    msize: int
    description: str
    signature: str         # the description's own type's layout signature
    message: str = ""      # the whole message's (count x type), "" when not recorded


Record = Alg | Count | Fallback | Config | Nrep | Check | NonCommutative | Fingerprint | Served | DtCase | DtSig


def _size(tok: str, what: str) -> int:
    if not tok.isdigit():
        raise FooterError(f"{what}: the size must be a non-negative integer, got {tok!r}")
    return int(tok)


def _need(f: list[str], n: int, form: str, exact: bool = False) -> None:
    if len(f) < n or (exact and len(f) != n):
        raise FooterError(f"expected '#@pgmpi {form}'")


def _alg(f):
    if len(f) != 3 or not f[1].isdigit():
        raise FooterError("expected '#@pgmpi alg <MPI_Name> <bytes> <algorithm>'")
    return Alg(f[0], int(f[1]), f[2])


def _count(cls, kind):
    def read(f):
        _need(f, 4, f"{kind} <MPI_Name> <bytes> <algorithm> <n>")
        return cls(f[0], _size(f[1], kind), f[2], _size(f[3], kind))
    return read


def _config(f):
    _need(f, 1, "config <key> [value]")
    return Config(f[0], " ".join(f[1:]))


def _nrep(f):
    _need(f, 3, "nrep <MPI_Name> <bytes> <n>")
    return Nrep(f[0], _size(f[1], "nrep"), _size(f[2], "nrep"))


def _check(f):
    _need(f, 4, "check <MPI_Name> <bytes> <algorithm> ok|fail [<reason> <details>]")
    return Check(f[0], _size(f[1], "check"), f[2], f[3], " ".join(f[4:]))


def _noncommutative(f):
    _need(f, 3, "noncommutative <MPI_Name> <bytes> <algorithm>")
    return NonCommutative(f[0], _size(f[1], "noncommutative"), f[2])


def _fingerprint(f):
    _need(f, 4, "fingerprint <MPI_Name> <bytes> <algorithm> <hashes>")
    return Fingerprint(f[0], _size(f[1], "fingerprint"), f[2], f[3])


def _served(f):
    form = "served <n> <MPI_Name> <bytes> <labels> [blocks=<k>]"
    _need(f, 4, form)
    if len(f) > 5 or (len(f) == 5 and not re.fullmatch(r"blocks=[1-9][0-9]*", f[4])):
        raise FooterError(f"expected '#@pgmpi {form}'")
    blocks = int(f[4].split("=", 1)[1]) if len(f) == 5 else 0
    return Served(_size(f[0], "served"), f[1], _size(f[2], "served"), tuple(f[3].split(",")), blocks)


def _dtcase(f):
    _need(f, 1, "dtcase <test> pattern=.. layout=.. variant=.. A=.. basetype=.. [signature=..]")
    kv = dict(p.split("=", 1) for p in f[1:] if "=" in p)
    sig = kv.get("signature", "")
    try:
        return DtCase(f[0], kv["pattern"], kv["layout"], int(kv["variant"]), int(kv["A"]), kv["basetype"],
                      sig if SIGNATURE_RE.match(sig) else "")
    except (KeyError, ValueError) as exc:
        raise FooterError(f"dtcase {f[0]}: {exc!r} missing or not an integer") from None


def _dtsig(f):
    _need(f, 4, "dtsig <test> <bytes> <description> <signature> [count=..] [message=<signature>]")
    if not SIGNATURE_RE.match(f[3]):
        raise FooterError(f"dtsig: {f[3]!r} is no signature (16 lowercase hex digits)")
    msg = next((p[len("message="):] for p in f[4:] if p.startswith("message=")), "")
    return DtSig(f[0], _size(f[1], "dtsig"), f[2], f[3], msg if SIGNATURE_RE.match(msg) else "")


READERS: dict[str, Callable[[list[str]], Record]] = {
    "alg": _alg, "count": _count(Count, "count"), "fallback": _count(Fallback, "fallback"), "config": _config,
    "nrep": _nrep, "check": _check, "noncommutative": _noncommutative, "fingerprint": _fingerprint,
    "served": _served, "dtcase": _dtcase, "dtsig": _dtsig}


def kind_of(line: str) -> str:
    """The kind of a `#@pgmpi <kind> ...` line ("" for any other line)."""
    f = line.split(maxsplit=2)
    return f[1] if len(f) >= 2 and f[0] == "#@pgmpi" else ""


def read_line(line: str) -> Optional[Record]:
    """The record of one line; None for another line or an unknown kind; FooterError for a malformed line."""
    f = line.split()
    if len(f) < 2 or f[0] != "#@pgmpi" or f[1] not in READERS:
        return None
    return READERS[f[1]](f[2:])


def parse_line(line: str) -> Optional[Record]:
    """read_line, with None for a malformed line too (a consumer skips it)."""
    try:
        return read_line(line)
    except FooterError:
        return None


T = TypeVar("T")


def records(lines: Iterable[str], kind: type[T]) -> Iterator[T]:
    """The well-formed records of one type among `lines` (a run's pgmpi_lines, a stored footer), in order."""
    name = next(k for k, r in KIND_OF.items() if r is kind)
    for line in lines:
        if kind_of(line) == name:
            rec = parse_line(line)
            if rec is not None:
                yield rec


KIND_OF = {"alg": Alg, "count": Count, "fallback": Fallback, "config": Config, "nrep": Nrep, "check": Check,
           "noncommutative": NonCommutative, "fingerprint": Fingerprint, "served": Served, "dtcase": DtCase,
           "dtsig": DtSig}


def case_of_line(line: str) -> DtCase | None:
    """One `#@pgmpi dtcase <test> pattern=.. layout=.. variant=.. A=.. basetype=.. [signature=<16 hex>]` line,
    None for any other line (or a malformed one: the case is then not analysed)."""
    rec = parse_line(line)
    return rec if isinstance(rec, DtCase) else None
