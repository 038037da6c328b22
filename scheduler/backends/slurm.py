"""Slurm backend: sbatch a script from the template, track with `scontrol show job -o`, scancel.

sacct is not trusted (without slurmdbd it prints nothing and exits 0). A job that Slurm has
forgotten (MinJobAge passed) is judged by the status marker the job script writes.
While slurmctld is unreachable every call raises BackendUnavailable and the agent retries later.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import Backend, BackendUnavailable, Status, read_marker, register

if TYPE_CHECKING:
    from ..planner import JobSpec

_FIELD = re.compile(r"(\w+)=(\S*)")
_UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
                "Zero Bytes were transmitted", "slurm_load_jobs error: Unable")
SLURM_STATES = {"PENDING": "PENDING", "CONFIGURING": "PENDING", "REQUEUED": "PENDING", "RESIZING": "RUNNING",
                "RUNNING": "RUNNING", "COMPLETING": "RUNNING", "SUSPENDED": "RUNNING", "STOPPED": "RUNNING",
                "COMPLETED": "COMPLETED", "FAILED": "FAILED", "BOOT_FAIL": "NODE_FAIL",
                "NODE_FAIL": "NODE_FAIL", "TIMEOUT": "TIMEOUT", "DEADLINE": "TIMEOUT",
                "OUT_OF_MEMORY": "FAILED", "PREEMPTED": "FAILED", "CANCELLED": "CANCELLED",
                "SPECIAL_EXIT": "FAILED", "REVOKED": "CANCELLED"}


def _ts(v: str | None) -> float | None:
    if not v or v in ("Unknown", "None", "N/A"):
        return None
    try:
        return datetime.fromisoformat(v).timestamp()
    except ValueError:
        return None


@register
class SlurmBackend(Backend):
    name = "slurm"
    in_slurm = True

    def __init__(self, partition=None, account=None, qos=None, constraints=None, extra=(), env=None,
                 timeout: float = 30.0, exclusive: bool = False, **_):
        self.partition, self.account, self.qos, self.constraints = partition, account, qos, constraints
        self.extra = list(extra)
        self.exclusive = exclusive
        super().__init__(env)
        self.timeout = timeout

    @classmethod
    def from_campaign(cls, c, env=None):
        if c is None:
            return cls(env=env)
        s = c.slurm
        return cls(s.partition, s.account, s.qos, s.constraints, s.extra, env=env, exclusive=s.exclusive)

    def _run(self, argv: list[str], check=True) -> subprocess.CompletedProcess:
        try:
            res = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise BackendUnavailable(f"{argv[0]} did not answer within {self.timeout:.0f} s") from None
        except FileNotFoundError:
            raise RuntimeError(f"{argv[0]} not found: is Slurm installed on this host?") from None
        if res.returncode != 0 and any(s in res.stderr for s in _UNREACHABLE):
            raise BackendUnavailable(f"{argv[0]}: {res.stderr.strip()}")
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def directives(self, job: JobSpec, outdir: Path, name: str) -> list[str]:
        w = job.walltime_seconds
        lines = [f"#SBATCH --job-name={name}", f"#SBATCH --nodes={job.nodes}",
                 f"#SBATCH --ntasks-per-node={job.ppn}",
                 f"#SBATCH --time={w // 86400}-{w % 86400 // 3600:02d}:{w % 3600 // 60:02d}:{w % 60:02d}",
                 f"#SBATCH --output={outdir}/slurm-%j.out", f"#SBATCH --chdir={outdir}"]
        for opt, val in (("partition", self.partition), ("account", self.account), ("qos", self.qos),
                         ("constraint", self.constraints)):
            if val:
                lines.append(f"#SBATCH --{opt}={val}")
        if self.exclusive:
            lines.append("#SBATCH --exclusive")
        lines += [f"#SBATCH {x}" for x in self.extra]
        return lines

    def start(self, script: Path, job: JobSpec, attempt_dir: Path) -> str:
        res = self._run(["sbatch", "--parsable", str(script)])
        return res.stdout.strip().split(";")[0]

    def _all_jobs(self) -> dict[str, dict[str, str]]:
        res = self._run(["scontrol", "show", "job", "-o"], check=False)
        if res.returncode != 0:
            if "No jobs in the system" in res.stdout + res.stderr:
                return {}
            raise RuntimeError(f"scontrol show job failed: {res.stderr.strip()}")
        jobs = {}
        for line in res.stdout.splitlines():
            f = dict(_FIELD.findall(line))
            if "JobId" in f:
                jobs[f["JobId"]] = f
        return jobs

    def poll(self, jobs: dict[str, Path]) -> dict[str, Status]:
        known = self._all_jobs()
        out = {}
        for jid, attempt_dir in jobs.items():
            f = known.get(jid)
            if f is None:
                # Slurm forgot the job (MinJobAge) or lost it: the job's own marker decides.
                mark = read_marker(attempt_dir)
                out[jid] = mark if mark else Status("UNKNOWN", "job not known to slurmctld")
                continue
            state = SLURM_STATES.get(f.get("JobState", ""), "FAILED")
            reason = f.get("Reason", "")
            if reason == "None":
                reason = ""
            st = Status(state, reason, _ts(f.get("StartTime")), _ts(f.get("EndTime")), f.get("ExitCode", ""))
            if state == "COMPLETED":
                mark = read_marker(attempt_dir)
                if mark is None or mark.state != "COMPLETED":
                    st.state = "FAILED"
                    st.reason = (mark.reason if mark else "job ended without writing its status marker")
            elif state == "FAILED":
                mark = read_marker(attempt_dir)
                detail = mark.reason if mark and mark.state == "FAILED" else ""
                st.reason = "; ".join(x for x in (reason, f"ExitCode={st.exit_code}", detail) if x)
            elif state == "TIMEOUT" and not reason:
                st.reason = "TimeLimit"
            out[jid] = st
        return out

    def cancel(self, backend_id: str) -> None:
        self._run(["scancel", backend_id], check=False)

    def find(self, name: str, attempt_dir: Path | None = None) -> str | None:
        for jid, f in self._all_jobs().items():
            if f.get("JobName") == name:
                return jid
        return None


def wait_controller(env=None, timeout=60.0) -> bool:
    """True once `scontrol ping` reports the controller UP (helper for tests and the agent)."""
    end = time.time() + timeout
    while time.time() < end:
        res = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, env=env)
        if res.returncode == 0 and "UP" in res.stdout:
            return True
        time.sleep(0.5)
    return False
