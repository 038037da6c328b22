"""POST /api/v1/analyses: rebuild the stored runs as a pgmpi_formats.results.ResultSet, run service/analysis's verdicts and
profile generation (service.analysis), store the analysis, its violations and candidate profiles."""
from __future__ import annotations

from typing import Optional

import numpy as np
from sqlalchemy import select

from pgmpi_formats.results import ResultSet, RunResult
from service.store.db import db
from service.store.models import (Analysis, Campaign, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run, Series,
                            Violation)


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
                               confirmed_before=confirmed_before(lib, campaign))
        data.fdr = out["fdr"]    # None (the default) resolved: on for a campaign's analysis
    except ValueError as e:
        raise AnalysisInputError(str(e)) from None
    return store_result(machine, lib, campaign, data, actor, convert(out))


def confirmed_before(lib: MpiLibrary, campaign: Optional[Campaign]) -> dict[tuple[str, int, str, int, str], int]:
    """(collective, nprocs, layout, msize, mock-up) -> how many other campaigns' latest analyses of this library found
    that pattern violation (replication across nights; the control arm is never stored as a violation)."""
    latest: dict[int, int] = {}
    for a_id, c_id in db.session.execute(select(Analysis.id, Analysis.campaign_id).where(
            Analysis.library_id == lib.id, Analysis.campaign_id.is_not(None)).order_by(Analysis.id)):
        if campaign is None or c_id != campaign.id:
            latest[c_id] = a_id
    counts: dict[tuple[str, int, str, int, str], int] = {}
    if latest:
        for v in db.session.scalars(select(Violation).where(Violation.analysis_id.in_(list(latest.values())),
                                                            Violation.kind == "pattern")):
            k = (v.collective, v.nprocs, v.layout, v.msize, v.mockup)
            counts[k] = counts.get(k, 0) + 1
    return counts


def convert(out: dict) -> dict:
    """service.analysis.api.run's result -> the rows store_result writes."""
    configs = out.get("configs", [])
    viols = []
    for v in out.get("verdicts", []):
        if not v.get("violated") or v.get("control"):
            continue    # the control arm's flags are false alarms by construction: summary["control"]
        cfg = configs[v["cfg"]] if v.get("cfg") is not None and v["cfg"] < len(configs) else {}
        viols.append({"kind": v["kind"], "collective": v["collective"], "mockup": v["algorithm"],
                      "msize": v["msize"], "ref_msize": v.get("ref_msize"), "nprocs": cfg.get("nprocs", 0),
                      "layout": cfg.get("layout", ""),
                      "default_time": v["default_median"], "mockup_time": v["other_median"],
                      "slowdown": v["slowdown"], "p_value": v.get("p_adjusted") if v.get("p_adjusted") is not None
                      else v.get("p_value"), "barrier_warning": v.get("barrier_warning")})
    summary = {"counts": out.get("counts"), "quality": out.get("quality"), "configs": configs,
               "gain": out.get("gain"), "control": out.get("control"), "defects": out.get("defects"),
               "confirmations": out.get("confirmations")}
    return {"checked": len(out.get("verdicts", [])), "violations": viols, "summary": summary,
            "profiles": {p["filename"]: p["text"] for p in out.get("profiles", []) if p.get("text")}}


def _finite(x) -> float:
    x = float(x) if x is not None else 0.0
    return x if np.isfinite(x) else 0.0


def store_result(machine, lib, campaign, data, actor, result) -> Analysis:
    """`result`: {"checked": int, "violations": [{collective, mockup, msize, nprocs, layout?, default_time,
    mockup_time, slowdown, p_value, kind?, ref_msize?, barrier_warning?}], "profiles": {file name: text}, "summary": {...}}"""
    viols = list(result.get("violations", []))
    a = Analysis(machine_id=machine.id, library_id=lib.id, campaign_id=campaign.id if campaign else None,
                 alpha=data.alpha, test=data.test, fdr=data.fdr, actor=actor, n_checked=int(result.get("checked", 0)),
                 n_violations=len(viols), max_slowdown=max((_finite(v["slowdown"]) for v in viols), default=None),
                 summary=result.get("summary"))
    db.session.add(a)
    db.session.flush()
    for v in viols:
        db.session.add(Violation(analysis_id=a.id, collective=v["collective"], mockup=v["mockup"],
                                 msize=int(v["msize"]), nprocs=int(v["nprocs"]),
                                 default_time=_finite(v["default_time"]), mockup_time=_finite(v["mockup_time"]),
                                 slowdown=_finite(v["slowdown"]), p_value=v.get("p_value"),
                                 kind=v.get("kind", "pattern"), ref_msize=v.get("ref_msize"),
                                 barrier_warning=v.get("barrier_warning"), layout=v.get("layout") or ""))
    profiles = result.get("profiles") or {}
    if profiles:
        ps = db.session.scalar(select(ProfileSet).where(ProfileSet.machine_id == machine.id,
                                                        ProfileSet.library_id == lib.id))
        if ps is None:
            ps = ProfileSet(machine_id=machine.id, library_id=lib.id)
            db.session.add(ps)
            db.session.flush()
        number = 1 + max((v.number for v in ps.versions), default=0)
        db.session.add(ProfileVersion(profile_set_id=ps.id, number=number, state="candidate", analysis_id=a.id,
                                      files=dict(profiles), actor=actor))
    db.session.flush()
    from service.store.queries import refresh_overview
    refresh_overview(db.session, [lib.id])
    return a
