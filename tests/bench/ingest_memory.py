"""Benchmark: peak RSS of the gunicorn worker that stores one upload, for bodies of 31, 63 and 250 MB.

Serves the service of a source tree (default: this one; `--tree` another checkout, e.g. main, to compare)
with gunicorn, ONE sync worker, on a scratch PostgreSQL database of deploy/postgres.sh's server.  Each body
holds files of `--file-mb` MB (one mpirun each, as the agent writes them).  Before each upload the worker's
peak RSS is reset (/proc/<pid>/clear_refs, 5), after it VmHWM is read: the figure is the worker's peak
while reading, parsing and storing that body.

    .venv/bin/python tests/bench/ingest_memory.py [--sizes 31,63,250] [--file-mb 4] [--tree /path/to/main]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import service_common  # noqa: E402
from service_common import ROOT  # noqa: E402

ALGS = ["default", "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather"]


def make_file(index: int, target_bytes: int, rng) -> str:
    head = (f"#@pgmpi_format=1\n#@machine=bench\n#@mpi_library=openmpi\n#@mpi_version=4.1.4\n"
            f"#@module=openmpi/4.1.4\n#@nodes=1\n#@ppn=2\n#@nprocs=2\n#@mpirun_index={index}\n"
            "#@clock=MPI_Wtime\ntest nrep msize runtime_sec algorithm\n")
    per_line = 52
    n = max(1, target_bytes // per_line)
    sizes = [2 ** k for k in range(0, 24)]
    nrep = max(1, n // (len(sizes) * len(ALGS)))
    t = rng.lognormal(-11, 0.2, size=nrep * len(sizes) * len(ALGS))
    lines, k = [], 0
    for alg in ALGS:
        for s in sizes:
            for r in range(nrep):
                lines.append(f"MPI_Allreduce {r} {s} {t[k]:.10f} {alg}")
                k += 1
    return head + "\n".join(lines) + "\n"


def body(total_mb: int, file_mb: float, tag: str) -> bytes:
    rng = np.random.default_rng(total_mb)
    files, size, i = [], 0, 0
    while size < total_mb * 1_000_000:
        want = min(int(file_mb * 1_000_000), total_mb * 1_000_000 - size)
        text = make_file(i, max(want, 10_000), rng)
        files.append({"name": f"run{i}.txt", "content": text})
        size += len(text)
        i += 1
    return json.dumps({"upload_id": f"mem-{tag}-{total_mb}", "files": files}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_env(tree: Path, url: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{tree}:{tree / 'lib' / 'python'}", DATABASE_URL=url,
               PGMPI_SECRET_KEY="bench", PGMPI_INSTANCE=str(tree / ".state" / "bench-mem"),
               PGMPI_MAX_UPLOAD_BYTES=str(300 * 1024 * 1024))
    return env


def setup(tree: Path, url: str) -> str:
    """Schema, machine and an agent token, by the tree's own code; returns the token."""
    code = f"""
import flask_migrate, sys
from service.app import create_app
from service.store.db import db
from service.store.models import Machine
from service.auth import create_token
app = create_app()
with app.app_context():
    flask_migrate.upgrade(directory={str(tree / 'migrations')!r})
    db.session.add(Machine(name="bench", nodes=1, cores_per_node=2, interconnect="", notes=""))
    db.session.flush()
    row, secret = create_token("bench", "agent", "bench", actor="bench")
    db.session.commit()
    print(secret)
"""
    # cwd: `-c` puts the working directory first on sys.path, which must be the tree's, not this one
    out = subprocess.run([sys.executable, "-c", code], env=tree_env(tree, url), capture_output=True, text=True,
                         cwd=str(tree))
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return out.stdout.strip().splitlines()[-1]


def worker_pid(master: int) -> int:
    for _ in range(100):
        kids = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if kids:
            return int(kids[0])
        time.sleep(0.1)
    raise SystemExit("no gunicorn worker")


def vm(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="31,63,250", help="body sizes in MB")
    ap.add_argument("--file-mb", type=float, default=4.0, help="MB per file (one mpirun)")
    ap.add_argument("--tree", default=str(ROOT), help="source tree to serve (default: this one)")
    a = ap.parse_args()
    tree = Path(a.tree).resolve()
    sizes = [int(x) for x in a.sizes.split(",")]
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"tree {tree} ({commit}); one gunicorn sync worker; files of {a.file_mb} MB; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    with service_common.scratch_database("mem") as url:
        token = setup(tree, url)
        port = free_port()
        (tree / ".state" / "bench-mem").mkdir(parents=True, exist_ok=True)
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", "1", "-b", f"127.0.0.1:{port}",
                                   "--timeout", "900", "service.app:create_app()"], env=tree_env(tree, url),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(tree))
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            worker = worker_pid(server.pid)
            base = vm(worker, "VmRSS")
            print(f"worker {worker}: {base / 2**20:.0f} MiB resident when idle")
            print(f"{'body MB':>8} {'files':>6} {'status':>6} {'seconds':>8} {'peak RSS MiB':>13} {'peak/body':>9}")
            for mb in sizes:
                data = body(mb, a.file_mb, commit or "x")
                nfiles = data.count(b'"name"')
                Path(f"/proc/{worker}/clear_refs").write_text("5")
                req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/uploads", data=data, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "Authorization": f"Bearer {token}"})
                t0 = time.perf_counter()
                try:
                    with urllib.request.urlopen(req, timeout=900) as resp:
                        status = resp.status
                except urllib.error.HTTPError as exc:
                    status = exc.code
                dt = time.perf_counter() - t0
                peak = vm(worker, "VmHWM")
                print(f"{len(data) / 1e6:8.1f} {nfiles:6d} {status:6d} {dt:8.1f} {peak / 2**20:13.0f} "
                      f"{peak / len(data):9.1f}", flush=True)
                del data
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
