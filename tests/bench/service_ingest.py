"""Benchmark: ingest 1,000,000 raw timings into PostgreSQL through the HTTP API (goal <= 10 s).

Starts `pgmpi serve` (gunicorn, 2 workers) on a scratch database of deploy/postgres.sh's server, registers
a machine and an agent token, then POSTs ReproMPI-format files (docs/contracts.md, 2) to /api/v1/uploads:
`--uploads` uploads of `--files` files each, `--timings` timings in total, from `--clients` concurrent
clients. File generation is not timed; the clock runs from the first request to the last answer.

    .venv/bin/python tests/bench/service_ingest.py [--timings 1000000] [--uploads 10] [--files 10] [--clients 2]
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import requests

import service_common
from service_common import ROOT

ALGS = ["default", "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather",
        "allreduce_as_reducescatter_allgatherv"]


def make_file(machine: str, index: int, n: int, rng) -> str:
    sizes = [2 ** k for k in range(0, 25)]
    per = len(sizes) * len(ALGS)
    nrep = max(1, n // per)
    head = (f"#@pgmpi_format=1\n#@machine={machine}\n#@mpi_library=openmpi\n#@mpi_version=4.1.4\n"
            f"#@module=openmpi/4.1.4\n#@nodes=1\n#@ppn=2\n#@nprocs=2\n#@mpirun_index={index}\n#@slurm_job_id=\n"
            "#@clock=MPI_Wtime\ntest nrep msize runtime_sec algorithm\n")
    lines = []
    t = rng.lognormal(-11, 0.2, size=n)
    k = 0
    for alg in ALGS:
        for s in sizes:
            for r in range(nrep):
                if k >= n:
                    break
                lines.append(f"MPI_Allreduce {r} {s} {t[k]:.10f} {alg}")
                k += 1
    while k < n:   # the remainder
        lines.append(f"MPI_Allreduce {nrep + k} 1 {t[k]:.10f} default")
        k += 1
    return head + "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timings", type=int, default=1_000_000)
    ap.add_argument("--uploads", type=int, default=10)
    ap.add_argument("--files", type=int, default=10, help="files per upload")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    nfiles = a.uploads * a.files
    per_file = a.timings // nfiles
    rng = np.random.default_rng(3)
    t0 = time.perf_counter()
    files = [make_file("bench", i, per_file, rng) for i in range(nfiles)]
    total = per_file * nfiles
    print(f"generated {nfiles} files, {total} timings, {sum(map(len, files)) / 1e6:.1f} MB "
          f"in {time.perf_counter() - t0:.1f} s (not timed)")

    with service_common.scratch_database("ingest") as url:
        service_common.migrate(url)
        from service.app import create_app
        from service.auth import create_token
        from service.store.db import db
        from service.store.models import Machine
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench"})
        with app.app_context():
            db.session.add(Machine(name="bench", nodes=1, cores_per_node=2, interconnect="", notes=""))
            db.session.flush()
            _, secret = create_token("bench-agent", "agent", "bench", actor="bench")
            db.session.commit()
            db.engine.dispose()
        port = free_port()
        env = dict(os.environ, DATABASE_URL=url, PGMPI_SECRET_KEY="bench", PGMPI_INSTANCE="/tmp/pgmpi-bench-inst")
        server = subprocess.Popen([str(ROOT / ".venv/bin/pgmpi"), "serve", "--port", str(port), "--workers",
                                   str(a.workers), "--no-upgrade"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + 120   # imports are slow when the shared machine is busy
            while time.time() < deadline:
                try:
                    if requests.get(base + "/healthz", timeout=5).ok:
                        break
                except requests.ConnectionError:
                    time.sleep(0.2)
            else:
                sys.exit("server did not start")
            hdr = {"Authorization": f"Bearer {secret}"}
            bodies = [{"upload_id": f"bench-{u}", "files": [{"name": f"run{u}-{i}.txt", "content": files[u * a.files + i]}
                                                          for i in range(a.files)]} for u in range(a.uploads)]
            import json
            payloads = [json.dumps(b) for b in bodies]
            lat: list[float] = []
            queue = list(range(a.uploads))
            lock = threading.Lock()
            errors: list[str] = []

            def client():
                s = requests.Session()
                while True:
                    with lock:
                        if not queue:
                            return
                        u = queue.pop(0)
                    t = time.perf_counter()
                    r = s.post(base + "/api/v1/uploads", data=payloads[u],
                               headers={**hdr, "Content-Type": "application/json"}, timeout=600)
                    if r.status_code != 201:
                        with lock:
                            errors.append(f"upload {u}: HTTP {r.status_code} {r.text[:300]}")
                        return
                    with lock:
                        lat.append(time.perf_counter() - t)

            t0 = time.perf_counter()
            threads = [threading.Thread(target=client) for _ in range(a.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            if errors:
                sys.exit("FAILED: " + "; ".join(errors))
            n_stored = requests.get(base + "/api/v1/runs?limit=1000", headers=hdr).json()["items"]
            got = [requests.get(base + f"/api/v1/uploads/bench-{u}", headers=hdr).json() for u in range(a.uploads)]
            stored = sum(g.get("timings", 0) for g in got)  # noqa
            print(f"ingested {total} timings ({a.uploads} uploads x {a.files} files, {a.clients} clients, "
                  f"{a.workers} gunicorn workers) in {wall:.2f} s = {total / wall / 1e6:.2f} M timings/s "
                  f"(goal: 1,000,000 in <= 10 s)")
            print(f"  per upload: median {np.median(lat):.2f} s, max {max(lat):.2f} s; runs stored: {len(n_stored)}, "
                  f"timings stored: {stored}")
            r = requests.post(base + "/api/v1/uploads", data=payloads[0],
                              headers={**hdr, "Content-Type": "application/json"})
            print(f"  repeated upload: HTTP {r.status_code}, duplicate={r.json()['duplicate']}")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
