"""The campaign file: what a site admin writes, validated with errors that name the field.

    from scheduler.campaign import load_campaign, CampaignError
    c = load_campaign("nightly.yaml")        # or .toml
    c.modules[0].name, c.layouts, c.sizes_for("allreduce")

A bad file raises CampaignError whose message lists every problem as
`<file>:<line>: <field path>: <what is wrong>` (line numbers for YAML; TOML gives the field only).
"""
from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pgmpi_formats.limits import (LIBRARY_MAX, NODES_MAX, PPN_MAX, CampaignName, MachineName,  # the one
                                  ModuleName)                                             # set of limits
from pgmpi_formats.collectives import mpi_names as collectives   # key -> MPI name, from collectives.def
from pgmpi_formats.native import parse_label

from . import backends, launchers

ROOT = Path(__file__).resolve().parents[1]

# Size sets of the pgchecker thesis (listing 4.2): collectives whose total volume grows with p
# (Allgather, Alltoall, Gather, Scatter) get the small set, the others the large one.
SMALL_SIZES = [1, 2, 4, 8, 32, 64, 512, 1024, 2048, 4096, 8192, 16384]
LARGE_SIZES = [1, 2, 8, 64, 512, 1024, 8192, 16384, 65536, 131072, 1048576, 8388608]
SCALING = {"allgather", "alltoall", "gather", "scatter"}
JOB_STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED")
# a campaign's `sync:` (pgmpi agent native-validate --sync takes the same): proc_sync() makes it --proc-sync
SyncMethod = Literal["auto", "dissem", "mpi_barrier", "window", "roundtime"]



class CampaignError(ValueError):
    """A campaign file that cannot be used; str() lists every problem with file:line and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Module(_Strict):
    """One MPI library as the site offers it: an Lmod module (or none, for local runs)."""
    name: ModuleName | None = Field(None, description="Lmod module name, e.g. openmpi/4.1.4; none = no module load")
    mpi: str = Field(..., pattern=r"^[a-z][a-z0-9_-]*$", max_length=LIBRARY_MAX,
                     description="MPI library id of deploy/mpi-libraries.tsv (openmpi, mpich, openmpi5, mpich5, "
                                 "intelmpi, ...): selects the pgmpi-bench build and the launcher (its family)")
    launch: Literal["mpirun", "srun"] = Field(
        "mpirun", description="mpirun: the library's own launcher inside the allocation (every family); srun: "
                              "Slurm starts the ranks with the family's --mpi= plugin (slurm backend only)")
    label: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=LIBRARY_MAX,
                              description="short name used in job keys (default: from name)")
    modulepath: list[str] = Field(default_factory=list, description="extra MODULEPATH entries")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment for the launches")
    mpirun: str | None = Field(None, description="launcher command (default: mpirun of the module, "
                                                 "or mpirun.<mpi> without a module)")
    bench: str | None = Field(None, description="pgmpi-bench path (default: <bench_root>/<mpi>/bin/pgmpi-bench)")
    prologue: list[str] = Field(default_factory=list, description="shell lines run before the launches")
    native_file: str | None = Field(
        None, description="the library's own decision file (native.rules / native.json) the measurement "
                          "launches run under, e.g. the site's published <profile root>/<machine>/<mpi>-<version>/"
                          "current/native.rules: mock-ups are then measured against what users get, and the "
                          "analysis judges a mock-up whose parts the file retunes on these runs only. Launches "
                          "of native algorithms and searches never run under it (a rules file would override "
                          "the forced algorithm)")

    @field_validator("native_file")
    @classmethod
    def _native_file(cls, v):
        if v is not None and not os.path.isabs(v):
            raise ValueError(f"{v!r} is not an absolute path")
        return v

    @property
    def key(self) -> str:
        if self.label:
            return self.label
        base = self.name or self.mpi
        return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-")

    @field_validator("mpi")
    @classmethod
    def _library(cls, v):
        launchers.library(v)          # UnknownLibrary (a ValueError) lists the valid ids
        return v

    @model_validator(mode="after")
    def _native_family(self):
        if self.native_file is not None and launchers.library(self.mpi).family.native is None:
            raise ValueError(f"native_file: {launchers.library(self.mpi).family.title} has no native decision "
                             "file pgmpi-site writes")
        return self

    @property
    def family(self):
        """The library's MPI family (scheduler/launchers/)."""
        return launchers.library(self.mpi).family


class Layout(_Strict):
    nodes: int = Field(..., ge=1, le=NODES_MAX)
    ppn: int = Field(..., ge=1, le=PPN_MAX)

    @property
    def nprocs(self) -> int:
        return self.nodes * self.ppn


SEARCHES = ("exhaustive", "mgd", "smgd", "race")      # pgmpi_formats/native_search.py
# The seed paper's segment sizes (powers of two below the message size), from 1 KiB (the smallest segment Open
# MPI's fixed decision uses) to 512 KiB: what a site sweeps (pgmpi_formats/native_search.py, SEGMENTS).
DEFAULT_SEGMENTS = [2 ** k for k in range(10, 20)]


class CollectiveSpec(_Strict):
    sizes: list[int] | str | None = Field(None, description="byte sizes, or the name of a size set")
    algorithms: Literal["all"] | list[str] | None = None
    search: Literal["exhaustive", "mgd", "smgd", "race"] | None = Field(
        None, description="search the MPI library's own algorithms x segment sizes (scheduler/native_driver.py): "
        "exhaustive | mgd | smgd | race (every variant with first_nrep repetitions, the two fastest that beat "
        "the default again); unset: measure the algorithms listed, nothing searched")
    first_nrep: int | None = Field(None, ge=1, description="race: repetitions of its first stage (default: a "
                                   "sixth of the cell's campaign-wide count, else of nrep / max_nrep, at least 2)")
    segments: list[int] | None = Field(None, description="segment sizes (bytes) a search sweeps below each "
                                       "message size (default: powers of two 1 KiB - 512 KiB)")
    lookahead: int = Field(2, ge=0, le=20, description="mgd/smgd: steps past a minimum before a descent stops (2: at 1, bcast curves with a second, deeper minimum lost up to 98 %; scheduler/README.md)")
    neighbour: Literal["none", "segment", "prune"] = Field(
        "none", description="mgd/smgd: reuse the next smaller message size's search: none; segment (start each "
        "method at its best segment there); prune (also leave out the methods pruned there, rescan every 4th)")
    prune: float = Field(0.5, gt=0, description="smgd: methods slower than (1 + prune) x the best start are pruned")

    @model_validator(mode="after")
    def _search(self):
        if self.search is None:
            for f in ("segments",):
                if getattr(self, f) is not None:
                    raise ValueError(f"{f} applies to a search (search: {' | '.join(SEARCHES)})")
            return self
        if self.algorithms not in (None, ["native:all"], ["default", "native:all"]):
            raise ValueError("a search measures the MPI library's own algorithms (native:all) against the "
                             "default; leave algorithms unset or [native:all] (mock-ups: a collective entry "
                             "without search)")
        if self.segments is not None:
            _check_sizes(self.segments, "segments")
        return self

    @property
    def segment_sizes(self) -> list[int]:
        return sorted(self.segments if self.segments is not None else DEFAULT_SEGMENTS)


# The predict rules' thresholds/windows; each becomes pgmpi-bench's --<field with dashes>.
PREDICT_RULE_FIELDS = {"rse": ("rse_thres",), "covmean": ("covmean_thres", "covmean_window"),
                       "covmedian": ("covmedian_thres", "covmedian_window")}


class Repetitions(_Strict):
    """pgmpi-bench's repetition policies: fixed nrep, NREP prediction, or the time-based rule."""
    policy: Literal["fixed", "predict", "time-rule"] = "fixed"
    nrep: int = Field(100, ge=1, description="fixed: repetitions per (call, size, algorithm)")
    rules: list[Literal["rse", "covmean", "covmedian"]] = Field(
        default_factory=lambda: ["rse", "covmedian"], description="predict: stopping rules")
    min_nrep: int = Field(20, ge=1)
    max_nrep: int = Field(1000, ge=1)
    step: int = Field(10, ge=1)
    # predict: thresholds and windows of the rules (unset: pgmpi-bench's defaults, 0.025 / 0.01 over 20).
    # A median within ~1 % needs covmedian_thres 0.002 over 50 (lib/bench/README.md, figures).
    rse_thres: float | None = Field(None, gt=0, description="predict: RSE of the mean below this")
    covmean_thres: float | None = Field(None, gt=0, description="predict: COV of the last running means below this")
    covmedian_thres: float | None = Field(None, gt=0,
                                          description="predict: COV of the last running medians below this")
    covmean_window: int | None = Field(None, ge=2, description="predict: running means in the COV window")
    covmedian_window: int | None = Field(None, ge=2, description="predict: running medians in the COV window")
    time_budget: float | None = Field(None, gt=0, description="seconds per (call, size), with any policy")
    # Campaign-wide NREP (issue 34): the mpiruns a paired verdict compares must have measured the same number
    # of repetitions per cell. predict / time-rule: mpirun 0 is the pilot (it predicts), every other mpirun
    # of the campaign takes the pilot's counts (`--nrep-from`, its `#@pgmpi nrep` lines). nrep_from: the raw
    # files of an earlier night fix the counts for every mpirun (no pilot); previous_night: the agent finds them.
    campaign_wide: bool = Field(True, description="predict/time-rule: mpirun 0 predicts, the others reuse its counts")
    nrep_from: list[str] = Field(default_factory=list,
                                 description="raw files of an earlier night whose '#@pgmpi nrep' counts every mpirun uses")
    # The agent finds the earlier night itself (scheduler/nrep_history.py): a job whose cells its newest earlier
    # campaign on this machine measured with the same rules takes those counts, no pilot.
    previous_night: bool = Field(True, description="predict/time-rule: the counts of the newest earlier campaign "
                                                   "that measured the job's cells with the same rules, instead of a pilot")

    @model_validator(mode="after")
    def _order(self):
        if self.nrep_from and self.policy == "fixed":
            raise ValueError("nrep_from takes the counts of an earlier night; policy 'fixed' has its own nrep "
                             "(use policy 'predict' or 'time-rule' for the night that predicts them)")
        if self.min_nrep > self.max_nrep:
            raise ValueError(f"min_nrep ({self.min_nrep}) must not exceed max_nrep ({self.max_nrep})")
        for rule, fields in PREDICT_RULE_FIELDS.items():
            for f in fields:
                if getattr(self, f) is not None and (self.policy != "predict" or rule not in self.rules):
                    raise ValueError(f"{f} applies to policy 'predict' with rule '{rule}' in rules "
                                     f"(policy is '{self.policy}', rules {self.rules})")
        return self

    def predict_argv(self) -> list[str]:
        """pgmpi-bench options of the 'predict' policy."""
        argv = [f"--predict={','.join(self.rules)}",
                f"--pred-params=min={self.min_nrep},max={self.max_nrep},step={self.step}"]
        for f in (f for fields in PREDICT_RULE_FIELDS.values() for f in fields):
            v = getattr(self, f)
            if v is not None:
                argv.append(f"--{f.replace('_', '-')}={v:g}")
        return argv

    def policy_argv(self) -> list[str]:
        """pgmpi-bench options of the policy itself, the time budget left out: the count (fixed), the
        prediction, or the time rule (the pilot mpirun of a campaign-wide NREP, or every mpirun without one)."""
        if self.policy == "fixed":
            return [f"--nrep={self.nrep}"]
        if self.policy == "predict":
            return self.predict_argv()
        return [f"--time-rule=max={self.max_nrep},K={min(10, self.max_nrep)}"]


# pgmpi-dtbench's names (lib/bench/README.md, "pgmpi-dtbench"; `pgmpi-dtbench --help`)
DT_PATTERNS = ("pingpong", "bcast", "allgather")
DT_LAYOUTS = ("contiguous", "tiled", "block", "bucket", "alternating", "altrep", "rowcol")
DT_BASIC_LAYOUTS = ("contiguous", "tiled", "block", "bucket", "alternating")
DT_DESCRIPTIONS = ("typed", "contig", "packed", "vector", "nested", "tiled_struct", "indexed_block", "indexed",
                   "struct_flat", "struct", "typed_control", "repaired")
DT_CONTROL = "typed_control"      # the reference measured twice: the datatype campaign's control arm
DT_BASETYPES = ("MPI_INT", "MPI_DOUBLE")


class Datatypes(_Strict):
    """A derived-datatype campaign part: pgmpi-dtbench over patterns x layouts x base types x sizes, every
    description of a case interleaved in each mpirun (the guidelines GL1-GL4, service/analysis/datatypes.py)."""
    patterns: list[Literal["pingpong", "bcast", "allgather"]] = Field(default_factory=lambda: list(DT_PATTERNS),
                                                                      min_length=1)
    layouts: list[Literal["contiguous", "tiled", "block", "bucket", "alternating", "altrep", "rowcol"]] = Field(
        default_factory=lambda: list(DT_BASIC_LAYOUTS), min_length=1)
    variants: list[Literal[1, 2]] = Field(default_factory=lambda: [1, 2], min_length=1)
    blocksizes: list[int] = Field(default_factory=lambda: [2, 100], min_length=1,
                                  description="the unit size A in elements")
    basetypes: list[Literal["MPI_INT", "MPI_DOUBLE"]] = Field(default_factory=lambda: ["MPI_INT"], min_length=1)
    sizes: list[int] = Field(default_factory=lambda: [3200, 65536], description="bytes of the layout's elements")
    descriptions: Literal["all"] | list[Literal[DT_DESCRIPTIONS]] = "all"  # type: ignore[valid-type]

    @field_validator("blocksizes")
    @classmethod
    def _blocks(cls, v):
        if any(a < 1 or a > 1 << 20 for a in v):
            raise ValueError("blocksizes are element counts from 1 to 1048576")
        if len(set(v)) != len(v):
            raise ValueError("duplicate blocksizes")
        return v

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v):
        _check_sizes(v, "datatypes.sizes")
        return v

    @model_validator(mode="after")
    def _reference(self):
        if isinstance(self.descriptions, list) and "typed" not in self.descriptions \
                and self.layouts != ["rowcol"]:
            raise ValueError("descriptions: every guideline compares against 'typed' (the reference); "
                             "list it, or use 'all'")
        return self

    def descriptions_for(self, control: bool) -> str:
        if self.descriptions == "all":
            return "all"
        d = list(self.descriptions)
        if control and DT_CONTROL not in d:
            d.append(DT_CONTROL)
        return ",".join(d)

    def argv(self) -> list[str]:
        """pgmpi-dtbench's case options (everything but the base type, repetitions and bookkeeping)."""
        return [f"--patterns={','.join(self.patterns)}", f"--layouts={','.join(self.layouts)}",
                f"--variants={','.join(str(v) for v in self.variants)}",
                f"--blocksizes={','.join(str(a) for a in self.blocksizes)}",
                f"--sizes={','.join(str(s) for s in self.sizes)}"]


class Slurm(_Strict):
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    walltime: str = Field("00:30:00", pattern=r"^(\d+-)?\d{1,2}:\d{2}(:\d{2})?$|^\d+$",
                          description="[D-]HH:MM[:SS] or minutes")
    constraints: str | None = None
    exclusive: bool = Field(False, description="whole nodes per job (recommended: other jobs disturb timings)")
    extra: list[str] = Field(default_factory=list, description="more #SBATCH options, e.g. --exclusive")

    @property
    def walltime_seconds(self) -> int:
        w = self.walltime
        if w.isdigit():
            return int(w) * 60
        days = 0
        if "-" in w:
            d, w = w.split("-", 1)
            days = int(d)
        parts = [int(x) for x in w.split(":")]
        if len(parts) == 2:
            parts.append(0)
        h, m, s = parts
        return days * 86400 + h * 3600 + m * 60 + s


class Service(_Strict):
    url: str | None = Field(None, pattern=r"^https?://", description="base URL of the pgmpi service")
    token_file: str | None = None


class Retry(_Strict):
    max_attempts: int = Field(3, ge=1, le=20)
    states: list[Literal["FAILED", "TIMEOUT", "NODE_FAIL"]] = Field(
        default_factory=lambda: ["FAILED", "TIMEOUT", "NODE_FAIL"])


class Validation(_Strict):
    enabled: bool = True
    nrep: int = Field(50, ge=1)
    mpiruns: int = Field(1, ge=1)
    interleaved: bool = Field(False, description="default and tuned interleaved in one mpirun "
                              "(pgmpi-bench --algorithms=default,tuned), paired per mpirun")
    all_or_nothing: bool = Field(False, description="one failed range fails the whole candidate "
                                 "(default: failed ranges are dropped, the rest is kept)")
    confirmations: int = Field(1, ge=1, le=100, description="K: a redirection enters a candidate only when "
                               "K campaigns (nights) found it, this one included")


class NativeNight(_Strict):
    """The hands-off chain of a campaign that measures the MPI library's own algorithms (a search, or
    native:<name> algorithms): after the analysis the agent asks the service for the library's decision file
    (a candidate version of its profile set), validates it as users load it (scheduler/native_validation.py,
    a job through the campaign's backend), sends the figures, and a failed cell goes back into the decision
    and the rest is validated again, up to `rounds` candidates per library."""
    tunelib_module: str = Field("pgmpitunelib/0.1.0", description="the pgmpitunelib module users load "
                                "(its native variables point the MPI at the published file)")
    modulepath: list[str] = Field(default_factory=list, description="extra MODULEPATH entries for it")
    nprocs: int | None = Field(None, ge=2, description="ranks of the validation job, on one node (default: the "
                               "smallest one-node layout of the campaign)")
    rounds: int = Field(5, ge=2, le=50, description="pairs of mpiruns (file arm, forced arm) per validation job")
    nrep: int = Field(50, ge=1, description="repetitions per (call, size, algorithm) in each mpirun")
    candidates: int = Field(3, ge=1, le=10, description="decisions per library and night: a failed cell is "
                            "refused and the rest decided and validated again, at most this many times")
    publish: bool = Field(False, description="publish a candidate whose validation passed into the library's "
                          "profile set (the same versioned set as the .prf profiles) without an admin")


class Budget(_Strict):
    node_hours: float | None = Field(None, gt=0, description="refuse to submit a plan estimated above this")


class Sequential(_Strict):
    """Within-night looks (docs/usage.md section 3; a `cells: from-usage` night writes it): a cell is looked at
    after each count of mpiruns in `looks` (the last is `mpiruns`, the most a cell gets) by the group-sequential
    rule of scheduler/usage_plan.py; only cells still undecided get the next look's mpiruns."""
    looks: list[int] = Field(..., min_length=1, description="mpiruns after which a cell is looked at, increasing")
    alpha: float = Field(0.05, gt=0, lt=1)
    rho: float = Field(3.0, gt=0, description="the spending function alpha * t^rho")
    min_gain: float = Field(0.1, gt=0, lt=1, description="a redirect's least gain at the interval's lower bound")

    @field_validator("looks")
    @classmethod
    def _looks(cls, v):
        if v[0] < 2 or any(b <= a for a, b in zip(v, v[1:])):
            raise ValueError(f"looks must increase and start at 2 or more mpiruns (an interval needs two), got {v}")
        return v

    def design(self):
        from .usage_plan import SequentialDesign
        return SequentialDesign(looks=tuple(self.looks), alpha=self.alpha, rho=self.rho, min_gain=self.min_gain)


class Campaign(_Strict):
    name: CampaignName
    machine: MachineName
    backend: str = Field("slurm", description="where jobs run: a backend of scheduler/backends/ (slurm, local)")
    modules: list[Module] = Field(..., min_length=1)
    layouts: list[Layout] = Field(..., min_length=1, description="node counts x processes per node")
    size_sets: dict[str, list[int]] = Field(default_factory=dict)
    collectives: dict[str, CollectiveSpec] = Field(default_factory=dict, description="the collectives to "
                                                   "measure with pgmpi-bench (at least one, or datatypes)")
    datatypes: Datatypes | None = Field(None, description="derived-datatype guidelines with pgmpi-dtbench")
    algorithms: Literal["all"] | list[str] = "all"
    repetitions: Repetitions = Field(default_factory=Repetitions)
    mpiruns: int = Field(3, ge=1, le=1000, description="R: separate launches per configuration")
    control: bool = Field(True, description="measure the default a second time, interleaved, under the "
                          "reserved label default_control: the campaign's own false-alarm rate and null spread")
    budget: Budget = Field(default_factory=Budget)
    slurm: Slurm = Field(default_factory=Slurm)
    service: Service = Field(default_factory=Service)
    retry: Retry = Field(default_factory=Retry)
    validation: Validation = Field(default_factory=Validation)
    native: NativeNight | None = Field(None, description="the nightly native chain: decision file, validation "
                                       "job, publication (needs validation.enabled and a service)")
    bench_root: str | None = Field(None, description="folder with <mpi>/bin/pgmpi-bench (default: build/install)")
    bench_args: list[str] = Field(default_factory=list, description="extra pgmpi-bench options")
    sync: SyncMethod = Field(
        "auto", description="the measurement method (pgmpi-bench --proc-sync): auto = dissem on one node and "
        "MULTI_NODE_SYNC across nodes (the measured choice, lib/bench/README.md 'Synchronisation'); every run "
        "records it (#@procsync) and verdicts never mix methods")
    window_size_us: float | None = Field(None, gt=0, description="sync: window only: the window in "
                                         "microseconds (pgmpi-bench --window-size; default 1000)")
    schedule: str | None = Field(None, description="when to run nightly, e.g. 02:00")
    sequential: Sequential | None = Field(None, description="measure look by look, stopping decided cells "
                                          "(scheduler/looks.py); the last look is `mpiruns`")

    @field_validator("size_sets")
    @classmethod
    def _sets(cls, v):
        for name, sizes in v.items():
            _check_sizes(sizes, f"size set {name!r}")
        return v

    @field_validator("collectives")
    @classmethod
    def _colls(cls, v):
        known = collectives()
        bad = [k for k in v if k not in known]
        if bad:
            raise ValueError(f"unknown collective(s) {', '.join(bad)}; valid: {', '.join(known)}")
        return v

    @field_validator("backend")
    @classmethod
    def _backend(cls, v):
        if v not in backends.names():
            raise ValueError(f"unknown backend {v!r}; valid: {', '.join(backends.names())}")
        return v

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v):
        if v is not None and not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError("schedule must be HH:MM (24 h), e.g. 02:00")
        return v

    @model_validator(mode="after")
    def _cross(self):
        if not self.collectives and self.datatypes is None:
            raise ValueError("collectives: name at least one collective (or a datatypes section)")
        sets = self.all_size_sets()
        for key, spec in self.collectives.items():
            if isinstance(spec.sizes, str) and spec.sizes not in sets:
                raise ValueError(f"collectives.{key}.sizes: unknown size set {spec.sizes!r}; "
                                 f"valid: {', '.join(sets)}")
            if isinstance(spec.sizes, list):
                _check_sizes(spec.sizes, f"collectives.{key}.sizes")
            for alg in self._alg_list(key):
                if alg != "default" and not alg.startswith(f"{key}_as_") and not _is_native(alg):
                    raise ValueError(f"collectives.{key}: algorithm {alg!r} is not 'default', not a "
                                     f"mock-up of {key} (names are {key}_as_<parts>) and not one of the MPI "
                                     "library's own (native:<name>[:seg=<bytes>], native:all)")
        if isinstance(self.algorithms, list):
            for alg in self.algorithms:
                if alg != "default" and not _is_native(alg) and not any(alg.startswith(f"{k}_as_")
                                                                        for k in self.collectives):
                    raise ValueError(f"algorithms: {alg!r} is not 'default', not a mock-up of a collective "
                                     f"of this campaign ({', '.join(self.collectives)}) and not "
                                     "native:<name>[:seg=<bytes>] or native:all")
        owned = [a for a in self.bench_args if a.split("=")[0] in SYNC_OPTIONS]
        if owned:
            raise ValueError(f"bench_args: {owned[0]!r} is chosen by the campaign's sync: (and window_size_us:), "
                             "so that every launch of the campaign measures with one method")
        if self.window_size_us is not None and self.sync != "window":
            raise ValueError(f"window_size_us: belongs to sync: window (sync is {self.sync!r})")
        keys = [m.key for m in self.modules]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"modules: two modules share the key {dup[0]!r}; give one a distinct label")
        if self.native is not None:
            if not self.measures_native():
                raise ValueError("native: the campaign measures none of the MPI library's own algorithms (give a "
                                 "collective search: exhaustive | mgd | smgd, or native:<name> algorithms)")
            if not self.validation.enabled:
                raise ValueError("native: the chain starts after the analysis, which validation.enabled: false "
                                 "switches off; enable validation or leave native out")
            if self.native_nprocs() is None:
                raise ValueError("native.nprocs: no one-node layout with 2 or more ranks to validate on; set it")
        if self.sequential is not None:
            why = (f"sequential.looks: the last look ({self.sequential.looks[-1]}) must be mpiruns ({self.mpiruns}), "
                   "the most mpiruns a cell gets"
                   if self.sequential.looks[-1] != self.mpiruns else
                   "sequential: needs repetitions policy fixed (each look's mpiruns are a job of their own; no "
                   "pilot mpirun to take counts from)" if self.repetitions.policy != "fixed" else
                   "sequential: looks at pgmpi-bench's cells only (no search:, no datatypes:)"
                   if self.searched() or self.datatypes is not None else None)
            if why:
                raise ValueError(why)
        for m in self.modules:
            if m.family.name == "intelmpi":      # presets are forced at MPI_Init, one mpirun each (planner.py)
                bad = [k for k in self.collectives if self.collectives[k].search not in (None, "exhaustive", "race")]
                if bad:
                    raise ValueError(
                        f"collectives.{bad[0]}: search: {self.collectives[bad[0]].search} cannot search Intel MPI's "
                        f"presets (module {m.key}): Intel MPI reads I_MPI_ADJUST_<COLL> once at MPI_Init, so a "
                        "preset is measured in an mpirun of its own, while mgd/smgd descend segment sizes, which "
                        "presets do not have (valid: search: exhaustive, every preset in every round; search: race, "
                        "presets dropped between mpirun rounds, scheduler/intel_race.py; or algorithms "
                        "[default, native:all] / native:<preset>)")
                seg = [k for k in self.collectives if self.collectives[k].segments is not None]
                if seg:
                    raise ValueError(f"collectives.{seg[0]}.segments: Intel MPI's presets have no segment size to "
                                     f"sweep (module {m.key}); leave segments out")
            if m.launch == "srun" and self.backend != "slurm":
                raise ValueError(f"modules: {m.key}: launch: srun needs backend: slurm (valid here: mpirun)")
        return self

    # ------------------------------------------------------------------ helpers
    def all_size_sets(self) -> dict[str, list[int]]:
        return {"small": SMALL_SIZES, "large": LARGE_SIZES, **self.size_sets}

    def sizes_for(self, key: str) -> list[int]:
        spec = self.collectives[key]
        if spec.sizes is None:
            return list(SMALL_SIZES if key in SCALING else LARGE_SIZES)
        if isinstance(spec.sizes, str):
            return list(self.all_size_sets()[spec.sizes])
        return list(spec.sizes)

    def searched(self) -> list[str]:
        """Collectives whose library algorithms are searched (search: set), in file order."""
        return [k for k, spec in self.collectives.items() if spec.search is not None]

    def measures_native(self) -> bool:
        """The campaign measures the MPI library's own algorithms (a search, or native: algorithms)."""
        return bool(self.searched()) or any(_is_native(a) for k in self.collectives for a in self._alg_list(k))

    def native_nprocs(self) -> int | None:
        """Ranks of a native validation job: the section's, else the smallest one-node layout's."""
        if self.native is not None and self.native.nprocs:
            return self.native.nprocs
        one = sorted(x.ppn for x in self.layouts if x.nodes == 1 and x.ppn >= 2)
        return one[0] if one else None

    def _alg_list(self, key: str) -> list[str]:
        spec = self.collectives[key]
        if spec.search is not None:
            return ["default", "native:all"]
        if isinstance(spec.algorithms, list):
            return spec.algorithms
        if spec.algorithms == "all":
            return []
        if isinstance(self.algorithms, list):
            return [a for a in self.algorithms if a == "default" or a.startswith(f"{key}_as_") or _is_native(a)]
        return []

    def algorithms_for(self, key: str) -> list[str] | Literal["all"]:
        """Explicit algorithm list for one collective, or "all" (default + every mock-up)."""
        spec = self.collectives[key]
        if spec.algorithms == "all" or (spec.algorithms is None and self.algorithms == "all"):
            return "all"
        algs = self._alg_list(key)
        return algs if "default" in algs else ["default", *algs]

    def sync_for(self, nodes: int) -> str:
        """The --proc-sync of a launch on `nodes` nodes."""
        return proc_sync(self.sync, nodes)

    def bench_for(self, module: Module) -> Path:
        if module.bench:
            return Path(module.bench)
        root = Path(self.bench_root) if self.bench_root else ROOT / "build" / "install"
        return root / module.mpi / "bin" / "pgmpi-bench"

    def dtbench_for(self, module: Module) -> Path:
        """pgmpi-dtbench: next to the module's pgmpi-bench (one build installs both)."""
        return self.bench_for(module).parent / "pgmpi-dtbench"

    def definition(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# pgmpi-bench options the campaign's `sync:` owns
SYNC_OPTIONS = {"--sync", "--proc-sync", "--window-size", "--wait-time", "--fitpoints", "--exchanges",
                "--rt-multiplier", "--method"}
# sync: auto across nodes: measured in tests/bench/sync_methods.py (lib/bench/README.md, "Synchronisation")
MULTI_NODE_SYNC = "dissem"


def proc_sync(sync: str, nodes: int) -> str:
    """pgmpi-bench's --proc-sync for a campaign's `sync:` (or `pgmpi agent native-validate --sync`) on `nodes`
    nodes: auto is dissem on one node and MULTI_NODE_SYNC across nodes."""
    if sync != "auto":
        return sync
    return "dissem" if nodes <= 1 else MULTI_NODE_SYNC


def _is_native(alg: str) -> bool:
    """The MPI library's own algorithms (pgmpi-bench discovers and checks the names in the job)."""
    return alg == "native:all" or parse_label(alg) is not None


def _check_sizes(sizes, where):
    if not sizes:
        raise ValueError(f"{where}: needs at least one size")
    if any(s < 1 for s in sizes):
        raise ValueError(f"{where}: sizes are bytes >= 1")
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"{where}: duplicate sizes")


# ---------------------------------------------------------------------- loading

def _yaml_line(text: str, loc: tuple) -> int | None:
    """Line (1-based) of the node at the pydantic location in a YAML document."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, val in node.value:
                if k.value == str(part):
                    node, line = val, k.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "literal", "str", "list[str]", "int", "list[int]", "dict[str,str]"):
            continue
        elif str(part).startswith(("function-", "literal[", "union[", "nullable[")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def parse_campaign(data: Any, source: str = "<campaign>", text: str | None = None) -> Campaign:
    if not isinstance(data, dict):
        raise CampaignError(f"{source}: a campaign file is a mapping of fields (name, machine, modules, ...)")
    try:
        return Campaign.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            clean = tuple(p for p in loc if isinstance(p, int) or not str(p).startswith(
                ("function-", "literal[", "union[", "nullable[", "list[", "str", "int", "dict[")))
            where = source
            if not clean and err["type"] == "value_error":
                # a check over the whole campaign names its field first ("collectives.allreduce: ..."): its line
                m = re.match(r"Value error, ([A-Za-z_][\w.]*):", err["msg"])
                clean = tuple(m.group(1).split(".")) if m else clean
            if text is not None:
                ln = _yaml_line(text, clean)
                if ln:
                    where = f"{source}:{ln}"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                parent = clean[:-1]
                model = _model_at(parent)
                valid = ", ".join(model.model_fields) if model else ""
                msg = f"unknown field{'; valid fields here: ' + valid if valid else ''}"
            elif err["type"] == "missing":
                msg = "required field is missing"
            lines.append(f"{where}: {_field_path(clean)}: {msg}")
        raise CampaignError("invalid campaign file:\n  " + "\n  ".join(dict.fromkeys(lines))) from None


def _model_at(loc: tuple):
    model = Campaign
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        model = None
        for cand in (Module, Layout, CollectiveSpec, Repetitions, Slurm, Service, Retry, Validation, Budget,
                     Datatypes):
            if ann is cand or cand.__name__ in str(ann):
                model = cand
                break
        if part == "collectives":
            return CollectiveSpec if len(loc) > 1 else None
    return model


def load_campaign(path: str | os.PathLike) -> Campaign:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise CampaignError(f"{p}: cannot read campaign file: {exc.strerror}") from None
    if p.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CampaignError(f"{p}: not valid TOML: {exc}") from None
        return parse_campaign(data, str(p))
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark else str(p)
        raise CampaignError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return parse_campaign(data, str(p), text)
