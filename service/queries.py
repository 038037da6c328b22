"""Read queries shared by the API and the dashboards (plain SQLAlchemy, no Flask)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Optional

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.models import Analysis, Machine, MpiLibrary, Violation


def violations_overview(session: Session, machine: Optional[str] = None, library: Optional[str] = None,
                        history_days: int = 30) -> list[dict]:
    """One row per machine x MPI library: its latest analysis (counts, worst slowdown, violations per
    collective) and the number of violations per night over the last `history_days`.

    Uses the indexes ix_analyses_library_latest (library_id, id) and ix_violations_analysis_id, and the
    per-analysis summary columns (n_violations, max_slowdown), so it touches O(libraries x history)
    analysis rows and only the violations of the latest analyses, however long the history is.
    """
    latest = (select(Analysis.library_id, func.max(Analysis.id).label("aid"))
              .group_by(Analysis.library_id).subquery())
    q = (select(Analysis, MpiLibrary, Machine)
         .join(latest, latest.c.aid == Analysis.id)
         .join(MpiLibrary, MpiLibrary.id == Analysis.library_id)
         .join(Machine, Machine.id == Analysis.machine_id))
    if machine:
        q = q.where(Machine.name == machine)
    if library:
        q = q.where(MpiLibrary.name == library)
    rows = session.execute(q.order_by(Machine.name, MpiLibrary.name, MpiLibrary.version)).all()
    if not rows:
        return []
    ids = [a.id for a, _, _ in rows]
    per_coll: dict[int, dict[str, dict]] = {}
    for aid, coll, n, worst in session.execute(
            select(Violation.analysis_id, Violation.collective, func.count(), func.max(Violation.slowdown))
            .where(Violation.analysis_id.in_(ids)).group_by(Violation.analysis_id, Violation.collective)):
        per_coll.setdefault(aid, {})[coll] = {"violations": n, "max_slowdown": worst}
    since = datetime.now(timezone.utc) - timedelta(days=history_days)
    history: dict[int, list] = {}
    lib_ids = [lib.id for _, lib, _ in rows]
    for lib_id, at, n in session.execute(
            select(Analysis.library_id, Analysis.created_at, Analysis.n_violations)
            .where(Analysis.library_id.in_(lib_ids), Analysis.created_at >= since)
            .order_by(Analysis.library_id, Analysis.created_at)):
        history.setdefault(lib_id, []).append([at.isoformat() if at else None, n])
    return [{"machine": m.name, "library": lib.name, "version": lib.version, "module": lib.module,
             "analysis_id": a.id, "analysed_at": a.created_at.isoformat() if a.created_at else None,
             "n_checked": a.n_checked, "n_violations": a.n_violations, "max_slowdown": a.max_slowdown,
             "by_collective": per_coll.get(a.id, {}), "history": history.get(lib.id, [])}
            for a, lib, m in rows]
