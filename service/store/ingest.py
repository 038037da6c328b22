"""Store an upload of raw-result files (docs/contracts.md, 2) in one transaction.

Parsing is the one reader (pgmpi_formats.results.parse_text); this module groups each run's
measurements into series (run x call x algorithm x size) and writes them.  Nothing is committed
here: the caller commits or rolls back, so an upload is all-or-nothing.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from pgmpi_formats import limits
from pgmpi_formats.layouts import layout_label
from pgmpi_formats.results import ResultsFormatError, RunResult, parse_text
from service.store.db import db
from pgmpi_formats.footer import case_of_line
from service.store.models import BarrierSeries, Campaign, DtCase, Job, Machine, MpiLibrary, Run, Series, Upload


class UploadError(ValueError):
    """A bad upload: `field` names the JSON field or file:line, status is the HTTP status."""

    def __init__(self, message: str, field: Optional[str] = None, status: int = 422, code: str = "invalid_upload"):
        super().__init__(message)
        self.message, self.field, self.status, self.code = message, field, status, code


@dataclass
class Parsed:
    name: str
    result: RunResult


_INT_HEADERS = {"nodes": (1, limits.NODES_MAX), "ppn": (1, limits.PPN_MAX), "nprocs": (1, limits.INT_MAX),
                "mpirun_index": (0, limits.INT_MAX)}
_NAME_HEADERS = {"machine": limits.check_machine, "mpi_library": limits.check_library,
                 "mpi_version": limits.check_version, "module": limits.check_module,
                 "campaign": limits.check_campaign, "test": limits.check_call, "algorithm": limits.check_algorithm}


def _int_header(p: Parsed, key: str, default: Optional[int] = None, minimum: int = 0) -> Optional[int]:
    raw = p.result.header.get(key, "")
    if raw == "":
        return default
    lo, hi = _INT_HEADERS.get(key, (minimum, limits.INT_MAX))
    try:
        return limits.check_int(raw, f"{p.name}:#@{key}", max(lo, minimum), hi)
    except limits.LimitError as e:
        raise UploadError(f"{p.name}: header #@{key}={raw[:40]!r}: {e.message}", field=e.field) from None


def check_limits(name: str, res: RunResult) -> None:
    """The site's limits (pgmpi_formats.limits) on one parsed file: header names and values, call and
    algorithm names, message sizes and run-times; raises UploadError naming file:#@header or file:field."""
    h = res.header
    if len(h) > limits.HEADERS_MAX:
        raise UploadError(f"{name}: {len(h)} header lines, more than {limits.HEADERS_MAX}", field=name)
    try:
        for key, value in h.items():
            field = f"{name}:#@{key}"
            limits.check_text(key.replace("-", "_").replace(".", "_"), field, 80, limits.CALL_RE, "header key")
            check = _NAME_HEADERS.get(key)
            if check is not None and value != "":
                check(value, field)
            elif key in _INT_HEADERS and value != "":
                limits.check_int(value, field, *_INT_HEADERS[key])
            else:
                limits.check_header_value(key, value, field)
        for t in res.tests:
            limits.check_call(t, f"{name}:test")
        for a in res.algorithms:
            limits.check_algorithm(a, f"{name}:algorithm")
    except limits.LimitError as e:
        raise UploadError(f"{name}: {e}", field=e.field) from None
    for what, arr, hi in (("msize", res.msize, limits.INT_MAX), ("nrep", res.nrep, limits.INT_MAX),
                          ("runtime_sec", res.runtime, limits.RUNTIME_MAX)):
        if len(arr) and arr.max() > hi:
            row = int(np.argmax(arr))
            raise UploadError(f"{name}: field {what!r}: {arr[row]!r} is more than {hi:g} (measurement {row + 1})",
                              field=f"{name}:{what}")


def parse_files(files) -> list[Parsed]:
    out = []
    seen = set()
    for i, f in enumerate(files):
        if f.name in seen:
            raise UploadError(f"file name {f.name!r} appears twice in this upload", field=f"files[{i}].name")
        seen.add(f.name)
        out.append(_parse_one(f.name, f.text()))
    return out


def upload_digest(campaign_name: Optional[str], files) -> str:
    """SHA-256 of what an upload says (campaign, file names and texts): the same upload_id with another
    digest is another upload, refused as a conflict."""
    h = hashlib.sha256()
    h.update(f"campaign={campaign_name or ''}\0".encode())
    for f in files:
        h.update(f"{len(f.name)}:{f.name}\0".encode())
        h.update(f.text().encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _known_upload(existing: Upload, digest: str, principal) -> tuple[Upload, bool]:
    """A stored upload with this upload_id: the same content is a duplicate, other content a conflict."""
    _check_machine(principal, existing.machine_id, db.session.get(Machine, existing.machine_id).name)
    if existing.digest is not None and existing.digest != digest:
        raise UploadError(f"upload_id {existing.upload_id!r} was stored at {existing.created_at:%Y-%m-%d %H:%M:%S} "
                          f"with other content ({existing.n_files} files, {existing.n_timings} timings, "
                          f"sha256 {existing.digest[:12]}…, this one {digest[:12]}…); give new data a new upload_id",
                          field="upload_id", status=409, code="conflict")
    return existing, False


def find_upload(upload_id: str) -> Optional[Upload]:
    return db.session.scalar(select(Upload).where(Upload.upload_id == upload_id))


class UploadWriter:
    """Stores one upload file by file: each file is parsed, checked, written and dropped before the next, so
    a worker holds one run's data at a time, never the whole body (service/api/upload_stream.py feeds it
    while reading the request).  Everything goes into the caller's transaction: the caller commits after
    finish() or rolls back on any error, so an upload stays all-or-nothing.

    When the upload_id is stored already (or a concurrent request stores it first), the remaining files are
    only hashed: finish() answers duplicate (same content) or raises a 409 UploadError (other content)."""

    def __init__(self, upload_id: str, campaign_name: Optional[str], principal):
        self.upload_id, self.campaign_name, self.principal = upload_id, campaign_name, principal
        self._hash = hashlib.sha256(f"campaign={campaign_name or ''}\0".encode())
        self.existing = find_upload(upload_id)
        if self.existing is not None:   # refuse another machine's agent before reading its body
            _check_machine(principal, self.existing.machine_id,
                           db.session.get(Machine, self.existing.machine_id).name)
        self.upload: Optional[Upload] = None
        self.machine: Optional[Machine] = None
        self.campaign: Optional[Campaign] = None
        self.first_name = ""
        self.header_campaigns: set[str] = set()
        self.seen: set[str] = set()
        self.libs: dict[tuple, MpiLibrary] = {}
        self.n_files = self.n_timings = 0

    def add(self, index: int, f) -> None:
        """One file (FileIn: name, text())."""
        if f.name in self.seen:
            raise UploadError(f"file name {f.name!r} appears twice in this upload", field=f"files[{index}].name")
        self.seen.add(f.name)
        text = f.text()
        self._hash.update(f"{len(f.name)}:{f.name}\0".encode())
        self._hash.update(text.encode("utf-8", "surrogatepass"))
        self._hash.update(b"\0")
        if self.existing is not None:
            return
        p = _parse_one(f.name, text)
        del text
        self._store(p)

    def finish(self) -> tuple[Upload, bool]:
        digest = self._hash.hexdigest()
        if self.existing is not None:
            return _known_upload(self.existing, digest, self.principal)
        if self.upload is None:
            raise UploadError("files: an upload holds at least one file", field="files")
        if self.campaign_name is None:    # the campaign the files' headers agree on, if the service knows it
            names = self.header_campaigns - {""}
            name = names.pop() if len(names) == 1 else None
            campaign = db.session.scalar(select(Campaign).where(Campaign.name == name)) if name else None
            if campaign is not None and campaign.machine_id != self.machine.id:
                campaign = None
            if campaign is not self.campaign:
                self._relink(campaign)
        self.upload.n_files, self.upload.n_timings, self.upload.digest = self.n_files, self.n_timings, digest
        db.session.flush()
        return self.upload, True

    # ------------------------------------------------------------- one file

    def _begin(self, p: Parsed) -> None:
        mname = p.result.header["machine"]
        machine = db.session.scalar(select(Machine).where(Machine.name == mname))
        if machine is None:
            raise UploadError(f"unknown machine {mname!r} (header #@machine of {p.name}); register it first "
                              "with POST /api/v1/machines", field=f"{p.name}:#@machine", status=422)
        _check_machine(self.principal, machine.id, machine.name)
        self.machine, self.first_name = machine, p.name
        if self.campaign_name:
            campaign = db.session.scalar(select(Campaign).where(Campaign.name == self.campaign_name))
            if campaign is None:
                raise UploadError(f"unknown campaign {self.campaign_name!r}", field="campaign", status=422)
            if campaign.machine_id != machine.id:
                raise UploadError(f"campaign {self.campaign_name!r} belongs to another machine", field="campaign")
            self.campaign = campaign
        else:   # tentatively the first file's campaign; finish() settles it over all files
            name = p.result.header.get("campaign", "")
            c = db.session.scalar(select(Campaign).where(Campaign.name == name)) if name else None
            self.campaign = c if c is not None and c.machine_id == machine.id else None
        upload = Upload(upload_id=self.upload_id, machine_id=machine.id,
                        campaign_id=self.campaign.id if self.campaign else None, actor=self.principal.name,
                        n_files=0, n_timings=0)
        try:
            # the upload's first write: a concurrent request with this upload_id holds the key until it
            # commits, and we then see its row (no savepoint: on SQLite releasing an outermost savepoint
            # would commit; nothing else is written yet, so rolling back loses nothing)
            db.session.add(upload)
            db.session.flush()
        except IntegrityError:
            db.session.rollback()
            existing = find_upload(self.upload_id)
            if existing is None:
                raise
            self.existing = existing
            return
        self.upload = upload

    def _store(self, p: Parsed) -> None:
        if self.machine is None:
            self._begin(p)
            if self.existing is not None:
                return
        h = p.result.header
        if h["machine"] != self.machine.name:
            raise UploadError(f"{p.name}: #@machine={h['machine']} but {self.first_name} says "
                              f"{self.machine.name}; one upload holds the files of one machine",
                              field=f"{p.name}:#@machine")
        self.header_campaigns.add(h.get("campaign", ""))
        key = (h["mpi_library"], h.get("mpi_version", "") or "unknown", h.get("module", ""))
        lib = self.libs.get(key)
        if lib is None:
            lib = db.session.scalar(select(MpiLibrary).where(
                MpiLibrary.machine_id == self.machine.id, MpiLibrary.name == key[0], MpiLibrary.version == key[1],
                MpiLibrary.module == key[2]))
            if lib is None:
                lib = _create_library(self.machine.id, *key)
            self.libs[key] = lib
        nodes = _int_header(p, "nodes", 1, 1)
        ppn = _int_header(p, "ppn", None, 1)
        nprocs = _int_header(p, "nprocs", None, 1) or (nodes * ppn if ppn else None)
        if nprocs is None:
            raise UploadError(f"{p.name}: header #@nprocs= is missing (or #@nodes and #@ppn)", field=f"{p.name}:#@nprocs")
        if nprocs > limits.INT_MAX:
            raise UploadError(f"{p.name}: #@nodes x #@ppn = {nprocs} is more than {limits.INT_MAX}",
                              field=f"{p.name}:#@nprocs")
        run = Run(upload_pk=self.upload.id, machine_id=self.machine.id, library_id=lib.id,
                  campaign_id=self.campaign.id if self.campaign else None, job_id=self._job(h, self.campaign),
                  file_name=p.name, slurm_job_id=h.get("slurm_job_id", "")[:40],
                  mpirun_index=_int_header(p, "mpirun_index", 0, 0), nodes=nodes, ppn=ppn or max(1, nprocs // nodes),
                  nprocs=nprocs, layout=layout_label(nodes, ppn or max(1, nprocs // nodes), nprocs, h.get("placement", "")),
                  hosts=h.get("hosts", ""), placement=h.get("placement", ""),
                  state="COMPLETED", headers=dict(h), footer=list(p.result.pgmpi_lines),
                  validation=(h.get("pgmpi_validation") or "")[:16] or None)
        db.session.add(run)
        db.session.flush()
        series_rows: list[dict] = []
        barrier_rows: list[dict] = []
        _series_of(run.id, p.result, series_rows, barrier_rows)
        for rows, model in ((series_rows, Series), (barrier_rows, BarrierSeries)):
            for i in range(0, len(rows), 2000):
                db.session.execute(insert(model), rows[i:i + 2000])
        _dt_cases_of(run.id, p.result)
        self.n_files += 1
        self.n_timings += len(p.result)

    @staticmethod
    def _job(h: dict, campaign: Optional[Campaign]) -> Optional[int]:
        if campaign is None or not h.get("job_key"):
            return None
        return db.session.scalar(select(Job.id).where(Job.campaign_id == campaign.id, Job.job_key == h["job_key"]))

    def _relink(self, campaign: Optional[Campaign]) -> None:
        """The files' headers settled on another campaign than the first file's: link every run of the
        upload (and its job) to it."""
        self.campaign = campaign
        self.upload.campaign_id = campaign.id if campaign else None
        for run in db.session.scalars(select(Run).where(Run.upload_pk == self.upload.id)):
            run.campaign_id = campaign.id if campaign else None
            run.job_id = self._job(run.headers or {}, campaign)


def _parse_one(name: str, text: str) -> Parsed:
    try:
        res = parse_text(text, name)
    except ResultsFormatError as e:
        raise UploadError(str(e), field=f"{e.source}:{e.line}" if e.line else e.source) from None
    if len(res) == 0:
        raise UploadError(f"{name}: no measurements", field=name)
    check_limits(name, res)
    for key in ("machine", "mpi_library"):
        if not res.header.get(key):
            raise UploadError(f"{name}: header #@{key}= is missing (machine and library come from the "
                              "#@machine, #@mpi_library, #@mpi_version and #@module headers)",
                              field=f"{name}:#@{key}")
    return Parsed(name, res)


def store_upload(upload_id: str, campaign_name: Optional[str], files, principal) -> tuple[Upload, bool]:
    """Returns (upload, created). Raises UploadError (the caller rolls back: nothing written) or
    PermissionError."""
    w = UploadWriter(upload_id, campaign_name, principal)
    for i, f in enumerate(files):
        w.add(i, f)
    return w.finish()


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


def _dt_cases_of(run_id: int, r: RunResult) -> None:
    """pgmpi-dtbench's cases of one run (its `#@pgmpi dtcase` lines) with the count of each description
    and size, for the cases the run measured; other files have none."""
    rows = []
    for line in r.pgmpi_lines:
        case = case_of_line(line)
        if case is None or case.test not in r.tests:
            continue
        counts: dict[str, dict[str, int]] = {}
        for (t, alg, m), c in r.cell_counts.items():
            if t == case.test:
                counts.setdefault(alg, {})[str(m)] = int(c)
        rows.append({"run_id": run_id, "test": case.test[:120], "pattern": case.pattern[:20],
                     "dt_layout": case.layout[:40], "variant": case.variant, "block": case.A,
                     "basetype": case.basetype[:40], "signature": case.signature, "counts": counts})
    if rows:
        db.session.execute(insert(DtCase), list({r["test"]: r for r in rows}.values()))


def _check_machine(principal, machine_id: int, name: str) -> None:
    if principal.role == "agent" and principal.machine_id != machine_id:
        raise PermissionError(f"this agent token is bound to another machine, not {name!r}")
