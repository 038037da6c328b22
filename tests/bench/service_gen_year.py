"""Generate a database holding one year of nightly campaigns (reusable by the dashboards' page timings).

    python tests/bench/service_gen_year.py --database-url URL [--days 365] [--machines 4] [--libraries 3]
    python tests/bench/service_gen_year.py --scratch --keep     # new scratch DB on deploy/postgres.sh's server

    from service_gen_year import generate; generate(url, days=365)     # (tests/bench on sys.path)

Per machine and night: one campaign, per MPI library one Slurm job, `runs_per_night` runs (mpiruns) with
`series_per_run` measurement series of `timings_per_series` raw timings, and one analysis with a random number
of violations (a few persistent ones plus noise, so trends look like trends), and now and then a new
candidate profile version. The schema must exist (it migrates when asked: --migrate, default on).
Rows are written with bulk INSERTs (SQLAlchemy Core), not through the API: the point is the data volume.
"""
from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta, timezone

import numpy as np
from sqlalchemy import create_engine, insert, select

import service_common  # noqa: F401  (puts the repo on sys.path)
from service.store.models import (Analysis, LibraryOverview, Campaign, Job, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run,
                            Series, Upload, Violation)

COLLS = ["allgather", "allreduce", "alltoall", "bcast", "gather", "reduce", "reducescatterblock",
         "reducescatter", "scan", "scatter"]
MOCKUPS = {"allgather": "allgather_as_gather_bcast", "allreduce": "allreduce_as_reduce_bcast",
           "alltoall": "alltoall_as_alltoallv", "bcast": "bcast_as_scatter_allgather",
           "gather": "gather_as_reduce", "reduce": "reduce_as_allreduce",
           "reducescatterblock": "reducescatterblock_as_reduce_scatter",
           "reducescatter": "reducescatter_as_allreduce", "scan": "scan_as_exscan_reducelocal",
           "scatter": "scatter_as_bcast"}
SIZES = [2 ** k for k in range(0, 21, 2)]
LIBS = [("openmpi", "4.1.4"), ("mpich", "4.0.2"), ("intelmpi", "2021.9"), ("mvapich2", "2.3.7")]


def generate(url: str, days: int = 365, machines: int = 4, libraries: int = 3, runs_per_night: int = 1,
             series_per_run: int = 40, timings_per_series: int = 20, seed: int = 1, end: datetime | None = None,
             verbose: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    end = end or datetime.now(timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days - 1)
    eng = create_engine(url)
    t0 = time.perf_counter()
    counts = dict.fromkeys(["campaigns", "jobs", "runs", "series", "analyses", "violations", "profile_versions"], 0)
    with eng.begin() as conn:
        mids, libs = [], []
        for mi in range(machines):
            mid = conn.execute(insert(Machine).returning(Machine.id), {
                "name": f"machine{mi + 1}", "nodes": 64 * (mi + 1), "cores_per_node": 32 * (1 + mi % 2),
                "interconnect": ["InfiniBand HDR", "Omni-Path", "Slingshot", "Ethernet 100G"][mi % 4],
                "notes": "generated", "created_at": start - timedelta(days=1)}).scalar_one()
            mids.append(mid)
            for li in range(libraries):
                name, ver = LIBS[li % len(LIBS)]
                lid = conn.execute(insert(MpiLibrary).returning(MpiLibrary.id), {
                    "machine_id": mid, "name": name, "version": ver, "module": f"{name}/{ver}",
                    "created_at": start - timedelta(days=1)}).scalar_one()
                libs.append((mid, lid, name, ver))
        psets = {}
        for mid, lid, _, _ in libs:
            psets[lid] = conn.execute(insert(ProfileSet).returning(ProfileSet.id), {
                "machine_id": mid, "library_id": lid, "created_at": start}).scalar_one()
        # persistent violations per library: (collective, size) pairs
        persistent = {lid: [(COLLS[int(rng.integers(len(COLLS)))], int(SIZES[int(rng.integers(len(SIZES)))]))
                            for _ in range(int(rng.integers(3, 12)))] for _, lid, _, _ in libs}
        pv_number = dict.fromkeys(psets.values(), 0)
        blob = np.ascontiguousarray(rng.lognormal(-11, 0.3, timings_per_series), dtype="<f8").tobytes()
        for day in range(days):
            night = start + timedelta(days=day)
            for mi, mid in enumerate(mids):
                cid = conn.execute(insert(Campaign).returning(Campaign.id), {
                    "name": f"machine{mi + 1}-nightly-{night:%Y-%m-%d}", "machine_id": mid,
                    "definition": {"collectives": COLLS, "sizes": SIZES, "nrep": timings_per_series},
                    "schedule": "nightly 02:00", "state": "completed", "created_at": night}).scalar_one()
                counts["campaigns"] += 1
                up = conn.execute(insert(Upload).returning(Upload.id), {
                    "upload_id": f"gen-{mid}-{day}", "machine_id": mid, "campaign_id": cid, "actor": "generator",
                    "n_files": 0, "n_timings": 0, "created_at": night}).scalar_one()
                series_rows, viol_rows = [], []
                for (m2, lid, name, ver) in libs:
                    if m2 != mid:
                        continue
                    jid = conn.execute(insert(Job).returning(Job.id), {
                        "campaign_id": cid, "job_key": f"{name}-{ver}", "slurm_job_id": str(100000 + day * 50 + lid),
                        "library": name, "module": f"{name}/{ver}", "nodes": 2, "ppn": 16, "state": "COMPLETED",
                        "reason": "", "submitted_at": night, "started_at": night + timedelta(minutes=1),
                        "ended_at": night + timedelta(minutes=40), "log_tail": "", "updated_at": night}).scalar_one()
                    counts["jobs"] += 1
                    run_rows = [{"upload_pk": up, "machine_id": mid, "library_id": lid, "campaign_id": cid,
                                 "job_id": jid, "file_name": f"{name}-run{k}.txt", "slurm_job_id": "",
                                 "mpirun_index": k, "nodes": 2, "ppn": 16, "nprocs": 32, "state": "COMPLETED",
                                 "reason": "", "created_at": night, "headers": {"machine": f"machine{mi + 1}"},
                                 "footer": []} for k in range(runs_per_night)]
                    run_ids = conn.execute(insert(Run).returning(Run.id), run_rows).scalars().all() if run_rows else []
                    counts["runs"] += len(run_ids)
                    for rid in run_ids:
                        for s in range(series_per_run):
                            coll = COLLS[s % len(COLLS)]
                            series_rows.append({"run_id": rid, "call": "MPI_" + coll.capitalize(),
                                                "algorithm": "default" if s % 2 == 0 else MOCKUPS[coll],
                                                "msize": SIZES[s % len(SIZES)], "n": timings_per_series,
                                                "median": 2e-5, "mean": 2.1e-5, "minimum": 1.8e-5, "timings": blob})
                    viols = [p for p in persistent[lid] if rng.random() < 0.85]
                    viols += [(COLLS[int(rng.integers(len(COLLS)))], int(SIZES[int(rng.integers(len(SIZES)))]))
                              for _ in range(int(rng.poisson(4)))]
                    slow = [float(1.05 + rng.exponential(0.4)) for _ in viols]
                    aid = conn.execute(insert(Analysis).returning(Analysis.id), {
                        "machine_id": mid, "library_id": lid, "campaign_id": cid, "alpha": 0.05,
                        "test": "mannwhitney", "fdr": False, "state": "done", "actor": "generator",
                        "created_at": night + timedelta(hours=1), "n_checked": len(COLLS) * len(SIZES) * 3,
                        "n_violations": len(viols), "max_slowdown": max(slow, default=None),
                        "summary": {"generated": True}}).scalar_one()
                    counts["analyses"] += 1
                    for (coll, size), sd in zip(viols, slow):
                        viol_rows.append({"analysis_id": aid, "collective": coll, "mockup": MOCKUPS[coll],
                                          "msize": size, "nprocs": 32, "default_time": 2e-5 * sd,
                                          "mockup_time": 2e-5, "slowdown": sd, "p_value": 0.001,
                                          "kind": "pattern", "ref_msize": None, "barrier_warning": False})
                    if day % 30 == 0:
                        ps = psets[lid]
                        pv_number[ps] += 1
                        conn.execute(insert(ProfileVersion), {
                            "profile_set_id": ps, "number": pv_number[ps], "analysis_id": aid,
                            "state": "published" if day < days - 30 else "candidate", "actor": "generator",
                            "files": {f"{c}_p32.prf": "# generated\n" for c, _ in viols[:3]}, "created_at": night,
                            "notes": ""})
                        counts["profile_versions"] += 1
                if series_rows:
                    conn.execute(insert(Series), series_rows)
                    counts["series"] += len(series_rows)
                if viol_rows:
                    conn.execute(insert(Violation), viol_rows)
                    counts["violations"] += len(viol_rows)
            if verbose and (day + 1) % 60 == 0:
                print(f"  ... {day + 1}/{days} nights", flush=True)
        from sqlalchemy.orm import Session
        from service.store.queries import refresh_overview
        refresh_overview(Session(bind=conn))      # the summary table the overview reads
        conn.exec_driver_sql("ANALYZE") if eng.dialect.name == "postgresql" else None
    eng.dispose()
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database-url")
    ap.add_argument("--scratch", action="store_true", help="create a scratch database on deploy/postgres.sh's server")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database (prints its URL)")
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--machines", type=int, default=4)
    ap.add_argument("--libraries", type=int, default=3)
    ap.add_argument("--no-migrate", action="store_true")
    a = ap.parse_args()
    if not a.database_url and not a.scratch:
        ap.error("give --database-url or --scratch")

    def run(url):
        if not a.no_migrate:
            service_common.migrate(url)
        print(generate(url, a.days, a.machines, a.libraries))
        print("database:", url)

    if a.scratch:
        with service_common.scratch_database("year", keep=a.keep) as url:
            run(url)
    else:
        run(a.database_url)


if __name__ == "__main__":
    main()
