"""Load run: 8 concurrent agents upload distinct and duplicate data for 60 s against `pgmpi serve`-like gunicorn
(2 sync workers) on a scratch PostgreSQL database; then checks that nothing was lost or doubled.

Agents come in pairs sharing a machine (and its token's machine binding, one token each).  Each step an agent
either uploads a new file (a fresh upload_id), repeats one of its pair's earlier uploads (a duplicate, often
while the partner is sending it too: both draw from the same sequence), or re-sends a just-sent upload at once.
Every answer must be 201 (first store) or 200 duplicate; at the end each upload_id is stored exactly once and
the database holds exactly the timings of the distinct uploads.

    .venv/bin/python tests/bench/ingest_load.py [--agents 8] [--seconds 60] [--workers 2] [--timings 20000]
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import service_common  # noqa: E402
from service_common import ROOT  # noqa: E402


def results_text(machine: str, seq: int, timings: int) -> str:
    rnd = random.Random(f"{machine}-{seq}")
    sizes = [2 ** k for k in range(0, 20, 2)]
    algs = ["default", "allreduce_as_reduce_bcast"]
    nrep = max(1, timings // (len(sizes) * len(algs)))
    lines = [f"#@machine={machine}", "#@mpi_library=openmpi", "#@mpi_version=4.1.4", "#@module=openmpi/4.1.4",
             "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={seq}", "test nrep msize runtime_sec algorithm"]
    for a in algs:
        for s in sizes:
            for r in range(nrep):
                lines.append(f"MPI_Allreduce {r} {s} {rnd.lognormvariate(-11, 0.2):.10f} {a}")
    return "\n".join(lines) + "\n", nrep * len(sizes) * len(algs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(url: str, machines: list[str], agents: int) -> list[str]:
    service_common.migrate(url)
    from service.app import create_app
    from service.auth import create_token
    from service.store.db import db
    from service.store.models import Machine
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench"})
    tokens = []
    with app.app_context():
        for m in machines:
            db.session.add(Machine(name=m, nodes=1, cores_per_node=2, interconnect="", notes=""))
        db.session.flush()
        for i in range(agents):
            tokens.append(create_token(f"agent{i}", "agent", machines[i // 2], actor="bench")[1])
        db.session.commit()
        db.engine.dispose()
    return tokens


def count(url: str) -> tuple[int, int, int]:
    import psycopg
    from sqlalchemy.engine import make_url
    u = make_url(url)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password, dbname=u.database) as c:
        ups = c.execute("SELECT count(*), count(DISTINCT upload_id) FROM uploads").fetchone()
        timings = c.execute("SELECT coalesce(sum(n), 0) FROM series").fetchone()[0]
    return ups[0], ups[1], int(timings)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timings", type=int, default=20000, help="timings per uploaded file")
    a = ap.parse_args()
    machines = [f"load{i}" for i in range((a.agents + 1) // 2)]
    print(f"{a.agents} agents on {len(machines)} machines, {a.seconds:.0f} s, gunicorn {a.workers} sync workers, "
          f"PostgreSQL; load {os.getloadavg()[0]:.2f}", flush=True)
    with service_common.scratch_database("load") as url:
        tokens = setup(url, machines, a.agents)
        port = free_port()
        env = dict(os.environ, DATABASE_URL=url, PGMPI_SECRET_KEY="bench",
                   PGMPI_INSTANCE=str(ROOT / ".state" / "bench-load"))
        (ROOT / ".state" / "bench-load").mkdir(parents=True, exist_ok=True)
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", str(a.workers), "-b", f"127.0.0.1:{port}",
                                   "--timeout", "300", "service.app:create_app()"], env=env, cwd=str(ROOT),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        lock = threading.Lock()
        next_seq = collections.Counter()              # per machine: the next new upload's number
        expected: dict[str, int] = {}                  # upload_id -> timings
        statuses = collections.Counter()
        created = collections.Counter()                # upload_id -> 201 answers
        bad: list[str] = []
        sent_bytes = [0]
        stop = time.monotonic() + a.seconds

        def agent(i: int) -> None:
            machine = machines[i // 2]
            s = requests.Session()
            s.headers["Authorization"] = f"Bearer {tokens[i]}"
            rnd = random.Random(i)
            last = None
            while time.monotonic() < stop:
                r = rnd.random()
                with lock:
                    if r < 0.5 or next_seq[machine] == 0:
                        seq = next_seq[machine]
                        next_seq[machine] += 1
                    elif r < 0.8 or last is None:
                        seq = rnd.randrange(next_seq[machine])       # an earlier upload of the pair
                    else:
                        seq = last                                    # the one just sent, again
                text, n = results_text(machine, seq, a.timings)
                uid = f"{machine}-{seq}"
                resp = s.post(base + "/api/v1/uploads", json={"upload_id": uid,
                                                               "files": [{"name": f"{uid}.txt", "content": text}]},
                              timeout=300)
                with lock:
                    statuses[resp.status_code] += 1
                    sent_bytes[0] += len(text)
                    if resp.status_code == 201:
                        created[uid] += 1
                        expected[uid] = n
                    elif resp.status_code == 200 and resp.json().get("duplicate") is True:
                        expected.setdefault(uid, n)
                    else:
                        bad.append(f"{uid}: {resp.status_code} {resp.text[:200]}")
                last = seq

        t0 = time.monotonic()
        threads = [threading.Thread(target=agent, args=(i,)) for i in range(a.agents)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
        n_up, n_distinct, timings = count(url)
    requests_total = sum(statuses.values())
    doubled = [u for u, c in created.items() if c > 1]
    print(f"requests {requests_total} in {elapsed:.1f} s: {requests_total / elapsed:.1f} uploads/s, "
          f"{sent_bytes[0] / elapsed / 1e6:.2f} MB/s of results text; answers {dict(sorted(statuses.items()))}")
    print(f"distinct uploads sent {len(expected)}; stored {n_up} rows for {n_distinct} upload_ids; "
          f"timings stored {timings} (expected {sum(expected.values())}); "
          f"stored by the service {sum(expected[u] for u in created) / elapsed:.0f} timings/s")
    five = sum(c for s, c in statuses.items() if s >= 500)
    ok = (not bad and not doubled and five == 0 and n_up == n_distinct == len(expected)
          and timings == sum(expected.values()))
    for b in bad[:10]:
        print("  unexpected:", b)
    print(f"5xx: {five}; doubled: {len(doubled)}; lost: {len(expected) - n_distinct}; "
          f"{'OK' if ok else 'FAILED'}; load {os.getloadavg()[0]:.2f}")
    if not ok:
        print(err.decode(errors="replace")[-3000:])
        raise SystemExit(1)


if __name__ == "__main__":
    main()
