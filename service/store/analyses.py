"""POST /api/v1/analyses: rebuild the stored runs as a pgmpi_formats.results.ResultSet, run service/analysis's verdicts and
profile generation (service.analysis), store the analysis, its violations and candidate profiles."""
from __future__ import annotations

from typing import Optional

import numpy as np
from sqlalchemy import select

from pgmpi_formats.results import ResultSet, RunResult
from service.store.db import db
from service.store.models import (Analysis, Campaign, DtVerdict, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run,
                                  Series, Violation)


class AnalysisInputError(ValueError):
    def __init__(self, message: str, field: Optional[str] = None, status: int = 422):
        super().__init__(message)
        self.field, self.status = field, status


def load_resultset(runs: list[Run]) -> ResultSet:
    """Stored runs -> ResultSet (the reader's in-memory form), one RunResult per run."""
    out = []
    for r in runs:
        series = db.session.scalars(select(Series).where(Series.run_id == r.id).order_by(Series.id)).all()
        tests = sorted({s.call for s in series})
        algs = sorted({s.algorithm for s in series})
        parts = [(tests.index(s.call), algs.index(s.algorithm), s.msize, s.values()) for s in series]
        n = sum(len(p[3]) for p in parts)
        rr = RunResult(
            source=r.file_name, header=dict(r.headers), tests=tests, algorithms=algs,
            test=np.concatenate([np.full(len(v), t, np.int32) for t, _, _, v in parts]) if n else np.zeros(0, np.int32),
            nrep=np.concatenate([np.arange(len(v), dtype=np.int64) for *_, v in parts]) if n else np.zeros(0, np.int64),
            msize=np.concatenate([np.full(len(v), m, np.int64) for _, _, m, v in parts]) if n else np.zeros(0, np.int64),
            runtime=np.concatenate([v for *_, v in parts]) if n else np.zeros(0),
            algorithm=np.concatenate([np.full(len(v), a, np.int32) for _, a, _, v in parts]) if n else np.zeros(0, np.int32),
            pgmpi_lines=list(r.footer))
        out.append(rr)
    return ResultSet.from_runs(out)


def select_runs(machine: Machine, data) -> tuple[MpiLibrary, Optional[Campaign], list[Run]]:
    q = select(MpiLibrary).where(MpiLibrary.machine_id == machine.id, MpiLibrary.name == data.library)
    if data.version:
        q = q.where(MpiLibrary.version == data.version)
    libs = db.session.scalars(q.order_by(MpiLibrary.id.desc())).all()
    if not libs:
        raise AnalysisInputError(f"machine {machine.name!r} has no MPI library {data.library!r}"
                                 + (f" version {data.version!r}" if data.version else ""), field="library", status=404)
    lib = libs[0]
    campaign = None
    rq = select(Run).where(Run.library_id == lib.id)
    if data.campaign:
        campaign = db.session.scalar(select(Campaign).where(Campaign.name == data.campaign))
        if campaign is None or campaign.machine_id != machine.id:
            raise AnalysisInputError(f"unknown campaign {data.campaign!r} on {machine.name!r}", field="campaign",
                                     status=404)
        rq = rq.where(Run.campaign_id == campaign.id)
    # Validation launches (tuned mode with a candidate, tagged #@pgmpi_validation by the agent) are
    # evidence about a candidate, not about the library: never analyse them as campaign data.
    runs = [r for r in db.session.scalars(rq.order_by(Run.id)).all()
            if not (r.headers or {}).get("pgmpi_validation")]
    if not runs:
        raise AnalysisInputError("no stored runs for this machine, library and campaign", field="library")
    return lib, campaign, runs


def run_analysis(machine: Machine, data, actor: str) -> Analysis:
    lib, campaign, runs = select_runs(machine, data)
    from service.analysis import api as analysis_api  # the analysis' one entry point
    from service.analysis.stats import TESTS
    if data.test not in TESTS:
        raise AnalysisInputError(f"unknown test {data.test!r}; valid: {', '.join(TESTS)}", field="test")
    rs = load_resultset(runs)
    try:
        out = analysis_api.run(rs, alpha=data.alpha, test=data.test, fdr=data.fdr,
                               gain=getattr(data, "min_gain", 0.10), campaign=campaign.name if campaign else None,
                               confirmations=getattr(data, "confirmations", 1),
                               confirmed_before=nights(lib, campaign)[0] if campaign else {})
        data.fdr = out["fdr"]    # None (the default) resolved: on for a campaign's analysis
        from datetime import datetime, timezone
        from service.analysis import datatypes
        dt = datatypes.analyse(rs, alpha=data.alpha, test=data.test if data.test in datatypes.PAIRED_TESTS
                               else datatypes.DEFAULT_TEST, fdr=bool(out["fdr"]),
                               min_effect=getattr(data, "min_gain", 0.10), campaign=campaign.name if campaign else None,
                               created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    except ValueError as e:
        raise AnalysisInputError(str(e)) from None
    result = convert(out)
    if dt is not None:
        merge_datatypes(result, dt)
    return store_result(machine, lib, campaign, data, actor, result)


def merge_datatypes(result: dict, dt: dict) -> None:
    """The datatype guidelines' verdicts, control arm and repair profiles (service/analysis/datatypes.py
    analyse) into the rows store_result writes; a repair profile whose file name a collective profile of the
    same analysis took is left out (the collective campaign's measurement of that call decides)."""
    vs = dt["verdicts"]
    result["datatypes"] = [v.as_dict() for v in vs]
    taken = set(result.get("profiles") or {})
    added = {k: v for k, v in dt["profiles"].items() if k not in taken}
    result.setdefault("profiles", {}).update(added)
    tested = [v for v in vs if v.verdict != "n/a" and v.guideline in ("GL1", "GL2/3", "GL4")]
    result["summary"]["datatypes"] = {
        "tested": len(tested), "violated": sum(v.verdict == "violated" for v in tested),
        "control": dt["control"].to_dict(), "profiles": sorted(added),
        "left_out": sorted(set(dt["profiles"]) - set(added)), "refused": dt["refused"][:200]}


def _key(collective: str, nprocs: int, msize: int, mockup: str) -> str:
    return f"{collective} {nprocs} {msize} {mockup}"


def nights(lib: MpiLibrary, campaign: Optional[Campaign]) -> tuple[dict, dict]:
    """Replication across nights: (confirmed, contradicted), each (collective, nprocs, msize, mock-up) -> the
    number of OTHER campaigns of this library whose latest analysis found that pattern violation (not
    contradicted by its validation), resp. tested it and did not find it or had it contradicted.  The control
    arm is never stored as a violation, so it never counts."""
    latest: dict[int, int] = {}
    for a_id, c_id in db.session.execute(select(Analysis.id, Analysis.campaign_id).where(
            Analysis.library_id == lib.id, Analysis.campaign_id.is_not(None)).order_by(Analysis.id)):
        if campaign is None or c_id != campaign.id:
            latest[c_id] = a_id
    confirmed: dict[tuple, int] = {}
    contradicted: dict[tuple, int] = {}
    if not latest:
        return confirmed, contradicted
    ids = list(latest.values())
    for v in db.session.scalars(select(Violation).where(Violation.analysis_id.in_(ids),
                                                        Violation.kind == "pattern")):
        k = (v.collective, v.nprocs, v.msize, v.mockup)
        into = contradicted if v.status == "contradicted" else confirmed
        into[k] = into.get(k, 0) + 1
    for summ in db.session.scalars(select(Analysis.summary).where(Analysis.id.in_(ids))):
        for text in (summ or {}).get("passed") or []:
            coll, p, ms, mock = text.split(" ")
            k = (coll, int(p), int(ms), mock)
            contradicted[k] = contradicted.get(k, 0) + 1
    return confirmed, contradicted


def confirmed_before(lib: MpiLibrary, campaign: Optional[Campaign]) -> dict[tuple[str, int, int, str], int]:
    """(collective, nprocs, msize, mock-up) -> how many other campaigns' latest analyses of this library found
    that pattern violation and did not see it contradicted by their validation."""
    return nights(lib, campaign)[0]


def convert(out: dict) -> dict:
    """service.analysis.api.run's result -> the rows store_result writes."""
    configs = out.get("configs", [])

    def nprocs_of(cfg) -> int:
        return configs[cfg]["nprocs"] if cfg is not None and cfg < len(configs) else 0

    trusted = (out.get("control") or {}).get("trustworthy", True)
    # found by fewer campaigns than the candidate rule requires: unconfirmed (service/analysis/profiles.py)
    below_k = {_key(r["collective"], r["nprocs"], r["msize"], r["mockup"]): r["why"]
               for r in out.get("refused") or [] if r.get("rule") == "replication"}
    viols, passed = [], []
    for v in out.get("verdicts", []):
        if v.get("control"):
            continue    # the control arm's flags are false alarms by construction: summary["control"]
        cfg = configs[v["cfg"]] if v.get("cfg") is not None and v["cfg"] < len(configs) else {}
        nprocs = cfg.get("nprocs", 0)
        if not v.get("violated"):
            if v["kind"] == "pattern":   # tested and not found: contradicts this violation on other nights
                passed.append(_key(v["collective"], nprocs, v["msize"], v["algorithm"]))
            continue
        status, why = "verified", None
        if not trusted:
            status, why = "unconfirmed", "the campaign's control arm is untrustworthy"
        elif v["kind"] == "pattern" and _key(v["collective"], nprocs, v["msize"], v["algorithm"]) in below_k:
            status, why = "unconfirmed", below_k[_key(v["collective"], nprocs, v["msize"], v["algorithm"])]
        viols.append({"kind": v["kind"], "collective": v["collective"], "mockup": v["algorithm"],
                      "msize": v["msize"], "ref_msize": v.get("ref_msize"), "nprocs": cfg.get("nprocs", 0),
                      "layout": cfg.get("layout", ""),
                      "default_time": v["default_median"], "mockup_time": v["other_median"],
                      "slowdown": v["slowdown"], "p_value": v.get("p_adjusted") if v.get("p_adjusted") is not None
                      else v.get("p_value"), "barrier_warning": v.get("barrier_warning"),
                      "status": status, "status_why": why, "effect": _opt(v.get("effect")),
                      "ci_low": _opt(v.get("ci_low")), "ci_high": _opt(v.get("ci_high")),
                      "ci_mpiruns": v.get("ci_mpiruns")})
    # results-check failures per (library, collective, size, p, algorithm): the library defects the pages show
    defects = [d | {"nprocs": nprocs_of(d.get("cfg"))} for d in out.get("defects") or []]
    summary = {"counts": out.get("counts"), "quality": out.get("quality"), "configs": configs,
               "gain": out.get("gain"), "control": out.get("control"), "defects": defects,
               "confirmations": out.get("confirmations"), "refused": (out.get("refused") or [])[:500],
               "passed": passed, "reporting": out.get("reporting"),
               "guideline_summary": out.get("guideline_summary")}
    return {"checked": len(out.get("verdicts", [])), "violations": viols, "summary": summary,
            "profiles": {p["filename"]: p["text"] for p in out.get("profiles", []) if p.get("text")}}


def _opt(x) -> Optional[float]:
    """A finite float or None (no stored value may break a page)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def _finite(x) -> float:
    x = float(x) if x is not None else 0.0
    return x if np.isfinite(x) else 0.0


def store_result(machine, lib, campaign, data, actor, result) -> Analysis:
    """`result`: {"checked": int, "violations": [{collective, mockup, msize, nprocs, layout?, default_time,
    mockup_time, slowdown, p_value, kind?, ref_msize?, barrier_warning?}], "profiles": {file name: text}, "summary": {...}}"""
    viols = list(result.get("violations", []))
    verified = [v for v in viols if v.get("status", "verified") == "verified"]
    a = Analysis(machine_id=machine.id, library_id=lib.id, campaign_id=campaign.id if campaign else None,
                 alpha=data.alpha, test=data.test, fdr=data.fdr, actor=actor, n_checked=int(result.get("checked", 0)),
                 n_violations=len(verified),
                 max_slowdown=max((_finite(v["slowdown"]) for v in verified), default=None),
                 summary=result.get("summary"))
    db.session.add(a)
    db.session.flush()
    confirmed, contradicted = nights(lib, campaign) if campaign is not None else ({}, {})
    for v in viols:
        kind = v.get("kind", "pattern")
        k = (v["collective"], int(v["nprocs"]), int(v["msize"]), v["mockup"])
        db.session.add(Violation(analysis_id=a.id, collective=v["collective"], mockup=v["mockup"],
                                 msize=int(v["msize"]), nprocs=int(v["nprocs"]),
                                 default_time=_finite(v["default_time"]), mockup_time=_finite(v["mockup_time"]),
                                 slowdown=_finite(v["slowdown"]), p_value=v.get("p_value"),
                                 kind=kind, ref_msize=v.get("ref_msize"),
                                 barrier_warning=v.get("barrier_warning"), layout=v.get("layout") or "",
                                 status=v.get("status", "verified"), status_why=v.get("status_why"),
                                 nights_confirmed=1 + confirmed.get(k, 0) if kind == "pattern" else None,
                                 nights_contradicted=contradicted.get(k, 0) if kind == "pattern" else None,
                                 effect=v.get("effect"), ci_low=v.get("ci_low"), ci_high=v.get("ci_high"),
                                 ci_mpiruns=v.get("ci_mpiruns")))
    for d in result.get("datatypes") or []:
        db.session.add(DtVerdict(analysis_id=a.id, guideline=d["guideline"], pattern=d["pattern"],
                                 basetype=d["basetype"], dt_layout=d["layout"][:60], nprocs=int(d["nprocs"]),
                                 layout=d.get("process_layout") or "", msize=int(d["msize"]), slower=d["slower"],
                                 faster=d["faster"], ratio=d["ratio"], p_value=d["p"], runs=int(d["runs"]),
                                 verdict=d["verdict"], signature=d.get("signature") or ""))
    profiles = result.get("profiles") or {}
    if profiles:
        ps = db.session.scalar(select(ProfileSet).where(ProfileSet.machine_id == machine.id,
                                                        ProfileSet.library_id == lib.id))
        if ps is None:
            ps = ProfileSet(machine_id=machine.id, library_id=lib.id)
            db.session.add(ps)
            db.session.flush()
            from service.profiles.lifecycle import set_directory
            set_directory(ps)
        number = 1 + max((v.number for v in ps.versions), default=0)
        db.session.add(ProfileVersion(profile_set_id=ps.id, number=number, state="candidate", analysis_id=a.id,
                                      files=dict(profiles), actor=actor))
    db.session.flush()
    from service.store.queries import refresh_overview
    refresh_overview(db.session, [lib.id])
    return a


def apply_validation(analysis_id: Optional[int], verdict: dict, label: str) -> int:
    """One truth after a validation (service/analysis/validation.py judge): the pattern violations of the
    candidate's analysis inside a range the validation dropped with measured figures become "contradicted"
    (with the figures' reason) and count as a contradicting night instead of a confirming one; those inside a
    range it kept are verified again if an earlier validation had contradicted them (the newer measurement
    decides).  Violations outside the candidate's ranges keep their status.  An inconclusive validation is no
    verdict and changes nothing.  Updates the analysis' verified count and the overview summary; the caller
    commits.  Returns the number of contradicted violations."""
    if analysis_id is None or verdict.get("state") == "inconclusive":
        return 0
    a = db.session.get(Analysis, analysis_id)
    if a is None:
        return 0
    viols = db.session.scalars(select(Violation).where(Violation.analysis_id == a.id,
                                                       Violation.kind == "pattern")).all()

    def inside(d: dict) -> list[Violation]:
        lo, hi = d["range"]
        return [v for v in viols if v.collective == d["collective"] and v.nprocs == d["nprocs"]
                and v.mockup == d["algorithm"] and lo <= v.msize <= hi]

    for d in verdict.get("kept") or []:
        for v in inside(d):
            if v.status == "contradicted" and (v.status_why or "").startswith("validation"):
                v.status, v.status_why = "verified", None
                if v.nights_confirmed is not None:
                    v.nights_confirmed += 1
                    v.nights_contradicted = max(0, (v.nights_contradicted or 0) - 1)
    n = 0
    for d in verdict.get("dropped") or []:
        if not d.get("figures"):
            continue        # nothing measured inside the range: no evidence either way
        figs = ", ".join(f"{f['msize']} B {f['ratio']:.2f}x" for f in d["figures"] if f.get("ratio") is not None)
        for v in inside(d):
            if v.status == "verified":
                v.status = "contradicted"
                v.status_why = f"validation of {label}: {d.get('why', '')} (default/tuned {figs})"[:1000]
                if v.nights_confirmed is not None:
                    v.nights_confirmed = max(0, v.nights_confirmed - 1)
                    v.nights_contradicted = (v.nights_contradicted or 0) + 1
                n += 1
    verified = db.session.scalars(select(Violation).where(Violation.analysis_id == a.id,
                                                          Violation.status == "verified")).all()
    a.n_violations = len(verified)
    a.max_slowdown = max((_finite(v.slowdown) for v in verified), default=None)
    db.session.flush()
    from service.store.queries import refresh_overview
    refresh_overview(db.session, [a.library_id])
    return n
