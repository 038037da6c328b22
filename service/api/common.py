"""What every resource module of the JSON API shares: errors and their handlers, role checks, request parsing,
paging, look-ups and the JSON form of each model.  Every write is audited in the same transaction as the write
itself.  Routes live in one module per resource (machines, campaigns, results, analyses, profiles)."""
from __future__ import annotations

import functools
import logging
from typing import Any, Optional

from flask import Response, jsonify, request
from pydantic import BaseModel, ValidationError
from sqlalchemy import select
from sqlalchemy.exc import DataError, IntegrityError
from werkzeug.exceptions import HTTPException

from pgmpi_formats import limits
from service.api import api_bp
from service.auth import csrf, current_principal
from service.store.db import db
from service.store.models import Analysis, Campaign, Job, Machine, MpiLibrary, ProfileVersion, Run, Series, Violation

log = logging.getLogger("service.api")
csrf.exempt(api_bp)   # the API's writes take bearer tokens only (see service.auth.current_principal)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None, details: Any = None):
        super().__init__(message)
        self.status, self.code, self.message, self.field, self.details = status, code, message, field, details


def error_body(code: str, message: str, field: Optional[str] = None, details: Any = None) -> dict:
    err: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        err["field"] = field
    if details is not None:
        err["details"] = details
    return {"error": err}


@api_bp.errorhandler(ApiError)
def _api_error(e: ApiError):
    db.session.rollback()
    resp = jsonify(error_body(e.code, e.message, e.field, e.details))
    resp.status_code = e.status
    if e.status == 401:
        resp.headers["WWW-Authenticate"] = 'Bearer realm="pgmpi"'
    return resp


@api_bp.errorhandler(HTTPException)
def _http_error(e: HTTPException):
    db.session.rollback()
    code = {413: "too_large", 404: "not_found", 405: "method_not_allowed"}.get(e.code, "http_error")
    msg = e.description
    if e.code == 413:
        msg = f"request body larger than this route's limit of {request.max_content_length} bytes"
    resp = jsonify(error_body(code, msg))
    resp.status_code = e.code or 500
    return resp


@api_bp.errorhandler(DataError)
def _data_error(e: DataError):
    # a value the database cannot hold (out of range, bad encoding) that validation let through
    db.session.rollback()
    log.warning("database refused a value", extra={"error": str(e.orig)[:200]})
    return jsonify(error_body("bad_value", "a value is out of range or not storable")), 400


@api_bp.errorhandler(IntegrityError)
def _integrity_error(e: IntegrityError):
    # a unique key taken by a concurrent request between our check and our write
    db.session.rollback()
    return jsonify(error_body("conflict", "conflicts with a concurrent or existing record; retry")), 409


def _find_nul(value, path: str = "") -> Optional[str]:
    """The JSON path of the first string (or key) holding what no text may hold (limits.bad_char: NUL, a
    lone surrogate); None when clean."""
    if isinstance(value, str):
        return path or "(body)" if limits.bad_char(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and limits.bad_char(k):
                return f"{path}.{k}".lstrip(".")
            hit = _find_nul(v, f"{path}.{k}".lstrip("."))
            if hit:
                return hit
    if isinstance(value, list):
        for i, v in enumerate(value):
            hit = _find_nul(v, f"{path}.{i}".lstrip("."))
            if hit:
                return hit
    return None


@api_bp.errorhandler(Exception)
def _unexpected(e: Exception):
    db.session.rollback()
    log.exception("unhandled error")
    resp = jsonify(error_body("internal", "internal error; see the service log"))
    resp.status_code = 500
    return resp


# ---------------------------------------------------------------- helpers

def require(role: str):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            p = current_principal()
            if p is None:
                if request.headers.get("Authorization"):
                    raise ApiError(401, "unauthorized", "this token is unknown, revoked or expired, or its user is "
                                   "inactive (`pgmpi token list` shows which)")
                raise ApiError(401, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)")
            if not p.at_least(role):
                raise ApiError(403, "forbidden", f"role {p.role!r} may not do this; needs {role!r} or above")
            return fn(*a, **kw)
        return wrapper
    return deco


def for_machine(machine: Machine) -> None:
    """Agents act only for the machine their token is bound to."""
    p = current_principal()
    if p.role == "agent" and p.machine_id != machine.id:
        raise ApiError(403, "forbidden", f"this agent token is bound to another machine, not {machine.name!r}")


def body(model: type[BaseModel]) -> Any:
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send JSON with Content-Type: application/json")
    try:
        data = request.get_json(silent=True)
    except RecursionError:    # JSON nested deeper than the parser's recursion limit
        raise ApiError(400, "invalid_json", "the request body nests JSON too deeply") from None
    if data is None:
        raise ApiError(400, "invalid_json", "the request body is not valid JSON")
    if not isinstance(data, dict):
        raise ApiError(422, "validation_error", "the request body must be a JSON object", field="(body)")
    nul = _find_nul(data)
    if nul:
        raise ApiError(422, "validation_error", f"{nul}: NUL characters and lone surrogates are not accepted", field=nul)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        details = [{"field": ".".join(str(x) for x in err["loc"]) or "(body)", "message": err["msg"]}
                   for err in e.errors(include_url=False, include_input=False)]
        first = details[0]
        raise ApiError(422, "validation_error", f"{first['field']}: {first['message']}", field=first["field"],
                       details=details) from None


def arg_int(name: str, default: Optional[int] = None, lo: int = 0, hi: int = 2**31 - 1) -> Optional[int]:
    try:
        v = limits.check_query_int(request.args.get(name), name, lo, hi)
    except limits.LimitError as e:
        raise ApiError(400, "bad_parameter", e.message, field=name) from None
    return default if v is None else v


def page() -> tuple[int, int]:
    return arg_int("limit", 100, 1, 1000), arg_int("offset", 0, 0)


MAX_ID = 2**31 - 1


def by_id(model, ident: int, what: str, field: str):
    """Row by integer id; ids outside the column's range are simply unknown (404), never a DB error."""
    row = db.session.get(model, ident) if 0 <= ident <= MAX_ID else None
    if row is None:
        raise ApiError(404, "not_found", f"unknown {what} {ident}", field=field)
    return row


def get_machine(name: str) -> Machine:
    m = db.session.scalar(select(Machine).where(Machine.name == name))
    if m is None:
        raise ApiError(404, "not_found", f"unknown machine {name!r}", field="machine")
    return m


def get_campaign(name: str) -> Campaign:
    c = db.session.scalar(select(Campaign).where(Campaign.name == name))
    if c is None:
        raise ApiError(404, "not_found", f"unknown campaign {name!r}", field="campaign")
    return c


def iso(dt) -> Optional[str]:
    return dt.isoformat() if dt else None


def commit() -> None:
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise ApiError(409, "conflict", "conflicts with a concurrent or existing record") from None


def created(payload: dict, status: int = 201) -> Response:
    resp = jsonify(payload)
    resp.status_code = status
    return resp


# ---------------------------------------------------------------- serialisers

def machine_json(m: Machine) -> dict:
    return {"name": m.name, "nodes": m.nodes, "cores_per_node": m.cores_per_node, "interconnect": m.interconnect,
            "notes": m.notes, "created_at": iso(m.created_at)}


def library_json(lib: MpiLibrary) -> dict:
    return {"id": lib.id, "machine": lib.machine.name, "name": lib.name, "version": lib.version,
            "module": lib.module}


def campaign_json(c: Campaign) -> dict:
    return {"name": c.name, "machine": c.machine.name, "definition": c.definition, "schedule": c.schedule,
            "state": c.state, "created_at": iso(c.created_at)}


def job_json(j: Job, campaign: str) -> dict:
    return {"campaign": campaign, "job_key": j.job_key, "slurm_job_id": j.slurm_job_id, "library": j.library,
            "module": j.module, "nodes": j.nodes, "ppn": j.ppn, "state": j.state, "reason": j.reason,
            "submitted_at": iso(j.submitted_at), "started_at": iso(j.started_at), "ended_at": iso(j.ended_at),
            "log_tail": j.log_tail, "updated_at": iso(j.updated_at)}


def run_json(r: Run) -> dict:
    return {"id": r.id, "machine": r.machine.name, "library": r.library.name, "version": r.library.version,
            "module": r.library.module, "campaign_id": r.campaign_id, "file_name": r.file_name,
            "slurm_job_id": r.slurm_job_id, "mpirun_index": r.mpirun_index, "nodes": r.nodes, "ppn": r.ppn,
            "nprocs": r.nprocs, "layout": r.layout, "hosts": r.hosts, "placement": r.placement, "state": r.state, "reason": r.reason, "created_at": iso(r.created_at)}


def series_json(s: Series, values: bool = False) -> dict:
    out = {"id": s.id, "run_id": s.run_id, "call": s.call, "algorithm": s.algorithm, "msize": s.msize, "n": s.n,
           "median": s.median, "mean": s.mean, "min": s.minimum}
    if values:
        out["timings"] = s.values().tolist()
    return out


def analysis_json(a: Analysis, violations: bool = False) -> dict:
    out = {"id": a.id, "machine": a.machine.name, "library": a.library.name, "version": a.library.version,
           "campaign_id": a.campaign_id, "alpha": a.alpha, "test": a.test, "fdr": a.fdr, "state": a.state,
           "created_at": iso(a.created_at), "n_checked": a.n_checked, "n_violations": a.n_violations,
           "max_slowdown": a.max_slowdown, "summary": a.summary}
    if violations:
        out["violations"] = [violation_json(v) for v in a.violations]
    return out


def violation_json(v: Violation) -> dict:
    return {"id": v.id, "analysis_id": v.analysis_id, "collective": v.collective, "mockup": v.mockup,
            "msize": v.msize, "nprocs": v.nprocs, "layout": v.layout, "default_time": v.default_time,
            "mockup_time": v.mockup_time,
            "slowdown": v.slowdown, "p_value": v.p_value, "kind": v.kind, "ref_msize": v.ref_msize,
            "barrier_warning": v.barrier_warning, "status": v.status, "status_why": v.status_why,
            "nights_confirmed": v.nights_confirmed, "nights_contradicted": v.nights_contradicted,
            "effect": v.effect, "ci95": ([v.ci_low, v.ci_high] if v.ci_low is not None else None),
            "ci_mpiruns": v.ci_mpiruns, "reporting": _reporting_of(v)}


def _figure_ci(details) -> dict:
    """A validation figure's effect and 95 % interval over the validation's mpiruns (None when not stored)."""
    d = details if isinstance(details, dict) else {}
    lo, hi = d.get("ci_low"), d.get("ci_high")
    ok = all(isinstance(x, (int, float)) for x in (lo, hi))
    return {"effect": d.get("effect") if isinstance(d.get("effect"), (int, float)) else None,
            "ci95": [lo, hi] if ok else None, "ci_mpiruns": d.get("ci_mpiruns"),
            "paired": bool(d.get("paired", False))}


def _reporting_of(v: Violation) -> dict | None:
    """The reporting fields of the violation's config (analysis summary, analysis/reporting.py), by layout and p."""
    summ = (v.analysis.summary or {}) if v.analysis is not None else {}
    rep, cfgs = summ.get("reporting") or {}, summ.get("configs") or []
    for i, c in enumerate(cfgs):
        if isinstance(c, dict) and c.get("nprocs") == v.nprocs and (c.get("layout") or "") == (v.layout or ""):
            return rep.get(str(i))
    return None


def version_json(v: ProfileVersion, files: bool = False) -> dict:
    out = {"id": v.id, "number": v.number, "state": v.state, "analysis_id": v.analysis_id,
           "created_at": iso(v.created_at), "validated_at": iso(v.validated_at),
           "published_at": iso(v.published_at), "rolled_back_at": iso(v.rolled_back_at),
           "published_path": v.published_path, "file_names": sorted(v.files)}
    if files:
        out["files"] = v.files
        out["figures"] = [{"collective": f.collective, "msize": f.msize, "nprocs": f.nprocs, "layout": f.layout,
                           "default_time": f.default_time, "tuned_time": f.tuned_time, "speedup": f.speedup,
                           **_figure_ci(f.details)} for f in v.figures]
    return out


# ---------------------------------------------------------------- routes


def filter_machine_library(q, model):
    if request.args.get("machine"):
        q = q.join(Machine, Machine.id == model.machine_id).where(Machine.name == request.args["machine"])
    if request.args.get("library"):
        q = q.join(MpiLibrary, MpiLibrary.id == model.library_id).where(MpiLibrary.name == request.args["library"])
        if request.args.get("version"):
            q = q.where(MpiLibrary.version == request.args["version"])
    return q


@api_bp.get("/openapi.json")
def openapi():
    from service.api.openapi import document
    return jsonify(document())
