"""Profile sets and versions; the validation verdict is service/workflows/validate.py's."""
from __future__ import annotations

from flask import current_app, g, jsonify
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from service.api import api_bp, schemas as S
from service.api.common import ApiError, filter_machine_library, body, by_id, for_machine, require, version_json
from service.store.db import db
from service.store.models import ProfileSet, ProfileVersion
from service.workflows import validate


@api_bp.get("/profiles")
@require("viewer")
def list_profiles():
    q = filter_machine_library(select(ProfileSet), ProfileSet)
    out = []
    for ps in db.session.scalars(q.order_by(ProfileSet.id)):
        out.append({"id": ps.id, "machine": ps.machine.name, "library": ps.library.name,
                    "version": ps.library.version, "versions": [version_json(v) for v in ps.versions]})
    return jsonify(items=out)


@api_bp.post("/profiles/<int:version_id>/validation")
@require("agent")
def post_validation(version_id: int):
    v = by_id(ProfileVersion, version_id, "profile version", "version_id")
    for_machine(v.profile_set.machine)
    data = body(S.ValidationIn)
    if v.state not in ("candidate", "validated"):
        raise ApiError(409, "conflict", f"profile version {v.id} is {v.state}; only candidates are validated",
                       field="version_id")
    tolerance = current_app.config.get("PGMPI_VALIDATION_TOLERANCE")
    try:
        verdict = validate.record_validation(v, data.figures, None if tolerance is None else float(tolerance),
                                              g.principal.name, data.job, data.campaign, data.upload_ids,
                                              data.all_or_nothing)
    except IntegrityError:
        db.session.rollback()
        raise ApiError(409, "conflict", "conflicts with a concurrent or existing record") from None
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
