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


def native_story(s, ps, versions, live_files: dict) -> list[dict[str, Any]]:
    """The native decision files among a set's versions, told like a mock-up profile: per version holding one,
    what the decision chose (the nightly chain's audit record: cell, algorithm, paired ratio, CI; the choices
    an earlier validation refused), what each validation job of exactly that file kept and dropped (its
    cells, service/analysis/native_validation.py), and whether it is the live file.  A stored value that
    does not have the expected shape is left out, never an error."""
    import hashlib
    from service.profiles.publish import NATIVE_FILES
    from service.store.models import NativeValidation
    out = []
    for v in versions:
        files = v.files if isinstance(v.files, dict) else {}
        name = next((n for n in files if n in NATIVE_FILES), None)
        if name is None or not isinstance(files[name], str):
            continue
        text = files[name]
        rec = s.scalars(select(AuditLog).where(AuditLog.entity == "profile", AuditLog.entity_id == str(v.id),
                                               AuditLog.action == "native-candidate")
                        .order_by(AuditLog.id.desc())).first()
        det = rec.details if rec is not None and isinstance(rec.details, dict) else {}
        digest = hashlib.sha256(text.encode()).hexdigest()
        checks = []
        for nvr in s.scalars(select(NativeValidation).where(
                NativeValidation.digest == digest, NativeValidation.file_name == name,
                NativeValidation.machine == ps.machine.name, NativeValidation.library == ps.library.name,
                NativeValidation.version == ps.library.version).order_by(NativeValidation.id)):
            cells = [c for c in ((nvr.verdict or {}).get("cells") or []) if isinstance(c, dict)]
            checks.append({"id": nvr.id, "state": nvr.state, "job": nvr.job, "at": nvr.created_at,
                           "nprocs": nvr.nprocs,
                           "kept": [c for c in cells if not c.get("problems")],
                           "dropped": [c for c in cells if c.get("problems")]})
        out.append({"version": v, "file": name, "live": live_files.get(name) == text,
                    "chosen": [c for c in det.get("chosen") or [] if isinstance(c, dict)],
                    "refused": [c for c in det.get("refused") or [] if isinstance(c, dict)],
                    "campaign": det.get("campaign"), "carried": det.get("carried") or [],
                    "left_out": det.get("left_out") or [], "validations": checks})
    return out


def span_story(versions) -> dict[int, str]:
    """Version id -> how its span reads ("p 3, between measured 2 and 4, validated at 3"), for the versions
    that hold a span between measured process counts (service/analysis/spans.py)."""
    from service.analysis.spans import describe, span_of
    from service.workflows.publish import SPAN_DROPPED
    out = {}
    for v in versions:
        files = v.files if isinstance(v.files, dict) else {}
        if len(files) != 1:
            continue
        name, text = next(iter(files.items()))
        span = span_of(name, text) if isinstance(text, str) else None
        if span is None:
            continue
        tried = bool(v.figures) or "validation:" in (v.notes or "")
        out[v.id] = describe(span, validated=True if v.validated_at else (False if tried else None))
        # what a later publication of measured profiles did with it (publishing.publish_candidate)
        fate = [part for part in (v.notes or "").split("; ")
                if part.startswith(("kept live by candidate", f"{SPAN_DROPPED} by candidate"))]
        if fate:
            out[v.id] += f"; {fate[-1]}"
    return out
