"""The verdict on a native decision file's validation job (plain Python, no Flask).

    verdict = judge(cells, figs, nprocs, tolerance=0.10)

cells: pgmpi_formats.native_validation.Cell of the file at the job's size (the service derives them from the
file itself, never from the agent, each rule at the sizes its native candidate's decision measured:
at_decided); figs: pgmpi_formats.native_validation.figures of the job's raw results.
Per cell, with R rounds of two mpiruns each (file arm, forced arm; order alternating, so drift cancels):

(a) correct: the file arm's check round (results bit-exact against the reference every rank computes, the
    values the library's default gives on the same input, which the forced arm's check of the default shows)
    passed in every round, and so did the forced arm's default and label;
(b) used: a reduction whose forced label leaves another algorithm fingerprint than the default (pgmpi-bench's
    `#@pgmpi fingerprint`: NaN payloads under MPI_SUM, which rank's survives where; lib/bench/bench_check.c)
    must leave the label's fingerprint under the file in every round, and a "default" cell the default's --
    deterministic, no statistics.  Otherwise (data-moving calls, or the same fingerprint) by time: per round
    the log ratios F/L (file arm vs the forced label) and L/D, F/D (D: the built-in default in the forced
    arm).  Where L and D differ (|median log L/D| > 2 log(1+tol) and the exact sign test over the rounds
    says so, p < 0.05), F must differ from D the same way (sign test, p < 0.05) and lie nearer to L than to
    D; where they do not, the cell proves nothing (reported, not judged).  Every collective whose choice the
    file changes needs one cell that proves it ran ("unproven" otherwise).  Open MPI ignores a broken file
    silently: this is the only proof the file took effect;
(c) not slower: a cell whose label is not "default" fails when the file's choice is slower than the built-in
    default: median of the paired per-round ratios D/F below 1/(1+tol), or below 1 with the sign test over
    the rounds saying F > D (p < 0.05); every timed cell carries the effect D/F (geometric mean over the
    rounds) with its 95 % t interval (stats.ratios_ci; effect, ci_low, ci_high, ci_mpiruns = rounds);
(d) result safety: no selected algorithm reorders a reduction's operands (pgmpi_formats.native.ORDER_UNSAFE),
    and at every reduction cell the file arm ran a non-commutative user operation in every round, correctly.
A cell the job did not measure fails.  The file passes when every cell passes.
"""
from __future__ import annotations

import math
import statistics

from scipy import stats as _st

from pgmpi_formats.native import ORDER_UNSAFE, parse_label

from .stats import ratios_ci

REDUCTIONS = {"allreduce", "reduce", "scan"}
ALPHA = 0.05


def _sign_p(xs: list[float], positive: bool) -> float:
    """Exact one-sided sign test: P(at least this many rounds on the given side | no effect)."""
    xs = [x for x in xs if x != 0]
    if not xs:
        return 1.0
    k = sum(1 for x in xs if (x > 0) == positive)
    return float(_st.binomtest(k, len(xs), 0.5, alternative="greater").pvalue)


def _med(xs):
    return statistics.median(xs) if xs else None


def judge_cell(cell, fig: dict | None, library: str, tol: float) -> dict:
    out = {"collective": cell.key, "nprocs": cell.nprocs, "msize": cell.msize, "range": [cell.lo, cell.hi],
           "label": cell.label, "problems": []}
    bad = out["problems"]
    v = parse_label(cell.label)
    if v is not None and (cell.key, v.name) in ORDER_UNSAFE.get(library, frozenset()):
        bad.append(f"(d) {v.name} reorders a reduction's operands: wrong for non-commutative operations")
    if fig is None:
        bad.append("not measured by the validation job")
        return out
    rounds = [r for _, r in sorted(fig["rounds"].items(), key=lambda kv: int(kv[0]))]
    nrounds = len(rounds)
    checks = fig.get("checks", {})
    # (a)
    for arm in ("file", "default") + (() if cell.label == "default" else (cell.label,)):
        got = checks.get(arm, [])
        fails = [c for c in got if c != "ok"]
        if fails:
            bad.append(f"(a) {arm}: wrong result or error: {fails[0]}")
        elif len(got) < nrounds:
            bad.append(f"(a) {arm}: checked in {len(got)} of {nrounds} rounds")
    # (d) the non-commutative run under the file
    if cell.key in REDUCTIONS and len(set(fig.get("noncommutative", []))) < nrounds:
        bad.append(f"(d) the file arm ran a non-commutative operation in {len(set(fig.get('noncommutative', [])))} "
                   f"of {nrounds} rounds")
    F = [r.get("file") for r in rounds]
    D = [r.get("default") for r in rounds]
    L = [r.get(cell.label) if cell.label != "default" else r.get("default") for r in rounds]
    paired = [(f, d, l) for f, d, l in zip(F, D, L) if f and d and l and f > 0 and d > 0 and l > 0]
    if len(paired) < 3:
        bad.append(f"timed in {len(paired)} complete rounds (at least 3 needed)")
        return out
    fl = [math.log(f / l) for f, d, l in paired]
    fd = [math.log(f / d) for f, d, l in paired]
    ld = [math.log(l / d) for f, d, l in paired]
    margin = 2 * math.log(1 + tol)
    ratio = [d / f for f, d, l in paired]                 # default / tuned, as main's verdicts
    out.update({"file_time": _med(F), "default_time": _med(D), "forced_time": _med(L),
                "ratio": math.exp(_med([math.log(r) for r in ratio])), "round_ratios": ratio,
                # the effect default / tuned with the analysis' one interval (stats.ratio_ci) over the rounds
                **ratios_ci(ratio).to_dict(),
                "file_vs_forced": math.exp(_med(fl)), "forced_vs_default": math.exp(_med(ld)), "rounds": len(paired)})
    # (b) a reduction's fingerprint decides where it tells the forced label from the default
    fps = fig.get("fingerprints", {})
    fF, fD, fL = fps.get("file", []), fps.get("default", []), fps.get(cell.label, [])
    if fF and fD and fL and cell.label != "default" and set(fL) != set(fD):
        out["evidence"] = "fingerprint"
        out["separable"] = True
        if "unstable" in fF + fL or len(set(fL)) != 1 or set(fF) != set(fL) or len(fF) < nrounds:
            bad.append(f"(b) the file's choice did not run: the reduction's fingerprint under the file "
                       f"{sorted(set(fF))} is not the forced {cell.label}'s {sorted(set(fL))} (the default's: "
                       f"{sorted(set(fD))})")
        return _slower(out, cell, fd, ratio, tol)
    if fF and fD and cell.label == "default":
        out["evidence"] = "fingerprint"
        if set(fF) != set(fD):
            bad.append(f"(b) the file keeps the default here, but the reduction's fingerprint under the file "
                       f"{sorted(set(fF))} is not the default's {sorted(set(fD))}")
        return out
    out["evidence"] = "time"
    separable = (cell.label != "default" and abs(_med(ld)) > margin
                 and _sign_p(ld, _med(ld) > 0) < ALPHA)
    out["separable"] = separable
    if separable:
        up = _med(ld) > 0
        p = _sign_p(fd, up)
        out["used_p"] = p
        if not (p < ALPHA and abs(_med(fl)) < abs(_med(fd))):
            bad.append(f"(b) the file's choice did not run: under the file {math.exp(_med(fd)):.2f}x the default, "
                       f"forced {cell.label} {math.exp(_med(ld)):.2f}x (sign test p={p:.3f}, file vs forced "
                       f"{math.exp(_med(fl)):.2f}x)")
    else:
        # neither the fingerprint nor the time tells the label from the default here: F vs L is reported, not
        # judged (a mismatch is mpirun-to-mpirun noise as likely as not); judge() asks for a proof elsewhere
        out["evidence"] = "none"
    return _slower(out, cell, fd, ratio, tol)


def _slower(out: dict, cell, fd: list[float], ratio: list[float], tol: float) -> dict:
    """(c): where the file changes the choice, tuned must not be slower than the built-in default."""
    if cell.label != "default":
        r = out["ratio"]
        slower_p = _sign_p(fd, True)
        if r < 1 / (1 + tol) or (r < 1 and slower_p < ALPHA):
            ci = (f", 95 % CI {out['ci_low']:.3f}-{out['ci_high']:.3f}x" if out.get("ci_low") is not None else "")
            out["problems"].append(f"(c) tuned slower than the default: {r:.3f}x (default / tuned, median of "
                                   f"{len(ratio)} paired rounds{ci}; sign test p={slower_p:.3f})")
    return out


def judge(cells, figs: dict, library: str, tolerance: float = 0.10) -> dict:
    """The verdict of one validation job on one file (see the module doc)."""
    per = [judge_cell(c, figs.get(f"{c.key}:{c.msize}"), library, tolerance) for c in cells]
    # a collective whose choice the file changes needs at least one cell where the measurement shows the
    # file's choice ran (Open MPI ignores a broken file silently)
    for key in sorted({c["collective"] for c in per if c["label"] != "default"}):
        mine = [c for c in per if c["collective"] == key and c["label"] != "default"]
        if not any(c.get("separable") for c in mine):
            mine[0]["problems"].append(
                "(b) unproven: at no cell of this collective did the fingerprint or the time tell the file's "
                "choice from the default; validate at sizes or process counts where they differ")
    failed = [c for c in per if c["problems"]]
    if not cells:
        state, why = "failed", ["the file selects nothing at this communicator size"]
    else:
        state = "failed" if failed else "passed"
        why = [f"{c['collective']} {c['msize']} B {c['label']}: {p}" for c in failed for p in c["problems"]]
    return {"state": state, "ok": state == "passed", "cells": per, "problems": why[:50], "tolerance": tolerance,
            "separable": sum(1 for c in per if c.get("separable"))}
