"""Usage: where the users' collective time goes (issue 33). The use case between the edges (API, pages, CLI)
and the pure ranking (service/analysis/usage.py) over the stored records (service/store/usage.py)."""
from __future__ import annotations

from sqlalchemy import select

from service.store.db import db
from service.store.models import Machine, MpiLibrary
from service.store.usage import library_cells


def ranking(lib: MpiLibrary):
    """The library's cells ranked by what they cost its users (service/analysis/usage.py), joined with the
    verified pattern violations of its latest analysis and the validated gains of its live redirects."""
    from service.analysis.usage import CellTime, Speedup, rank_cells
    from service.store.models import Analysis, Violation
    rows, jobs = library_cells(lib)
    cells = [CellTime(c, int(b), int(p), a, int(n or 0), float(t or 0.0)) for c, b, p, a, n, t in rows]
    latest = db.session.scalar(select(Analysis).where(Analysis.library_id == lib.id).order_by(Analysis.id.desc()))
    viols = []
    if latest is not None:
        for v in db.session.scalars(select(Violation).where(Violation.analysis_id == latest.id,
                                                            Violation.kind == "pattern")):
            sp = (v.default_time / v.mockup_time) if v.mockup_time and v.mockup_time > 0 else 0.0
            viols.append(Speedup(v.collective, v.msize, v.nprocs, v.mockup, sp, v.status))
    ppn = db.session.scalar(select(Machine.cores_per_node).where(Machine.id == lib.machine_id)) or 1
    ranked, total = rank_cells(cells, viols, ppn=ppn, live_speedups=[v for v in viols if v.status == "verified"])
    return ranked, total, jobs, ppn
