"""The one definition of "live": what a library runs with now, for every page, the API, the alerts feed and
the command line (no Flask).

Live = the files of the version that `<profile root>/<machine>/<set dir>/current` points at, read through
service/workflows/publish.py: its redirected mock-up ranges (.prf) and its native decision files. Every range
carries the validation's measured gain (default / tuned, per size, from the validation figures stored with
that version); a figure outside every live range is a control size (nothing is redirected there, tuned = the
default) or a range the validation dropped (named by the validation record).

    now = tuned_now(session, library, root)
    now["live"]        -> [{collective, nprocs, first, last, algorithm, figures: [{msize, gain, ci}], gain}]
    now["native"]      -> [{file, lines}]
    now["dropped"]     -> [{collective, nprocs, first, last, algorithm, why, figures}]
    now["not_acted"]   -> [{collective, msize, nprocs, mockup, slowdown, status, why}]
    now["why_nothing"] -> "nothing to publish, because ..." when nothing is live
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from pgmpi_formats.collectives import by_key, by_mpi_name
from service.analysis.spans import describe, span_of
from service.store.models import Analysis, AuditLog, MpiLibrary, ProfileSet, ProfileVersion, Violation

NATIVE_FILES = ("native.rules", "native.json", "native.impi")


def coll_key(name: str) -> str:
    c = by_mpi_name(name) if name.startswith("MPI_") else None
    if c is not None:
        return c.key
    try:
        return by_key(name).key
    except (KeyError, ValueError):
        return name.lower().replace("mpi_", "").replace("_", "")


def ranges_of(files: dict[str, str] | None) -> list[dict]:
    """The redirected ranges of a version's .prf files (the default's own ranges left out)."""
    from pgmpi_formats.prf import parse_prf
    out = []
    for name, text in sorted((files or {}).items()):
        if not name.endswith(".prf"):
            continue
        try:
            prf = parse_prf(text, name)
        except ValueError:
            continue
        # a span between measured counts is live only once its validation at line 2's p confirmed it
        span = span_of(name, text)
        out += [{"collective": coll_key(prf["mpi_name"]), "mpi_name": prf["mpi_name"], "nprocs": prf["nprocs"],
                 "first": lo, "last": hi, "algorithm": alg, "file": name,
                 "span": describe(span, validated=True) if span is not None else None}
                for lo, hi, alg in prf["ranges"] if alg != "default"]
    return out


def covering(ranges: list[dict], collective: str, nprocs: int, msize: int) -> dict | None:
    key = coll_key(collective)
    return next((r for r in ranges if r["collective"] == key and r["nprocs"] == nprocs
                 and r["first"] <= msize <= r["last"]), None)


def figure_role(f, ranges: list[dict], dropped: list[dict]) -> str:
    """'live' (inside a live range), 'dropped' (inside a range the validation dropped) or 'control' (a size
    nothing redirects: the validation measures it to see tuned = default)."""
    if covering(ranges, f.collective, f.nprocs, f.msize):
        return "live"
    if covering(dropped, f.collective, f.nprocs, f.msize):
        return "dropped"
    return "control"


def _intervals(rec: dict) -> dict[tuple, tuple]:
    """(collective, nprocs, msize) -> (ci_low, ci_high) of the validation's kept figures (service/analysis/
    validation.py puts stats.ratios_ci's interval on each figure; older records have none)."""
    out = {}
    for k in rec.get("kept") or []:
        for f in (k.get("figures") or []) if isinstance(k, dict) else []:
            if isinstance(f, dict) and f.get("ci_low") is not None and f.get("ci_high") is not None:
                out[(coll_key(str(k.get("collective", ""))), k.get("nprocs"), f.get("msize"))] = \
                    (f["ci_low"], f["ci_high"])
    return out


def _figure(f, intervals: dict | None = None) -> dict:
    d = f.details if isinstance(f.details, dict) else {}
    # the gain's 95 % interval when the validation stored one (a figure's details or the record's kept figures)
    ci = ((d["ci_low"], d["ci_high"]) if d.get("ci_low") is not None and d.get("ci_high") is not None
          else (intervals or {}).get((coll_key(f.collective), f.nprocs, f.msize)))
    return {"msize": f.msize, "gain": f.speedup, "default_s": f.default_time, "tuned_s": f.tuned_time,
            "ci": list(ci) if ci else None}


def validation_record(session, v: ProfileVersion) -> dict:
    """The latest validation of a version that gave a verdict (else the latest), as record_validation audited it."""
    recs = [r.details or {} for r in session.scalars(
        select(AuditLog).where(AuditLog.entity == "profile", AuditLog.entity_id == str(v.id),
                               AuditLog.action == "validate").order_by(AuditLog.id.desc()))]
    return next((d for d in recs if d.get("state") != "inconclusive"), recs[0] if recs else {})


def _dropped(rec: dict) -> list[dict]:
    out = []
    for d in rec.get("dropped") or []:
        rng = d.get("range") or [d.get("msize"), d.get("msize")]
        if not isinstance(d, dict) or rng[0] is None:
            continue
        out.append({"collective": coll_key(str(d.get("collective", ""))), "nprocs": d.get("nprocs"),
                    "first": rng[0], "last": rng[1], "algorithm": d.get("algorithm"), "why": d.get("why"),
                    "figures": d.get("figures") or []})
    return out


def live_version(session, ps: ProfileSet, root: Path) -> tuple[dict, ProfileVersion | None]:
    """(status of the set under root, the database's version that is current there, or None)."""
    from service.workflows import publish as publishing
    st = publishing.history_of(ps, root)
    if st.get("current") in (None, 0) or not st.get("target"):
        return st, None
    path = str(Path(st["target"]) / "versions" / str(st["current"]))
    v = session.scalar(select(ProfileVersion).where(ProfileVersion.profile_set_id == ps.id,
                                                    ProfileVersion.published_path == path))
    return st, v


def live_gain(session, v: ProfileVersion) -> float | None:
    """The smallest measured gain inside the version's redirected ranges (never a dropped range's or a control
    size's figure); None without figures there."""
    ranges = ranges_of(v.files)
    dropped = _dropped(validation_record(session, v))
    gains = [f.speedup for f in v.figures if figure_role(f, ranges, dropped) == "live"]
    return min(gains) if gains else None


def tuned_now(session, lib: MpiLibrary, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"machine": lib.machine.name, "library": lib.name, "version": lib.version,
                           "sets": [], "live": [], "native": [], "dropped": [], "not_acted": [],
                           "live_version": None, "published_at": None, "why_nothing": None}
    for ps in session.scalars(select(ProfileSet).where(ProfileSet.library_id == lib.id).order_by(ProfileSet.id)):
        st, v = live_version(session, ps, root)
        out["sets"].append({"id": ps.id, "current": st.get("current"), "target": st.get("target"),
                            "error": st.get("error")})
        if v is None:
            continue
        out["live_version"] = st["current"]
        out["published_at"] = v.published_at.isoformat(timespec="seconds") if v.published_at else None
        ranges = ranges_of(st.get("files") or v.files)
        rec = validation_record(session, v)
        dropped = _dropped(rec)
        live_files = st.get("files") or v.files or {}
        for r in ranges:
            # a file the live version carried (a span adds its file to the live set): its figures are those of
            # the validated version that brought exactly this text
            src = v if (v.files or {}).get(r["file"]) == live_files.get(r["file"]) else next(
                (x for x in sorted(ps.versions, key=lambda x: -x.id) if x.validated_at is not None
                 and (x.files or {}).get(r["file"]) == live_files.get(r["file"])), v)
            src_rec = rec if src is v else validation_record(session, src)
            figs = [_figure(f, _intervals(src_rec)) for f in src.figures
                    if covering([r], f.collective, f.nprocs, f.msize)]
            out["live"].append({**r, "set": ps.id, "figures": sorted(figs, key=lambda x: x["msize"]),
                                "gain": min((f["gain"] for f in figs), default=None)})
        for name in NATIVE_FILES:
            text = (st.get("files") or {}).get(name)
            if text:
                out["native"].append({"file": name, "set": ps.id,
                                      "lines": [l for l in text.splitlines() if l.strip() and not l.startswith("#")]})
        out["dropped"] += [{**d, "set": ps.id} for d in dropped]
    a = session.scalar(select(Analysis).where(Analysis.library_id == lib.id)
                       .order_by(Analysis.created_at.desc(), Analysis.id.desc()).limit(1))
    out["analysis_id"] = a.id if a is not None else None
    if a is not None:
        summ = a.summary if isinstance(a.summary, dict) else {}
        refused = {(coll_key(str(x.get("collective", ""))), x.get("msize"), x.get("nprocs")): x.get("why")
                   for x in summ.get("refused") or [] if isinstance(x, dict)}
        for v in session.scalars(select(Violation).where(Violation.analysis_id == a.id, Violation.kind == "pattern")
                                 .order_by(Violation.collective, Violation.nprocs, Violation.msize)):
            if covering(out["live"], v.collective, v.nprocs, v.msize):
                continue
            why = (v.status_why if v.status != "verified" and v.status_why else
                   refused.get((coll_key(v.collective), v.msize, v.nprocs))
                   or ("dropped by validation" if covering(out["dropped"], v.collective, v.nprocs, v.msize)
                       else "no candidate published covers it yet" if v.status == "verified" else v.status))
            out["not_acted"].append({"collective": coll_key(v.collective), "msize": v.msize, "nprocs": v.nprocs,
                                     "mockup": v.mockup, "slowdown": v.slowdown, "status": v.status, "why": why})
        kinds = {"split": "split-guideline hit", "monotony": "monotony hit"}
        for v in session.scalars(select(Violation).where(Violation.analysis_id == a.id, Violation.kind != "pattern",
                                                         Violation.status == "verified")
                                 .order_by(Violation.collective, Violation.nprocs, Violation.msize)):
            out["not_acted"].append({"collective": coll_key(v.collective), "msize": v.msize, "nprocs": v.nprocs,
                                     "mockup": v.mockup or "", "slowdown": v.slowdown, "status": v.status,
                                     "kind": v.kind, "why": f"{kinds.get(v.kind, v.kind)}: no mock-up repairs it "
                                                            "(a redirect needs a faster equivalent composition)"})
        out["control"] = (summ.get("control") or {}).get("line")
        out["trustworthy"] = (summ.get("control") or {}).get("trustworthy", True)
    if not out["live"] and not out["native"]:
        out["why_nothing"] = why_nothing(session, lib, a, out)
    return out


def why_nothing(session, lib: MpiLibrary, a: Analysis | None, now: dict) -> str:
    """'nothing to publish, because ...': the first reason that holds, from the evidence the service stores."""
    if a is None:
        return "nothing to publish, because no campaign of this library has been analysed yet"
    if not now.get("trustworthy", True):
        return ("nothing to publish, because the control arm of the latest campaign is untrustworthy "
                f"({now.get('control') or 'control line missing'}): no candidate is made from it")
    verified = [x for x in now["not_acted"] if x["status"] == "verified"]
    hits = [x for x in verified if x.get("kind") in ("split", "monotony")]
    if verified and len(hits) == len(verified):
        return (f"nothing to publish, because the latest analysis found only {len(hits)} split-guideline or "
                "monotony hit(s), which no redirect repairs, and no mock-up violation")
    if not verified and not now["not_acted"]:
        return (f"nothing to publish, because the latest analysis ({a.n_checked} checks) found no verified "
                "violation a mock-up repairs: the library keeps its defaults")
    cands = session.scalars(select(ProfileVersion).join(ProfileSet).where(ProfileSet.library_id == lib.id)
                            .order_by(ProfileVersion.id.desc())).all()
    if cands:
        c = cands[0]
        return (f"nothing published: candidate #{c.number} is {c.state}"
                + (f" ({c.notes})" if c.notes else "") + "; see the profile page")
    return ("nothing to publish, because no verified violation passed the candidate rules "
            "(minimum gain, null spread, nights): " + "; ".join(f"{x['collective']} {x['msize']} B: {x['why']}"
                                                                for x in now["not_acted"][:3]))
