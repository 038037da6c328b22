"""Tuned profiles (.prf, lib/docs/profile-format.md) from pattern verdicts.

    profs = generate_profiles(analysis, gain=0.10, msg_budget=None, int_budget=None, cautious=False)
    paths = write_profiles(profs, out_dir)        # <key>_p<p>[_<N>x<P>].prf (subdirs <machine>/<lib>-<ver> if mixed)
    ok, output = check_profiles(out_dir)          # runs pgmpitune-check when it can be found

Decision per (config, collective, measured size): the winner is the mock-up with the lowest median among those
that (1) violate the pattern guideline (significantly faster than the default at the analysis' alpha, after BH
when fdr was on; with cautious=True violations carrying a barrier warning are not used), (2) are at least
`gain` faster: median(mock-up) <= (1 - gain) * median(default), and (3) fit the memory budget per process
(memory.MemoryModel, the library's own figures, against the message / int pool). Otherwise the default wins.

Ranges: consecutive measured sizes with the same winning mock-up merge into one inclusive range
[first measured size, last measured size], which also covers every unmeasured size between them (both
neighbours agree). Sizes between two measured sizes with different winners, below the smallest and above
the largest measured size are NOT covered: the library uses its default there (a conservative choice:
nothing was measured that supports a switch).

Layouts: every config (p and its layout, service/analysis/stats.py) gets its own decisions; results of the
same p on 1x4 and 2x2 never mix. A config on one node writes the plain profile for p (`<key>_p<p>.prf`, as
PGMPITuneLib reads it); a config on several nodes with the same ranks on each (NxP, N > 1) writes a layout
profile, `#@pgmpi layout NxP` in `<key>_p<p>_NxP.prf` (lib/docs/profile-format.md), which the library applies
only on a communicator of exactly that layout. An uneven or interleaved placement writes no profile: the
library could not tell it from an even block layout of the same p, so its measurements must not choose
for one. Budgets default to the pools the runs report
(`#@pgmpi config size_msg_buffer_bytes / size_int_buffer_bytes`), else the library defaults 100000000 / 200000.
"""
from __future__ import annotations

import datetime as _dt
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pgmpi_formats import collectives as _colls
from pgmpi_formats.checker import find_checker
from pgmpi_formats.layouts import parse_layout
from pgmpi_formats.prf import effective_ranges, format_prf, meta_token as _tok, profile_filename
from .guidelines import Analysis
from .memory import MemoryModel
from .stats import refuse_mixed_methods
from . import verdicts as _vd

DEFAULT_MSG_POOL = 100_000_000
DEFAULT_INT_POOL = 200_000
GENERATOR = "pgmpi-site analysis 0.1"


@dataclass
class Decision:
    msize: int
    winner: str                # "default" or the mock-up name
    default_median: float
    winner_median: float
    reason: str                # why (not) switched
    # the winner's effect over the default with its 95 % interval over mpiruns (stats.ratio_ci); None: default
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_mpiruns: int = 0


@dataclass
class Profile:
    cfg: int
    machine: str
    library: str
    version: str
    nprocs: int
    collective: str
    mpi_name: str
    ranges: list[tuple[int, int, str]]            # inclusive byte ranges -> mock-up
    decisions: list[Decision] = field(default_factory=list)
    text: str = ""
    layout: str = ""            # "NxP" (N > 1): a layout profile; "": the profile for p

    @property
    def filename(self) -> str:
        return profile_filename(self.collective, self.nprocs, self.layout)

    def _range_ci(self, first: int, last: int, mockup: str) -> dict:
        """The weakest evidence of a range: the smallest effect and lower bound over its measured sizes."""
        ds = [d for d in self.decisions if first <= d.msize <= last and d.winner == mockup and d.effect]
        if not ds:
            return {"effect_min": None, "ci95_low_min": None, "ci_mpiruns_min": None}
        lows = [d.ci_low for d in ds if d.ci_low is not None]
        return {"effect_min": min(d.effect for d in ds), "ci95_low_min": min(lows) if lows else None,
                "ci_mpiruns_min": min(d.ci_mpiruns for d in ds)}

    def to_dict(self) -> dict:
        return {"machine": self.machine, "library": self.library, "version": self.version, "nprocs": self.nprocs,
                "layout": self.layout,
                "collective": self.collective, "mpi_name": self.mpi_name, "filename": self.filename,
                "ranges": [{"first": a, "last": b, "mockup": m, **self._range_ci(a, b, m)} for a, b, m in self.ranges],
                "decisions": [d.__dict__ for d in self.decisions], "text": self.text}


def generate_profiles(a: Analysis, gain: float = 0.10, msg_budget: int | None = None, int_budget: int | None = None,
                      cautious: bool = False, campaign: str | None = None, created: str | None = None,
                      memory: MemoryModel | None = None, elem: dict[int, int] | None = None,
                      confirmations: int = 1, confirmed_before: dict | None = None,
                      refused: list | None = None) -> list[Profile]:
    """elem: bytes per element per config (default: from the runs' #@datatype, else 1).
    confirmations: K, the campaigns that must have found a redirection (this one included);
    confirmed_before: (collective key, nprocs, msize, mock-up) -> earlier campaigns that found it.
    refused: when a list, every violated pattern verdict that was examined and not made a redirection is
    appended as {collective, nprocs, msize, mockup, rule, why}; rule "replication" when it was found by fewer
    than K campaigns, "control" when the campaign is untrustworthy, else "rule" (gain, noise, regimes, results
    check, memory, barrier)."""
    refuse_mixed_methods(a.configs)
    if not 0 <= gain < 1:
        raise ValueError(f"gain must be in [0, 1), got {gain}")
    memory = memory or MemoryModel.auto()
    elem = elem or {}
    created = created or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # measured default sizes per (cfg, collective)
    sizes: dict[tuple[int, str], set[int]] = {}
    cand: dict[tuple[int, str, int], list] = {}
    dmed: dict[tuple[int, str, int], float] = {}
    for v in a.verdicts:
        if v.kind != "pattern":
            continue
        sizes.setdefault((v.cfg, v.collective), set()).add(v.msize)
        dmed[(v.cfg, v.collective, v.msize)] = v.default_median
        cand.setdefault((v.cfg, v.collective, v.msize), []).append(v)
    profiles: list[Profile] = []
    out_refused = refused if refused is not None else []

    def refuse(v, rule: str, why: str) -> None:
        out_refused.append({"collective": v.collective, "nprocs": a.configs[v.cfg].nprocs, "msize": v.msize,
                            "mockup": v.algorithm, "rule": rule, "why": why})

    if not a.control.trustworthy:
        # the control arm was flagged more often than alpha: no verdict of it is trusted
        for v in a.verdicts:
            if v.kind == "pattern" and v.violated and not v.control:
                refuse(v, "control", "the campaign's control arm is untrustworthy: no candidate")
        return profiles
    seen: set[tuple] = set()
    for (c, key), ss in sorted(sizes.items()):
        cfg = a.configs[c]
        p = cfg.nprocs
        if p <= 0:
            continue
        layout = profile_layout_of(cfg)
        if layout is None:
            continue            # uneven or interleaved: no profile the library could key on (module docstring)
        ident = (cfg.machine, cfg.library, cfg.version, p, key, layout)
        if ident in seen:       # p measured on one node twice (nodes unknown and 1xP): the first config wins
            continue
        seen.add(ident)
        mem = a.memory_config.get(c, {})
        mb = msg_budget if msg_budget is not None else mem.get("size_msg_buffer_bytes", DEFAULT_MSG_POOL)
        ib = int_budget if int_budget is not None else mem.get("size_int_buffer_bytes", DEFAULT_INT_POOL)
        decisions = []
        for s in sorted(ss):
            d0 = dmed[(c, key, s)]
            best, reason = None, "no significantly faster mock-up"
            for v in sorted(cand[(c, key, s)], key=lambda v: v.other_median):
                if not v.violated or v.control:
                    continue
                if cautious and v.barrier_warning:
                    reason = f"{v.algorithm}: barrier warning (cautious)"
                    refuse(v, "rule", reason)
                    continue
                why = _vd.redirect_refusal(v, a.control, gain, a.defects)
                if why:
                    reason = why
                    refuse(v, "rule", reason)
                    continue
                seen_before = (confirmed_before or {}).get((key, p, s, v.algorithm), 0)
                if seen_before + 1 < confirmations:
                    reason = (f"{v.algorithm}: found by {seen_before + 1} of the {confirmations} campaigns "
                              "required (replication across nights)")
                    refuse(v, "replication", reason)
                    continue
                try:
                    m, i = memory.needs(v.algorithm, s, p, elem.get(c, a.datatype_bytes.get(c, 1)))
                except KeyError as e:
                    reason = f"{v.algorithm}: no memory figure ({e})"
                    refuse(v, "rule", reason)
                    continue
                if m > mb or i > ib:
                    reason = (f"{v.algorithm}: needs {m} B msg + {i} B int pool ({memory.source}) > budget "
                              f"{mb} B / {ib} B")
                    refuse(v, "rule", reason)
                    continue
                best = v
                break
            if best is None:
                decisions.append(Decision(s, "default", d0, d0, reason))
            else:
                r = best.paired_ratio or d0 / best.other_median
                reg = best.regime or {}
                ci = (f"; {best.effect:.3g}x, 95 % CI {best.ci_low:.3g}-{best.ci_high:.3g}x over "
                      f"{best.ci_mpiruns} mpiruns" if best.ci_low is not None else "")
                decisions.append(Decision(s, best.algorithm, d0, best.other_median,
                                          f"{r:.2f}x faster (paired), p={best.p_value:.3g}{ci}"
                                          + (f", worst mpirun {reg['worst']:.2f}x" if reg else "")
                                          + (f", {reg['line']}" if reg.get("line") else ""),
                                          best.effect, best.ci_low, best.ci_high, best.ci_mpiruns))
        ranges: list[tuple[int, int, str]] = []
        for d in decisions:
            if d.winner == "default":
                continue
            if ranges and ranges[-1][2] == d.winner and _adjacent(decisions, ranges[-1][1], d.msize):
                ranges[-1] = (ranges[-1][0], d.msize, d.winner)
            else:
                ranges.append((d.msize, d.msize, d.winner))
        coll = _colls.by_key(key)
        ranges = effective_ranges(coll.mpi_name, p, ranges)     # as a .prf file can hold them
        if not ranges:
            continue
        prof = Profile(cfg=c, machine=cfg.machine, library=cfg.library, version=cfg.version, nprocs=p,
                       collective=key, mpi_name=coll.mpi_name, ranges=ranges, decisions=decisions, layout=layout)
        prof.text = render(prof, a, gain, mb, ib, campaign, created, memory.source)
        profiles.append(prof)
    return profiles


def profile_layout_of(cfg) -> str | None:
    """The `#@pgmpi layout` a config's profile carries: "" (one node or nodes unknown: the profile for p),
    "NxP" (N > 1 nodes, P ranks each, in blocks), None (uneven or interleaved: no profile)."""
    lay = getattr(cfg, "layout", "") or ""
    if not lay:
        return ""
    even = parse_layout(lay)
    if even is None:
        return None
    return "" if even[0] == 1 else lay


def _adjacent(decisions: list[Decision], prev: int, cur: int) -> bool:
    ms = [d.msize for d in decisions]
    return ms.index(cur) == ms.index(prev) + 1


def render(prof: Profile, a: Analysis, gain: float, mb: int, ib: int, campaign: str | None, created: str,
           mem_source: str = "library") -> str:
    """The .prf text (pgmpi_formats.prf writes it within PGMPITuneLib's reader's limits)."""
    test = a.test + (" + BH" if a.fdr else "")
    med = {d.msize: d for d in prof.decisions}
    notes = []
    for lo, hi, m in prof.ranges:
        sl = [med[s].default_median / med[s].winner_median for s in med if lo <= s <= hi and med[s].winner == m]
        notes.append(f"{m}, measured {min(sl):.2f}x-{max(sl):.2f}x faster")
    meta = {"machine": _tok(prof.machine), "mpi_library": _tok(prof.library),
            "mpi_version": prof.version and _tok(prof.version), "layout": prof.layout or None,
            "campaign": campaign and _tok(campaign),
            "created": created, "generator": GENERATOR}
    comments = [f"one-sided {test}, alpha={a.alpha}, gain>={gain:.0%}, memory budget {mb} B msg / {ib} B int"
                f" ({mem_source} figures)",
                "ranges cover measured sizes and the sizes between two measured sizes with the same winner"]
    return format_prf(prof.mpi_name, prof.nprocs, prof.ranges, meta=meta, comments=comments, range_notes=notes)


def write_profiles(profiles: list[Profile], out_dir) -> list[Path]:
    """Write atomically (temporary dot-file + rename). One (machine, library, version): files directly in
    out_dir; several: out_dir/<machine>/<library>-<version>/."""
    for p in profiles:
        refuse_control(p.text, p.filename)
    out = Path(out_dir)
    groups = {(p.machine, p.library, p.version) for p in profiles}
    paths = []
    for p in profiles:
        d = out if len(groups) <= 1 else out / _tok(p.machine) / f"{_tok(p.library)}-{_tok(p.version or 'unknown')}"
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{p.filename}.tmp"
        tmp.write_text(p.text)
        os.replace(tmp, d / p.filename)
        paths.append(d / p.filename)
    return paths


def refuse_control(text: str, source: str = "<profile>") -> None:
    """Raise ValueError when a profile names the control arm's label (it measures the default a second time
    and is no algorithm of the library): such a profile is never written, stored or published."""
    for no, line in enumerate(text.splitlines(), 1):
        if _vd.CONTROL in line.split("#", 1)[0].split():
            raise ValueError(f"{source}:{no}: names {_vd.CONTROL!r}, the control arm's label, which never "
                             "enters a profile")


def check_profiles(paths, checker: Path | None = None) -> tuple[bool | None, str]:
    """(True/False, output) from pgmpitune-check; (None, why) when no checker is available."""
    checker = checker or find_checker()
    if checker is None:
        return None, "pgmpitune-check not found (build lib/ with deploy/build-lib.sh)"
    args = [str(checker)] + [str(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return r.returncode == 0, (r.stdout + r.stderr).strip()
