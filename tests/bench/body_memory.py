"""Benchmark: peak RSS of a gunicorn worker for anonymous form POSTs of 50 and 250 MB and for an
authenticated 250 MB upload (issue 31, D1: an anonymous request must cost a worker a small constant).

Serves the service of a source tree (default: this one; `--tree` another checkout, e.g. an export of main,
to compare) with gunicorn configured by deploy/service/gunicorn.conf.py (ONE sync worker: PGMPI_WORKERS=1)
on a scratch PostgreSQL database of deploy/postgres.sh's server.  Before each request the worker's peak RSS
is reset (/proc/<pid>/clear_refs, 5); after it VmHWM is read: the figure is the worker's peak for that
request alone, printed next to its growth over the idle worker.

    .venv/bin/python tests/bench/body_memory.py [--tree /path/to/other/checkout] [--skip-upload]
"""
from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import service_common  # noqa: E402
from ingest_memory import body as upload_body, free_port, setup, vm, worker_pid  # noqa: E402
from service_common import ROOT  # noqa: E402


def form_body(mb: int, many_fields: bool) -> bytes:
    """urlencoded: one huge field (username=xxx...) or many small ones (a=x&a=x&...)."""
    n = mb * 1_000_000
    if many_fields:
        unit = b"f=xxxxxxxxxxxxx&"
        return b"username=u&" + unit * (n // len(unit))
    return b"csrf_token=x&password=p&username=" + b"x" * n


def send(port: int, path: str, data: bytes, headers: dict) -> str:
    """POST data; the status, or what happened when the server closed the connection early."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    try:
        conn.putrequest("POST", path)
        for k, v in {**headers, "Content-Length": str(len(data))}.items():
            conn.putheader(k, v)
        conn.endheaders()
        view = memoryview(data)
        try:
            for i in range(0, len(view), 1 << 20):
                conn.send(view[i:i + (1 << 20)])
        except OSError as exc:          # the server answered and closed before the body was sent
            sent = f" (closed after {i / 1e6:.1f} MB sent: {type(exc).__name__})"
        else:
            sent = ""
        try:
            resp = conn.getresponse()
            resp.read()
            return f"{resp.status}{sent}"
        except OSError as exc:
            return f"no answer{sent or ''}: {type(exc).__name__}"
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=str(ROOT), help="source tree to serve (default: this one)")
    ap.add_argument("--skip-upload", action="store_true", help="only the anonymous form POSTs")
    a = ap.parse_args()
    tree = Path(a.tree).resolve()
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or tree.name
    print(f"tree {tree} ({commit}); gunicorn -c deploy/service/gunicorn.conf.py, 1 sync worker, PostgreSQL; "
          f"load {os.getloadavg()[0]:.2f} (uptime's 1-min load)", flush=True)
    with service_common.scratch_database("bodymem") as url:
        token = setup(tree, url)
        port = free_port()
        inst = tree / ".state" / "bench-mem"
        inst.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=f"{tree}:{tree / 'lib' / 'python'}", DATABASE_URL=url,
                   PGMPI_SECRET_KEY="bench", PGMPI_INSTANCE=str(inst), PGMPI_WORKERS="1",
                   PGMPI_BIND=f"127.0.0.1:{port}")
        cases = [("anonymous form POST /auth/login, 50 MB field", "/auth/login", lambda: form_body(50, False),
                  {"Content-Type": "application/x-www-form-urlencoded"}),
                 ("anonymous form POST /profiles/1/publish, 50 MB fields", "/profiles/1/publish",
                  lambda: form_body(50, True), {"Content-Type": "application/x-www-form-urlencoded"}),
                 ("anonymous form POST /auth/login, 250 MB field", "/auth/login",
                  lambda: form_body(250, False), {"Content-Type": "application/x-www-form-urlencoded"})]
        cases.append(("anonymous upload POST /api/v1/uploads, 250 MB", "/api/v1/uploads",
                      lambda: b'{"upload_id": "anon", "files": [' + b" " * 250_000_000 + b"]}",
                      {"Content-Type": "application/json"}))
        if not a.skip_upload:
            cases.append(("authenticated upload POST /api/v1/uploads, 250 MB", "/api/v1/uploads",
                          lambda: upload_body(250, 4.0, commit),
                          {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}))
        print(f"{'request (a fresh worker each)':<54} {'status':<30} {'seconds':>7} {'idle MiB':>8} "
              f"{'peak MiB':>9} {'+ idle':>7}")
        for label, path, make, headers in cases:
            server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c",
                                       str(tree / "deploy" / "service" / "gunicorn.conf.py"), "--timeout", "900",
                                       "service.app:create_app()"], env=env, cwd=str(tree),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(300):
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                        break
                    except OSError:
                        time.sleep(0.1)
                worker = worker_pid(server.pid)
                data = make()
                base = vm(worker, "VmRSS")
                Path(f"/proc/{worker}/clear_refs").write_text("5")
                t0 = time.perf_counter()
                status = send(port, path, data, headers)
                dt = time.perf_counter() - t0
                peak = vm(worker, "VmHWM")
                print(f"{label:<54} {status[:30]:<30} {dt:7.1f} {base / 2**20:8.0f} {peak / 2**20:9.0f} "
                      f"{(peak - base) / 2**20:7.0f}", flush=True)
                del data
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
