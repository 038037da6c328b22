"""Open MPI's classic dynamic rules file (coll/tuned, the 4.1 format): writer and a strict reader.

    text = write_rules(decisions, discovery)      # decisions: Decision(key, nprocs, nbytes, label), ours
    rules = parse_rules(text, source, discovery=d, unsafe=native.ORDER_UNSAFE["openmpi"])  # RulesError
    rules.lookup("allreduce", comm_size=2, ompi_bytes=65536) -> (alg, faninout, segsize)

The file (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c in Open MPI 4.1): whitespace-separated integers
and `#` comments; number of collectives; per collective its id (COLL_IDS, enum COLLTYPE of v4.1) and the
number of communicator sizes; per communicator size the size and the number of rules; per rule
`message_bytes algorithm faninout segsize`.  Open MPI takes the largest listed communicator size <= the
actual one (the first listed when all are larger), then the largest message size <= the call's.

Open MPI 4.1 ignores a malformed file silently (or fails the call), so the reader refuses, with the line
and the field, everything Open MPI would not apply as written: counts that do not match what follows,
negative numbers, leading zeros (read as octal), ids outside COLL_IDS, a first rule not at 0 bytes,
sizes not ascending, an algorithm the library does not offer, two_proc above 2 ranks, and an algorithm
that reorders the operands of a reduction (a rules file applies to every operation, commutative or not).

Versions (coll_tuned_dynamic_file.c): 4.1.8 and 5.0.7 on read an optional `rule-file-version-2` header --
with fscanf, so only as the file's very first bytes -- and then take a fifth integer on a rule's line
(max requests, alltoall) as part of the rule; older versions (4.1.4 here) read the header's "-2" as a count
and ignore the whole file silently, so the reader refuses a header where the version has none.  The
writer puts the header where the target version reads it (version 2), nowhere else.  Algorithm numbers come
from that version's discovery (5.0.11 adds allgather sparbit = 7, which 4.1.4 refuses).

Message sizes are Open MPI's, not ours (collectives.def): ompi_bytes() converts.  They differ for the
calls whose size Open MPI multiplies by the communicator size (allgather, gather, scatter, alltoall: ours
is one block) and for scan, whose size Open MPI takes as type size x communicator size, ignoring count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import native
from .native import ORDER_UNSAFE, Discovery, parse_label

__all__ = ["COLL_IDS", "Decision", "RulesError", "Rules", "ompi_bytes", "write_rules", "parse_rules", "reads_header",
           "HEADER"]

# enum COLLTYPE, coll_base_functions.h, Open MPI 4.1 (collectives.def keys)
COLL_IDS = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7, "gather": 9, "reduce": 11,
            "reducescatter": 12, "reducescatterblock": 13, "scan": 14, "scatter": 15}
_KEY_OF = {v: k for k, v in COLL_IDS.items()}
MAX_COLL_ID = 22        # Open MPI refuses the whole file for an id >= COLLCOUNT (22 in 4.1)
_PER_BLOCK = {"allgather", "gather", "scatter", "alltoall"}
HEADER = "rule-file-version-2"


def reads_header(version: str) -> bool:
    """Whether Open MPI `version` reads the `rule-file-version-2` header (4.1.8+ in 4.1, 5.0.7+, later)."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", version or "")
    if not m:
        return False
    v = tuple(int(x) for x in m.groups())
    return (4, 1, 8) <= v < (5, 0, 0) or v >= (5, 0, 7)


class RulesError(ValueError):
    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


@dataclass(frozen=True)
class Decision:
    """One choice of the analysis: from `nbytes` (ours, collectives.def) up to the next decision of the same
    (key, nprocs), the collective runs `label` ("default" or "native:<name>[:seg=<bytes>]")."""
    key: str
    nprocs: int
    nbytes: int
    label: str


def ompi_bytes(key: str, nbytes: int, nprocs: int) -> int:
    """Our message size (collectives.def) -> the size Open MPI 4.1's decision compares."""
    if key in _PER_BLOCK:
        return nbytes * nprocs
    if key == "scan":
        raise ValueError("Open MPI's scan rules compare type size x communicator size, not the message: "
                         "a size-dependent scan rule cannot be expressed")
    return nbytes


@dataclass
class Rules:
    # key -> comm size -> [(msg_bytes, alg, faninout, segsize)], in file order
    table: dict[str, dict[int, list[tuple[int, int, int, int]]]] = field(default_factory=dict)

    def lookup(self, key: str, comm_size: int, ompi_bytes: int) -> tuple[int, int, int] | None:
        sizes = self.table.get(key)
        if not sizes:
            return None
        listed = sorted(sizes)
        fit = [s for s in listed if s <= comm_size]
        rules = sizes[fit[-1] if fit else listed[0]]
        best = None
        for m, a, f, s in rules:
            if m <= ompi_bytes:
                best = (a, f, s)
        return best


def _alg_fields(key: str, label: str, d: Discovery) -> tuple[int, int, int]:
    """(algorithm, faninout, segsize) as pgmpi-bench forced them: the fan-out Open MPI's forced path
    passes (coll_tuned_<coll>_algorithm_chain_fanout, from ompi_info) and the label's segment size."""
    if label == "default":
        return 0, 0, 0
    v = parse_label(label)
    if v is None:
        raise ValueError(f"{label!r} is neither 'default' nor a native algorithm (native:<name>[:seg=<bytes>])")
    return d.value(key, v.name), d.chain_fanout.get(key, 0), v.seg or 0


def write_rules(decisions: list[Decision], discovery: Discovery, comment: str = "",
                unsafe: set[tuple[str, str]] | frozenset | None = None) -> str:
    """Decisions -> rules text.  Per (collective, nprocs) the decisions are sorted by size; the first one
    starts at 0 bytes (Open MPI needs a rule at 0), each runs until the next.  "default" is algorithm 0:
    Open MPI's own fixed decision.  A choice holds only for the process count it was measured at: the
    file gives every other count algorithm 0 (a size-1 entry below the smallest measured count, since
    Open MPI applies the first entry to smaller communicators, and one at p+1 above each measured p)."""
    if discovery.library != "openmpi":
        raise ValueError(f"a rules file is Open MPI's; these algorithms are {discovery.library}'s")
    by: dict[str, dict[int, list[Decision]]] = {}
    for dec in decisions:
        if dec.key not in COLL_IDS:
            raise ValueError(f"{dec.key}: Open MPI's rules file has no collective id for it")
        by.setdefault(dec.key, {}).setdefault(dec.nprocs, []).append(dec)
    header = reads_header(discovery.version)
    out = ([HEADER] if header else []) + [
           f"# Open MPI {discovery.version or '4.1'} coll/tuned dynamic rules "
           f"({'version 2' if header else 'classic'} format), written by pgmpi-site" + (f": {comment}" if comment else ""),
           *([f"# governs coll/tuned on single-node communicators; across nodes coll/han serves the call "
               f"(Open MPI {discovery.version}) and these rules reach only its sub-communicators"]
             if native.governing_component("openmpi", discovery.version, 2) == "han" else []),
           "# collectives; per collective: id, communicator sizes; per size: size, rules;",
           "# per rule: message_bytes algorithm faninout segsize", f"{len(by)}"]
    for key in sorted(by, key=COLL_IDS.get):
        out.append(f"{COLL_IDS[key]}  # {key}")
        measured = sorted(by[key])
        sizes = sorted(set(measured) | {1} | {p + 1 for p in measured if p + 1 not in by[key]})
        out.append(f"{len(sizes)}")
        for p in sizes:
            if p not in by[key]:
                out.append(f"{p}  # communicator size: the library decides")
                out.append("1")
                out.append("0 0 0 0")
                continue
            decs = sorted(by[key][p], key=lambda x: x.nbytes)
            rows = []
            for i, dec in enumerate(decs):
                lo = 0 if i == 0 else ompi_bytes(key, dec.nbytes, p)
                alg, fan, seg = _alg_fields(key, dec.label, discovery)
                if rows and rows[-1][1:4] == (alg, fan, seg):
                    continue                                    # same choice as the range before: merge
                rows.append((lo, alg, fan, seg, dec.label))
            out.append(f"{p}  # communicator size")
            out.append(f"{len(rows)}")
            out.extend(f"{m} {a} {f} {s}  # {label}" for m, a, f, s, label in rows)
    text = "\n".join(out) + "\n"
    # what is written must pass the reader's checks (never an unsafe or silently ignored file)
    parse_rules(text, "<generated rules>", discovery,
                ORDER_UNSAFE.get("openmpi", frozenset()) if unsafe is None else unsafe)
    return text


_INT = re.compile(r"^-?[0-9]+$")


def parse_rules(text: str, source: str = "<rules>", discovery: Discovery | None = None,
                unsafe: set[tuple[str, str]] | frozenset = frozenset(), version: str | None = None) -> Rules:
    """Strict reader (see the module docstring for what it refuses); `unsafe`: (key, name) pairs whose
    algorithm reorders a reduction's operands (pgmpi_formats.native.ORDER_UNSAFE); `version`: the Open MPI
    the file is for (default: the discovery's)."""
    version = version if version is not None else (discovery.version if discovery else "")
    v2 = text.startswith("rule-file-version-")
    if v2:
        first = text.split("\n", 1)[0].split("#", 1)[0].strip()
        if first != HEADER:
            raise RulesError(source, 1, f"{first!r}: the only version header Open MPI knows is {HEADER}")
        if not reads_header(version):
            raise RulesError(source, 1, f"Open MPI {version or '(unknown version)'} reads no {HEADER} header (4.1.8 "
                                        "and 5.0.7 on do): it would read it as a count and ignore the whole file")
        text = text[len(HEADER):]
    toks: list[tuple[int, int]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if "rule-file-version" in line.split("#", 1)[0]:
            raise RulesError(source, lineno, f"a version header is read only as the file's first bytes (fscanf "
                                             "at the start): Open MPI would ignore the whole file")
        for t in line.split("#", 1)[0].split():
            if not _INT.match(t):
                raise RulesError(source, lineno, f"{t!r} is not an integer (Open MPI would ignore the whole file)")
            if t.startswith("-"):
                raise RulesError(source, lineno, f"negative number {t} (Open MPI would ignore the whole file)")
            if len(t) > 1 and t.startswith("0"):
                raise RulesError(source, lineno, f"{t} has a leading zero: Open MPI reads it as octal")
            toks.append((int(t), lineno))
    pos = 0

    def take(what: str) -> tuple[int, int]:
        nonlocal pos
        if pos >= len(toks):
            last = toks[-1][1] if toks else None
            raise RulesError(source, last, f"file ends where {what} should follow (a count is larger than "
                                           "what follows: Open MPI would ignore the whole file)")
        pos += 1
        return toks[pos - 1]

    rules = Rules()
    ncoll, ln = take("the number of collectives")
    if ncoll == 0:
        raise RulesError(source, ln, "no collectives")
    for _ in range(ncoll):
        cid, ln = take("a collective id")
        if cid >= MAX_COLL_ID:
            raise RulesError(source, ln, f"collective id {cid} >= {MAX_COLL_ID} (Open MPI would ignore the whole file)")
        if cid not in _KEY_OF:
            raise RulesError(source, ln, f"collective id {cid} is not one pgmpi-site tunes; valid: " +
                             ", ".join(f"{v} {k}" for k, v in sorted(COLL_IDS.items(), key=lambda kv: kv[1])))
        key = _KEY_OF[cid]
        if key in rules.table:
            raise RulesError(source, ln, f"collective id {cid} ({key}) appears twice")
        rules.table[key] = {}
        nsizes, ln = take(f"{key}'s number of communicator sizes")
        prev_p = 0
        for _ in range(nsizes):
            p, lp = take(f"{key}: a communicator size")
            if p <= prev_p:
                raise RulesError(source, lp, f"{key}: communicator size {p} not above the previous {prev_p}")
            prev_p = p
            nrules, lr = take(f"{key}, size {p}: the number of rules")
            if nrules == 0:
                raise RulesError(source, lr, f"{key}, size {p}: no rules")
            rows = []
            for i in range(nrules):
                m, lm = take(f"{key}, size {p}: rule {i + 1}'s message size")
                a, la = take(f"{key}, size {p}: rule {i + 1}'s algorithm")
                f, _ = take(f"{key}, size {p}: rule {i + 1}'s faninout")
                s, ls = take(f"{key}, size {p}: rule {i + 1}'s segment size")
                if v2 and pos < len(toks) and toks[pos][1] == ls:
                    take(f"{key}, size {p}: rule {i + 1}'s max requests")    # v2: a fifth field on the line
                if i == 0 and m != 0:
                    raise RulesError(source, lm, f"{key}, size {p}: the first rule starts at {m} bytes, not 0 "
                                                 "(Open MPI would ignore the whole file)")
                if rows and m <= rows[-1][0]:
                    raise RulesError(source, lm, f"{key}, size {p}: message size {m} not above the previous {rows[-1][0]}")
                if discovery is not None and a != 0:
                    names = {al.value: al.name for al in discovery.algorithms.get(key, ())}
                    if a not in names:
                        raise RulesError(source, la, f"{key}: algorithm {a} does not exist in this Open MPI; valid: 0 "
                                         "(the library decides), " + ", ".join(f"{v} {n}" for v, n in sorted(names.items())))
                    if names[a] == "two_proc" and p > 2:
                        raise RulesError(source, la, f"{key}: two_proc ({a}) at communicator size {p}: the call fails above 2 ranks")
                    if (key, names[a]) in unsafe:
                        raise RulesError(source, la, f"{key}: {names[a]} ({a}) reorders a reduction's operands; a rules "
                                         "file applies to non-commutative operations too")
                rows.append((m, a, f, s))
            rules.table[key][p] = rows
    if pos != len(toks):
        raise RulesError(source, toks[pos][1], f"{len(toks) - pos} number(s) after the last collective (a count is "
                                               "smaller than what follows: Open MPI would drop the rest silently)")
    return rules
