"""Campaigns and their jobs, as the agent reports them."""
from __future__ import annotations

from flask import g, jsonify, request
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from service.api import api_bp, schemas as S
from service.api.common import (ApiError, body, campaign_json, created, for_machine, get_campaign,
                                get_machine, job_json, page, require)
from service.auth import audit
from service.store.db import db
from service.store.models import Campaign, Job, Machine


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
    # idempotent also when identical registrations race: the loser of the insert sees the winner's row
    for attempt in (1, 2):
        try:
            return _register(data, m)
        except IntegrityError:
            db.session.rollback()
            if attempt == 2:
                raise ApiError(409, "conflict", "conflicts with a concurrent or existing record") from None
            m = get_machine(data.machine)


def _register(data, m: Machine):
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
        db.session.commit()
        return created(campaign_json(c), 200)
    c = Campaign(name=data.name, machine_id=m.id, machine=m, definition=data.definition, schedule=data.schedule,
                 state=data.state or "planned")
    db.session.add(c)
    audit(g.principal.name, "create", "campaign", c.name, {"machine": m.name, "schedule": c.schedule})
    db.session.commit()
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
    # an idempotent upsert also when identical reports race: the loser of the insert updates the winner's row
    for attempt in (1, 2):
        try:
            return _upsert_job(c, job_key, data)
        except IntegrityError:
            db.session.rollback()
            if attempt == 2:
                raise ApiError(409, "conflict", "conflicts with a concurrent or existing record") from None
            c = get_campaign(campaign)


def _upsert_job(c: Campaign, job_key: str, data):
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
    db.session.commit()
    return created(job_json(j, c.name), status)
