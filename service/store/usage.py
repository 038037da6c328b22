"""Usage records in the database: one all-or-nothing, idempotent store per record, and the cells of a library
summed over its jobs (the analysis ranks them: service/analysis/usage.py)."""
from __future__ import annotations

import hashlib
from typing import Optional

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from pgmpi_formats import limits
from pgmpi_formats.mpi_libraries import library_identity
from pgmpi_formats.usage import UsageFormatError, parse_usage
from service.store.db import db
from service.store.models import Machine, MpiLibrary, UsageCell, UsageJob

MAX_CELLS = 100_000     # a record holds at most the library's 1024 cells per rank, summed; far fewer in practice


class UsageError(ValueError):
    """A record that cannot be stored; nothing was stored."""


def _library(machine: Machine, name: str, version: str) -> MpiLibrary:
    lib = db.session.scalar(select(MpiLibrary).where(
        MpiLibrary.machine_id == machine.id, MpiLibrary.name == name, MpiLibrary.version == version)
        .order_by(MpiLibrary.id))
    if lib is not None:
        return lib
    try:
        with db.session.begin_nested():
            lib = MpiLibrary(machine_id=machine.id, name=name, version=version, module="")
            db.session.add(lib)
        return lib
    except IntegrityError:
        return db.session.scalar(select(MpiLibrary).where(
            MpiLibrary.machine_id == machine.id, MpiLibrary.name == name, MpiLibrary.version == version))


def _check(fn, value, field: str, name: str, **kw):
    """The site's one rule for this kind of text (pgmpi_formats.limits), named after the record."""
    if value is None:
        return None
    try:
        return fn(value, field, **kw) if kw else fn(value, field)
    except limits.LimitError as e:
        raise UsageError(f"{name}: {e}") from None


def _line(value, field: str, name: str, maximum: int):
    return _check(limits.check_text, value, field, name, max_len=maximum)


def store_usage(machine: Machine, name: str, text: str) -> tuple[UsageJob, bool]:
    """Parse the whole record first (a bad record changes nothing), then store it once: the same text again
    returns the stored job and False."""
    try:
        rec = parse_usage(text, name)
    except UsageFormatError as e:
        raise UsageError(str(e)) from None
    if len(rec.cells) > MAX_CELLS:
        raise UsageError(f"{name}: {len(rec.cells)} cells (at most {MAX_CELLS})")
    for c in rec.cells:
        if not (0 <= c.bytes_lo < 2 ** 62 and 0 <= c.p < 2 ** 31 and c.calls < 2 ** 62 and c.samples < 2 ** 62):
            raise UsageError(f"{name}: a cell out of range: {c}")
        _check(limits.check_call, c.collective, "collective", name)
        _check(limits.check_algorithm, c.algorithm, "algorithm", name)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    old = db.session.scalar(select(UsageJob).where(UsageJob.digest == digest))
    if old is not None:
        return old, False
    lib_name, version = library_identity(rec.library)
    lib = _library(machine, _check(limits.check_library, lib_name, "library", name),
                   _check(limits.check_version, version, "version", name))
    h = rec.header
    job = UsageJob(library_id=lib.id, digest=digest, ranks=int(h.get("ranks", 0)),
                   layout=_line(h.get("layout", "-"), "layout", name, 60),
                   wall_seconds=float(h.get("wall_s", 0.0)), rank_seconds=float(h.get("rank_s", 0.0)),
                   sample_period=int(h.get("sample_period", 0)),
                   slurm_job_id=_line(h.get("slurm_job_id"), "slurm_job_id", name, 60),
                   user_name=_line(h.get("user"), "user", name, 120), exe=_line(h.get("exe"), "exe", name, 200))
    job.cells = [UsageCell(collective=c.collective, bytes_lo=c.bytes_lo, p=c.p, world=c.world, algorithm=c.algorithm,
                           calls=c.calls, rank_seconds=c.rank_seconds, samples=c.samples) for c in rec.cells]
    try:
        with db.session.begin_nested():
            db.session.add(job)
    except IntegrityError:     # the same record stored concurrently
        old = db.session.scalar(select(UsageJob).where(UsageJob.digest == digest))
        if old is None:
            raise
        return old, False
    return job, True


def same_library(lib: MpiLibrary) -> list[int]:
    """The ids of every row of this library on its machine: the results of each module it is loaded by have
    their own row (MpiLibrary's key holds the module), a usage record has none; the users' time and the
    verdicts of that library meet over all of them."""
    return list(db.session.scalars(select(MpiLibrary.id).where(
        MpiLibrary.machine_id == lib.machine_id, MpiLibrary.name == lib.name, MpiLibrary.version == lib.version)))


def library_cells(lib: MpiLibrary):
    """(collective, bytes_lo, p, algorithm, calls, rank_seconds) summed over the library's jobs, and the jobs."""
    ids = same_library(lib)
    rows = db.session.execute(
        select(UsageCell.collective, UsageCell.bytes_lo, UsageCell.p, UsageCell.algorithm,
               func.sum(UsageCell.calls), func.sum(UsageCell.rank_seconds))
        .join(UsageJob, UsageJob.id == UsageCell.job_id).where(UsageJob.library_id.in_(ids))
        .group_by(UsageCell.collective, UsageCell.bytes_lo, UsageCell.p, UsageCell.algorithm)).all()
    jobs = db.session.scalar(select(func.count(UsageJob.id)).where(UsageJob.library_id.in_(ids))) or 0
    return rows, jobs



def cell_layouts(lib: MpiLibrary) -> dict[tuple[str, int, int], str]:
    """(collective, bytes_lo, p) -> the layout ("<nodes>x<ppn>") holding most of that cell's time, from the
    cells on MPI_COMM_WORLD of jobs whose record names their layout; a campaign measures a cell there."""
    rows = db.session.execute(
        select(UsageCell.collective, UsageCell.bytes_lo, UsageCell.p, UsageJob.layout, func.sum(UsageCell.rank_seconds))
        .join(UsageJob, UsageJob.id == UsageCell.job_id)
        .where(UsageJob.library_id.in_(same_library(lib)), UsageCell.world.is_(True), UsageJob.layout.like("%x%"))
        .group_by(UsageCell.collective, UsageCell.bytes_lo, UsageCell.p, UsageJob.layout)).all()
    best: dict[tuple[str, int, int], tuple[float, str]] = {}
    for coll, lo, p, layout, t in rows:
        k = (coll, int(lo), int(p))
        if k not in best or (float(t or 0.0), layout) > best[k]:
            best[k] = (float(t or 0.0), layout)
    return {k: layout for k, (_, layout) in best.items()}


def cell_verdicts(lib: MpiLibrary):
    """(collective, bytes_lo, p) -> (verdict, analysis created_at, [verified pattern violations]) of the newest
    analysis whose campaign measured the cell (any size of its bucket, the library's default, not a validation
    run): "violation" when that analysis verified one there, else "none". A cell a later campaign did not
    measure keeps this verdict; its age is the analysis' (the nightly plan skips a cell decided recently)."""
    from service.analysis.usage import as_mpi_name, bucket_of
    from service.store.models import Analysis, Run, Series, Violation
    ids = same_library(lib)
    measured = db.session.execute(
        select(Series.call, Series.msize, Run.nprocs, func.max(Analysis.id))
        .join(Run, Run.id == Series.run_id)
        .join(Analysis, Analysis.campaign_id == Run.campaign_id)
        .where(Analysis.library_id.in_(ids), Run.library_id == Analysis.library_id, Run.validation.is_(None),
               Series.algorithm == "default")
        .group_by(Series.call, Series.msize, Run.nprocs)).all()
    newest: dict[tuple[str, int, int], int] = {}
    for call, msize, p, aid in measured:
        k = (call, bucket_of(int(msize)), int(p))
        newest[k] = max(newest.get(k, 0), int(aid))
    if not newest:
        return {}
    ids = set(newest.values())
    when = dict(db.session.execute(select(Analysis.id, Analysis.created_at).where(Analysis.id.in_(ids))).all())
    viols: dict[tuple[str, int, int, int], list] = {}
    for v in db.session.scalars(select(Violation).where(Violation.analysis_id.in_(ids), Violation.kind == "pattern",
                                                        Violation.status == "verified")):
        viols.setdefault((as_mpi_name(v.collective), bucket_of(v.msize), v.nprocs, v.analysis_id), []).append(v)
    out = {}
    for k, aid in newest.items():
        vs = viols.get((*k, aid), [])
        out[k] = ("violation" if vs else "none", when[aid], vs)
    return out
