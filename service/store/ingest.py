"""Store an upload of raw-result files (docs/contracts.md, 2) in one transaction.

Parsing is the one reader (pgmpi_formats.results.parse_text); this module groups each run's
measurements into series (run x call x algorithm x size) and writes them.  Nothing is committed
here: the caller commits or rolls back, so an upload is all-or-nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from pgmpi_formats.layouts import layout_label
from pgmpi_formats.results import ResultsFormatError, RunResult, parse_text
from service.store.db import db
from service.store.models import BarrierSeries, Campaign, Job, Machine, MpiLibrary, Run, Series, Upload


class UploadError(ValueError):
    """A bad upload: `field` names the JSON field or file:line, status is the HTTP status."""

    def __init__(self, message: str, field: Optional[str] = None, status: int = 422, code: str = "invalid_upload"):
        super().__init__(message)
        self.message, self.field, self.status, self.code = message, field, status, code


@dataclass
class Parsed:
    name: str
    result: RunResult


def _int_header(p: Parsed, key: str, default: Optional[int] = None, minimum: int = 0) -> Optional[int]:
    raw = p.result.header.get(key, "")
    if raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise UploadError(f"{p.name}: header #@{key}={raw!r} is not an integer", field=f"{p.name}:#@{key}") from None
    if v < minimum:
        raise UploadError(f"{p.name}: header #@{key}={raw!r} must be >= {minimum}", field=f"{p.name}:#@{key}")
    return v


def parse_files(files) -> list[Parsed]:
    out = []
    seen = set()
    for i, f in enumerate(files):
        if f.name in seen:
            raise UploadError(f"file name {f.name!r} appears twice in this upload", field=f"files[{i}].name")
        seen.add(f.name)
        try:
            res = parse_text(f.text(), f.name)
        except ResultsFormatError as e:
            raise UploadError(str(e), field=f"{e.source}:{e.line}" if e.line else e.source) from None
        if len(res) == 0:
            raise UploadError(f"{f.name}: no measurements", field=f.name)
        for key in ("machine", "mpi_library"):
            if not res.header.get(key):
                raise UploadError(f"{f.name}: header #@{key}= is missing (machine and library come from the "
                                  "#@machine, #@mpi_library, #@mpi_version and #@module headers)",
                                  field=f"{f.name}:#@{key}")
        out.append(Parsed(f.name, res))
    return out


def store_upload(upload_id: str, campaign_name: Optional[str], files, principal) -> tuple[Upload, bool]:
    """Returns (upload, created). Raises UploadError (nothing written) or PermissionError."""
    existing = db.session.scalar(select(Upload).where(Upload.upload_id == upload_id))
    if existing is not None:
        _check_machine(principal, existing.machine_id, db.session.get(Machine, existing.machine_id).name)
        return existing, False
    parsed = parse_files(files)
    mname = parsed[0].result.header["machine"]
    for p in parsed[1:]:
        if p.result.header["machine"] != mname:
            raise UploadError(f"{p.name}: #@machine={p.result.header['machine']} but {parsed[0].name} says "
                              f"{mname}; one upload holds the files of one machine", field=f"{p.name}:#@machine")
    machine = db.session.scalar(select(Machine).where(Machine.name == mname))
    if machine is None:
        raise UploadError(f"unknown machine {mname!r} (header #@machine of {parsed[0].name}); register it first "
                          "with POST /api/v1/machines", field=f"{parsed[0].name}:#@machine", status=422)
    _check_machine(principal, machine.id, machine.name)
    campaign = None
    if campaign_name is None:
        names = {p.result.header.get("campaign", "") for p in parsed} - {""}
        campaign_name = names.pop() if len(names) == 1 else None
        if campaign_name and db.session.scalar(select(Campaign).where(Campaign.name == campaign_name)) is None:
            campaign_name = None  # a campaign the service does not know: keep the header only
    if campaign_name:
        campaign = db.session.scalar(select(Campaign).where(Campaign.name == campaign_name))
        if campaign is None:
            raise UploadError(f"unknown campaign {campaign_name!r}", field="campaign", status=422)
        if campaign.machine_id != machine.id:
            raise UploadError(f"campaign {campaign_name!r} belongs to another machine", field="campaign")

    total = sum(len(p.result) for p in parsed)
    upload = Upload(upload_id=upload_id, machine_id=machine.id, campaign_id=campaign.id if campaign else None,
                    actor=principal.name, n_files=len(parsed), n_timings=total)
    db.session.add(upload)
    db.session.flush()
    libs: dict[tuple, MpiLibrary] = {}
    series_rows: list[dict] = []
    barrier_rows: list[dict] = []
    for p in parsed:
        h = p.result.header
        key = (h["mpi_library"], h.get("mpi_version", "") or "unknown", h.get("module", ""))
        lib = libs.get(key)
        if lib is None:
            lib = db.session.scalar(select(MpiLibrary).where(
                MpiLibrary.machine_id == machine.id, MpiLibrary.name == key[0], MpiLibrary.version == key[1],
                MpiLibrary.module == key[2]))
            if lib is None:
                lib = _create_library(machine.id, *key)
            libs[key] = lib
        nodes = _int_header(p, "nodes", 1, 1)
        ppn = _int_header(p, "ppn", None, 1)
        nprocs = _int_header(p, "nprocs", None, 1) or (nodes * ppn if ppn else None)
        if nprocs is None:
            raise UploadError(f"{p.name}: header #@nprocs= is missing (or #@nodes and #@ppn)", field=f"{p.name}:#@nprocs")
        job = None
        if campaign is not None and h.get("job_key"):
            job = db.session.scalar(select(Job).where(Job.campaign_id == campaign.id, Job.job_key == h["job_key"]))
        run = Run(upload_pk=upload.id, machine_id=machine.id, library_id=lib.id,
                  campaign_id=campaign.id if campaign else None, job_id=job.id if job else None,
                  file_name=p.name, slurm_job_id=h.get("slurm_job_id", "")[:40],
                  mpirun_index=_int_header(p, "mpirun_index", 0, 0), nodes=nodes, ppn=ppn or max(1, nprocs // nodes),
                  nprocs=nprocs, layout=layout_label(nodes, ppn or max(1, nprocs // nodes), nprocs, h.get("placement", "")),
                  hosts=h.get("hosts", ""), placement=h.get("placement", ""),
                  state="COMPLETED", headers=dict(h), footer=list(p.result.pgmpi_lines))
        db.session.add(run)
        db.session.flush()
        _series_of(run.id, p.result, series_rows, barrier_rows)
    for rows, model in ((series_rows, Series), (barrier_rows, BarrierSeries)):
        for i in range(0, len(rows), 2000):
            db.session.execute(insert(model), rows[i:i + 2000])
    return upload, True


def _create_library(machine_id: int, name: str, version: str, module: str) -> MpiLibrary:
    """Register a library seen for the first time; safe when concurrent uploads see it at once (the
    loser of the race waits for the winner's commit, then uses its row)."""
    try:
        with db.session.begin_nested():
            lib = MpiLibrary(machine_id=machine_id, name=name, version=version, module=module)
            db.session.add(lib)
        return lib
    except IntegrityError:
        lib = db.session.scalar(select(MpiLibrary).where(
            MpiLibrary.machine_id == machine_id, MpiLibrary.name == name, MpiLibrary.version == version,
            MpiLibrary.module == module))
        if lib is None:
            raise
        return lib


def _series_of(run_id: int, r: RunResult, series_rows: list, barrier_rows: list) -> None:
    """Group one run's measurements into series (call x algorithm x size), timings in nrep order;
    n / median / mean / min computed for all groups at once (vectorised)."""
    if len(r) == 0:
        return
    order = np.lexsort((r.nrep, r.msize, r.algorithm, r.test))
    t, a, m = r.test[order], r.algorithm[order], r.msize[order]
    rt = np.ascontiguousarray(r.runtime[order], dtype="<f8")
    change = np.nonzero((np.diff(t) != 0) | (np.diff(a) != 0) | (np.diff(m) != 0))[0] + 1
    starts = np.r_[0, change]
    lengths = np.diff(np.r_[starts, len(rt)])
    mins = np.minimum.reduceat(rt, starts)
    means = np.add.reduceat(rt, starts) / lengths
    gid = np.repeat(np.arange(len(starts)), lengths)
    srt = rt[np.lexsort((rt, gid))]            # sorted within each group
    lo = srt[starts + (lengths - 1) // 2]
    hi = srt[starts + lengths // 2]
    medians = (lo + hi) / 2
    is_barrier = [name.lower() == "mpi_barrier" for name in r.tests]
    for k, (s, n) in enumerate(zip(starts.tolist(), lengths.tolist())):
        ti = int(t[s])
        blob = rt[s:s + n].tobytes()
        if is_barrier[ti]:
            barrier_rows.append({"run_id": run_id, "msize": int(m[s]), "n": n, "median": float(medians[k]),
                                 "timings": blob})
        else:
            series_rows.append({"run_id": run_id, "call": r.tests[ti], "algorithm": r.algorithms[int(a[s])],
                                "msize": int(m[s]), "n": n, "median": float(medians[k]), "mean": float(means[k]),
                                "minimum": float(mins[k]), "timings": blob})


def _check_machine(principal, machine_id: int, name: str) -> None:
    if principal.role == "agent" and principal.machine_id != machine_id:
        raise PermissionError(f"this agent token is bound to another machine, not {name!r}")
