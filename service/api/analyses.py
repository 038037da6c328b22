"""Analyses (run by service/workflows/analyse.py) and their violations."""
from __future__ import annotations

from flask import g, jsonify, request
from sqlalchemy import select

from service.store import queries
from service.api import api_bp, schemas as S
from service.api.common import (ApiError, filter_machine_library, analysis_json, arg_int, body, by_id, commit,
                                created, for_machine, get_machine, page, require, version_json, violation_json)
from service.auth import audit
from service.store.db import db
from service.store.models import Analysis, ProfileVersion, Violation


@api_bp.post("/analyses")
@require("agent")
def post_analysis():
    from service.workflows.analyse import AnalysisInputError, run_analysis
    data = body(S.AnalysisIn)
    m = get_machine(data.machine)
    for_machine(m)
    try:
        a = run_analysis(m, data, g.principal.name)
    except AnalysisInputError as e:
        raise ApiError(e.status, "analysis_unavailable" if e.status == 503 else "invalid_analysis", str(e),
                       field=e.field) from None
    audit(g.principal.name, "create", "analysis", str(a.id),
          {"machine": m.name, "library": data.library, "violations": a.n_violations})
    commit()
    out = analysis_json(a, violations=True)
    out["profiles"] = [version_json(v, files=True) for v in db.session.scalars(
        select(ProfileVersion).where(ProfileVersion.analysis_id == a.id))]
    return created(out)


@api_bp.get("/analyses")
@require("viewer")
def list_analyses():
    limit, offset = page()
    q = filter_machine_library(select(Analysis), Analysis)
    rows = db.session.scalars(q.order_by(Analysis.id.desc()).limit(limit).offset(offset))
    return jsonify(items=[analysis_json(a) for a in rows])


@api_bp.get("/analyses/<int:analysis_id>")
@require("viewer")
def get_analysis(analysis_id: int):
    a = by_id(Analysis, analysis_id, "analysis", "analysis_id")
    return jsonify(analysis_json(a, violations=True))


@api_bp.get("/violations")
@require("viewer")
def list_violations():
    """Violations of the latest analysis of each machine x library (or of ?analysis=<id>)."""
    limit, offset = page()
    analysis_id = arg_int("analysis")
    if analysis_id is not None:
        ids = [analysis_id]
    else:
        ids = [row["analysis_id"] for row in queries.violations_overview(
            db.session, machine=request.args.get("machine"), library=request.args.get("library"))]
    q = select(Violation).where(Violation.analysis_id.in_(ids) if ids else False)
    if request.args.get("collective"):
        q = q.where(Violation.collective == request.args["collective"])
    if request.args.get("layout"):
        q = q.where(Violation.layout == request.args["layout"])
    rows = db.session.scalars(q.order_by(Violation.slowdown.desc(), Violation.id).limit(limit).offset(offset))
    return jsonify(items=[violation_json(v) for v in rows])


@api_bp.get("/alerts")
@require("viewer")
def list_alerts():
    """The alerts feed (service/dashboards/alerts): what changed since the last night, whether a live profile
    covers it, and each library's counts; the same body as /alerts.json."""
    from service.dashboards.alerts.pages import feed
    return jsonify(feed())


@api_bp.get("/violations/overview")
@require("viewer")
def violations_overview():
    days = arg_int("days", 30, 1, 3660)
    return jsonify(items=queries.violations_overview(db.session, machine=request.args.get("machine"),
                                                     library=request.args.get("library"), history_days=days))
