"""Usage: where the users' collective time goes (issue 33). The use case between the edges (API, pages, CLI)
and the pure ranking (service/analysis/usage.py) over the stored records (service/store/usage.py)."""
from __future__ import annotations

from sqlalchemy import select

from service.store.db import db
from service.store.models import Machine, MpiLibrary
from service.store.usage import cell_layouts, cell_verdicts, library_cells, same_library


def ranking(lib: MpiLibrary):
    """The library's cells ranked by what they cost its users (service/analysis/usage.py), joined per cell with
    the verdict of the newest analysis that measured it (service/store/usage.cell_verdicts: a cell a later
    campaign did not measure keeps its verdict, with its age), else with the verified pattern violations of the
    library's latest analysis; the validated gains of its live redirects likewise.
    Returns (ranked, total rank-seconds, jobs, ppn, {cell: (verdict, analysed at)}, {cell: layout})."""
    from service.analysis.usage import CellTime, Speedup, as_mpi_name, bucket_of, rank_cells
    from service.store.models import Analysis, Violation
    rows, jobs = library_cells(lib)
    cells = [CellTime(c, int(b), int(p), a, int(n or 0), float(t or 0.0)) for c, b, p, a, n, t in rows]
    verdicts = cell_verdicts(lib)

    def speedup(v):
        sp = (v.default_time / v.mockup_time) if v.mockup_time and v.mockup_time > 0 else 0.0
        return Speedup(v.collective, v.msize, v.nprocs, v.mockup, sp, v.status)
    viols = [speedup(v) for _, _, vs in verdicts.values() for v in vs]
    latest = db.session.scalar(select(Analysis).where(Analysis.library_id.in_(same_library(lib)))
                               .order_by(Analysis.id.desc()))
    if latest is not None:
        for v in db.session.scalars(select(Violation).where(Violation.analysis_id == latest.id,
                                                            Violation.kind == "pattern")):
            if (as_mpi_name(v.collective), bucket_of(v.msize), v.nprocs) not in verdicts:
                viols.append(speedup(v))
    ppn = db.session.scalar(select(Machine.cores_per_node).where(Machine.id == lib.machine_id)) or 1
    ranked, total = rank_cells(cells, viols, ppn=ppn, live_speedups=[v for v in viols if v.status == "verified"])
    return ranked, total, jobs, ppn, {k: (s, at) for k, (s, at, _) in verdicts.items()}, cell_layouts(lib)
