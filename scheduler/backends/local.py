"""Local backend: the job script runs directly (bash + mpirun of the module), no resource manager.

Used by `make demo` and tests. Each job runs detached in its own process group, one at a time
on this machine (flock), under `timeout` (the walltime, counted once the lock is held);
its state comes from the status marker, the pid file and the exit code.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import Backend, Status, read_marker, register

if TYPE_CHECKING:
    from ..planner import JobSpec


def _alive(pid: int, script: Path) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if str(script).encode() not in cmd:
        return False          # pid reused by something else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@register
class LocalBackend(Backend):
    name = "local"
    in_slurm = False

    def __init__(self, env=None, lock: str | None = None, **_):
        super().__init__(env)
        self._procs: dict[str, subprocess.Popen] = {}
        # One local job at a time on this machine: concurrent jobs on a few cores disturb each other's
        # timings (a busy-polling MPICH job makes an Open MPI job's collectives 100x slower).
        self.lock = lock or os.environ.get("PGMPI_LOCAL_LOCK") or os.path.join(
            tempfile.gettempdir(), "pgmpi-local-backend.lock")

    def start(self, script: Path, job: JobSpec, attempt_dir: Path) -> str:
        for f in ("status", "exitcode", "pid"):
            (attempt_dir / f).unlink(missing_ok=True)
        log = open(attempt_dir / "local.out", "ab")
        # `timeout` enforces the walltime; a wrapper records the exit code for a restarted agent.
        wrapper = (f'echo $$ > "$1/pid"; flock {shlex.quote(self.lock)} timeout --signal=TERM --kill-after=5 {job.walltime_seconds} bash "$0"; rc=$?; '
                   f'echo $rc > "$1/exitcode.tmp"; mv "$1/exitcode.tmp" "$1/exitcode"; exit $rc')
        proc = subprocess.Popen(["bash", "-c", wrapper, str(script), str(attempt_dir)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
                                start_new_session=True, cwd=attempt_dir)
        log.close()
        bid = f"local-{proc.pid}"
        self._procs[bid] = proc
        return bid

    def poll(self, jobs: dict[str, Path]) -> dict[str, Status]:
        out = {}
        for bid, attempt_dir in jobs.items():
            proc = self._procs.get(bid)
            if proc is not None:
                proc.poll()
            pid = int(bid.split("-", 1)[1])
            exitf = attempt_dir / "exitcode"
            if exitf.exists():
                rc = int(exitf.read_text().strip() or "1")
                mark = read_marker(attempt_dir)
                if rc == 124 or rc == 137 and mark is None:
                    out[bid] = Status("TIMEOUT", "TimeLimit", None, exitf.stat().st_mtime, str(rc))
                elif rc == 0 and mark and mark.state == "COMPLETED":
                    out[bid] = mark
                elif rc in (143, 130, -15) and mark is None:
                    out[bid] = Status("CANCELLED", "cancelled", None, exitf.stat().st_mtime, str(rc))
                else:
                    reason = mark.reason if mark else "job ended without status marker"
                    out[bid] = Status("FAILED", f"NonZeroExitCode; ExitCode={rc}; {reason}", None,
                                      exitf.stat().st_mtime, str(rc))
                self._procs.pop(bid, None)
            elif _alive(pid, attempt_dir / "job.sh") or (proc is not None and proc.returncode is None):
                out[bid] = Status("RUNNING")
            else:
                mark = read_marker(attempt_dir)
                out[bid] = mark or Status("FAILED", "local job process vanished (agent host rebooted?)")
        return out

    def find(self, name: str, attempt_dir: Path) -> str | None:
        pidf = attempt_dir / "pid"
        if pidf.exists():
            return f"local-{pidf.read_text().strip()}"
        return None

    def cancel(self, backend_id: str) -> None:
        """SIGTERM to the whole session of the job (`timeout` moves the script into its own process
        group, so killing the wrapper's group alone would leave the job running), SIGKILL after 5 s."""
        sid = int(backend_id.split("-", 1)[1])
        for sig in (signal.SIGTERM, signal.SIGKILL):
            members = _session(sid)
            if not members:
                break
            for pid in members:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            for _ in range(50):
                proc = self._procs.get(backend_id)
                if proc is not None:
                    proc.poll()
                if not _session(sid):
                    break
                time.sleep(0.1)


def _session(sid: int) -> list[int]:
    """Live (non-zombie) processes of session sid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(d))
    return out
