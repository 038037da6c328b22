"""Validation job of the MPI library's own decision file (native.rules / native.json), run the way users get it.

    cells = precheck(name, text, mpi, nprocs, version)  # ValueError with the reason: never submitted
    job = NativeValidationJob(...); job.write(); job_id = job.submit(env)   # sbatch, then its status marker
    figs = job.figures()                               # pgmpi_formats.native_validation.figures
    verdict = post(client, job, figs)                  # the service judges and records it

The job stages the candidate as a published set of its own (<dir>/profiles/<machine>/<mpi>-<version>/current
-> versions/1/<file>), points a site file at it and loads the MPI module and the pgmpitunelib module, so the
module's native variables (spack-repo/packages/pgmpitunelib/pgmpitune-site.lua) set the file for the launched
ranks exactly as for a user.  It refuses to measure when the module did not set them to the candidate.  Then
`rounds` rounds of two mpiruns in alternating order (pgmpi_formats/native_validation.py): the file arm, and
the forced arm without the file's variables (default + the file's algorithms forced, interleaved).
"""
from __future__ import annotations

import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgmpi_formats import mpich_json, native, native_file, ompi_rules
from pgmpi_formats import native_validation as nv

from .backends import LMOD_INIT, job_env, launcher
from .campaign import Layout, Module
from .planner import JobSpec

FILE_FOR = {"openmpi": "native.rules", "mpich": "native.json"}
FILE_VARS = native.FILE_VARS["openmpi"] + native.FILE_VARS["mpich"]


def precheck(name: str, text: str, mpi: str, nprocs: int, version: str | None = None) -> list[nv.Cell]:
    """The checks that need no job, before anything is submitted: the file read the way the library reads it
    (a rules file Open MPI would ignore, a JSON file missing a collective, an algorithm this library does not
    have, an algorithm that reorders a reduction's operands) -> ValueError with the reason; else its cells."""
    if FILE_FOR.get(mpi) != name:
        raise ValueError(f"{name}: {mpi}'s decision file is {FILE_FOR.get(mpi, '(none)')}")
    if mpi == "openmpi":
        d = native.discover("openmpi")
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

    @property
    def staged(self) -> Path:
        return self.directory / "profiles" / self.machine / f"{self.mpi}-{self.version}" / "versions" / "1" / self.name

    def _spec(self) -> JobSpec:
        mod = Module(name=self.mpi_module, mpi=self.mpi, modulepath=list(self.modulepath))
        return JobSpec(f"native-validate-{self.mpi}", mod, Layout(nodes=1, ppn=self.nprocs), [],
                       self.walltime_seconds, kind="validate")

    def write(self) -> Path:
        """The staged set, its site file and the job script; returns the script."""
        if not self.cells:
            self.cells = precheck(self.name, self.text, self.mpi, self.nprocs, self.version)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.staged.parent.mkdir(parents=True, exist_ok=True)
        self.staged.write_text(self.text)
        cur = self.staged.parent.parent.parent / "current"
        if not cur.is_symlink():
            cur.symlink_to("versions/1")
        (self.directory / "site.conf").write_text(f"profile_root = {self.directory / 'profiles'}\n"
                                                  f"machine = {self.machine}\n")
        spec = self._spec()
        run = launcher(spec, True)
        calls = ",".join(sorted({c.key for c in self.cells}))
        sizes = ",".join(str(s) for s in sorted({c.msize for c in self.cells}))
        labels = sorted({c.label for c in self.cells if c.label != "default"})
        common = f"--calls={calls} --sizes={sizes} --nrep={self.nrep} --no-barrier-rows"
        unset = " ".join(f"-u {v}" for v in FILE_VARS)
        w = self.walltime_seconds
        q = shlex.quote
        lines = ["#!/bin/bash", f"#SBATCH --job-name=native-validate-{self.mpi}", "#SBATCH --nodes=1",
                 f"#SBATCH --ntasks-per-node={self.nprocs}",
                 f"#SBATCH --time=0-{w // 3600:02d}:{w % 3600 // 60:02d}:{w % 60:02d}",
                 f"#SBATCH --output={self.directory}/slurm-%j.out", f"#SBATCH --chdir={self.directory}",
                 "# pgmpi-site: validation of a native decision file -- generated by scheduler/native_validation.py",
                 "set -u", f"out={q(str(self.directory))}", 'cd "$out" || exit 1',
                 'fail() { echo "pgmpi-job: $1" >&2; echo "FAILED $1" > "$out/status.tmp"; mv "$out/status.tmp" "$out/status"; exit 1; }',
                 f". {LMOD_INIT} || fail 'cannot initialise Lmod'"]
        lines += [f"module use {q(p)}" for p in self.modulepath]
        lines += [f"module load {q(self.mpi_module)} || fail 'module load {self.mpi_module} failed'",
                  f"export PGMPI_SITE_CONFIG={q(str(self.directory / 'site.conf'))}",
                  f"module load {q(self.tunelib_module)} || fail 'module load {self.tunelib_module} failed'"]
        lines += self.extra_lines
        lines += [f"env | grep -E '^({'|'.join(FILE_VARS)}|OMPI_MCA_coll_tuned_use_dynamic_rules)=' > native-env.txt",
                  f"grep -qx '[A-Z_a-z]*={self.staged}' native-env.txt || "
                  "fail 'the module did not set the candidate file for the launched ranks (native-env.txt)'"]
        lines += [f"export {k}={q(v)}" for k, v in job_env(spec, True).items()]
        lines += ["arm() {  # arm <file|forced> <round> <argv...>",
                  '  local a=$1 r=$2; shift 2',
                  '  "$@" >"$out/$a-$r.log" 2>&1 || { tail -n 20 "$out/$a-$r.log" >&2; fail "$a arm, round $r failed"; }',
                  '  [ -s "$out/$a-$r.txt" ] || fail "$a arm, round $r wrote no results"', "}"]
        file_cmd = f"{run} pgmpi-bench {common} --algorithms=default --output=\"$out/file-$r.txt\""
        forced_cmd = (f"env {unset} {run} pgmpi-bench {common} --algorithms={','.join(['default'] + labels)} "
                      f"--output=\"$out/forced-$r.txt\"")
        lines += [f"for r in $(seq 1 {self.rounds}); do",
                  "  if [ $((r % 2)) -eq 1 ]; then",
                  f"    arm file $r {file_cmd}", f"    arm forced $r {forced_cmd}",
                  "  else",
                  f"    arm forced $r {forced_cmd}", f"    arm file $r {file_cmd}",
                  "  fi", "done", 'echo COMPLETED > "$out/status.tmp"', 'mv "$out/status.tmp" "$out/status"']
        script = self.directory / "job.sh"
        script.write_text("\n".join(lines) + "\n")
        script.chmod(0o755)
        return script

    def submit(self, env: dict | None = None, timeout: float = 900, interval: float = 0.5) -> str:
        """sbatch, then wait for the job's status marker (polled every `interval` s: `sbatch --wait` polls
        Slurm with growing pauses, tens of seconds for a job of a few); Slurm's own state is asked every
        10 s so a job that died without a marker is seen.  Returns the job id; RuntimeError when it failed."""
        script = self.directory / "job.sh"
        res = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True, env=env,
                             timeout=60)
        job_id = res.stdout.strip().split(";")[0]
        if res.returncode != 0 or not job_id:
            raise RuntimeError(f"sbatch refused the validation job: {res.stderr.strip()[:300]}")
        marker = self.directory / "status"
        end = time.monotonic() + timeout
        asked = time.monotonic()
        while not marker.exists():
            if time.monotonic() > end:
                subprocess.run(["scancel", job_id], capture_output=True, env=env)
                raise RuntimeError(f"validation job {job_id} did not finish within {timeout:.0f} s (cancelled)")
            if time.monotonic() - asked > 10:
                asked = time.monotonic()
                q = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True,
                                   env=env)
                m = re.search(r"JobState=(\w+)", q.stdout)
                if m and m.group(1) in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY") \
                        and not marker.exists():
                    raise RuntimeError(f"validation job {job_id} ended {m.group(1)} without a status (see "
                                       f"{self.directory}/slurm-{job_id}.out)")
            time.sleep(interval)
        status = marker.read_text().strip()
        if status != "COMPLETED":
            raise RuntimeError(f"validation job {job_id} failed: {status}")
        return job_id

    def figures(self) -> dict:
        files = []
        for r in range(1, self.rounds + 1):
            for arm in ("file", "forced"):
                p = self.directory / f"{arm}-{r}.txt"
                files.append((arm, r, p.read_text()))
        return nv.figures(files)


def payload(job: NativeValidationJob, figs: dict, job_id: str) -> dict:
    return {"machine": job.machine, "library": job.mpi, "version": job.version, "name": job.name,
            "text": job.text, "nprocs": job.nprocs, "figures": figs, "job": f"slurm:{job_id}"}


def post(client, job: NativeValidationJob, figs: dict, job_id: str) -> dict:
    """The service judges and records (POST /api/v1/native/validations); returns its verdict."""
    _, data = client.request("POST", "/api/v1/native/validations", payload(job, figs, job_id))
    return data
