"""Usage records (issue 33): the agent uploads a job's record from the spool; anyone with read access gets a
library's cells ranked by what they cost its users."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import g, jsonify, request

from service.api import api_bp
from service.api.common import ApiError, commit, created, for_machine, get_machine, require
from service.auth import audit
from service.store.db import db
from service.store.models import MpiLibrary

MAX_RECORD_BYTES = 4 << 20      # a record of 100,000 cells is about 6 MB; real ones are a few KiB


@api_bp.post("/machines/<machine>/usage")
@require("agent")
def post_usage(machine: str):
    """Body: {"name": the spool file's name (for messages), "record": the record's text}. Read only after the
    token check, and only up to MAX_RECORD_BYTES. The same record again answers 200 with the stored job."""
    m = get_machine(machine)
    for_machine(m)
    n = request.content_length
    if n is None:
        raise ApiError(411, "length_required", "send the record with a Content-Length")
    if n > MAX_RECORD_BYTES:
        raise ApiError(413, "too_large", f"a usage record is at most {MAX_RECORD_BYTES} bytes, this one {n}")
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send JSON with Content-Type: application/json")
    data = request.get_json(silent=True)
    if not isinstance(data, dict) or not isinstance(data.get("record"), str):
        raise ApiError(422, "invalid_usage", 'expected {"name": "<file>", "record": "<the record text>"}',
                       field="record")
    text = data["record"]
    name = str(data.get("name") or "record")[:200]
    from service.store.usage import UsageError, store_usage
    try:
        job, is_new = store_usage(m, name, text)
    except UsageError as e:
        db.session.rollback()
        raise ApiError(422, "invalid_usage", str(e)) from None
    if is_new:
        audit(g.principal.name, "create", "usage", name, {"machine": m.name, "cells": len(job.cells)})
        commit()
    lib = db.session.get(MpiLibrary, job.library_id)
    return created({"id": job.id, "library": f"{lib.name}-{lib.version}", "cells": len(job.cells),
                    "duplicate": not is_new}, 201 if is_new else 200)


@api_bp.get("/machines/<machine>/libraries/<lib>/usage")
@require("viewer")
def get_usage(machine: str, lib: str):
    from service.dashboards import data
    from service.workflows.usage import ranking
    try:
        _, library = data.library(db.session, machine, lib)
    except LookupError as e:
        raise ApiError(404, "not_found", str(e)) from None
    ranked, total, jobs, ppn, verdicts, layouts = ranking(library)
    now = datetime.now(timezone.utc)

    def verdict(r):
        v = verdicts.get((r.collective, r.bytes_lo, r.p))
        if v is None:
            return None
        state, at = v
        at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
        return {"state": state, "analysed_at": at.isoformat(), "age_nights": max(0, (now - at).days)}
    return jsonify(jobs=jobs, ppn=ppn, collective_rank_seconds=total, cells=[{
        "collective": r.collective, "bytes_lo": r.bytes_lo, "bytes_hi": r.bytes_hi, "p": r.p,
        "layout": layouts.get((r.collective, r.bytes_lo, r.p)), "calls": r.calls,
        "rank_seconds": r.rank_seconds, "share": r.share, "tuned_rank_seconds": r.tuned_seconds,
        "violation": None if r.violation is None else {"mockup": r.violation.mockup, "msize": r.violation.msize,
                                                       "speedup": r.violation.speedup},
        "verdict": verdict(r),
        "lost_node_hours": r.lost_node_hours, "gained_node_hours": r.gained_node_hours} for r in ranked])
