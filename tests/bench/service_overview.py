"""Benchmark: the query behind the violations overview (service.store.queries.violations_overview) on a
generated year of nightly campaigns (4 machines x 3 libraries), 16 concurrent clients; prints p50/p95/p99.
Goal: p95 <= 100 ms.  Also times GET /api/v1/violations/overview through the app (WSGI, in-process).

    .venv/bin/python tests/bench/service_overview.py [--days 365] [--clients 16] [--queries 50]
"""
from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

import service_common
from service_gen_year import generate


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


def hammer(clients: int, queries: int, fn) -> list[float]:
    lat: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def worker():
        mine = []
        barrier.wait()
        for _ in range(queries):
            t = time.perf_counter()
            fn()
            mine.append(time.perf_counter() - t)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    print(f"    {len(lat)} calls in {wall:.2f} s ({len(lat) / wall:.0f}/s)")
    return lat


def _proc_client(url, queries, barrier, out):
    from service.store.queries import violations_overview
    eng = create_engine(url, pool_size=1, max_overflow=0)
    with Session(eng) as s:
        violations_overview(s)     # connect + warm up
    mine = []
    barrier.wait()
    for _ in range(queries):
        t = time.perf_counter()
        with Session(eng) as s:
            violations_overview(s)
        mine.append(time.perf_counter() - t)
    eng.dispose()
    out.put(mine)


def hammer_procs(url: str, clients: int, queries: int) -> list[float]:
    """`clients` separate processes (no shared GIL), each with its own connection."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(clients + 1), ctx.Queue()
    procs = [ctx.Process(target=_proc_client, args=(url, queries, barrier, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    lat = []
    for _ in procs:
        lat.extend(out.get())
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    print(f"    {len(lat)} calls in {wall:.2f} s ({len(lat) / wall:.0f}/s)")
    return lat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--queries", type=int, default=50, help="per client")
    a = ap.parse_args()
    from service.store.queries import violations_overview
    with service_common.scratch_database("overview") as url:
        service_common.migrate(url)
        counts = generate(url, days=a.days, verbose=False)
        print(f"generated: {counts}")
        eng = create_engine(url, pool_size=a.clients, max_overflow=0)
        with Session(eng) as s:
            rows = violations_overview(s)
            print(f"overview: {len(rows)} machine x library rows, "
                  f"{sum(len(r['history']) for r in rows)} history points")
            plan = s.connection().exec_driver_sql(
                "EXPLAIN ANALYZE SELECT a.* FROM analyses a JOIN (SELECT library_id, max(id) AS aid FROM analyses "
                "GROUP BY library_id) l ON l.aid = a.id").scalars().all()
            print("  plan of the latest-analysis step:", plan[-1].strip())

        def one():
            with Session(eng) as s:
                violations_overview(s)

        for _ in range(5):
            one()   # warm up
        t = time.perf_counter()
        for _ in range(20):
            one()
        print(f"query, one client alone: {(time.perf_counter() - t) / 20 * 1000:.1f} ms per call")
        print(f"query, {a.clients} concurrent client PROCESSES x {a.queries}:")
        lat = hammer_procs(url, a.clients, a.queries)
        print(f"  violations_overview: p50 {pct(lat, 50):.1f} ms  p95 {pct(lat, 95):.1f} ms  "
              f"p99 {pct(lat, 99):.1f} ms  max {max(lat) * 1000:.1f} ms   (goal p95 <= 100 ms)")
        print(f"query, {a.clients} concurrent THREADS of one process (shared GIL) x {a.queries}:")
        lat = hammer(a.clients, a.queries, one)
        print(f"  violations_overview: p50 {pct(lat, 50):.1f} ms  p95 {pct(lat, 95):.1f} ms  "
              f"p99 {pct(lat, 99):.1f} ms  max {max(lat) * 1000:.1f} ms   (goal p95 <= 100 ms)")
        eng.dispose()

        from service.app import create_app
        from service.auth import create_token
        from service.store.db import db
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench",
                          "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": a.clients, "max_overflow": 0}})
        with app.app_context():
            _, secret = create_token("bench", "viewer", actor="bench")
            db.session.commit()
        hdr = {"Authorization": f"Bearer {secret}"}

        def http():
            r = app.test_client().get("/api/v1/violations/overview", headers=hdr)
            assert r.status_code == 200

        http()
        print(f"GET /api/v1/violations/overview (in-process WSGI, JSON included), {a.clients} threads:")
        lat = hammer(a.clients, max(5, a.queries // 2), http)
        print(f"  p50 {pct(lat, 50):.1f} ms  p95 {pct(lat, 95):.1f} ms  p99 {pct(lat, 99):.1f} ms")
        with app.app_context():
            db.engine.dispose()


if __name__ == "__main__":
    main()
