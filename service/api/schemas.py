"""Request bodies of the JSON API as pydantic models; the OpenAPI document is generated from them."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pgmpi_formats import limits
from pgmpi_formats.limits import CampaignName, LibraryName, LibraryVersion, MachineName, ModuleName
from pgmpi_formats.results import format_results

NAME = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,119}$"
JobState = Literal["PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED"]
CampaignState = Literal["planned", "running", "completed", "failed", "cancelled"]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class MachineIn(_In):
    name: MachineName = Field(description="unique machine name, e.g. vsc5")
    nodes: int = Field(ge=1, le=10_000_000)
    cores_per_node: int = Field(ge=1, le=1_000_000)
    interconnect: str = Field(default="", max_length=120)
    notes: str = Field(default="", max_length=10_000)


class LibraryIn(_In):
    name: LibraryName = Field(description="openmpi, mpich, ...")
    version: LibraryVersion
    module: ModuleName = ""


class CampaignIn(_In):
    name: CampaignName
    machine: MachineName
    definition: dict[str, Any]
    schedule: str = Field(default="", max_length=200)
    state: Optional[CampaignState] = None


class JobIn(_In):
    slurm_job_id: Optional[str] = Field(default=None, max_length=40)
    library: str = Field(default="", max_length=80)
    module: ModuleName = ""
    nodes: Optional[int] = Field(default=None, ge=1, le=10_000_000)
    ppn: Optional[int] = Field(default=None, ge=1, le=1_000_000)
    state: JobState
    reason: str = Field(default="", max_length=10_000)
    submitted_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None
    log_tail: str = Field(default="", max_length=65_536)

    @field_validator("slurm_job_id", mode="before")
    @classmethod
    def _job_id_text(cls, v):
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _rule(check, value, field: str, *more):
    """A pgmpi_formats.limits rule inside a pydantic validator (its message, naming the field)."""
    try:
        if check is limits.check_header_value:
            return check(value, more[0], field)
        return check(value, field, *more)
    except limits.LimitError as e:
        raise ValueError(str(e)) from None


class FileIn(_In):
    """One mpirun's raw results: either `content` (the ReproMPI-format text of docs/contracts.md), or the same as
    JSON: `headers` (the #@key=value pairs) and `rows` ([test, nrep, msize, runtime_sec, algorithm])."""
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)
    name: str = Field(min_length=1, max_length=300)
    content: Optional[str] = None
    headers: Optional[dict[str, Union[str, int, float]]] = None
    rows: Optional[list[tuple[str, int, int, float, str]]] = None

    @field_validator("name")
    @classmethod
    def _name_rule(cls, v):
        return _rule(limits.check_text, v, "name", 300)

    @field_validator("content")
    @classmethod
    def _content_rule(cls, v):
        return v if v is None else _rule(limits.check_file_text, v, "content")

    @field_validator("headers")
    @classmethod
    def _header_rules(cls, v):
        """The same rules as a #@key=value line of the text form: a line break would inject lines."""
        for key, value in (v or {}).items():
            _rule(limits.check_header_key, key, f"headers.{key[:40]}")
            if isinstance(value, str):
                _rule(limits.check_header_value, key, f"headers.{key[:40]}", value)
        return v

    @field_validator("rows")
    @classmethod
    def _row_rules(cls, v):
        for i, (test, _nrep, _msize, _t, alg) in enumerate(v or []):
            _rule(limits.check_call, test, f"rows.{i}.test")
            _rule(limits.check_algorithm, alg, f"rows.{i}.algorithm")
        return v

    @model_validator(mode="after")
    def _one_form(self):
        if (self.content is None) == (self.rows is None):
            raise ValueError("give either content (ReproMPI text) or headers + rows (JSON), not both or neither")
        if self.content is not None and self.headers:
            raise ValueError("headers go into the text when content is given")
        return self

    def text(self) -> str:
        """The ReproMPI-format text of this file (JSON form converted, so both forms parse alike)."""
        if self.content is not None:
            return self.content
        return format_results(self.headers or {}, self.rows)


class UploadIn(_In):
    upload_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,199}$",
                           description="client-chosen id; a repeated upload_id is stored once")
    campaign: Optional[CampaignName] = None
    files: list[FileIn] = Field(min_length=1, max_length=100_000)


class AnalysisIn(_In):
    machine: MachineName
    library: LibraryName = Field(description="MPI library name (openmpi, mpich, ...)")
    version: Optional[LibraryVersion] = Field(default=None, description="version; default: the newest stored")
    campaign: Optional[CampaignName] = None
    alpha: float = Field(default=0.05, gt=0, lt=1)
    test: str = Field(default="paired_t", pattern=r"^[a-z][a-z0-9_-]{0,39}$",
                      description="paired_t (default: one-sample t on the per-mpirun log ratios), wilcoxon "
                      "(signed-rank on them), or unpaired: mannwhitney (Wilcoxon rank-sum), welch or ks")
    fdr: Optional[bool] = Field(default=None, description="Benjamini-Hochberg across the analysis; default: on "
                                "for a campaign's analysis, off otherwise")
    min_gain: float = Field(default=0.10, ge=0, lt=1, description="a redirection must be at least this much "
                            "faster (and above the control arm's null ratio spread)")
    confirmations: int = Field(default=1, ge=1, le=100, description="K: a redirection enters a candidate only "
                               "when K campaigns (this one included) found it")


class ValidationFigureIn(_In):
    """Default vs tuned median time of one (collective, size, p) measured by a validation job."""
    collective: str = Field(pattern=r"^[a-z]{2,40}$", description="collective key, e.g. allreduce")
    msize: int = Field(ge=0, le=2**40)
    nprocs: int = Field(ge=1, le=10_000_000)
    layout: str = Field(default="", max_length=60, pattern=r"^[0-9a-z+-]*$",
                        description="the layout the validation job measured (2x2, 3+2, 2x2-interleaved; '' unknown)")
    default_time: float = Field(gt=0, lt=1e6)
    tuned_time: float = Field(gt=0, lt=1e6)
    speedup: Optional[float] = Field(default=None, ge=0, lt=1e9)
    n_default: int = Field(default=0, ge=0, le=10**9)
    n_tuned: int = Field(default=0, ge=0, le=10**9)
    run_ratios: Optional[list[float]] = Field(default=None, max_length=10_000,
                                              description="per mpirun: default / tuned median of that mpirun")
    paired: bool = Field(default=False, description="default and tuned measured interleaved in the same mpiruns")
    case: str = Field(default="", max_length=120, pattern=r"^[A-Za-z0-9_]*$",
                      description="pgmpi-dtbench's case (datatype validation), e.g. dt_bcast_int_bucket_v1_a2")
    description: str = Field(default="", max_length=40, pattern=r"^[a-z_]*$",
                             description="the datatype description both arms ran (typed: the profile's .prf)")


class ValidationIn(_In):
    """The figures of a validation job: the candidate in tuned mode against the default."""
    campaign: Optional[str] = Field(default=None, max_length=100)
    job: str = Field(default="", max_length=200)
    library: str = Field(default="", max_length=80)
    module: Optional[str] = Field(default=None, max_length=200)
    figures: list[ValidationFigureIn] = Field(max_length=100_000)
    all_or_nothing: bool = Field(default=False, description="one failed range fails the whole candidate "
                                 "(default: failed ranges are dropped and the rest is kept)")
    upload_ids: list[str] = Field(default_factory=list, max_length=10_000)


class NativeValidationIn(_In):
    """A validation job of an MPI library's own decision file: the file (the service reads its cells itself)
    and the job's figures (pgmpi_formats.native_validation.figures).  The text is kept byte for byte: its
    sha256 is what a publication is checked against."""
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)
    machine: MachineName
    library: LibraryName
    version: LibraryVersion
    name: Literal["native.rules", "native.json", "native.impi"]
    text: str = Field(max_length=4 * 1024 * 1024)
    nprocs: int = Field(ge=1, le=1_000_000)
    figures: dict[str, dict[str, Any]] = Field(max_length=100_000)
    job: str = Field(default="", max_length=200)
    profile_version: Optional[int] = Field(default=None, ge=1, le=2 ** 31 - 1, description="the native "
                                           "candidate (POST /native/candidates) this job validated")
    publish: bool = Field(default=False, description="publish that candidate when it passes (the campaign's "
                          "native.publish)")


class NativeCandidateIn(_In):
    """The nightly native chain: a campaign's decision file for one library, as a candidate version."""
    machine: MachineName
    library: LibraryName
    version: LibraryVersion
    campaign: CampaignName
    refused: list[int] = Field(default_factory=list, max_length=100, description="native validation records "
                               "whose failed cells are taken out of the decision")


class NativeJobFailedIn(_In):
    """A native candidate's validation job ended in the resource manager without figures (failed, timed out,
    node failure) after its retries: no verdict, so the candidate is marked failed with the job's reason."""
    machine: MachineName
    library: LibraryName
    version: LibraryVersion
    job: str = Field(max_length=200)
    reason: str = Field(max_length=2000)


REQUEST_MODELS = [MachineIn, LibraryIn, CampaignIn, JobIn, FileIn, UploadIn, AnalysisIn, ValidationIn,
                  NativeValidationIn, NativeCandidateIn, NativeJobFailedIn]
