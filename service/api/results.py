"""Raw results: uploads (stored by service/store/ingest.py), runs and series."""
from __future__ import annotations

from flask import current_app, g, jsonify, request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from service.api import api_bp, schemas as S
from service.api.common import (ApiError, _find_nul, filter_machine_library, arg_int, by_id, created, iso, page,
                                require, run_json, series_json)
from service.auth import audit
from service.store.db import db
from service.store.models import BarrierSeries, Campaign, Machine, Run, Series, Upload


@api_bp.post("/uploads")
@require("agent")
def post_upload():
    """The body is read while it arrives (service/api/upload_stream.py) and stored file by file
    (UploadWriter): memory follows one file, not the body.  upload_id (and campaign, when given) must come
    before files for that; a body with files first is held whole, then stored the same way."""
    from service.store.ingest import UploadError, UploadWriter
    try:
        upload, is_new = _stream_upload(UploadWriter)
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
            from service.store.ingest import _known_upload, find_upload
            other = find_upload(upload.upload_id)
            if other is None:
                raise ApiError(409, "conflict", "conflicting concurrent upload; retry") from None
            try:
                upload, is_new = _known_upload(other, upload.digest, g.principal)
            except UploadError as e:
                raise ApiError(e.status, e.code, e.message, field=e.field) from None
    return created(upload_json(upload, duplicate=not is_new), 201 if is_new else 200)


_UPLOAD_KEYS = {"upload_id": "upload_id", "campaign": "campaign"}


def _stream_upload(writer_class):
    from service.api.upload_stream import BodyError, JsonStream, ValueTooLarge
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send JSON with Content-Type: application/json")
    head: dict = {}
    held: list = []          # files that came before upload_id / campaign
    writer = None
    n = 0
    stream = JsonStream(request.stream, int(current_app.config.get("MAX_UPLOAD_FILE_BYTES", 32 << 20)))
    try:
        for key, value in stream.object_items():
            if key in _UPLOAD_KEYS:
                if writer is not None:
                    raise ApiError(422, "validation_error", f"{key}: must come before files in the body",
                                   field=key)
                head[key] = value
                continue
            if key != "files":
                continue
            if not hasattr(value, "__next__"):
                _validate_head(head, value)     # not an array: the model's message
            for item in value:
                if writer is None and "upload_id" in head:
                    writer = writer_class(*_validate_head(head), g.principal)
                f = _validate_file(n, item)
                if writer is None:
                    held.append(f)
                else:
                    writer.add(n, f)
                n += 1
    except BodyError as e:
        raise ApiError(400, "invalid_json", str(e)) from None
    except ValueTooLarge as e:
        raise ApiError(413, "too_large", f"{e}: split the upload into more files "
                       "($PGMPI_MAX_UPLOAD_FILE_BYTES)") from None
    if writer is None:
        writer = writer_class(*_validate_head(head, [] if n == 0 else None), g.principal)
        for i, f in enumerate(held):
            writer.add(i, f)
    if n == 0:
        raise ApiError(422, "validation_error", "files: List should have at least 1 item after validation",
                       field="files")
    return writer.finish()


def _validate_head(head: dict, files=None) -> tuple[str, object]:
    """upload_id and campaign through the UploadIn model (files checked one by one elsewhere)."""
    from pydantic import ValidationError
    nul = _find_nul(head)
    if nul:
        raise ApiError(422, "validation_error", f"{nul}: NUL characters and lone surrogates are not accepted", field=nul)
    probe = {**head, "files": files if files is not None else [{"name": "x", "content": ""}]}
    try:
        data = S.UploadIn.model_validate(probe)
    except ValidationError as e:
        _raise_validation(e)
    return data.upload_id, data.campaign


def _validate_file(index: int, item) -> S.FileIn:
    from pydantic import ValidationError
    nul = _find_nul(item, f"files.{index}")
    if nul:
        raise ApiError(422, "validation_error", f"{nul}: NUL characters and lone surrogates are not accepted", field=nul)
    try:
        return S.FileIn.model_validate(item)
    except ValidationError as e:
        _raise_validation(e, f"files.{index}.")


def _raise_validation(e, prefix: str = ""):
    details = [{"field": ".".join([p for p in prefix.split(".") if p] + [str(x) for x in err["loc"]]) or "(body)",
                "message": err["msg"]} for err in e.errors(include_url=False, include_input=False)]
    first = details[0]
    raise ApiError(422, "validation_error", f"{first['field']}: {first['message']}", field=first["field"],
                   details=details) from None


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
