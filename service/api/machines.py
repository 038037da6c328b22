"""The people and machines of the site: /me, /machines, /machines/<m>/libraries."""
from __future__ import annotations

from flask import g, jsonify
from sqlalchemy import select

from service.api import api_bp, schemas as S
from service.api.common import (ApiError, body, commit, created, get_machine, library_json, machine_json,
                                page, require)
from service.auth import audit, current_principal
from service.store.db import db
from service.store.models import Machine, MpiLibrary


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
