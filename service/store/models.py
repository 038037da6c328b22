"""The site's results database, named after the domain (SQLAlchemy 2 typed models).

Raw timings of one run x call x algorithm x message size are stored as ONE row holding the
timings as little-endian float64 bytes (8 bytes per timing, `Series.values()` decodes them);
a year of nightly campaigns stays compact and an upload of a million timings is a few
thousand INSERTs.  Summary statistics of each series are stored next to the bytes so
queries need not decode them.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

import numpy as np
from flask_login import UserMixin
from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, LargeBinary,
                        String, Text, UniqueConstraint)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from service.store.db import db

ROLES = ("viewer", "agent", "admin")
ROLE_RANK = {r: i for i, r in enumerate(ROLES)}
JOB_STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED")
CAMPAIGN_STATES = ("planned", "running", "completed", "failed", "cancelled")
PROFILE_STATES = ("candidate", "validated", "published", "superseded", "rolled-back")
# what a stored violation is worth (service/analysis/README.md, "One truth on every page"): verified by its
# campaign's analysis; unconfirmed: found, but by fewer campaigns (nights) than the candidate rule requires;
# contradicted: the paired validation measured its range slower or not faster
VIOLATION_STATES = ("verified", "unconfirmed", "contradicted")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


TS = DateTime(timezone=True)


class User(UserMixin, db.Model):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), default="viewer")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # raised at logout and password change: sessions carrying an older value are no longer valid
    session_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    @property
    def is_active(self) -> bool:  # Flask-Login
        return bool(self.active)

    def get_id(self) -> str:   # Flask-Login: the session holds "<id>:<session_version>"
        return f"{self.id}:{self.session_version or 0}"


class LoginFailure(db.Model):
    """One failed login (user name as typed, client address): the throttle counts these in its window."""
    __tablename__ = "login_failures"
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    username: Mapped[str] = mapped_column(String(80), index=True)
    address: Mapped[str] = mapped_column(String(64), index=True)


class ApiToken(db.Model):
    """A bearer token: only its SHA-256 is stored; the secret is shown once at creation."""
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    prefix: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[Optional[int]] = mapped_column(ForeignKey("users.id"))
    machine_id: Mapped[Optional[int]] = mapped_column(ForeignKey("machines.id"))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    revoked_at: Mapped[Optional[datetime]] = mapped_column(TS)
    last_used_at: Mapped[Optional[datetime]] = mapped_column(TS)
    # chosen at creation (service.auth.create_token); a token past it is refused like a revoked one
    expires_at: Mapped[Optional[datetime]] = mapped_column(TS)
    machine: Mapped[Optional["Machine"]] = relationship()
    user: Mapped[Optional[User]] = relationship()


class AuditLog(db.Model):
    """One row per write: who, what, when, details."""
    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(160))
    action: Mapped[str] = mapped_column(String(80))
    entity: Mapped[str] = mapped_column(String(80))
    entity_id: Mapped[Optional[str]] = mapped_column(String(160))
    details: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)


class Machine(db.Model):
    __tablename__ = "machines"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    nodes: Mapped[int] = mapped_column(Integer)
    cores_per_node: Mapped[int] = mapped_column(Integer)
    interconnect: Mapped[str] = mapped_column(String(120), default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    libraries: Mapped[list["MpiLibrary"]] = relationship(back_populates="machine", order_by="MpiLibrary.id")


class MpiLibrary(db.Model):
    __tablename__ = "mpi_libraries"
    __table_args__ = (UniqueConstraint("machine_id", "name", "version", "module", name="uq_mpi_libraries_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    version: Mapped[str] = mapped_column(String(80))
    module: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    machine: Mapped[Machine] = relationship(back_populates="libraries")


class Campaign(db.Model):
    __tablename__ = "campaigns"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(160), unique=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    schedule: Mapped[str] = mapped_column(String(200), default="")
    state: Mapped[str] = mapped_column(String(16), default="planned")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    machine: Mapped[Machine] = relationship()


class Job(db.Model):
    """One Slurm job (or local launch) of a campaign; upserted by the agent under its job key."""
    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("campaign_id", "job_key", name="uq_jobs_campaign_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"))
    job_key: Mapped[str] = mapped_column(String(200))
    slurm_job_id: Mapped[Optional[str]] = mapped_column(String(40))
    library: Mapped[str] = mapped_column(String(80), default="")
    module: Mapped[str] = mapped_column(String(200), default="")
    nodes: Mapped[Optional[int]] = mapped_column(Integer)
    ppn: Mapped[Optional[int]] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    submitted_at: Mapped[Optional[datetime]] = mapped_column(TS)
    started_at: Mapped[Optional[datetime]] = mapped_column(TS)
    ended_at: Mapped[Optional[datetime]] = mapped_column(TS)
    log_tail: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)


class Upload(db.Model):
    """One accepted upload; its upload_id makes uploads idempotent."""
    __tablename__ = "uploads"
    id: Mapped[int] = mapped_column(primary_key=True)
    upload_id: Mapped[str] = mapped_column(String(200), unique=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    campaign_id: Mapped[Optional[int]] = mapped_column(ForeignKey("campaigns.id"))
    actor: Mapped[str] = mapped_column(String(160))
    n_files: Mapped[int] = mapped_column(Integer)
    n_timings: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    digest: Mapped[Optional[str]] = mapped_column(String(64))   # sha256 of the content (ingest.upload_digest)


class Run(db.Model):
    """One mpirun: one raw-results file."""
    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_library_id", "library_id", "id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    upload_pk: Mapped[int] = mapped_column(ForeignKey("uploads.id"), index=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    library_id: Mapped[int] = mapped_column(ForeignKey("mpi_libraries.id"))
    campaign_id: Mapped[Optional[int]] = mapped_column(ForeignKey("campaigns.id"), index=True)
    job_id: Mapped[Optional[int]] = mapped_column(ForeignKey("jobs.id"))
    file_name: Mapped[str] = mapped_column(String(300))
    slurm_job_id: Mapped[str] = mapped_column(String(40), default="")
    mpirun_index: Mapped[int] = mapped_column(Integer, default=0)
    nodes: Mapped[int] = mapped_column(Integer, default=1)
    ppn: Mapped[int] = mapped_column(Integer, default=1)
    nprocs: Mapped[int] = mapped_column(Integer)
    # as pgmpi-bench measured it inside the run (#@hosts, #@placement); layout is its label
    # (pgmpi_formats.layouts: "2x2", "3+2", "2x2-interleaved", "" unknown), the key next to nprocs
    layout: Mapped[str] = mapped_column(String(60), default="", server_default="")
    hosts: Mapped[str] = mapped_column(Text, default="", server_default="")
    placement: Mapped[str] = mapped_column(Text, default="", server_default="")
    state: Mapped[str] = mapped_column(String(16), default="COMPLETED")
    reason: Mapped[str] = mapped_column(Text, default="")
    started_at: Mapped[Optional[datetime]] = mapped_column(TS)
    ended_at: Mapped[Optional[datetime]] = mapped_column(TS)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    headers: Mapped[dict[str, Any]] = mapped_column(JSON)
    footer: Mapped[list[str]] = mapped_column(JSON)
    # a validation launch's file (the agent's #@pgmpi_validation=<role>: default, tuned, ...): evidence about a
    # candidate, never campaign data; set once at ingest, so every analysis and page selects campaign data in SQL
    validation: Mapped[Optional[str]] = mapped_column(String(16))
    library: Mapped[MpiLibrary] = relationship()
    machine: Mapped[Machine] = relationship()


class Series(db.Model):
    """Raw timings of one run x call x algorithm x message size, as float64 bytes."""
    __tablename__ = "series"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    call: Mapped[str] = mapped_column(String(80))
    algorithm: Mapped[str] = mapped_column(String(120))
    msize: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    median: Mapped[float] = mapped_column(Float)
    mean: Mapped[float] = mapped_column(Float)
    minimum: Mapped[float] = mapped_column(Float)
    timings: Mapped[bytes] = mapped_column(LargeBinary)

    def values(self) -> np.ndarray:
        return np.frombuffer(self.timings, dtype="<f8")


class BarrierSeries(db.Model):
    """Barrier times of one run measured next to one message size."""
    __tablename__ = "barrier_series"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    msize: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    median: Mapped[float] = mapped_column(Float)
    timings: Mapped[bytes] = mapped_column(LargeBinary)

    def values(self) -> np.ndarray:
        return np.frombuffer(self.timings, dtype="<f8")


class Analysis(db.Model):
    __tablename__ = "analyses"
    # the violations overview: latest analysis per library, and its history by date
    __table_args__ = (Index("ix_analyses_library_latest", "library_id", "id"),
                      Index("ix_analyses_library_created", "library_id", "created_at"))
    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    library_id: Mapped[int] = mapped_column(ForeignKey("mpi_libraries.id"))
    campaign_id: Mapped[Optional[int]] = mapped_column(ForeignKey("campaigns.id"))
    alpha: Mapped[float] = mapped_column(Float)
    test: Mapped[str] = mapped_column(String(40))
    fdr: Mapped[bool] = mapped_column(Boolean)
    state: Mapped[str] = mapped_column(String(16), default="done")
    actor: Mapped[str] = mapped_column(String(160))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # summary kept on the row so the violations overview needs no aggregation over violations
    n_checked: Mapped[int] = mapped_column(Integer, default=0)
    n_violations: Mapped[int] = mapped_column(Integer, default=0)
    max_slowdown: Mapped[Optional[float]] = mapped_column(Float)
    summary: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    machine: Mapped[Machine] = relationship()
    library: Mapped[MpiLibrary] = relationship()
    violations: Mapped[list["Violation"]] = relationship(back_populates="analysis", order_by="Violation.id")


class Violation(db.Model):
    """A verified guideline violation. kind "pattern": `collective` at msize/nprocs is slower than `mockup`;
    "monotony"/"split": the default at msize against ref_msize (mockup = "default")."""
    __tablename__ = "violations"
    id: Mapped[int] = mapped_column(primary_key=True)
    analysis_id: Mapped[int] = mapped_column(ForeignKey("analyses.id", ondelete="CASCADE"), index=True)
    collective: Mapped[str] = mapped_column(String(40))
    mockup: Mapped[str] = mapped_column(String(120))
    msize: Mapped[int] = mapped_column(Integer)
    nprocs: Mapped[int] = mapped_column(Integer)
    default_time: Mapped[float] = mapped_column(Float)
    mockup_time: Mapped[float] = mapped_column(Float)
    slowdown: Mapped[float] = mapped_column(Float)
    p_value: Mapped[Optional[float]] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16), default="pattern", server_default="pattern")  # pattern|monotony|split
    ref_msize: Mapped[Optional[int]] = mapped_column(Integer)       # monotony/split: the smaller size
    barrier_warning: Mapped[Optional[bool]] = mapped_column(Boolean)  # None: no barrier measurements
    layout: Mapped[str] = mapped_column(String(60), default="", server_default="")  # of its config; "" unknown
    status: Mapped[str] = mapped_column(String(16), default="verified", server_default="verified")  # VIOLATION_STATES
    status_why: Mapped[Optional[str]] = mapped_column(Text)                 # unconfirmed / contradicted: why
    # replication across nights (pattern violations): the campaigns of this machine x library whose latest
    # analysis found it (this one included) and those that contradicted it (tested it and did not find it, or
    # their validation measured it slower); None for monotony / split
    nights_confirmed: Mapped[Optional[int]] = mapped_column(Integer)
    nights_contradicted: Mapped[Optional[int]] = mapped_column(Integer)
    # the effect (geometric mean over mpiruns of the per-mpirun ratio) and its 95 % interval (analysis/stats.py)
    effect: Mapped[Optional[float]] = mapped_column(Float)
    ci_low: Mapped[Optional[float]] = mapped_column(Float)
    ci_high: Mapped[Optional[float]] = mapped_column(Float)
    ci_mpiruns: Mapped[Optional[int]] = mapped_column(Integer)
    analysis: Mapped[Analysis] = relationship(back_populates="violations")


class ProfileSet(db.Model):
    """The tuned profiles of one machine x MPI library; versions are its history.  `directory` is its
    directory under <profile root>/<machine>/ (service/workflows/publish.set_directory), unique per machine."""
    __tablename__ = "profile_sets"
    __table_args__ = (UniqueConstraint("machine_id", "library_id", name="uq_profile_sets_machine_library"),
                      UniqueConstraint("machine_id", "directory", name="uq_profile_sets_machine_directory"))
    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    library_id: Mapped[int] = mapped_column(ForeignKey("mpi_libraries.id"))
    directory: Mapped[Optional[str]] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    machine: Mapped[Machine] = relationship()
    library: Mapped[MpiLibrary] = relationship()
    versions: Mapped[list["ProfileVersion"]] = relationship(back_populates="profile_set",
                                                            order_by="ProfileVersion.number")


class ProfileVersion(db.Model):
    __tablename__ = "profile_versions"
    __table_args__ = (UniqueConstraint("profile_set_id", "number", name="uq_profile_versions_set_number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    profile_set_id: Mapped[int] = mapped_column(ForeignKey("profile_sets.id"))
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), default="candidate")
    analysis_id: Mapped[Optional[int]] = mapped_column(ForeignKey("analyses.id"))
    files: Mapped[dict[str, str]] = mapped_column(JSON)  # file name -> .prf text
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    validated_at: Mapped[Optional[datetime]] = mapped_column(TS)
    published_at: Mapped[Optional[datetime]] = mapped_column(TS)
    rolled_back_at: Mapped[Optional[datetime]] = mapped_column(TS)
    published_path: Mapped[Optional[str]] = mapped_column(String(500))
    actor: Mapped[str] = mapped_column(String(160), default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    # a native candidate's: the [key, size, nprocs] cells its decision measured (its validation measures there)
    decided_at: Mapped[Optional[list]] = mapped_column(JSON)
    profile_set: Mapped[ProfileSet] = relationship(back_populates="versions")
    figures: Mapped[list["ValidationFigure"]] = relationship(back_populates="version")


class ValidationFigure(db.Model):
    """A before/after figure of a profile version: default vs. tuned time at one point."""
    __tablename__ = "validation_figures"
    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("profile_versions.id", ondelete="CASCADE"), index=True)
    collective: Mapped[str] = mapped_column(String(40))
    msize: Mapped[int] = mapped_column(Integer)
    nprocs: Mapped[int] = mapped_column(Integer)
    default_time: Mapped[float] = mapped_column(Float)
    tuned_time: Mapped[float] = mapped_column(Float)
    speedup: Mapped[float] = mapped_column(Float)
    layout: Mapped[str] = mapped_column(String(60), default="", server_default="")  # of the validation job
    details: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    version: Mapped[ProfileVersion] = relationship(back_populates="figures")


class NativeValidation(db.Model):
    """The service's record of one validation job of an MPI library's own decision file (native.rules /
    native.json, by its sha256): the verdict service/analysis/native_validation.py gave on the job's figures.
    Publishing such a file needs a passing record of exactly its text (service/workflows/validate.py)."""
    __tablename__ = "native_validations"
    __table_args__ = (Index("ix_native_validations_digest", "digest"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    machine: Mapped[str] = mapped_column(String(200))
    library: Mapped[str] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(100))
    file_name: Mapped[str] = mapped_column(String(20))
    digest: Mapped[str] = mapped_column(String(64))
    nprocs: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))          # passed | failed
    verdict: Mapped[dict[str, Any]] = mapped_column(JSON)
    job: Mapped[str] = mapped_column(String(200), default="")
    actor: Mapped[str] = mapped_column(String(160), default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class LibraryOverview(db.Model):
    """Summary table behind the violations overview: one row per MPI library (= machine x library) with its
    latest analysis and the violation counts of its recent analyses.  Rewritten by
    service.store.queries.refresh_overview whenever an analysis of that library is stored, so the overview reads
    a handful of rows however long the history grows."""
    __tablename__ = "library_overview"
    library_id: Mapped[int] = mapped_column(ForeignKey("mpi_libraries.id", ondelete="CASCADE"), primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id", ondelete="CASCADE"))
    analysis_id: Mapped[int] = mapped_column(ForeignKey("analyses.id", ondelete="CASCADE"))
    analysed_at: Mapped[Optional[datetime]] = mapped_column(TS)
    n_checked: Mapped[int] = mapped_column(Integer, default=0)
    n_violations: Mapped[int] = mapped_column(Integer, default=0)
    max_slowdown: Mapped[Optional[float]] = mapped_column(Float)
    by_collective: Mapped[dict[str, Any]] = mapped_column(JSON)   # collective -> {violations, max_slowdown}
    history: Mapped[list[Any]] = mapped_column(JSON)              # [[iso time, n_violations], ...] oldest first


class DtCase(db.Model):
    """A derived-datatype case of one run (pgmpi-dtbench's `#@pgmpi dtcase` footer line): the call name of its
    series is `test`; each series' algorithm is a description of the datatype layout.  `dt_layout` is the
    paper's memory layout (tiled, bucket, ...), not the process layout of Run.layout; `counts` holds the count
    argument per description and size ({description: {bytes: count}}), `signature` the layout signature
    pgmpi-dtbench recorded for the case ("" when it did not)."""
    __tablename__ = "dt_cases"
    __table_args__ = (UniqueConstraint("run_id", "test", name="uq_dt_cases_run_test"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    test: Mapped[str] = mapped_column(String(120))
    pattern: Mapped[str] = mapped_column(String(20))
    dt_layout: Mapped[str] = mapped_column(String(40))
    variant: Mapped[int] = mapped_column(Integer)
    block: Mapped[int] = mapped_column(Integer)            # the unit size A of the paper, in elements
    basetype: Mapped[str] = mapped_column(String(40))
    signature: Mapped[str] = mapped_column(String(16), default="", server_default="")
    counts: Mapped[dict[str, Any]] = mapped_column(JSON)


class DtVerdict(db.Model):
    """A verdict of a derived-datatype guideline (GL1, GL2/3, GL4; control and repair as evidence) of one
    analysis: `slower` against `faster`, two descriptions of one datatype layout measured in the same mpiruns
    (service/analysis/datatypes.py)."""
    __tablename__ = "dt_verdicts"
    __table_args__ = (Index("ix_dt_verdicts_analysis_pattern", "analysis_id", "pattern"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    analysis_id: Mapped[int] = mapped_column(ForeignKey("analyses.id", ondelete="CASCADE"))
    guideline: Mapped[str] = mapped_column(String(16))
    pattern: Mapped[str] = mapped_column(String(20))
    basetype: Mapped[str] = mapped_column(String(40))
    dt_layout: Mapped[str] = mapped_column(String(60))      # DtCase label, e.g. "bucket v1 A=2"
    nprocs: Mapped[int] = mapped_column(Integer)
    layout: Mapped[str] = mapped_column(String(60), default="", server_default="")   # process layout of the runs
    msize: Mapped[int] = mapped_column(Integer)
    slower: Mapped[str] = mapped_column(String(40))
    faster: Mapped[str] = mapped_column(String(40))
    ratio: Mapped[Optional[float]] = mapped_column(Float)   # median over mpiruns of slower / faster
    p_value: Mapped[Optional[float]] = mapped_column(Float)
    runs: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(12))        # violated | holds | n/a
    signature: Mapped[str] = mapped_column(String(16), default="", server_default="")


class UsageJob(db.Model):
    """One job's usage record (lib/src/core/usage.c, read by pgmpi_formats.usage), uploaded by the agent from
    the spool. `digest` (sha256 of the record's text) makes a second upload of the same record a no-op."""
    __tablename__ = "usage_jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    library_id: Mapped[int] = mapped_column(ForeignKey("mpi_libraries.id"), index=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    received_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    ranks: Mapped[int] = mapped_column(Integer)
    layout: Mapped[str] = mapped_column(String(60), default="-")
    wall_seconds: Mapped[float] = mapped_column(Float)
    rank_seconds: Mapped[float] = mapped_column(Float)
    sample_period: Mapped[int] = mapped_column(Integer)
    slurm_job_id: Mapped[Optional[str]] = mapped_column(String(60), nullable=True)
    user_name: Mapped[Optional[str]] = mapped_column(String(120), nullable=True)
    exe: Mapped[Optional[str]] = mapped_column(String(200), nullable=True)
    cells: Mapped[list["UsageCell"]] = relationship(back_populates="job", cascade="all, delete-orphan")


class UsageCell(db.Model):
    __tablename__ = "usage_cells"
    __table_args__ = (Index("ix_usage_cells_cell", "collective", "bytes_lo", "p"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("usage_jobs.id", ondelete="CASCADE"), index=True)
    collective: Mapped[str] = mapped_column(String(40))
    bytes_lo: Mapped[int] = mapped_column(BigInteger)
    p: Mapped[int] = mapped_column(Integer)
    world: Mapped[bool] = mapped_column(Boolean)
    algorithm: Mapped[str] = mapped_column(String(80))
    calls: Mapped[int] = mapped_column(BigInteger)
    rank_seconds: Mapped[float] = mapped_column(Float)
    samples: Mapped[int] = mapped_column(BigInteger)
    job: Mapped[UsageJob] = relationship(back_populates="cells")
