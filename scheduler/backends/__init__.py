"""Backends run a planned job somewhere: one small interface, one file per backend, each registers itself.

    backend = make_backend(campaign)                     # or make_backend(None, "local", env=...)
    backend.submit(job, attempt_dir, name, bench) -> backend job id   (writes attempt_dir/job.sh first)
    backend.poll({id: attempt_dir}) -> {id: Status}
    backend.cancel(id)
    backend.find(name, attempt_dir) -> id or None   (adopt a job submitted before a crash)
    collect(attempt_dir, job) -> [Path of raw result files]   (same for every backend)
    wait(backend, id, attempt_dir, timeout) -> Status      (a job someone waits for: native validation)

Every job -- measurement, validation, native validation, search -- is a planner.JobSpec run through one
generated script (templates/job.sh.tmpl): load the module, set the environment, run the launches (the
launch command is the MPI family's, scheduler/launchers/), check the MPI size, write a `status` marker.
A backend adds only its directives (`#SBATCH ...`) and how it starts, tracks and stops the script.

A new backend is one file here with a `@register` subclass of Backend (CONTRIBUTING.md, "A scheduler
backend"); the campaign's `backend:` accepts every registered name.
"""
from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from .. import launchers

if TYPE_CHECKING:       # the planner imports the campaign, which asks this registry for the backend names
    from ..planner import JobSpec, Launch

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "job.sh.tmpl"
LMOD_INIT = "/usr/share/lmod/lmod/init/bash"
TERMINAL = {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED"}
BACKENDS: dict[str, type["Backend"]] = {}


class BackendUnavailable(RuntimeError):
    """The resource manager cannot be reached now (e.g. slurmctld restarting); try again later."""


@dataclass
class Status:
    state: str                      # PENDING RUNNING COMPLETED FAILED TIMEOUT NODE_FAIL CANCELLED
    reason: str = ""
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: str = ""


def register(cls):
    """Class decorator of a backend file: the class enters the registry under cls.name."""
    if cls.name in BACKENDS:
        raise ValueError(f"backend {cls.name!r} registered twice ({cls.__module__})")
    BACKENDS[cls.name] = cls
    return cls


class Backend:
    name = "base"
    in_slurm = False        # the job runs inside a Slurm allocation (launch flags, progress mode)

    def __init__(self, env=None, **_):
        self.env = dict(env or os.environ)

    @classmethod
    def from_campaign(cls, c, env=None) -> "Backend":
        """The backend as the campaign file configures it (c may be None: defaults)."""
        return cls(env=env)

    def directives(self, job: JobSpec, outdir: Path, name: str) -> list[str]:
        """Lines at the top of the job script for the resource manager (#SBATCH ...)."""
        return []

    def write_script(self, job: JobSpec, attempt_dir: Path, name: str, bench: Path) -> Path:
        attempt_dir.mkdir(parents=True, exist_ok=True)
        script = attempt_dir / "job.sh"
        text = render_script(job, attempt_dir, name, bench, self.in_slurm, self.directives(job, attempt_dir, name))
        tmp = script.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, script)
        return script

    def submit(self, job: JobSpec, attempt_dir: Path, name: str, bench: Path | None = None) -> str:
        """Write the job script (kept from an earlier attempt when no bench is given) and start it."""
        script = attempt_dir / "job.sh"
        if bench is not None or not script.exists():
            script = self.write_script(job, attempt_dir, name, bench)
        return self.start(script, job, attempt_dir)

    def start(self, script: Path, job: JobSpec, attempt_dir: Path) -> str:
        raise NotImplementedError

    def poll(self, jobs: dict[str, Path]) -> dict[str, Status]:
        raise NotImplementedError

    def cancel(self, backend_id: str) -> None:
        raise NotImplementedError

    def find(self, name: str, attempt_dir: Path) -> str | None:
        return None


def _load() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def names() -> list[str]:
    return sorted(BACKENDS)


def make_backend(c=None, name: str | None = None, env=None) -> Backend:
    """The one way to get a backend: the campaign's (or `name`), configured from the campaign file."""
    name = name or (c.backend if c is not None else None) or "slurm"
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; valid: {', '.join(names())}") from None
    return cls.from_campaign(c, env=env)


def wait(backend: Backend, backend_id: str, attempt_dir: Path, timeout: float, interval: float = 0.5,
         ask_every: float = 10.0) -> Status:
    """Block until the job ended: its status marker is polled every `interval` s, the backend asked every
    `ask_every` s (a job that died without a marker).  Past `timeout` the job is cancelled: TIMEOUT."""
    end = time.monotonic() + timeout
    asked = time.monotonic()
    while True:
        mark = read_marker(attempt_dir)
        if mark is not None:
            return mark
        if time.monotonic() > end:
            backend.cancel(backend_id)
            return Status("TIMEOUT", f"did not finish within {timeout:.0f} s (cancelled)")
        if time.monotonic() - asked > ask_every:
            asked = time.monotonic()
            st = backend.poll({backend_id: attempt_dir}).get(backend_id)
            if st is not None and st.state in TERMINAL and read_marker(attempt_dir) is None:
                return st
        time.sleep(interval)


def launcher(job: JobSpec, in_slurm: bool) -> str:
    """The launch command of the job's ranks (the module's MPI family decides: scheduler/launchers/)."""
    return launchers.command(job.module, job.nodes, job.ppn, in_slurm)


def job_env(job: JobSpec, in_slurm: bool) -> dict[str, str]:
    # pgmpi-bench measures the layout the launcher made and refuses to measure under another one
    env: dict[str, str] = {"PGMPI_EXPECT_LAYOUT": f"{job.nodes}x{job.ppn}"}
    env.update(launchers.environment(job.module, job.nodes, job.ppn, in_slurm))
    env.update(job.module.env)
    env.update(job.env)
    return env


def launch_env_lines(ln: Launch) -> list[str]:
    """The shell lines that give one launch its own environment in its subshell (planner.library_default:
    without a native file or a forced algorithm, whatever the module set): first the unsets, then its exports."""
    lines = [f"unset $(compgen -e | grep -xE {shlex.quote(ln.unset_matching)})"] if ln.unset_matching else []
    lines += [f"unset {' '.join(ln.unset)}"] if ln.unset else []
    return lines + [f"export {k}={shlex.quote(v)}" for k, v in ln.env.items()]


def render_script(job: JobSpec, outdir: Path, name: str, bench: Path, in_slurm: bool,
                  directives: list[str] | None = None) -> str:
    m = job.module
    mod = []
    if m.name:
        mod.append(f". {LMOD_INIT} || fail 'cannot initialise Lmod ({LMOD_INIT})'")
        for p in m.modulepath:
            mod.append(f"module use {shlex.quote(p)}")
        q = shlex.quote(m.name)
        mod.append(f"module load {q} || fail {shlex.quote('module load ' + m.name + ' failed')}")
        mod.append(f"module is-loaded {q} || fail {shlex.quote('module ' + m.name + ' is not loaded (unknown module?)')}")
    env = launchers.setup_lines(m)          # the library's own environment when no module sets it
    env += [f"export {k}={shlex.quote(v)}" for k, v in job_env(job, in_slurm).items()]
    launches = []
    if job.kind == "measure" and m.family.native is not None and (
            any("native:" in a for ln in job.launches for a in ln.argv if a.startswith("--algorithms="))
            or any(ln.role == "search" for ln in job.launches)):
        # the library's own algorithms, as this module's library offers them (recorded with the campaign);
        # not Intel MPI's presets (MPI_T lists none; impi_info -v does, pgmpi_formats.impi_adjust)
        launches.append(f"{launcher(job, in_slurm)} {shlex.quote(str(bench))} --list-native >native-algorithms.txt "
                        "2>native-algorithms.log || fail 'pgmpi-bench --list-native failed (native-algorithms.log)'")
    for ln in job.launches:
        if ln.role == "search":
            # the search driver launches pgmpi-bench itself, round by round (scheduler/native_driver.py)
            line = (f"{shlex.quote(sys.executable)} -m scheduler.native_driver {shlex.join(ln.argv)} "
                    f"--launcher {shlex.quote(launcher(job, in_slurm))} --bench {shlex.quote(str(bench))} "
                    f"--output {shlex.quote(ln.output)} >{shlex.quote(ln.output[:-5] + '.log')} 2>&1 "
                    f"|| {{ tail -n 20 {shlex.quote(ln.output[:-5] + '.log')} >&2; "
                    f"fail 'search driver {ln.index} failed ({ln.output[:-5]}.log)'; }}")
        else:
            program = bench.parent / ln.program if ln.program else bench   # pgmpi-dtbench: pgmpi-bench's sibling
            line = f"launch {ln.index} {shlex.quote(ln.output)} {shlex.quote(str(program))} {shlex.join(ln.argv)}"
        if sets := launch_env_lines(ln):
            line = f"({'; '.join(sets)}; {line}) || exit 1"
        launches.append(line)
    return Template(TEMPLATE.read_text()).substitute(
        directives="\n".join(directives or []),
        job_name=name,
        outdir=shlex.quote(str(outdir)),
        module_lines="\n".join(mod),
        env_lines="\n".join(env),
        prologue_lines="\n".join(m.prologue),
        launcher=launcher(job, in_slurm),
        nprocs=job.nodes * job.ppn,
        launch_lines="\n".join(launches),
    )


def read_marker(attempt_dir: Path) -> Status | None:
    """The job's own verdict (status file), if it wrote one."""
    f = attempt_dir / "status"
    if not f.exists():
        return None
    text = f.read_text().strip()
    state, _, reason = text.partition(" ")
    ended = f.stat().st_mtime
    started = None
    s = attempt_dir / "started"
    if s.exists():
        try:
            started = float(s.read_text().strip())
        except ValueError:
            pass
    return Status(state if state in TERMINAL else "FAILED", reason, started, ended)


def collect(attempt_dir: Path, job: JobSpec) -> list[Path]:
    """Raw result files of a completed job, in launch order; raises if one is missing."""
    return [p for _, p in collect_pairs(attempt_dir, job)]


def collect_pairs(attempt_dir: Path, job: JobSpec) -> list[tuple]:
    """(launch, raw result file) of a completed job, in launch order (a search launch has many files)."""
    files = []
    for ln in job.launches:
        p = attempt_dir / ln.output
        if ln.role == "search":      # the driver's report lists its mpiruns' raw files
            if not p.is_file():
                raise FileNotFoundError(f"{p}: report of search driver {ln.index} is missing")
            for name in json.loads(p.read_text())["files"]:
                if not (attempt_dir / name).is_file():
                    raise FileNotFoundError(f"{attempt_dir / name}: listed by {p.name} but missing")
                files.append((ln, attempt_dir / name))
            continue
        if not p.is_file() or p.stat().st_size == 0:
            raise FileNotFoundError(f"{p}: result of launch {ln.index} is missing")
        files.append((ln, p))
    return files


_load()
