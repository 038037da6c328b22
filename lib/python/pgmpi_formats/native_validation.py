"""Validating the MPI library's own decision file (native.rules / native.json) the way users get it: the cells
the file selects, and the figures of a validation job (the agent measures them, the service judges them:
service/analysis/native_validation.py).

    cells = cells_of_rules(text, discovery, nprocs)        # Open MPI rules file -> [Cell]
    cells = cells_of_json(tree, base, nprocs)              # MPICH JSON selection file -> [Cell]
    cells = cells_of_impi(impi_adjust.parse(...), nprocs)  # Intel MPI native.impi -> [Cell]
    cells = at_decided(cells, decided)  # measured where the decision measured: [(key, size, p)] of the candidate
    figs = figures(files)     # [(arm, round, raw text)] -> {(key, msize): per-round medians and checks}

A cell is one rule of the file at the job's communicator size: from `lo` bytes (ours, collectives.def) up
to the next rule the collective runs `label` ("default": the library's own decision, or
"native:<name>[:seg=<bytes>]").  It is measured at one size, `msize`, inside it: by itself the rule's first
power of two (8 B for a rule from 0 B), which the decision may never have measured; at_decided measures each
rule instead at every size the decision measured inside it (the candidate carries them), one cell per size,
and keeps the picked size only for a rule holding none of them (a range the file gives the library's own
choice that no measured cell decided: the control that the file changed nothing there).

The job (scheduler/native_validation.py) runs rounds of two mpiruns each, in alternating order:
  arm "file"    `module load` of the candidate set: the library reads the file; pgmpi-bench measures
                `default` (= the file's choice) and runs its check round, with a non-commutative user
                operation at every reduction cell (`#@pgmpi noncommutative` lines);
  arm "forced"  the same module without the file's variables: `default` (the library's built-in decision)
                and every label of the file forced (native:<name>), interleaved in the one mpirun.
Open MPI applies a rules file before any forced algorithm on every communicator, so the file and the
forced variants cannot share an mpirun; the two arms of a round are paired instead.
Intel MPI reads its presets (I_MPI_ADJUST_<COLL>) once at MPI_Init, so nothing can be forced next to the
default inside one mpirun: its "forced" arm measures the library's default alone (PGMPI_NATIVE_EVIDENCE=1
asks pgmpi-bench for the fingerprint there), and every preset label of the file runs in an mpirun of its
own, arm "preset:<label>" (I_MPI_ADJUST_<COLL>=<preset> without ranges), whose `default` rows are that label's;
all of a round's mpiruns carry the round as #@mpirun_index and are paired by it.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace

from . import collectives as _colls
from . import footer
from .mpich_json import MPICH_NAMES
from .native import Discovery, format_label
from .ompi_rules import _PER_BLOCK, parse_rules
from .results import parse_text

__all__ = ["Cell", "cells_of_rules", "cells_of_json", "cells_of_impi", "at_decided", "figures", "SMALLEST"]

SMALLEST = 8            # the smallest size a rule starting at 0 bytes is measured at (one double)
_MAXBYTES = 2 ** 31 - 1  # Intel MPI's largest range end (impi_adjust)
_GAP_TOP = 1 << 20      # an open gap above the last range is measured up to 1 MiB


@dataclass(frozen=True)
class Cell:
    key: str            # collectives.def key
    nprocs: int
    lo: int             # our bytes: the rule starts here
    hi: int | None      # our bytes: the next rule starts after this (None: no upper end)
    label: str          # default | native:<name>[:seg=<bytes>]
    msize: int          # where the job measures it

    def to_json(self) -> dict:
        return asdict(self)


def _pick(lo: int, hi: int | None) -> int:
    """One size inside [lo, hi]: the rule's first power of two >= max(lo, SMALLEST) when it fits."""
    s = SMALLEST
    while s < lo:
        s *= 2
    if hi is not None and s > hi:
        s = max(lo, 1)
    return s


def cells_of_rules(text: str, discovery: Discovery, nprocs: int, source: str = "native.rules") -> list[Cell]:
    """The rules Open MPI applies at communicator size nprocs (the largest listed size <= nprocs, the first
    listed when all are larger), as cells; Open MPI's message sizes converted back to ours."""
    rules = parse_rules(text, source, discovery)
    names = {k: {a.value: a.name for a in v} for k, v in discovery.algorithms.items()}
    out = []
    for key, sizes in sorted(rules.table.items()):
        listed = sorted(sizes)
        fit = [s for s in listed if s <= nprocs]
        rows = sizes[fit[-1] if fit else listed[0]]
        div = nprocs if key in _PER_BLOCK else 1
        for i, (m, alg, _fan, seg) in enumerate(rows):
            lo = -(-m // div)
            hi = (rows[i + 1][0] - 1) // div if i + 1 < len(rows) else None
            label = "default" if alg == 0 else format_label(names[key][alg], seg if seg > 0 else None)
            out.append(Cell(key, nprocs, lo, hi, label, _pick(lo, hi)))
    return out


def _top(lo: int, hi: int) -> int:
    """The largest power of two >= SMALLEST inside [lo, hi] (lo when there is none)."""
    s = SMALLEST
    while s * 2 <= hi:
        s *= 2
    return s if lo <= s <= hi else lo


def cells_of_impi(adj, nprocs: int) -> list[Cell]:
    """The ranges of an Intel MPI native.impi (impi_adjust.parse) whose process range holds nprocs, as cells;
    the gaps between and after them are meant to stay the library's own choice ("default" cells), measured at
    both ends: Intel MPI 2021.13 does not keep its own choice outside the ranges of a variable that is set (the
    fingerprint of MPI_Allreduce at 64 B-32 KiB changes when only 3:65536-... is set; scheduler/README.md), so the
    validation must see the gaps where they are widest apart from the lowest size."""
    out = []
    for key, rows in sorted(adj.table.items()):
        here = sorted((lo, hi, a) for a, lo, hi, p, q in rows if p <= nprocs <= q)
        gaps, at = [], 0
        for lo, hi, a in here:
            if lo > at:
                gaps.append((at, lo - 1))
            out.append(Cell(key, nprocs, lo, hi, format_label(str(a)), _pick(lo, hi)))
            at = hi + 1
        if here and at <= _MAXBYTES:
            gaps.append((at, _MAXBYTES))
        for lo, hi in gaps:
            first, top = _pick(lo, hi), _top(lo, min(hi, _GAP_TOP))
            if top > first:       # two cells splitting the gap where the top one is measured
                out += [Cell(key, nprocs, lo, top - 1, "default", first), Cell(key, nprocs, top, hi, "default", top)]
            else:
                out.append(Cell(key, nprocs, lo, hi, "default", first))
    return sorted(out, key=lambda c: (c.key, c.lo))


def at_decided(cells: list[Cell], decided) -> list[Cell]:
    """The cells of a file measured where its decision was made: `decided` is the (key, size, p) cells the
    decision measured (a native candidate's `decided_at`; None or empty: the picked sizes, as before).  Each
    rule becomes one cell per decided size of its collective at its p inside [lo, hi]; a rule holding none
    keeps its picked size.  So a choice made at 32 B is validated at 32 B, not at 8 B where it was never
    measured, and every rule is still measured somewhere."""
    at: dict[tuple[str, int], set[int]] = {}
    for key, size, p in decided or ():
        at.setdefault((str(key), int(p)), set()).add(int(size))
    out = []
    for c in cells:
        inside = sorted(s for s in at.get((c.key, c.nprocs), ()) if c.lo <= s and (c.hi is None or s <= c.hi))
        out.extend([replace(c, msize=s) for s in inside] or [c])
    return out


def _comm_size_matches(cond: str, p: int) -> bool | None:
    """MPICH's comm_size conditions; None: not a comm_size key."""
    if not cond.startswith("comm_size"):
        return None
    rest = cond[len("comm_size"):]
    if rest in ("=any",):
        return True
    if rest == "=pow2":
        return p & (p - 1) == 0
    for op in ("<=", "<", "=", ">=", ">"):
        if rest.startswith(op) and rest[len(op):].isdigit():
            n = int(rest[len(op):])
            return {"<=": p <= n, "<": p < n, "=": p == n, ">=": p >= n, ">": p > n}[op]
    return False


def _leaf_label(key: str, node: dict, builtin: dict) -> str | None:
    if node == builtin:
        return "default"
    if len(node) == 1:
        (k, v), = node.items()
        cap = MPICH_NAMES[key][1]
        for stem in (f"algorithm=MPIR_{cap}_intra_", f"algorithm=MPIR_{cap}_allcomm_"):
            if k.startswith(stem) and v == {}:
                return format_label(k[len(stem):])
    return None


def cells_of_json(tree: dict, base: dict, nprocs: int) -> list[Cell]:
    """The branches an intra-communicator call at nprocs reaches in a selection file whose collective differs
    from the built-in tree, as cells (first match wins; a commutativity / built-in-op branch is the path of
    non-commutative calls, not a cell; avg_msg_size is our size for these calls, mpich_json's docstring)."""
    out = []
    for key, (mname, _cap) in sorted(MPICH_NAMES.items()):
        ckey = f"collective={mname}"
        if ckey not in tree or tree.get(ckey) == base.get(ckey):
            continue
        builtin = (base.get(ckey) or {}).get("comm_type=intra")
        node = tree[ckey].get("comm_type=intra")
        while isinstance(node, dict) and node != builtin:
            hit = None
            for cond, sub in node.items():
                m = _comm_size_matches(cond, nprocs)
                if m is None:
                    break
                if m:
                    hit = sub
                    break
            if hit is None:
                break
            node = hit
        if not isinstance(node, dict) or node == builtin:
            continue
        lo = 0
        for cond, sub in node.items():
            if cond in ("is_commutative=no", "is_op_built_in=no"):
                continue
            if cond.startswith("avg_msg_size<="):
                hi = int(cond.split("<=", 1)[1])
            elif cond == "avg_msg_size=any":
                hi = None
            else:
                break
            label = _leaf_label(key, sub, builtin)
            if label is not None and (hi is None or hi >= lo):
                out.append(Cell(key, nprocs, lo, hi, label, _pick(lo, hi)))
            if hi is None:
                break
            lo = hi + 1
    return out


def figures(files: list[tuple[str, int, str]]) -> dict:
    """Per (key, msize) as "key:msize": per round the median run-time of the file's choice ("file"), the
    built-in default ("default") and each forced label; the check outcomes per arm and label, the reductions'
    algorithm fingerprints (pgmpi-bench's `#@pgmpi fingerprint`, lib/bench/bench_check.c) per arm and label,
    and the rounds in which the file arm ran a non-commutative operation there.  files: (arm "file" | "forced" |
    "preset:<label>", round, raw text); a preset arm's `default` rows and records are its label's."""
    out: dict[str, dict] = {}
    for arm, rnd, text in files:
        run = parse_text(text, f"{arm} round {rnd}")
        preset = arm.split(":", 1)[1] if arm.startswith("preset:") else None

        def name_of(alg: str) -> str:
            return "file" if arm == "file" else (preset if preset and alg == "default" else alg)
        by: dict[tuple[str, int, str], list[float]] = {}
        for t, m, x, a in zip(run.test.tolist(), run.msize.tolist(), run.runtime.tolist(), run.algorithm.tolist()):
            by.setdefault((run.tests[t], m, run.algorithms[a]), []).append(x)
        for (call, m, alg), xs in by.items():
            coll = _colls.by_mpi_name(call)
            if coll is None:
                continue
            cell = out.setdefault(f"{coll.key}:{m}", {"key": coll.key, "msize": m, "rounds": {}, "checks": {},
                                                     "noncommutative": [], "fingerprints": {}})
            cell["rounds"].setdefault(str(rnd), {})[name_of(alg)] = statistics.median(xs)
        for rec in map(footer.parse_line, run.pgmpi_lines):
            # the check round's records: check, noncommutative, fingerprint (pgmpi_formats/footer.py)
            if not isinstance(rec, (footer.Check, footer.NonCommutative, footer.Fingerprint)):
                continue
            coll = _colls.by_mpi_name(rec.call)
            if coll is None:
                continue
            cell = out.setdefault(f"{coll.key}:{rec.msize}", {"key": coll.key, "msize": rec.msize,
                                                             "rounds": {}, "checks": {}, "noncommutative": [],
                                                             "fingerprints": {}})
            name = name_of(rec.algorithm)
            if isinstance(rec, footer.Fingerprint):
                cell["fingerprints"].setdefault(name, []).append(rec.value)
            elif isinstance(rec, footer.NonCommutative):
                if arm == "file":
                    cell["noncommutative"].append(rnd)
            else:
                cell["checks"].setdefault(name, []).append("ok" if rec.ok else ("fail " + rec.why)[:205])
    return out
