"""The analyses' persistence: stored runs -> ResultSet (the reader's in-memory form) for the analysis, the
rows of one analysis (analysis, violations, datatype verdicts, candidate profile version), the replication of a
violation across nights, and a validation's verdict applied to the violations it measured.  The use case that
runs the analysis between them is service/workflows/analyse.py.  Nothing is committed here."""
from __future__ import annotations

from typing import Optional

import numpy as np
from sqlalchemy import select

from pgmpi_formats.results import ResultSet, RunResult
from service.analysis.spans import describe, span_of
from service.store.db import db
from service.store.models import (Analysis, Campaign, DtVerdict, MpiLibrary, ProfileSet, ProfileVersion, Run,
                                  Series, Violation)
from service.store.queries import refresh_overview


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
            db.session.flush()    # its directory: service/workflows/analyse.py (set_directory)
        number = 1 + max((v.number for v in ps.versions), default=0)
        db.session.add(ProfileVersion(profile_set_id=ps.id, number=number, state="candidate", analysis_id=a.id,
                                      files=dict(profiles), actor=actor))
        # a span between measured counts: a version of its own, validated at its own unmeasured count and
        # published as an addition to the live set (service/analysis/spans.py, rule 3)
        for name, text in sorted((result.get("spans") or {}).items()):
            number += 1
            cand = span_of(name, text)
            db.session.add(ProfileVersion(profile_set_id=ps.id, number=number, state="candidate", analysis_id=a.id,
                                          files={name: text}, actor=actor,
                                          notes=f"span: {describe(cand)}" if cand else None))
    db.session.flush()
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
    refresh_overview(db.session, [a.library_id])
    return n
