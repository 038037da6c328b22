"""The numbers of the profile pages: the profile sets with their versions, and their audit history."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from service.store.models import AuditLog, MpiLibrary, ProfileSet


def profile_sets(s) -> list[dict[str, Any]]:
    from sqlalchemy.orm import selectinload
    sets = s.scalars(select(ProfileSet).options(selectinload(ProfileSet.versions),
                                                selectinload(ProfileSet.machine),
                                                selectinload(ProfileSet.library))).all()
    out = []
    for ps in sets:
        out.append({"set": ps, "machine": ps.machine, "library": ps.library, "versions": list(ps.versions)})
    out.sort(key=lambda d: (d["machine"].name, d["library"].name, d["library"].version))
    return out


def history(s, entity_ids: list[str], limit: int = 50) -> list[AuditLog]:
    if not entity_ids:
        return []
    return s.scalars(select(AuditLog).where(AuditLog.entity == "profile", AuditLog.entity_id.in_(entity_ids))
                     .order_by(AuditLog.at.desc(), AuditLog.id.desc()).limit(limit)).all()


def libraries(s) -> list[MpiLibrary]:
    from sqlalchemy.orm import selectinload
    return s.scalars(select(MpiLibrary).options(selectinload(MpiLibrary.machine)).order_by(MpiLibrary.id)).all()
