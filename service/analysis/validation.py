"""Validation of a candidate profile that can be believed: paired, with its own control, per range, repaired.

    figs = figures(files, nprocs)            # [(role, raw text)] of a validation job -> figures per (call, size)
    v = judge(profile_files, figs, null_spread=None, all_or_nothing=False)
    v["state"]  passed | repaired | failed | inconclusive;  v["files"]: the profile files to keep (repaired)
    v["kept"], v["dropped"] (ranges with their figures and why), v["control"] (the sizes left alone)

Measurement (scheduler/validation.py plans it): pgmpi-bench measures `default` and `tuned` interleaved in one
mpirun (`--algorithms=default,tuned` with PGMPITUNE_PROFILE_DIR set), at every redirected range's ends and
middle and just outside. Per mpirun the ratio default / tuned of the two medians of that mpirun; a size's
figure is the median of those ratios over the mpiruns (and the ratios themselves, for the regime check), with
the effect and its 95 % interval over the mpiruns (stats.ratios_ci; none from one mpirun).
Files from the older layout (default and tuned in separate launches, role "default" / "tuned") still give
figures, marked paired=False: their ratio carries the whole mpirun-to-mpirun drift.

The verdict:
1. Control: sizes the candidate leaves alone (outside every redirected range) run the default in both arms, so
   their ratio must come out at 1.0 within the tolerance (the campaign's null spread, at least 5 %). If one
   does not, the validation run itself is noise: "inconclusive", to be repeated, never a verdict.
2. Per redirected range, at every measured size inside: tuned not slower (paired ratio >= 1) and no mpirun in
   which tuned lost by more than the tolerance (a regime the users would meet). A range without a measured
   size inside is "missing" and counts as failed.
3. Repair: the failing sizes are dropped (recorded with their figures and why); the runs of consecutive
   passing sizes stay as ranges (a range's own ends kept where they pass), so no kept range contains a size
   the validation measured slower. The kept ranges form the profile files to publish ("repaired"; "passed"
   when nothing was dropped). With all_or_nothing one failure fails the whole candidate. A profile file
   left without ranges is dropped.
"""
from __future__ import annotations

import math
import re
import statistics

from pgmpi_formats import collectives as _colls
from pgmpi_formats.layouts import parse_layout
from pgmpi_formats.prf import format_prf, parse_prf, profile_layout
from pgmpi_formats.validation import TUNED, figures  # noqa: F401  (figures: the agent's half, re-exported)
from .profiles import refuse_control
from .regimes import split_regimes
from .stats import ratios_ci

TOLERANCE_FLOOR = 0.05     # the control sizes' ratio may miss 1.0 by this much when no null spread is known


def layout_serves(profile_lay: str, measured: str) -> bool:
    """Whether a figure measured on `measured` speaks for a profile of `profile_lay`: a layout profile only
    by figures of exactly its layout, the profile for p (one node) by figures on one node or of unknown layout."""
    if profile_lay:
        return measured == profile_lay
    even = parse_layout(measured)
    return measured == "" or (even is not None and even[0] == 1)


def _get(f, name, default=None):
    return f.get(name, default) if isinstance(f, dict) else getattr(f, name, default)


def _ratio(f) -> float | None:
    rr = _get(f, "run_ratios")
    if rr:
        return math.exp(statistics.median(math.log(r) for r in rr if r > 0))
    d, t = _get(f, "default_time"), _get(f, "tuned_time")
    return d / t if d and t and t > 0 else None


def _fig(f) -> dict:
    rr = _get(f, "run_ratios")
    return {"msize": _get(f, "msize"), "ratio": _ratio(f), "default_time": _get(f, "default_time"),
            "tuned_time": _get(f, "tuned_time"), "run_ratios": rr, **ratios_ci(rr).to_dict(),
            "regimes": split_regimes(rr).line() if rr else None,
            "paired": bool(_get(f, "paired", False))}


def _size_failure(f, tol: float) -> str | None:
    """Why tuned failed at this measured size (None: it held): slower on the median over mpiruns, or lost by
    more than the tolerance in some mpirun (a regime users would meet)."""
    r = _ratio(f)
    if r is None:
        return f"no ratio at {_get(f, 'msize')} B"
    if r < 1.0:
        return f"tuned slower at {_get(f, 'msize')} B: {r:.3f}x"
    rr = _get(f, "run_ratios") or []
    lost = [x for x in rr if x < 1 / (1 + tol)]
    if lost:
        return (f"tuned lost at {_get(f, 'msize')} B in {len(lost)} of {len(rr)} mpiruns (worst {min(lost):.2f}x; "
                f"{split_regimes(rr, tol).line()})")
    return None


def render_prf(text: str, keep: list[tuple[int, int, str]]) -> str:
    """The profile `text` with only the ranges in `keep` (same #@pgmpi keys; written by the one .prf writer,
    so PGMPITuneLib's limits and its Reduce_scatter_block sizes hold)."""
    prf = parse_prf(text)
    meta = {k: v for k, v in prf["meta"].items() if k != "profile_version"}
    return format_prf(prf["mpi_name"], prf["nprocs"], keep, meta=meta,
                      comments=["validation dropped the sizes it measured slower (see the profile page)"])


def _dt_typed(dt_figs, profile_files: dict[str, str]) -> list[dict]:
    """A datatype validation's figures of the `typed` description (the .prf repair's evidence) as one figure
    per (collective, p, size) for the .prf judgement: inside a redirected range the worst case (a range
    redirects every call of its size, whatever the layout), outside (the control) the median case."""
    ranges = []
    for fname, text in profile_files.items():
        if fname.endswith(".dtprf"):
            continue
        try:
            prf = parse_prf(text, fname)
        except ValueError:
            continue
        coll = _colls.by_mpi_name(prf["mpi_name"])
        if coll is not None:
            ranges += [(coll.key, prf["nprocs"], lo, hi) for lo, hi, a in prf["ranges"] if a != "default"]
    by: dict[tuple, list] = {}
    for f in dt_figs:
        if _get(f, "description") == "typed" and _ratio(f) is not None:
            by.setdefault((_get(f, "collective"), _get(f, "nprocs"), _get(f, "msize")), []).append(f)
    out = []
    for (coll, p, m), fs in sorted(by.items(), key=lambda kv: tuple(map(str, kv[0]))):
        fs.sort(key=_ratio)
        inside = any(c == coll and q == p and lo <= m <= hi for c, q, lo, hi in ranges)
        f = fs[0] if inside else fs[len(fs) // 2]
        out.append(dict(f) if isinstance(f, dict) else f.model_dump())
    for f in out:
        f.pop("case", None)
    return out


def _any_pattern(case: str) -> str:
    """pgmpi-dtbench's case name without its pattern (dt_<pattern>_<base>_<layout>...)."""
    return re.sub(r"^dt_(pingpong|bcast|allgather)_", "dt_", case)


def _judge_dtprf(fname: str, text: str, dt_figs, tol: float):
    """Each replacement of a datatype profile by the figures of the descriptions it replaces (its evidence:
    `<case>:<description>@<bytes>`): kept when no figure of those measured it slower; the kept rules, and
    the kept / dropped entries with their figures."""
    from pgmpi_formats.dtprf import parse_dtprf
    keep, kept, dropped = [], [], []
    for sig, desc, ev in parse_dtprf(text, fname)["rules"]:
        # the replacement acts on the evidence's type: that layout, description and size (another size of the
        # same description is another type map, another signature) -- in every call that communicates it, so
        # in every pattern measured, not only the evidence's
        cells = set()
        for item in ev.get("evidence", "").split(","):
            case, _, rest = item.partition(":")
            replaced, _, size = rest.partition("@")
            if case and replaced and size.isdigit():
                cells.add((_any_pattern(case), replaced, int(size)))
        mine = [f for f in dt_figs if (_any_pattern(_get(f, "case") or ""), _get(f, "description"),
                                       _get(f, "msize")) in cells]
        entry = {"file": fname, "signature": sig, "description": desc, "figures": [_fig(f) for f in mine]}
        why = [w for w in (_size_failure(f, tol) for f in mine) if w]
        if not mine:
            dropped.append(entry | {"why": "no measured figure of the descriptions it replaces"})
        elif why:
            dropped.append(entry | {"why": "; ".join(why)})
        else:
            kept.append(entry)
            keep.append((sig, desc, ev))
    return keep, kept, dropped


def judge(profile_files: dict[str, str], figs, null_spread: float | None = None,
          all_or_nothing: bool = False) -> dict:
    """The verdict of one validation run on a candidate's profile files (see the module doc)."""
    tol = max(null_spread or 0.0, TOLERANCE_FLOOR)
    kept_files: dict[str, str] = {}
    kept, dropped, control, errors = [], [], [], []
    dt_kept, dt_dropped = [], []
    checked = 0
    dt_figs = [f for f in figs if _get(f, "case")]
    figs = [f for f in figs if not _get(f, "case")] + _dt_typed(dt_figs, profile_files)
    for fname, text in sorted(profile_files.items()):
        if fname.endswith(".dtprf"):
            try:
                keep_rules, k, d = _judge_dtprf(fname, text, dt_figs, tol)
            except ValueError as exc:
                errors.append({"file": fname, "error": str(exc)})
                continue
            dt_kept += k
            dt_dropped += d
            checked += sum(len(x["figures"]) for x in k + d)
            if keep_rules:
                from pgmpi_formats.dtprf import format_dtprf
                kept_files[fname] = text if not d else format_dtprf(
                    keep_rules, comments=["validation dropped the replacements it measured slower"])
            continue
        try:
            refuse_control(text, fname)
            prf = parse_prf(text, fname)
        except ValueError as exc:
            errors.append({"file": fname, "error": str(exc)})
            continue
        coll = _colls.by_mpi_name(prf["mpi_name"])
        if coll is None:
            errors.append({"file": fname, "error": f"unknown collective {prf['mpi_name']!r}"})
            continue
        mine = [f for f in figs if _get(f, "collective") == coll.key and _get(f, "nprocs") == prf["nprocs"]
                and layout_serves(profile_layout(prf), _get(f, "layout", "") or "")]
        redirected = [r for r in prf["ranges"] if r[2] != "default"]
        for f in mine:
            if not any(lo <= _get(f, "msize") <= hi for lo, hi, _ in redirected):
                r = _ratio(f)
                control.append({"collective": coll.key, "nprocs": prf["nprocs"], **_fig(f),
                                "ok": r is not None and abs(r - 1.0) <= tol})
        keep = []
        for lo, hi, alg in redirected:
            inside = sorted((f for f in mine if lo <= _get(f, "msize") <= hi), key=lambda f: _get(f, "msize"))
            base = {"file": fname, "collective": coll.key, "nprocs": prf["nprocs"], "algorithm": alg}
            checked += len(inside)
            if not inside:
                dropped.append(base | {"range": [lo, hi], "figures": [], "why": "no measured size inside the range"})
                continue
            verdicts = [(f, _size_failure(f, tol)) for f in inside]
            # repair: the measured sizes that failed are dropped; each run of consecutive passing sizes stays a
            # range (from the range's own end when it starts / ends the range), so no kept range contains a
            # size the validation measured slower
            k = 0
            while k < len(verdicts):
                j = k
                while j < len(verdicts) and (verdicts[j][1] is None) == (verdicts[k][1] is None):
                    j += 1
                group = verdicts[k:j]
                first = lo if k == 0 else _get(group[0][0], "msize")
                last = hi if j == len(verdicts) else _get(group[-1][0], "msize")
                figs_ = [_fig(f) for f, _ in group]
                if group[0][1] is None:
                    kept.append(base | {"range": [first, last], "figures": figs_})
                    keep.append((first, last, alg))
                else:
                    dropped.append(base | {"range": [_get(group[0][0], "msize"), _get(group[-1][0], "msize")],
                                           "figures": figs_, "why": "; ".join(w for _, w in group)})
                k = j
        if keep:
            kept_files[fname] = text if keep == [tuple(r) for r in redirected] else render_prf(text, keep)
    bad_control = [c for c in control if not c["ok"]]
    if bad_control:
        state = "inconclusive"
    elif errors or not (kept or dt_kept) or ((dropped or dt_dropped) and all_or_nothing):
        state = "failed"
    elif dropped or dt_dropped:
        state = "repaired"
    else:
        state = "passed"
    slower = [{"collective": d["collective"], "nprocs": d["nprocs"], "msize": f["msize"],
               "default_time": f["default_time"], "tuned_time": f["tuned_time"], "ratio": f["ratio"]}
              for d in dropped for f in d["figures"] if f["ratio"] is not None and f["ratio"] < 1.0]
    missing = [{"collective": d["collective"], "nprocs": d["nprocs"], "range": d["range"]}
               for d in dropped if not d["figures"]] + errors
    return {"state": state, "ok": state in ("passed", "repaired"), "checked": checked, "tolerance": tol,
            "slower": slower, "missing": missing,
            "kept": kept, "dropped": dropped, "control": control, "errors": errors,
            "dt_kept": dt_kept, "dt_dropped": dt_dropped,
            "all_or_nothing": all_or_nothing, "files": kept_files if state in ("passed", "repaired") else {},
            "paired": all(_get(f, "paired", False) for f in figs) if figs else False}


def summary_line(verdict: dict) -> str:
    """One line for the profile version's notes: the state, what was dropped and why."""
    st = verdict["state"]
    if st == "inconclusive":
        bad = [c for c in verdict["control"] if not c["ok"]]
        s = ("inconclusive (repeat it): sizes the candidate leaves alone came out at "
             + ", ".join(f"{c['collective']} {c['msize']} B {c['ratio']:.2f}x" if c["ratio"] else
                         f"{c['collective']} {c['msize']} B ?" for c in bad[:5])
             + f" (tolerance {verdict['tolerance']:.0%} around 1.0)")
    else:
        s = f"{st}: kept {len(verdict['kept'])} range(s)"
    if verdict["dropped"] and st != "inconclusive":
        s += "; dropped " + "; ".join(f"{d['collective']} p={d['nprocs']} {d['range'][0]}-{d['range'][1]} "
                                     f"{d['algorithm']} ({d['why']})" for d in verdict["dropped"][:10])
    if verdict.get("dt_kept") or verdict.get("dt_dropped"):
        s += f"; datatype replacements kept {len(verdict.get('dt_kept') or [])}"
        if verdict.get("dt_dropped"):
            s += ", dropped " + "; ".join(f"{d['signature']} {d['description']} ({d['why']})"
                                         for d in verdict["dt_dropped"][:10])
    if verdict["errors"]:
        s += "; errors: " + "; ".join(e.get("error", "") for e in verdict["errors"][:5])
    if not verdict.get("paired"):
        s += "; unpaired (default and tuned in separate launches)"
    return s


def apply_verdict(version, verdict: dict, job: str = "") -> None:
    """Set a profile version's state, files and notes from a judge() verdict: validated with the kept ranges
    only when it passed or was repaired; otherwise it stays a candidate (the files untouched)."""
    if verdict["ok"]:
        version.state = "validated"
        version.files = dict(verdict["files"])
    else:
        version.state = "candidate"
    version.notes = (f"validation: {summary_line(verdict)}; job {job}")[:2000]
