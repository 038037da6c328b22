"""Verdicts of the derived-datatype guidelines GL1-GL4 on pgmpi-dtbench results (lib/bench/README.md,
"pgmpi-dtbench"), with the statistics of the collective guidelines (service/analysis/stats.py): one median
per (mpirun, cell), the per-mpirun log ratio of two descriptions measured interleaved in the same mpirun,
a one-sided paired test, optional Benjamini-Hochberg, and a minimum effect.

    cases = dt_cases(result_set)                     # test name -> DtCase (from the #@pgmpi dtcase lines)
    verdicts = dt_verdicts(result_set, alpha=0.05, fdr=False, min_effect=0.10, test="paired_t")
    table = summary(verdicts)                        # per (config, guideline, pattern): tested, violated, worst

The guidelines (the paper's sect. 3), each a comparison of two descriptions of the same layout and size:

* GL1   ``typed`` (c x t) against ``contig`` (one contig(c, t)): expected equal, so both directions are tested;
* GL2/3 ``typed`` against ``packed`` (MPI_Pack + the call on MPI_PACKED + MPI_Unpack, timed whole): violated
  when the datatype is slower than packing by hand;
* repair ``typed`` against ``repaired`` (the typed call through libpgmpitune's repair mock-up): the gain a
  profile selecting the repair would give (a "violated" row = a significant difference, either direction);
* control ``typed`` against ``typed_control``: the campaign's false alarms;
* GL4   the reference description (``typed``; ``indexed_block`` for rowcol) against every other description of
  the layout (vector, nested, tiled_struct, indexed_block, indexed, struct_flat, struct), and those others
  pairwise: the library should normalise all to its best form, so a difference in either direction is a
  violation of GL4 for the slower description.

GL1, GL4, control and repair are tested in the direction their median ratio points to, so their p-values are
doubled (two-sided); GL2/3 is one-sided (typed slower than packed).
A verdict is ``violated`` when p (BH-adjusted with fdr) <= alpha and the paired ratio (the median over the
mpiruns of slower / faster) exceeds 1 + min_effect; ``holds`` otherwise; ``n/a`` with fewer than two mpiruns.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from pgmpi_formats.footer import DtCase, DtSig, case_of_line, records
from pgmpi_formats.results import ResultSet

from .stats import DEFAULT_TEST, PAIRED_TESTS, bh_adjust, build_cells, paired_log_ratios, pvalues_paired_greater

GL4_ALTERNATIVES = ("vector", "nested", "tiled_struct", "indexed_block", "indexed", "struct_flat", "struct")
GUIDELINES = ("GL1", "GL2/3", "GL4", "control", "repair")
REPAIRED = "repaired"          # the typed call through libpgmpitune's repair mock-up
CONTROL = "typed_control"      # pgmpi-dtbench's control arm: the reference description measured twice


@dataclass
class DtVerdict:
    config: str
    library: str
    guideline: str
    pattern: str
    basetype: str
    layout: str            # DtCase.layout_label
    msize: int
    slower: str            # description measured slower (median paired ratio)
    faster: str
    ratio: float           # median over mpiruns of slower / faster (the speed-up of using `faster`)
    p: float               # one-sided paired p-value of "slower is slower" (BH-adjusted with fdr)
    runs: int
    verdict: str           # violated | holds | n/a
    nprocs: int = 0
    process_layout: str = ""   # nodes x ppn of the runs (pgmpi_formats.layouts), not the datatype layout
    signature: str = ""
    test: str = ""             # the case (pgmpi-dtbench's test name)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = None if not math.isfinite(self.ratio) else round(self.ratio, 4)
        d["p"] = None if not math.isfinite(self.p) else float(self.p)
        return d


def dt_cases(rs: ResultSet) -> dict[str, DtCase]:
    """The cases pgmpi-dtbench declared (`#@pgmpi dtcase <test> pattern=.. layout=.. variant=.. A=.. basetype=..`)."""
    out: dict[str, DtCase] = {}
    for run in rs.runs:
        for line in run.pgmpi_lines:
            case = case_of_line(line)
            if case is not None:
                out[case.test] = case
    return out


def _pairs(case: DtCase, present: set[str]):
    """(guideline, x, y, both directions?) for the descriptions measured for this case."""
    ref = case.reference
    if ref not in present:
        return
    if "contig" in present and ref == "typed":
        yield "GL1", "typed", "contig", True
    if "packed" in present:
        yield "GL2/3", ref, "packed", False
    if CONTROL in present:      # a ratio whose truth is 1: its violations are the campaign's false alarms
        yield "control", ref, CONTROL, True
    if REPAIRED in present:     # what the library's repair gains (or loses) against the library's own call
        yield "repair", ref, REPAIRED, True
    alts = [a for a in GL4_ALTERNATIVES if a != ref and a in present]
    for alt in alts:
        yield "GL4", ref, alt, True
    # and the other descriptions among themselves: a faster description of the same type map is what a
    # datatype profile's replacement selects (gl4_replacements)
    for i, a in enumerate(alts):
        for b in alts[i + 1:]:
            yield "GL4", a, b, True


def both_sides(guideline: str) -> bool:
    return guideline != "GL2/3"


def dt_verdicts(rs: ResultSet, alpha: float = 0.05, fdr: bool = False, min_effect: float = 0.10,
                test: str = DEFAULT_TEST) -> list[DtVerdict]:
    if test not in PAIRED_TESTS:
        raise ValueError(f"the datatype guidelines compare descriptions of one mpirun: test must be one of "
                         f"{', '.join(PAIRED_TESTS)}")
    cases = dt_cases(rs)
    cells = build_cells(rs)
    index = cells.index()
    # cells of one (config, test, msize): description -> cell index
    groups: dict[tuple[int, int, int], dict[str, int]] = {}
    for (cfg, t, m, a), i in index.items():
        groups.setdefault((cfg, t, m), {})[cells.algorithms[a]] = i
    rows: list[tuple] = []
    ds: list[np.ndarray] = []
    for (cfg, t, m), descs in sorted(groups.items()):
        case = cases.get(cells.tests[t])
        if case is None:
            continue
        for gl, x, y, both in _pairs(case, set(descs)):
            d, _ = paired_log_ratios(cells, descs[x], descs[y])
            # the slower side by the median paired ratio; one-sided test in that direction (GL2/3: typed only)
            med = float(np.median(d)) if d.size else float("nan")
            if both and math.isfinite(med) and med < 0:
                x, y, d, med = y, x, -d, -med
            rows.append((cfg, gl, case, m, x, y, med, d.size))   # GL2/3 with med < 0: the datatype is faster
            ds.append(d)
    p, _ = pvalues_paired_greater(ds, test=test) if ds else (np.zeros(0), None)
    # a comparison tested in the direction its own median points to is two-sided: double its one-sided p
    # (else the control arm, whose truth is 1, would be flagged at twice alpha)
    two = np.array([both_sides(r[1]) for r in rows], dtype=bool)
    if len(p):
        p = np.where(two, np.minimum(1.0, 2 * p), p)
    if fdr and len(p):
        p = bh_adjust(p)
    out: list[DtVerdict] = []
    for k, (cfg, gl, case, m, x, y, med, n) in enumerate(rows):
        ratio = math.exp(med) if math.isfinite(med) else float("nan")
        pk = float(p[k]) if len(p) else float("nan")
        if n < 2 or not math.isfinite(pk):
            verdict = "n/a"
        elif pk <= alpha and ratio > 1 + min_effect:
            verdict = "violated"
        else:
            verdict = "holds"
        if not both_sides(gl) and math.isfinite(ratio) and ratio < 1:
            x, y, ratio = y, x, 1 / ratio        # shown as "packed slower than typed"; p still tests typed slower
        c = cells.configs[cfg]
        out.append(DtVerdict(config=c.label, library=f"{c.library}-{c.version}" if c.version else c.library,
                             guideline=gl, pattern=case.pattern, basetype=case.basetype, layout=case.layout_label,
                             msize=int(m), slower=x, faster=y, ratio=ratio, p=pk, runs=int(n), verdict=verdict,
                             nprocs=int(c.nprocs), process_layout=getattr(c, "layout", "") or "",
                             signature=case.signature, test=case.test))
    return out


@dataclass
class DtSummary:
    library: str
    guideline: str
    pattern: str
    tested: int
    violated: int
    worst: DtVerdict | None      # the violated verdict with the largest ratio


def summary(verdicts: list[DtVerdict]) -> list[DtSummary]:
    acc: dict[tuple[str, str, str], DtSummary] = {}
    for v in verdicts:
        s = acc.setdefault((v.library, v.guideline, v.pattern), DtSummary(v.library, v.guideline, v.pattern, 0, 0, None))
        if v.verdict == "n/a":
            continue
        s.tested += 1
        if v.verdict == "violated":
            s.violated += 1
            if s.worst is None or v.ratio > s.worst.ratio:
                s.worst = v
    order = {g: i for i, g in enumerate(GUIDELINES)}
    pats = {"pingpong": 0, "bcast": 1, "allgather": 2}
    return sorted(acc.values(), key=lambda s: (s.library, order.get(s.guideline, 9), pats.get(s.pattern, 9)))


# ---------------------------------------------------------------------------------------------- the service

REPAIRS = {"bcast": ("MPI_Bcast", "bcast_as_packed_bcast"),
           "allgather": ("MPI_Allgather", "allgather_as_packed_allgather")}


def control_of(verdicts: list[DtVerdict], alpha: float, fdr: bool):
    """The campaign's false alarms: the control arm (typed against typed_control, a ratio whose truth is 1)
    summarised like the collective guidelines' control (service/analysis/verdicts.py ControlSummary)."""
    from .verdicts import ControlSummary
    out = ControlSummary(alpha=alpha, fdr=fdr)
    ratios = []
    for v in verdicts:
        if v.guideline != "control" or v.verdict == "n/a":
            continue
        out.tested += 1
        out.flagged += v.verdict == "violated"
        out.flagged_raw += bool(math.isfinite(v.p) and v.p <= alpha)
        if math.isfinite(v.ratio):
            ratios.append(abs(v.ratio - 1.0))
    out.null_spread = max(ratios) if ratios else None
    return out


@dataclass
class RepairRange:
    pattern: str           # bcast | allgather
    nprocs: int
    process_layout: str
    lo: int
    hi: int
    speedups: list[float]  # typed / repaired of the violating layouts at the range's sizes
    evidence: list[str]    # "<layout label> <base> <bytes> B [signature]" of those cases


def repair_ranges(verdicts: list[DtVerdict], min_effect: float = 0.10) -> tuple[list[RepairRange], list[dict]]:
    """GL2/3 violations -> the sizes where every rank may run the repair mock-up (pack, the call on the packed
    bytes, unpack): keyed on (pattern, p, size) only, never on a rank's layout (rule 3 of
    lib/src/core/pgmpitune_core.h), so a size qualifies when some layout there violates GL2/3 with the repair
    significantly faster than the typed call (the `repair` verdict), and no layout measured at that size,
    the contiguous one included, has the repair significantly slower.  Runs of consecutive qualifying
    measured sizes become ranges.  Returns (ranges, refused sizes with why)."""
    by: dict[tuple, dict[int, list[DtVerdict]]] = {}
    for v in verdicts:
        if v.pattern in REPAIRS and v.guideline in ("GL2/3", "repair"):
            by.setdefault((v.pattern, v.nprocs, v.process_layout), {}).setdefault(v.msize, []).append(v)
    ranges, refused = [], []
    for (pat, p, lay), sizes in sorted(by.items()):
        good: dict[int, tuple[list[float], list[str]]] = {}
        for m, vs in sorted(sizes.items()):
            gl2 = {(v.layout, v.basetype) for v in vs if v.guideline == "GL2/3" and v.verdict == "violated"}
            wins = [v for v in vs if v.guideline == "repair" and v.verdict == "violated" and v.slower != REPAIRED
                    and (v.layout, v.basetype) in gl2 and v.ratio > 1 + min_effect]
            loses = [v for v in vs if v.guideline == "repair" and v.verdict == "violated" and v.slower == REPAIRED]
            if loses:
                refused.append({"pattern": pat, "nprocs": p, "msize": m, "why": "the repair is slower for "
                                + ", ".join(sorted({f"{v.layout} {v.basetype}" for v in loses}))})
            elif wins:
                good[m] = ([v.ratio for v in wins], [f"{v.layout} {v.basetype} {m} B"
                                                     + (f" {v.signature}" if v.signature else "") for v in wins])
        measured = sorted(sizes)
        run: list[int] = []
        for m in measured + [None]:
            if m is not None and m in good:
                run.append(m)
                continue
            if run:
                ranges.append(RepairRange(pat, p, lay, run[0], run[-1],
                                          [r for x in run for r in good[x][0]], [e for x in run for e in good[x][1]]))
            run = []
    return ranges, refused


def repair_profiles(ranges: list[RepairRange], library: str, version: str, machine: str,
                    campaign: str | None, alpha: float, test: str, fdr: bool, created: str) -> dict[str, str]:
    """.prf files (the one writer, pgmpi_formats.prf) selecting the repair mock-ups over the ranges: one file
    per (pattern, p, process layout); the layouts and signatures measured are its comments (evidence)."""
    from pgmpi_formats.prf import format_prf, meta_token, profile_filename
    from pgmpi_formats.layouts import parse_layout
    from .profiles import GENERATOR
    files: dict[str, str] = {}
    groups: dict[tuple, list[RepairRange]] = {}
    for r in ranges:
        groups.setdefault((r.pattern, r.nprocs, r.process_layout), []).append(r)
    for (pat, p, lay), rs in sorted(groups.items()):
        even = parse_layout(lay) if lay else None
        if lay and even is None:
            continue            # uneven or interleaved process layouts get no profile (as the collectives')
        prof_lay = lay if even and even[0] > 1 else ""
        mpi_name, mock = REPAIRS[pat]
        meta = {"machine": meta_token(machine), "mpi_library": meta_token(library),
                "mpi_version": version and meta_token(version), "layout": prof_lay or None,
                "campaign": campaign and meta_token(campaign), "created": created, "generator": GENERATOR,
                "source": "datatypes"}
        ev = sorted({e for r in rs for e in r.evidence})
        comments = [f"derived-datatype guideline GL2/3: typed {pat} slower than pack + {pat} + unpack; "
                    f"one-sided {test}{' + BH' if fdr else ''}, alpha={alpha}",
                    "measured for: " + "; ".join(ev)]
        notes = [f"{mock}, measured {min(r.speedups):.2f}x-{max(r.speedups):.2f}x faster" for r in rs]
        files[profile_filename(pat, p, prof_lay)] = format_prf(
            mpi_name, p, [(r.lo, r.hi, mock) for r in rs], meta=meta, comments=comments, range_notes=notes)
    return files


MESSAGE = "message"     # dt_signatures' pseudo-description: the signature of the whole message (count x type)


def dt_signatures(rs: ResultSet) -> dict[tuple[str, int, str], str]:
    """(test, bytes, description) -> the layout signature of the description's own type, and (test, bytes,
    MESSAGE) -> the whole message's, from pgmpi-dtbench's `#@pgmpi dtsig <test> <bytes> <description>
    <signature> count=.. message=<signature>` lines (libpgmpitune computed them; nothing here recomputes)."""
    out: dict[tuple[str, int, str], str] = {}
    for run in rs.runs:
        for sig in records(run.pgmpi_lines, DtSig):
            out[(sig.test, sig.msize, sig.description)] = sig.signature
            if sig.message:
                out[(sig.test, sig.msize, MESSAGE)] = sig.message
    return out


# the calls in which libpgmpitune communicates with a GL4 replacement (lib/docs/profile-format.md)
REPLACED_IN = ("pingpong", "bcast", "allgather")


@dataclass
class Replacement:
    signature: str
    description: str
    speedups: list[float]
    evidence: list[str]      # "<test>:<slower description>@<bytes>"


def gl4_replacements(verdicts: list[DtVerdict], sigs: dict[tuple[str, int, str], str],
                     min_effect: float = 0.10) -> tuple[list[Replacement], list[dict]]:
    """GL4 violations -> `replace <signature> <description>` rules: a description of the library's own list
    (pgmpi_formats.dtprf.DESCRIPTIONS) that was significantly faster than another description with the SAME
    signature (one element's type map: exact by construction) in MPI_Bcast / MPI_Allgather, and never
    significantly slower than a description of that signature there.  The replacement applies at every
    size, so one measured loss refuses it.  Several candidates for one signature: the largest geometric-mean
    speed-up wins.  Returns (rules, refused)."""
    from pgmpi_formats.dtprf import DESCRIPTIONS
    wins: dict[tuple[str, str], tuple[list[float], list[str]]] = {}
    loses: dict[tuple[str, str], list[str]] = {}
    for v in verdicts:
        if v.guideline != "GL4" or v.pattern not in REPLACED_IN or v.verdict != "violated":
            continue
        s_slow, s_fast = sigs.get((v.test, v.msize, v.slower)), sigs.get((v.test, v.msize, v.faster))
        faster, slower = v.faster, v.slower
        message = sigs.get((v.test, v.msize, MESSAGE))
        # typed (c x t) against a description of the whole message: the library's `contig` builds the message
        # as contiguous(c, block) of its repeating block, i.e. as typed communicates it
        if s_slow and s_slow == message and v.faster == "typed":
            s_fast, faster = s_slow, "contig"
        elif s_fast and s_fast == message and v.slower == "typed":
            s_slow, slower = s_fast, "contig"
        if not s_slow or s_slow != s_fast:
            continue
        loses.setdefault((s_slow, slower), []).append(f"{v.test}@{v.msize}:{v.ratio:.2f}x")
        if faster in DESCRIPTIONS and v.ratio > 1 + min_effect:
            w = wins.setdefault((s_fast, faster), ([], []))
            w[0].append(v.ratio)
            w[1].append(f"{v.test}:{slower}@{v.msize}")   # the description whose type is replaced
    best: dict[str, Replacement] = {}
    refused = []
    for (sig, desc), (ratios, ev) in sorted(wins.items()):
        if (sig, desc) in loses:
            refused.append({"signature": sig, "description": desc,
                            "why": "slower elsewhere: " + ", ".join(loses[(sig, desc)][:5])})
            continue
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        cur = best.get(sig)
        if cur is None or gm > math.exp(sum(math.log(r) for r in cur.speedups) / len(cur.speedups)):
            best[sig] = Replacement(sig, desc, ratios, ev)
    return [best[k] for k in sorted(best)], refused


def replacement_profile(rules: list[Replacement], library: str, version: str, machine: str,
                        campaign: str | None, alpha: float, test: str, fdr: bool) -> str:
    from pgmpi_formats.dtprf import format_dtprf
    return format_dtprf(
        [(r.signature, r.description, {"speedup": f"{min(r.speedups):.2f}-{max(r.speedups):.2f}",
                                       "evidence": ",".join(sorted(set(r.evidence))[:4])}) for r in rules],
        comments=[f"made by pgmpi-site (machine {machine}, {library} {version}, campaign {campaign or '-'})",
                  f"GL4: one-sided {test}{' + BH' if fdr else ''}, alpha={alpha}; exact by construction: each rule "
                  "replaces a type by a description of the identical type map (same signature)"])


def analyse(rs: ResultSet, alpha: float = 0.05, test: str = DEFAULT_TEST, fdr: bool = True,
            min_effect: float = 0.10, campaign: str | None = None, created: str = "") -> dict | None:
    """The service's datatype analysis of one library's runs: None without pgmpi-dtbench cases, else
    {"verdicts": [DtVerdict], "control": ControlSummary, "profiles": {file: .prf text}, "ranges", "refused"}.
    No profile from an untrustworthy campaign (its control arm flagged beyond chance)."""
    if not dt_cases(rs):
        return None
    vs = dt_verdicts(rs, alpha=alpha, fdr=fdr, min_effect=min_effect, test=test)
    ctl = control_of(vs, alpha, fdr)
    ranges, refused = repair_ranges(vs, min_effect)
    rules, refused4 = gl4_replacements(vs, dt_signatures(rs), min_effect)
    refused += refused4
    profiles: dict[str, str] = {}
    run = rs.runs[0]
    if ctl.trustworthy:
        if ranges:
            profiles = repair_profiles(ranges, run.library, run.version, run.machine, campaign, alpha, test, fdr,
                                       created)
        if rules:
            from pgmpi_formats.dtprf import FILE_NAME
            profiles[FILE_NAME] = replacement_profile(rules, run.library, run.version, run.machine, campaign,
                                                      alpha, test, fdr)
    else:
        refused += [{"pattern": r.pattern, "nprocs": r.nprocs, "msize": r.lo,
                     "why": "the campaign's control arm is untrustworthy"} for r in ranges]
        refused += [{"signature": r.signature, "description": r.description,
                     "why": "the campaign's control arm is untrustworthy"} for r in rules]
    return {"verdicts": vs, "control": ctl, "profiles": profiles, "ranges": ranges, "replacements": rules,
            "refused": refused}
