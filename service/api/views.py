"""Routes of the JSON API. Every write is audited in the same transaction as the write itself."""
from __future__ import annotations

import functools
import logging
from typing import Any, Optional

from flask import Response, current_app, g, jsonify, request
from pydantic import BaseModel, ValidationError
from sqlalchemy import func, select
from sqlalchemy.exc import DataError, IntegrityError
from werkzeug.exceptions import HTTPException

from service.api import api_bp
from service.api import schemas as S
from service.auth import audit, csrf, current_principal
from service.db import db
from service.models import (Analysis, BarrierSeries, Campaign, Job, Machine, MpiLibrary, ProfileSet,
                            ProfileVersion, Run, Series, Upload, ValidationFigure, Violation)
from service import queries

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
        msg = f"request body larger than the limit of {current_app.config['MAX_CONTENT_LENGTH']} bytes"
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


@api_bp.before_request
def _refuse_nul():
    for where, values in (("query", request.args.items(multi=True)), ("path", (request.view_args or {}).items())):
        for k, v in values:
            if "\x00" in k or (isinstance(v, str) and "\x00" in v):
                raise ApiError(400, "bad_parameter", f"{where} parameter {k!r} contains a NUL character", field=k)


def _find_nul(value, path: str = "") -> Optional[str]:
    if isinstance(value, str):
        return path or "(body)" if "\x00" in value else None
    if isinstance(value, dict):
        for k, v in value.items():
            if "\x00" in k:
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
    data = request.get_json(silent=True)
    if data is None:
        raise ApiError(400, "invalid_json", "the request body is not valid JSON")
    if not isinstance(data, dict):
        raise ApiError(422, "validation_error", "the request body must be a JSON object", field="(body)")
    nul = _find_nul(data)
    if nul:
        raise ApiError(422, "validation_error", f"{nul}: NUL characters are not accepted", field=nul)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        details = [{"field": ".".join(str(x) for x in err["loc"]) or "(body)", "message": err["msg"]}
                   for err in e.errors(include_url=False, include_input=False)]
        first = details[0]
        raise ApiError(422, "validation_error", f"{first['field']}: {first['message']}", field=first["field"],
                       details=details) from None


def arg_int(name: str, default: Optional[int] = None, lo: int = 0, hi: int = 2**31 - 1) -> Optional[int]:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise ApiError(400, "bad_parameter", f"query parameter {name!r} must be an integer", field=name) from None
    if not lo <= v <= hi:
        raise ApiError(400, "bad_parameter", f"query parameter {name!r} must be in {lo}..{hi}", field=name)
    return v


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
            "nprocs": r.nprocs, "state": r.state, "reason": r.reason, "created_at": iso(r.created_at)}


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
            "msize": v.msize, "nprocs": v.nprocs, "default_time": v.default_time, "mockup_time": v.mockup_time,
            "slowdown": v.slowdown, "p_value": v.p_value, "kind": v.kind, "ref_msize": v.ref_msize,
            "barrier_warning": v.barrier_warning}


def version_json(v: ProfileVersion, files: bool = False) -> dict:
    out = {"id": v.id, "number": v.number, "state": v.state, "analysis_id": v.analysis_id,
           "created_at": iso(v.created_at), "validated_at": iso(v.validated_at),
           "published_at": iso(v.published_at), "rolled_back_at": iso(v.rolled_back_at),
           "published_path": v.published_path, "file_names": sorted(v.files)}
    if files:
        out["files"] = v.files
        out["figures"] = [{"collective": f.collective, "msize": f.msize, "nprocs": f.nprocs,
                           "default_time": f.default_time, "tuned_time": f.tuned_time, "speedup": f.speedup}
                          for f in v.figures]
    return out


# ---------------------------------------------------------------- routes

@api_bp.get("/me")
@require("viewer")
def me():
    p = current_principal()
    m = db.session.get(Machine, p.machine_id) if p.machine_id else None
    return jsonify(name=p.name, role=p.role, machine=m.name if m else None)


@api_bp.get("/machines")
@require("viewer")
def list_machines():
    limit, offset = page()
    rows = db.session.scalars(select(Machine).order_by(Machine.name).limit(limit).offset(offset))
    return jsonify(items=[machine_json(m) for m in rows])


@api_bp.post("/machines")
@require("admin")
def create_machine():
    data = body(S.MachineIn)
    if db.session.scalar(select(Machine).where(Machine.name == data.name)):
        raise ApiError(409, "conflict", f"machine {data.name!r} exists already", field="name")
    m = Machine(**data.model_dump())
    db.session.add(m)
    db.session.flush()
    audit(g.principal.name, "create", "machine", m.name, data.model_dump())
    commit()
    return created(machine_json(m))


@api_bp.get("/machines/<machine>")
@require("viewer")
def get_machine_route(machine: str):
    m = get_machine(machine)
    out = machine_json(m)
    out["libraries"] = [library_json(lib) for lib in m.libraries]
    return jsonify(out)


@api_bp.get("/machines/<machine>/libraries")
@require("viewer")
def list_libraries(machine: str):
    m = get_machine(machine)
    return jsonify(items=[library_json(lib) for lib in m.libraries])


@api_bp.post("/machines/<machine>/libraries")
@require("admin")
def create_library(machine: str):
    m = get_machine(machine)
    data = body(S.LibraryIn)
    existing = db.session.scalar(select(MpiLibrary).where(
        MpiLibrary.machine_id == m.id, MpiLibrary.name == data.name, MpiLibrary.version == data.version,
        MpiLibrary.module == data.module))
    if existing:
        return created(library_json(existing), 200)
    lib = MpiLibrary(machine_id=m.id, machine=m, **data.model_dump())
    db.session.add(lib)
    db.session.flush()
    audit(g.principal.name, "create", "mpi_library", str(lib.id), {"machine": m.name, **data.model_dump()})
    commit()
    return created(library_json(lib))


@api_bp.get("/campaigns")
@require("viewer")
def list_campaigns():
    limit, offset = page()
    q = select(Campaign).order_by(Campaign.id.desc()).limit(limit).offset(offset)
    if request.args.get("machine"):
        q = q.join(Machine).where(Machine.name == request.args["machine"])
    return jsonify(items=[campaign_json(c) for c in db.session.scalars(q)])


@api_bp.post("/campaigns")
@require("agent")
def create_campaign():
    data = body(S.CampaignIn)
    m = get_machine(data.machine)
    for_machine(m)
    c = db.session.scalar(select(Campaign).where(Campaign.name == data.name))
    if c is not None:
        if c.machine_id != m.id:
            raise ApiError(409, "conflict", f"campaign {data.name!r} exists for another machine", field="name")
        if c.definition == data.definition and c.schedule == data.schedule and (data.state in (None, c.state)):
            return created(campaign_json(c), 200)   # idempotent re-registration
        c.definition, c.schedule = data.definition, data.schedule
        if data.state:
            c.state = data.state
        audit(g.principal.name, "update", "campaign", c.name, {"schedule": c.schedule, "state": c.state})
        commit()
        return created(campaign_json(c), 200)
    c = Campaign(name=data.name, machine_id=m.id, machine=m, definition=data.definition, schedule=data.schedule,
                 state=data.state or "planned")
    db.session.add(c)
    audit(g.principal.name, "create", "campaign", c.name, {"machine": m.name, "schedule": c.schedule})
    commit()
    return created(campaign_json(c))


@api_bp.get("/campaigns/<campaign>")
@require("viewer")
def get_campaign_route(campaign: str):
    c = get_campaign(campaign)
    out = campaign_json(c)
    counts = db.session.execute(select(Job.state, func.count()).where(Job.campaign_id == c.id).group_by(Job.state))
    out["jobs_by_state"] = {s: n for s, n in counts}
    return jsonify(out)


@api_bp.get("/campaigns/<campaign>/jobs")
@require("viewer")
def list_jobs(campaign: str):
    c = get_campaign(campaign)
    limit, offset = page()
    rows = db.session.scalars(select(Job).where(Job.campaign_id == c.id).order_by(Job.id).limit(limit).offset(offset))
    return jsonify(items=[job_json(j, c.name) for j in rows])


@api_bp.get("/campaigns/<campaign>/jobs/<job_key>")
@require("viewer")
def get_job(campaign: str, job_key: str):
    c = get_campaign(campaign)
    j = db.session.scalar(select(Job).where(Job.campaign_id == c.id, Job.job_key == job_key))
    if j is None:
        raise ApiError(404, "not_found", f"campaign {campaign!r} has no job {job_key!r}", field="job_key")
    return jsonify(job_json(j, c.name))


@api_bp.put("/campaigns/<campaign>/jobs/<job_key>")
@require("agent")
def put_job(campaign: str, job_key: str):
    c = get_campaign(campaign)
    for_machine(c.machine)
    if not 1 <= len(job_key) <= 200:
        raise ApiError(422, "validation_error", "job_key must have 1..200 characters", field="job_key")
    data = body(S.JobIn)
    j = db.session.scalar(select(Job).where(Job.campaign_id == c.id, Job.job_key == job_key))
    status = 200
    if j is None:
        j = Job(campaign_id=c.id, job_key=job_key)
        db.session.add(j)
        status = 201
    for k, v in data.model_dump().items():
        setattr(j, k, v)
    db.session.flush()
    audit(g.principal.name, "upsert", "job", f"{c.name}/{job_key}",
          {"state": data.state, "slurm_job_id": data.slurm_job_id, "reason": data.reason[:200]})
    commit()
    return created(job_json(j, c.name), status)


@api_bp.post("/uploads")
@require("agent")
def post_upload():
    from service.ingest import UploadError, store_upload
    data = body(S.UploadIn)
    try:
        upload, is_new = store_upload(data.upload_id, data.campaign, data.files, g.principal)
    except UploadError as e:
        raise ApiError(e.status, e.code, e.message, field=e.field) from None
    except PermissionError as e:
        raise ApiError(403, "forbidden", str(e)) from None
    if is_new:
        audit(g.principal.name, "create", "upload", upload.upload_id,
              {"files": upload.n_files, "timings": upload.n_timings, "machine_id": upload.machine_id})
        try:
            db.session.commit()
        except IntegrityError:   # a concurrent request stored the same upload_id first
            db.session.rollback()
            upload = db.session.scalar(select(Upload).where(Upload.upload_id == data.upload_id))
            if upload is None:
                raise ApiError(409, "conflict", "conflicting concurrent upload") from None
            is_new = False
    return created(upload_json(upload, duplicate=not is_new), 201 if is_new else 200)


def upload_json(u: Upload, duplicate: bool = False) -> dict:
    runs = db.session.scalars(select(Run.id).where(Run.upload_pk == u.id).order_by(Run.id)).all()
    return {"upload_id": u.upload_id, "duplicate": duplicate, "files": u.n_files, "timings": u.n_timings,
            "machine": db.session.get(Machine, u.machine_id).name, "campaign_id": u.campaign_id, "runs": runs,
            "created_at": iso(u.created_at)}


@api_bp.get("/uploads/<upload_id>")
@require("viewer")
def get_upload(upload_id: str):
    u = db.session.scalar(select(Upload).where(Upload.upload_id == upload_id))
    if u is None:
        raise ApiError(404, "not_found", f"unknown upload {upload_id!r}", field="upload_id")
    return jsonify(upload_json(u))


def _filter_machine_library(q, model):
    if request.args.get("machine"):
        q = q.join(Machine, Machine.id == model.machine_id).where(Machine.name == request.args["machine"])
    if request.args.get("library"):
        q = q.join(MpiLibrary, MpiLibrary.id == model.library_id).where(MpiLibrary.name == request.args["library"])
        if request.args.get("version"):
            q = q.where(MpiLibrary.version == request.args["version"])
    return q


@api_bp.get("/runs")
@require("viewer")
def list_runs():
    limit, offset = page()
    q = _filter_machine_library(select(Run), Run)
    if request.args.get("campaign"):
        q = q.join(Campaign, Campaign.id == Run.campaign_id).where(Campaign.name == request.args["campaign"])
    if request.args.get("upload_id"):
        q = q.join(Upload, Upload.id == Run.upload_pk).where(Upload.upload_id == request.args["upload_id"])
    rows = db.session.scalars(q.order_by(Run.id.desc()).limit(limit).offset(offset))
    return jsonify(items=[run_json(r) for r in rows])


@api_bp.get("/runs/<int:run_id>")
@require("viewer")
def get_run(run_id: int):
    r = by_id(Run, run_id, "run", "run_id")
    out = run_json(r)
    out["headers"], out["footer"] = r.headers, r.footer
    out["series"] = [series_json(s) for s in db.session.scalars(select(Series).where(Series.run_id == r.id)
                                                                  .order_by(Series.call, Series.algorithm, Series.msize))]
    out["barrier"] = [{"msize": b.msize, "n": b.n, "median": b.median} for b in db.session.scalars(
        select(BarrierSeries).where(BarrierSeries.run_id == r.id).order_by(BarrierSeries.msize))]
    return jsonify(out)


@api_bp.get("/series")
@require("viewer")
def list_series():
    limit, offset = page()
    run_id = arg_int("run")
    msize = arg_int("msize")
    q = select(Series)
    if run_id is not None:
        q = q.where(Series.run_id == run_id)
    if request.args.get("call"):
        q = q.where(Series.call == request.args["call"])
    if request.args.get("algorithm"):
        q = q.where(Series.algorithm == request.args["algorithm"])
    if msize is not None:
        q = q.where(Series.msize == msize)
    values = request.args.get("values") in ("1", "true", "yes")
    rows = db.session.scalars(q.order_by(Series.id).limit(limit).offset(offset))
    return jsonify(items=[series_json(s, values) for s in rows])


@api_bp.get("/series/<int:series_id>")
@require("viewer")
def get_series(series_id: int):
    s = by_id(Series, series_id, "series", "series_id")
    return jsonify(series_json(s, values=True))


@api_bp.post("/analyses")
@require("agent")
def post_analysis():
    from service.analysis_bridge import AnalysisInputError, run_analysis
    data = body(S.AnalysisIn)
    m = get_machine(data.machine)
    for_machine(m)
    try:
        a = run_analysis(m, data, g.principal.name)
    except AnalysisInputError as e:
        raise ApiError(e.status, "invalid_analysis", str(e), field=e.field) from None
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
    q = _filter_machine_library(select(Analysis), Analysis)
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
    rows = db.session.scalars(q.order_by(Violation.slowdown.desc(), Violation.id).limit(limit).offset(offset))
    return jsonify(items=[violation_json(v) for v in rows])


@api_bp.get("/violations/overview")
@require("viewer")
def violations_overview():
    days = arg_int("days", 30, 1, 3660)
    return jsonify(items=queries.violations_overview(db.session, machine=request.args.get("machine"),
                                                     library=request.args.get("library"), history_days=days))


@api_bp.get("/profiles")
@require("viewer")
def list_profiles():
    q = _filter_machine_library(select(ProfileSet), ProfileSet)
    out = []
    for ps in db.session.scalars(q.order_by(ProfileSet.id)):
        out.append({"id": ps.id, "machine": ps.machine.name, "library": ps.library.name,
                    "version": ps.library.version, "versions": [version_json(v) for v in ps.versions]})
    return jsonify(items=out)


def validation_verdict(v: ProfileVersion, figures, tolerance: float | None = None,
                       all_or_nothing: bool = False) -> dict:
    """service.analysis.validation.judge on the candidate's files, with the null ratio spread its
    campaign's control arm measured (README.md, "Validation")."""
    from service.analysis.validation import judge
    analysis = db.session.get(Analysis, v.analysis_id) if v.analysis_id else None
    control = ((analysis.summary or {}).get("control") or {}) if analysis is not None else {}
    spread = control.get("null_spread")
    if tolerance is not None:
        spread = max(spread or 0.0, tolerance)
    return judge(v.files or {}, figures, null_spread=spread, all_or_nothing=all_or_nothing)


@api_bp.post("/profiles/<int:version_id>/validation")
@require("agent")
def post_validation(version_id: int):
    from datetime import datetime, timezone
    v = by_id(ProfileVersion, version_id, "profile version", "version_id")
    for_machine(v.profile_set.machine)
    data = body(S.ValidationIn)
    if v.state not in ("candidate", "validated"):
        raise ApiError(409, "conflict", f"profile version {v.id} is {v.state}; only candidates are validated",
                       field="version_id")
    tolerance = current_app.config.get("PGMPI_VALIDATION_TOLERANCE")
    for old in list(v.figures):
        db.session.delete(old)
    verdict = validation_verdict(v, data.figures, None if tolerance is None else float(tolerance),
                                 data.all_or_nothing)
    rows = [ValidationFigure(version=v, collective=f.collective, msize=f.msize, nprocs=f.nprocs,
                             default_time=f.default_time, tuned_time=f.tuned_time,
                             speedup=f.speedup if f.speedup is not None else f.default_time / f.tuned_time,
                             details={"n_default": f.n_default, "n_tuned": f.n_tuned, "job": data.job,
                                      "campaign": data.campaign, "run_ratios": f.run_ratios, "paired": f.paired,
                                      "verdict": verdict["state"]})
            for f in data.figures]
    db.session.add_all(rows)
    from service.analysis.validation import apply_verdict
    apply_verdict(v, verdict, data.job)
    if verdict["ok"]:
        v.validated_at = datetime.now(timezone.utc)
    else:
        v.validated_at = None
    audit(g.principal.name, "validate", "profile", str(v.id),
          {"ok": verdict["ok"], "state": verdict["state"], "figures": len(rows), "slower": verdict["slower"][:20],
           "missing": verdict["missing"][:20], "dropped": verdict["dropped"][:20], "job": data.job,
           "upload_ids": data.upload_ids[:100]})
    commit()
    out = version_json(v)
    out["validation"] = verdict
    return jsonify(out)


@api_bp.get("/profiles/<int:version_id>")
@require("viewer")
def get_profile_version(version_id: int):
    v = by_id(ProfileVersion, version_id, "profile version", "version_id")
    out = version_json(v, files=True)
    out["machine"], out["library"] = v.profile_set.machine.name, v.profile_set.library.name
    return jsonify(out)


@api_bp.get("/openapi.json")
def openapi():
    from service.api.openapi import document
    return jsonify(document())
