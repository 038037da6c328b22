"""Validation job of the MPI library's own decision file (native.rules / native.json), run the way users get it.

    cells = precheck(name, text, mpi, nprocs, version, decided_at)  # ValueError with the reason: never submitted
    job = NativeValidationJob(...); job.write(); job_id = job.submit(env)   # through the backend (Slurm), waits
    figs = job.figures()                               # pgmpi_formats.native_validation.figures
    verdict = post(client, job, figs)                  # the service judges and records it

The job stages the candidate as a published set of its own (<dir>/profiles/<machine>/<mpi>-<version>/current
-> versions/1/<file>), points a site file at it and loads the MPI module and the pgmpitunelib module, so the
module's native variables (spack-repo/packages/pgmpitunelib/pgmpitune-site.lua) set the file for the launched
ranks exactly as for a user.  It refuses to measure when the module did not set them to the candidate (every
variable of native.file_env with its value: a later `use_dynamic_rules=0` would switch Open MPI's file off), or when
a module (or the site's lines) also chooses an algorithm without the file (the family's forces_algorithm, e.g.
OMPI_MCA_coll_tuned_<coll>_algorithm, MPIR_CVAR_<COLL>_INTRA_ALGORITHM): the file would not decide what users
run, and the default arms, which run without such variables, would not be the default users get; the reason
names the variable and the module file that sets it (Lmod's $_LMFILES_).  A campaign module's `env:` that does
so is refused before anything is submitted (stage).  Then
`rounds` rounds of two mpiruns in alternating order (pgmpi_formats/native_validation.py): the file arm, and
the forced arm without the file's variables or any other that forces an algorithm (planner.NATIVE_VARS; default
+ the file's algorithms forced, interleaved).  It is a planner.JobSpec like every other job: the one job
template, started and watched through a backend.

Intel MPI (native.impi: its I_MPI_ADJUST_<COLL> ranges) reads its presets once at MPI_Init, so a round is the
file arm, the default arm (the same module, without the file) and one mpirun per preset the file chooses,
that preset forced on its collective without ranges (the label's fingerprint and time).  The module names
the file (PGMPITUNE_NATIVE_IMPI) and libpgmpitune's MPI_Init in pgmpi-bench (linked, as a user links it)
sets its variables at the job's size (rule 8 of lib/src/core/pgmpitune_core.h); the job refuses to measure
when the module did not name the candidate or set an I_MPI_ADJUST_* variable or Intel's own tuning itself.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from pgmpi_formats import mpich_json, native, native_file, ompi_rules
from pgmpi_formats import native_validation as nv

from . import launchers
from .backends import LMOD_INIT, Backend, make_backend, wait
from .campaign import Layout, Module
from .planner import NATIVE_VARS, JobSpec, Launch

BENCH = Path("pgmpi-bench")      # the one the pgmpitunelib module puts on PATH, as a user runs it
# the decision file of each native vocabulary (a family's `native`, scheduler/launchers/)
FILE_FOR = native_file.NAMES
FILE_VARS = tuple(v for vs in native.FILE_VARS.values() for v in vs)


def precheck(name: str, text: str, mpi: str, nprocs: int, version: str | None = None,
             decided_at=None) -> list[nv.Cell]:
    """The checks that need no job, before anything is submitted: the file read the way the library reads it
    (a rules file Open MPI would ignore, a JSON file missing a collective, an algorithm this library does not
    have, an algorithm that reorders a reduction's operands) -> ValueError with the reason; else its cells,
    each at the sizes its decision measured (`decided_at`, the candidate's [key, size, p]; nv.at_decided) --
    the same cells the service judges on."""
    return nv.at_decided(_precheck(name, text, mpi, nprocs, version), decided_at)


def _precheck(name: str, text: str, mpi: str, nprocs: int, version: str | None) -> list[nv.Cell]:
    if launchers.library(mpi).family.native_at_init:        # Intel MPI: presets fixed at MPI_Init
        return _precheck_impi(name, text, nprocs, version)
    kind = launchers.library(mpi).family.native
    if FILE_FOR.get(kind) != name:
        raise ValueError(f"{name}: {mpi}'s decision file is {FILE_FOR.get(kind, '(none)')}")
    if kind == "openmpi":
        try:
            d = native_file.ompi_target(version)
        except FileNotFoundError as exc:
            raise ValueError(f"{name}: {exc}") from None
        ompi_rules.parse_rules(text, name, d, native.ORDER_UNSAFE["openmpi"])
        cells = nv.cells_of_rules(text, d, nprocs, name)
    else:
        try:
            t = native_file.mpich_target(version)
        except FileNotFoundError as exc:
            raise ValueError(f"{name}: {exc}") from None
        tree = mpich_json.loads(text, name)
        problems = t.check(tree)
        if problems:
            raise ValueError(f"{name}: MPICH {t.version} would not read or evaluate it: " + "; ".join(problems))
        cells = nv.cells_of_json(tree, t.base, nprocs)
        unsafe = [c for c in cells if (c.key, (native.parse_label(c.label) or native.NativeVariant("")).name)
                  in native.ORDER_UNSAFE["mpich"]]
        if unsafe:
            raise ValueError(f"{name}: {unsafe[0].label} reorders a reduction's operands ({unsafe[0].key})")
    if not cells:
        raise ValueError(f"{name}: the file selects nothing at communicator size {nprocs}")
    return cells


def refuse_forcing(family: launchers.Family) -> list[str]:
    """The job's lines after every `module load`: fail, naming the variable, its value and the module file that
    sets it (the first of Lmod's loaded files, $_LMFILES_, that names it), when a variable of the family's
    forces_algorithm is set to anything but a value that leaves the choice to the library."""
    if not family.forces_algorithm:
        return []
    q = shlex.quote
    off = "|".join(q(v) for v in ("", *family.forces_off))
    why = ": it chooses an algorithm without the file, so the file would not decide what users run"
    return [f"for v in $(compgen -e | grep -xE {q(family.forces_algorithm)}); do",
            f'  case "${{!v,,}}" in {off}) continue;; esac',
            '  lm=${_LMFILES_:-}; f=$(for m in ${lm//:/ }; do grep -lw -- "$v" "$m"; done 2>/dev/null | head -n 1)',
            f'  fail "$v=${{!v}} is set by ${{f:+module file }}${{f:-the site lines or the job environment (no loaded '
            f'module file names it)}}{why}"',
            "done"]


def require_file_env(wanted: dict[str, str]) -> list[str]:
    """The job's lines after every `module load`: fail unless each variable that makes the library read its file
    has exactly the value the published module gives it.  A module or site line loaded later that changes one
    (e.g. OMPI_MCA_coll_tuned_use_dynamic_rules=0, which Open MPI reads as false: the rules file is never
    opened) would leave users on the library's own choice while validation measured the file."""
    q = shlex.quote
    return [f'[ "${{{k}-}}" = {q(v)} ] || fail "{k}=${{{k}-(unset)}}: the published module sets {k}={v}; a module or '
            f'line loaded after it changed it, so the file would not decide what users run"'
            for k, v in sorted(wanted.items())]


def _precheck_impi(name: str, text: str, nprocs: int, version: str | None) -> list[nv.Cell]:
    """Intel MPI's native.impi read strictly against that exact version's presets (impi_adjust.parse)."""
    from pgmpi_formats import impi_adjust
    if name != impi_adjust.NAME:
        raise ValueError(f"{name}: Intel MPI's decision file is {impi_adjust.NAME}")
    try:
        d = native_file.intel_target(version)
    except FileNotFoundError as exc:
        raise ValueError(f"{name}: {exc}") from None
    cells = nv.cells_of_impi(impi_adjust.parse(text, name, d), nprocs)
    if not any(c.label != "default" for c in cells):
        raise ValueError(f"{name}: the file selects nothing at communicator size {nprocs}")
    return cells


@dataclass
class NativeValidationJob:
    directory: Path
    machine: str
    mpi: str
    version: str
    name: str
    text: str
    mpi_module: str
    tunelib_module: str
    modulepath: list[str]
    nprocs: int = 2
    rounds: int = 5
    nrep: int = 30
    walltime_seconds: int = 600
    extra_lines: list[str] = field(default_factory=list)   # shell lines after `module load` (site setup)
    cells: list[nv.Cell] = field(default_factory=list)
    backend_name: str = "slurm"      # the backend submit() ran it on (the service records "<backend>:<id>")
    env: dict = field(default_factory=dict)      # the campaign module's environment for the launches
    job_key: str | None = None       # the agent's key of the job (default: native-validate-<mpi>)
    decided_at: list | None = None   # the candidate's [key, size, p] cells: each rule is measured there
    # the campaign's sync: (planner.sync_argv; --proc-sync [--window-size]): both arms measure with the method
    # the decision was measured with; empty: pgmpi-bench's default
    sync_argv: list[str] = field(default_factory=list)

    @property
    def library(self) -> str:
        """The library's name as the service knows it (#@mpi_library: the family's), e.g. openmpi for openmpi5."""
        return launchers.library(self.mpi).family.name

    @property
    def staged(self) -> Path:
        return self.directory / "profiles" / self.machine / f"{self.library}-{self.version}" / "versions" / "1" / self.name

    @property
    def key(self) -> str:
        return self.job_key or f"native-validate-{self.mpi}"

    @property
    def intel(self) -> bool:
        return launchers.library(self.mpi).family.native_at_init

    def _intel_spec(self, mod_of) -> JobSpec:
        """Intel MPI: per round the file arm, the default arm and one mpirun per preset label, order
        alternating; every launch carries the round as its mpirun index (the pairing)."""
        from pgmpi_formats import impi_adjust
        impi_adjust.parse(self.text, self.name, native_file.intel_target(self.version))
        named = f"{impi_adjust.FILE_VAR}={self.staged}"
        check = [f"grep -qxF {shlex.quote(named)} native-env.txt || "
                 f"fail {shlex.quote('the module did not name the candidate file for libpgmpitune (native-env.txt)')}",
                 *refuse_forcing(launchers.library(self.mpi).family)]
        mod = mod_of([f"env | grep -E '^(I_MPI_ADJUST_|{impi_adjust.FILE_VAR}=)' > native-env.txt || true", *check])
        # the default and preset arms: neither the file (libpgmpitune's MPI_Init would set its variables) nor
        # any variable of it, nor anything else that forces an algorithm (planner.NATIVE_VARS)
        labels = sorted({c.label for c in self.cells if c.label != "default"})

        def argv(keys, sizes):
            return [f"--calls={','.join(sorted(keys))}", f"--sizes={','.join(map(str, sorted(sizes)))}",
                    f"--nrep={self.nrep}", "--no-barrier-rows", "--algorithms=default", *self.sync_argv]
        arms = [("file", argv({c.key for c in self.cells}, {c.msize for c in self.cells}), {}, ""),
                ("forced", argv({c.key for c in self.cells}, {c.msize for c in self.cells}),
                 {"PGMPI_NATIVE_EVIDENCE": "1"}, NATIVE_VARS)]
        for label in labels:
            mine = [c for c in self.cells if c.label == label]
            preset = label.split(":", 1)[1]
            arms.append((f"preset-{preset}", argv({c.key for c in mine}, {c.msize for c in mine}),
                         {f"I_MPI_ADJUST_{impi_adjust.VARIABLES[k]}": preset for k in {c.key for c in mine}},
                         NATIVE_VARS))
        launches = []
        for r in range(1, self.rounds + 1):
            for name, args, lenv, unset in (arms if r % 2 else arms[::-1]):
                out = f"{name}-{r}.txt"
                launches.append(Launch(r, [*args, f"--mpirun-index={r}", f"--output={out}"], out, env=lenv,
                                       role=name.split("-")[0], unset_matching=unset))
        return JobSpec(self.key, mod, Layout(nodes=1, ppn=self.nprocs), launches, self.walltime_seconds,
                       kind="native-validate")

    def spec(self) -> JobSpec:
        """The job: the MPI module, the site file and the pgmpitunelib module as a user loads them (the module's
        native variables must name the staged candidate, else the job refuses to measure), then `rounds`
        rounds of the file arm and the forced arm (without the file's variables), in alternating order."""
        q = shlex.quote
        # without an MPI module (make demo: Debian's MPIs on PATH) nothing has set up Lmod or the module path yet
        setup = [] if self.mpi_module else [f". {LMOD_INIT} || fail {q('cannot initialise Lmod (' + LMOD_INIT + ')')}",
                                            *(f"module use {q(p)}" for p in self.modulepath)]

        def mod_of(checks: list[str]) -> Module:
            prologue = [*setup, f"module load {q(self.tunelib_module)} || "
                                f"fail {q('module load ' + self.tunelib_module + ' failed')}",
                        *self.extra_lines, *checks]
            return Module(name=self.mpi_module, mpi=self.mpi, modulepath=list(self.modulepath),
                          env={**self.env, "PGMPI_SITE_CONFIG": str(self.directory / "site.conf")}, prologue=prologue)
        if self.intel:
            return self._intel_spec(mod_of)
        family = launchers.library(self.mpi).family
        mod = mod_of([f"env | grep -E '^({'|'.join(FILE_VARS)}|OMPI_MCA_coll_tuned_use_dynamic_rules)=' > native-env.txt",
                      f"grep -qx '[A-Z_a-z]*={self.staged}' native-env.txt || "
                      "fail 'the module did not set the candidate file for the launched ranks (native-env.txt)'",
                      *require_file_env(native.file_env(family.native, str(self.staged))),
                      *refuse_forcing(family)])
        calls = ",".join(sorted({c.key for c in self.cells}))
        sizes = ",".join(str(s) for s in sorted({c.msize for c in self.cells}))
        labels = sorted({c.label for c in self.cells if c.label != "default"})
        common = [f"--calls={calls}", f"--sizes={sizes}", f"--nrep={self.nrep}", "--no-barrier-rows", *self.sync_argv]
        arms = {"file": Launch(0, [*common, "--algorithms=default"], "", role="file"),
                "forced": Launch(0, [*common, f"--algorithms={','.join(['default'] + labels)}"], "", role="forced",
                                 unset_matching=NATIVE_VARS)}
        launches = []
        for r in range(1, self.rounds + 1):
            for arm in (("file", "forced") if r % 2 else ("forced", "file")):
                a = arms[arm]
                launches.append(replace(a, index=r, output=f"{arm}-{r}.txt", argv=[*a.argv, f"--output={arm}-{r}.txt"]))
        return JobSpec(self.key, mod, Layout(nodes=1, ppn=self.nprocs), launches, self.walltime_seconds,
                       kind="native-validate")

    def write(self, backend: Backend | None = None) -> Path:
        """The staged set, its site file and the job script (the one job template); returns the script."""
        self.stage()
        backend = backend or make_backend(None, "slurm")
        return backend.write_script(self.spec(), self.directory, self.key, BENCH)

    def stage(self) -> None:
        """The file checked (precheck) and staged as a published set of its own, with its site file: what
        the job's `module load` points the MPI at (the agent submits the spec itself, scheduler/agent.py)."""
        fam = launchers.library(self.mpi).family
        forced = [f"{k}={v}" for k, v in sorted(self.env.items()) if fam.forces_algorithm
                  and re.fullmatch(fam.forces_algorithm, k) and v.lower() not in ("", *fam.forces_off)]
        if forced:
            raise ValueError(f"{self.name}: the campaign module's env: sets {', '.join(forced)}: it chooses an "
                             "algorithm without the file, so the file would not decide what users run")
        if not self.cells:
            self.cells = precheck(self.name, self.text, self.mpi, self.nprocs, self.version, self.decided_at)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.staged.parent.mkdir(parents=True, exist_ok=True)
        self.staged.write_text(self.text)
        cur = self.staged.parent.parent.parent / "current"
        if not cur.is_symlink():
            cur.symlink_to("versions/1")
        (self.directory / "site.conf").write_text(f"profile_root = {self.directory / 'profiles'}\n"
                                                  f"machine = {self.machine}\n")

    def submit(self, env: dict | None = None, timeout: float = 900, interval: float = 0.5,
               backend: Backend | None = None) -> str:
        """Start the written job through the backend (default: Slurm) and wait for its status marker
        (polled every `interval` s; the backend is asked every 10 s so a job that died without a marker is
        seen).  Returns the backend's job id; RuntimeError when it failed."""
        backend = backend or make_backend(None, "slurm", env=env)
        self.backend_name = backend.name
        try:
            job_id = backend.submit(self.spec(), self.directory, self.key)
        except RuntimeError as exc:
            raise RuntimeError(f"{backend.name} refused the validation job: {str(exc)[:300]}") from None
        st = wait(backend, job_id, self.directory, timeout, interval)
        if st.state == "TIMEOUT" and "cancelled" in st.reason:
            raise RuntimeError(f"validation job {job_id} {st.reason}")
        if st.state != "COMPLETED":
            raise RuntimeError(f"validation job {job_id} failed: {st.state} {st.reason}".rstrip())
        return job_id

    def figures(self, where: Path | None = None) -> dict:
        """The figures of the job's raw files (in `where`, default the job's directory)."""
        return arm_figures(where or self.directory, self.rounds)


def arm_figures(directory: Path, rounds: int) -> dict:
    """pgmpi_formats.native_validation.figures of the rounds' raw files <arm>-<round>.txt in directory
    (Intel MPI's preset arms: preset-<id>-<round>.txt, arm "preset:native:<id>")."""
    files = []
    for r in range(1, rounds + 1):
        for arm in ("file", "forced"):
            files.append((arm, r, (directory / f"{arm}-{r}.txt").read_text()))
        for f in sorted(directory.glob(f"preset-*-{r}.txt")):
            preset = f.name[len("preset-"):-len(f"-{r}.txt")]
            if preset.isdigit():
                files.append((f"preset:native:{preset}", r, f.read_text()))
    return nv.figures(files)


def payload(job: NativeValidationJob, figs: dict, job_id: str) -> dict:
    return {"machine": job.machine, "library": job.library, "version": job.version, "name": job.name,
            "text": job.text, "nprocs": job.nprocs, "figures": figs, "job": f"{job.backend_name}:{job_id}"}


def post(client, job: NativeValidationJob, figs: dict, job_id: str) -> dict:
    """The service judges and records (POST /api/v1/native/validations); returns its verdict."""
    _, data = client.request("POST", "/api/v1/native/validations", payload(job, figs, job_id))
    return data
