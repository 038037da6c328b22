"""Validations of the MPI library's own decision files (native.rules / native.json): the agent sends the file
and its job's figures, the service reads the file's cells itself, judges (service/analysis/native_validation.py)
and records the verdict; only such a record lets the file be published (service/workflows/validate.py, service/workflows/publish.py)."""
from __future__ import annotations

from flask import current_app, g, jsonify, request
from sqlalchemy import select

from service.api import api_bp, schemas as S
from service.api.common import ApiError, body, for_machine, get_machine, require
from pgmpi_formats import site
from service.workflows import native as native_chain, validate
from service.profiles import publish as pub
from service.store.db import db
from service.store.models import NativeValidation


def _json(rec: NativeValidation, verdict: bool = False) -> dict:
    out = {"id": rec.id, "machine": rec.machine, "library": rec.library, "version": rec.version,
           "file": rec.file_name, "digest": rec.digest, "nprocs": rec.nprocs, "state": rec.state, "job": rec.job,
           "actor": rec.actor, "created_at": rec.created_at.isoformat(),
           "problems": (rec.verdict or {}).get("problems", [])}
    if verdict:
        out["verdict"] = rec.verdict
    return out


@api_bp.post("/native/validations")
@require("agent")
def post_native_validation():
    data = body(S.NativeValidationIn)
    for_machine(get_machine(data.machine))
    cand = None
    if data.profile_version is not None:
        try:
            cand = native_chain.candidate_of(data.profile_version, data.machine, data.library, data.version,
                                             data.name, data.text)
        except native_chain.NativeChainError as exc:
            raise ApiError(exc.status, "validation_error", str(exc), field=exc.field) from None
    try:
        verdict = validate.record_native_validation(data.machine, data.library, data.version, data.name, data.text,
                                                     data.nprocs, data.figures, data.job, g.principal.name,
                                                     decided_at=cand.decided_at if cand is not None else None)
    except (pub.PublishError, ValueError) as exc:
        db.session.rollback()
        raise ApiError(422, "validation_error", str(exc), field="text") from None
    if cand is not None:
        verdict["candidate"] = native_chain.settle(cand, verdict, data.publish, _root(), g.principal.name)
    return jsonify(verdict), 201


def _root():
    return site.profile_root(current_app.config.get("PGMPI_PROFILE_ROOT"))


@api_bp.post("/native/candidates")
@require("agent")
def post_native_candidate():
    """The campaign's decision file of one library as a candidate version of its profile set (the nightly
    chain, service/workflows/native.py); {"id": null, "why"} when nothing of the library's own wins."""
    data = body(S.NativeCandidateIn)
    for_machine(get_machine(data.machine))
    try:
        v, why = native_chain.native_candidate(data.machine, data.library, data.version, data.campaign,
                                               data.refused, _root(), g.principal.name)
    except native_chain.NativeChainError as exc:
        db.session.rollback()
        raise ApiError(exc.status, "validation_error", str(exc), field=exc.field) from None
    if v is None:
        return jsonify(id=None, why=why), 200
    name = next(n for n in v.files if n in pub.NATIVE_FILES)
    return jsonify(id=v.id, number=v.number, state=v.state, name=name, text=v.files[name], why=why,
                   files=sorted(v.files), decided_at=v.decided_at or []), 201


@api_bp.post("/native/candidates/<int:version_id>/job-failed")
@require("agent")
def post_native_job_failed(version_id: int):
    """The candidate's validation job failed in the resource manager after its retries: no verdict, so the
    candidate is marked failed with the reason (it never stays a candidate)."""
    data = body(S.NativeJobFailedIn)
    for_machine(get_machine(data.machine))
    try:
        v = native_chain.job_failed(version_id, data.machine, data.library, data.version, data.job, data.reason,
                                    g.principal.name)
    except native_chain.NativeChainError as exc:
        db.session.rollback()
        raise ApiError(exc.status, "validation_error", str(exc), field=exc.field) from None
    return jsonify(id=v.id, number=v.number, state=v.state, notes=v.notes), 200


@api_bp.get("/native/validations")
@require("viewer")
def list_native_validations():
    q = select(NativeValidation)
    for arg, col in (("machine", NativeValidation.machine), ("library", NativeValidation.library),
                     ("version", NativeValidation.version)):
        if request.args.get(arg):
            q = q.where(col == request.args[arg])
    rows = db.session.scalars(q.order_by(NativeValidation.id.desc()).limit(200))
    return jsonify(items=[_json(r, verdict=request.args.get("verdict") == "1") for r in rows])
