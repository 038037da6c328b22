"""Validations of the MPI library's own decision files (native.rules / native.json): the agent sends the file
and its job's figures, the service reads the file's cells itself, judges (service/analysis/native_validation.py)
and records the verdict; only such a record lets the file be published (service/workflows/validate.py, service/workflows/publish.py)."""
from __future__ import annotations

from flask import g, jsonify, request
from sqlalchemy import select

from service.api import api_bp, schemas as S
from service.api.common import ApiError, body, for_machine, require
from service.workflows import validate
from service.profiles import publish as pub
from service.store.db import db
from service.store.models import Machine, NativeValidation


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
    machine = db.session.scalars(select(Machine).where(Machine.name == data.machine)).first()
    if machine is None:
        raise ApiError(404, "not_found", f"no machine {data.machine!r}", field="machine")
    for_machine(machine)
    try:
        verdict = validate.record_native_validation(data.machine, data.library, data.version, data.name, data.text,
                                                     data.nprocs, data.figures, data.job, g.principal.name)
    except (pub.PublishError, ValueError) as exc:
        db.session.rollback()
        raise ApiError(422, "validation_error", str(exc), field="text") from None
    return jsonify(verdict), 201


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
