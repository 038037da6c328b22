"""Process counts between measured ones: a profile that spans them only where the neighbours agree and a
validation at an unmeasured count confirms (issue 33).

    cands, refused = span_candidates(profiles, measured)     # profiles: profiles.generate_profiles' output
    verdict = confirm(cand, figs, null_spread=None)           # figs: a validation at cand.at (unmeasured)
    cand = span_of(name, text)                                # a stored span file back (None: no span)
    keep, fates = carry_spans(live_files, new_files)          # the live spans a new publication keeps

A campaign measures some process counts p1 < p2 < ... of a collective (one node, or nodes unknown: the
profiles for p; a layout profile is for exactly its layout and never spans, lib/docs/profile-format.md). The
counts strictly between two consecutive measured ones, p_i < q < p_(i+1), were not measured. The rules:

1. Neighbours agree: both p_i and p_(i+1) have a profile, and the byte ranges both redirect to the same mock-up
   (their intersection, per mock-up) are not empty. A measured count where the default won, or where the two
   redirect elsewhere, is a disagreement: nothing spans, the counts between keep the library's default.
2. The candidate is one file, `<key>_p<lo>-<hi>.prf` with `#@pgmpi nprocs_range lo hi` (lo = p_i + 1,
   hi = p_(i+1) - 1: the measured counts keep their own profiles, so the process ranges never overlap) and
   line 2 = `at`, the count its validation runs at: the middle of the gap, a count nothing measured.
3. Each candidate is a profile version of its own (service/store/analyses.store_result): a validation job is
   one allocation at one process count and one verdict rewrites its version's files, so a span validated in
   the main candidate would either run at the wrong count or be dropped as "missing" there. Publishing a span
   adds its file to the live set (service/workflows/publish.publish_candidate).  A later publication of
   measured profiles keeps a live span when its two measured neighbours redirect exactly as before (the
   evidence it was built and confirmed on still holds) and drops it, with the reason, when either changed
   or is gone: it is validated again with its new neighbours (carry_spans).
4. Confirmed only by a validation at `at` (paired default/tuned mpiruns, validation.judge's rules: control
   sizes at 1.0, tuned not slower in any mpirun at every size inside a range, repair by dropping sizes). A
   validation at a measured count is not evidence for the gap and is refused. Unconfirmed: the default.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pgmpi_formats import collectives as _colls
from pgmpi_formats.prf import format_prf, meta_token as _tok, parse_prf
from . import validation as _val
from .profiles import profile_layout_of


@dataclass
class SpanCandidate:
    machine: str
    library: str
    version: str
    collective: str
    mpi_name: str
    neighbours: tuple[int, int]        # the measured counts that agree
    lo: int                            # the unmeasured counts covered, inclusive
    hi: int
    at: int                            # the count the validation runs at (line 2 of the file)
    ranges: list[tuple[int, int, str]] = field(default_factory=list)
    text: str = ""

    @property
    def filename(self) -> str:
        return f"{self.collective}_p{self.lo}-{self.hi}.prf"

    def to_dict(self) -> dict:
        return {"machine": self.machine, "library": self.library, "version": self.version,
                "collective": self.collective, "mpi_name": self.mpi_name, "neighbours": list(self.neighbours),
                "nprocs_range": [self.lo, self.hi], "validate_at": self.at, "filename": self.filename,
                "ranges": [{"first": a, "last": b, "mockup": m} for a, b, m in self.ranges], "text": self.text,
                "state": "candidate: publish only after a validation at p=%d confirms it" % self.at}


SPAN_MARK = "between measured"     # the comment that names a span's neighbours (span_of reads it back)
_NEIGHBOURS = re.compile(r"^#\s*" + SPAN_MARK + r" p=(\d+) and p=(\d+)", re.M)


def span_of(name: str, text: str, machine: str = "", library: str = "", version: str = "") -> SpanCandidate | None:
    """A span file (as span_candidates wrote it) back as its candidate; None for any other file."""
    m = _NEIGHBOURS.search(text or "")
    if not name.endswith(".prf") or m is None:
        return None
    try:
        prf = parse_prf(text, name)
        lo, hi = (int(x) for x in prf["meta"]["nprocs_range"].split())
    except (ValueError, KeyError):
        return None
    coll = _colls.by_mpi_name(prf["mpi_name"])
    if coll is None or not lo <= prf["nprocs"] <= hi:
        return None
    return SpanCandidate(machine, library, version, coll.key, prf["mpi_name"], (int(m[1]), int(m[2])), lo, hi,
                         prf["nprocs"], [tuple(r) for r in prf["ranges"] if r[2] != "default"], text)


def _measured_ranges(files: dict[str, str], mpi_name: str, nprocs: int) -> list[tuple] | None:
    """The redirected ranges of the measured profile of (mpi_name, nprocs) among files: the plain profile for
    p (no span, no layout); None when there is none."""
    for name, text in sorted(files.items()):
        if not name.endswith(".prf") or span_of(name, text) is not None:
            continue
        try:
            prf = parse_prf(text, name)
        except ValueError:
            continue
        if prf["mpi_name"] == mpi_name and prf["nprocs"] == nprocs and not prf["meta"].get("layout", "").strip():
            return sorted(tuple(r) for r in prf["ranges"] if r[2] != "default")
    return None


def carry_spans(live: dict[str, str], new: dict[str, str]) -> tuple[dict[str, str], list[dict]]:
    """The spans of the live set that a publication of `new` (a version of measured profiles) keeps: those whose
    measured neighbours both have a profile in `new` redirecting exactly the ranges they redirect live.  A span
    whose neighbour changed or is gone is dropped: it was built and confirmed on decisions that no longer
    hold.  Returns (the kept span files, per live span {file, span, kept, why}); a span `new` brings itself
    is not judged here."""
    keep, fates = {}, []
    for name, text in sorted(live.items()):
        span = span_of(name, text) if name not in new else None
        if span is None:
            continue
        changed = []
        for p in span.neighbours:
            before, after = _measured_ranges(live, span.mpi_name, p), _measured_ranges(new, span.mpi_name, p)
            if after is None:
                changed.append(f"p={p} has no profile in it")
            elif before != after:
                changed.append(f"p={p} redirects {_ranges_text(after)} (was {_ranges_text(before)})")
        if changed:
            why = ("its measured neighbours' decisions changed: " + "; ".join(changed)
                   + "; it is validated again with the new neighbours")
        else:
            keep[name] = text
            why = (f"its measured neighbours p={span.neighbours[0]} and p={span.neighbours[1]} redirect as "
                   "before")
        fates.append({"file": name, "span": describe(span, validated=True), "kept": not changed, "why": why})
    return keep, fates


def _ranges_text(ranges: list[tuple] | None) -> str:
    return ", ".join(f"{a}-{b} B {m}" for a, b, m in ranges) if ranges else "nothing"


def describe(cand: SpanCandidate, validated: bool | None = None) -> str:
    """How the pages name a span: "p 3, between measured 2 and 4, validated at 3"."""
    ps = f"p {cand.lo}" if cand.lo == cand.hi else f"p {cand.lo}-{cand.hi}"
    tail = (f"validated at {cand.at}" if validated else f"to be validated at {cand.at}" if validated is None
            else f"not confirmed at {cand.at}")
    return f"{ps}, between measured {cand.neighbours[0]} and {cand.neighbours[1]}, {tail}"


def agreed_ranges(a: list[tuple[int, int, str]], b: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The byte ranges both profiles redirect to the same mock-up (intersections, in order)."""
    out = []
    for lo1, hi1, m1 in a:
        for lo2, hi2, m2 in b:
            if m1 == m2 and m1 != "default" and max(lo1, lo2) <= min(hi1, hi2):
                out.append((max(lo1, lo2), min(hi1, hi2), m1))
    return sorted(out)


def span_candidates(profiles, measured: dict[tuple[str, str, str, str], set[int]]) -> tuple[list[SpanCandidate], list[dict]]:
    """profiles: Profile objects (or their to_dict()s) of one analysis; measured: (machine, library, version,
    collective key) -> every process count the campaign measured it at (with or without a profile).
    Returns the candidates and, per gap between measured counts, why it does not span."""
    def get(p, name):
        return p.get(name) if isinstance(p, dict) else getattr(p, name)

    by: dict[tuple, dict[int, object]] = {}
    for p in profiles:
        if get(p, "layout"):
            continue                       # a layout profile is for exactly its layout (format rule)
        ident = (get(p, "machine"), get(p, "library"), get(p, "version"), get(p, "collective"))
        by.setdefault(ident, {})[get(p, "nprocs")] = p
    cands, refused = [], []
    for ident, counts in sorted(measured.items()):
        ps = sorted(counts)
        profs = by.get(ident, {})
        for p1, p2 in zip(ps, ps[1:]):
            if p2 - p1 < 2:
                continue                   # nothing unmeasured between them
            where = {"machine": ident[0], "library": ident[1], "version": ident[2], "collective": ident[3],
                     "between": [p1, p2]}
            a, b = profs.get(p1), profs.get(p2)
            if a is None or b is None:
                refused.append(where | {"why": "the default won at p=%d: the neighbours disagree"
                                        % (p1 if a is None else p2)})
                continue
            ra = [tuple(r) if not isinstance(r, dict) else (r["first"], r["last"], r["mockup"]) for r in get(a, "ranges")]
            rb = [tuple(r) if not isinstance(r, dict) else (r["first"], r["last"], r["mockup"]) for r in get(b, "ranges")]
            agreed = agreed_ranges(ra, rb)
            if not agreed:
                refused.append(where | {"why": "p=%d and p=%d redirect no size to the same mock-up" % (p1, p2)})
                continue
            mpi_name = get(a, "mpi_name")
            coll = _colls.by_mpi_name(mpi_name)
            if coll is not None and coll.enum == "REDUCE_SCATTER_BLOCK":
                refused.append(where | {"why": f"{mpi_name}: a .prf file holds its sizes per block of line 2's p, "
                                                "which a range of p would change"})
                continue
            lo, hi = p1 + 1, p2 - 1
            at = (lo + hi) // 2
            meta = {"machine": _tok(ident[0]), "mpi_library": _tok(ident[1]),
                    "mpi_version": ident[2] and _tok(ident[2]), "nprocs_range": f"{lo} {hi}"}
            text = format_prf(mpi_name, at, agreed, meta=meta, comments=[
                f"{SPAN_MARK} p={p1} and p={p2}, whose profiles agree on these ranges; not measured here: "
                f"valid only once a validation at p={at} confirms it"])
            cands.append(SpanCandidate(ident[0], ident[1], ident[2], ident[3], mpi_name, (p1, p2), lo, hi, at,
                                       agreed, text))
    return cands, refused


def confirm(cand: SpanCandidate, figs, measured_counts: set[int] | None = None,
            null_spread: float | None = None) -> dict:
    """The verdict of the validation that must confirm a span: validation.judge on the candidate's file with
    the figures measured at `cand.at`. Refused (state "failed") when the figures are not from an unmeasured
    count inside the range: evidence from a measured neighbour says nothing about the gap."""
    counts = {(f.get("nprocs") if isinstance(f, dict) else getattr(f, "nprocs", None)) for f in figs}
    bad = sorted(c for c in counts if c is not None and (c in (measured_counts or set()) or not cand.lo <= c <= cand.hi))
    if bad or cand.at not in counts:
        why = (f"the validation must run at p={cand.at}, an unmeasured count in {cand.lo}-{cand.hi}; "
               f"figures at p={sorted(c for c in counts if c is not None)}")
        return {"state": "failed", "ok": False, "files": {}, "why": why, "kept": [], "dropped": [], "checked": 0,
                "tolerance": max(null_spread or 0.0, _val.TOLERANCE_FLOOR), "slower": [], "control": [],
                "missing": [{"collective": cand.collective, "nprocs": cand.at, "range": [cand.lo, cand.hi]}],
                "errors": [{"file": cand.filename, "error": why}], "dt_kept": [], "dt_dropped": [],
                "all_or_nothing": False, "paired": False}
    v = _val.judge({cand.filename: cand.text}, figs, null_spread=null_spread)
    v["why"] = _val.summary_line(v)
    return v


def measured_counts(a) -> dict[tuple[str, str, str, str], set[int]]:
    """(machine, library, version, collective key) -> the counts an analysis measured it at on one node (or
    nodes unknown): the configs whose profile is the plain one for p (profiles.profile_layout_of)."""
    out: dict[tuple[str, str, str, str], set[int]] = {}
    for v in a.verdicts:
        if v.kind != "pattern":
            continue
        cfg = a.configs[v.cfg]
        if cfg.nprocs > 0 and profile_layout_of(cfg) == "":
            out.setdefault((cfg.machine, cfg.library, cfg.version, v.collective), set()).add(cfg.nprocs)
    return out
