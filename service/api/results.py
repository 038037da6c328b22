"""Raw results: uploads (stored by service/store/ingest.py), runs and series."""
from __future__ import annotations

from flask import g, jsonify, request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from service.api import api_bp, schemas as S
from service.api.common import (ApiError, filter_machine_library, arg_int, body, by_id, created, iso, page,
                                require, run_json, series_json)
from service.auth import audit
from service.store.db import db
from service.store.models import BarrierSeries, Campaign, Machine, Run, Series, Upload


@api_bp.post("/uploads")
@require("agent")
def post_upload():
    from service.store.ingest import UploadError, store_upload
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


@api_bp.get("/runs")
@require("viewer")
def list_runs():
    limit, offset = page()
    q = filter_machine_library(select(Run), Run)
    if request.args.get("campaign"):
        q = q.join(Campaign, Campaign.id == Run.campaign_id).where(Campaign.name == request.args["campaign"])
    if request.args.get("upload_id"):
        q = q.join(Upload, Upload.id == Run.upload_pk).where(Upload.upload_id == request.args["upload_id"])
    if request.args.get("layout"):
        q = q.where(Run.layout == request.args["layout"])
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
