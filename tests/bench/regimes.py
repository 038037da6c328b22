#!/usr/bin/env python3
"""What switches a mock-up between cost regimes from one mpirun to the next (prints per-mpirun figures).

MPICH 4.0.2 here is built with ch4:ucx (`mpirun.mpich -info`), so its shared-memory transfers go through UCX,
whose protocol (eager copy through shared memory, or rendezvous: CMA process_vm_readv / posix shm zero-copy) is
chosen per message from thresholds UCX sets at start-up. Each condition runs N mpiruns of pgmpi-bench (2 ranks)
measuring one collective at one size with `--algorithms=default,default_control,<mock-up>` and prints, per
mpirun, the medians of default and mock-up and their paired ratio default / mock-up; then how the mpiruns split
(service/analysis/regimes.py) and the machine load.

Usage: .venv/bin/python tests/bench/regimes.py [--mpi mpich] [--call bcast] [--size 16384]
       [--mock bcast_as_scatter_allgather] [--runs 8] [--nrep 100] [--cond plain bind ...]
Conditions: plain; align_page / align_64 (pgmpi-bench --buffer-align); bind (-bind-to core); rndv_low / rndv_high (UCX_RNDV_THRESH=1k / 1m: always / never
rendezvous); tls_posix (UCX_TLS=self,posix: no CMA); tls_cma (self,posix,cma); zcopy_off
(UCX_ZCOPY_THRESH=inf); the same size alone or in a campaign-like mix (--mix).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from pgmpi_formats.results import read_files  # noqa: E402
from service.analysis.regimes import split_regimes  # noqa: E402
from service.analysis.stats import build_cells  # noqa: E402

CONDITIONS = {
    "plain": ({}, []),
    "bind": ({}, ["-bind-to", "core"]),
    "rndv_low": ({"UCX_RNDV_THRESH": "1k"}, []),
    "rndv_high": ({"UCX_RNDV_THRESH": "1m"}, []),
    "tls_posix": ({"UCX_TLS": "self,posix"}, []),
    "tls_sysv": ({"UCX_TLS": "self,sysv"}, []),
    "tls_cma": ({"UCX_TLS": "self,posix,cma"}, []),
    "zcopy_off": ({"UCX_ZCOPY_THRESH": "inf"}, []),
    "align_page": ({}, [], ["--buffer-align=page"]),
    "align_64": ({}, [], ["--buffer-align=64"]),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="mpich")
    ap.add_argument("--call", default="bcast")
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--mock", default="bcast_as_scatter_allgather")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--nrep", type=int, default=100)
    ap.add_argument("--mix", action="store_true", help="measure 8 B..128 KiB around the size, every mock-up")
    ap.add_argument("--context", choices=["alone", "demo", "tuned"], default="alone",
                    help="alone: the call at the size, default vs mock-up; demo: make demo's first group "
                         "(allreduce,bcast,reduce,scan at 8,1024,16384,131072, every algorithm, nrep 30); tuned: "
                         "a validation job (default vs tuned interleaved, a profile redirecting the size)")
    ap.add_argument("--cond", nargs="+", default=["plain", "bind", "rndv_low", "rndv_high", "tls_posix"])
    args = ap.parse_args()
    bench = ROOT / "build" / "install" / args.mpi / "bin" / "pgmpi-bench"
    launcher = ["mpirun.openmpi", "-np", "2"] if args.mpi == "openmpi" else ["mpirun.mpich", "-np", "2"]
    sizes = f"8,1024,{args.size},131072" if args.mix else str(args.size)
    algs = "all,default_control" if args.mix else f"default,default_control,{args.mock}"
    calls, prof_env = args.call, {}
    if args.context == "demo":
        calls, sizes, algs, args.nrep = "allreduce,bcast,reduce,scan", "8,1024,16384,131072", "all,default_control", 30
    elif args.context == "tuned":
        from pgmpi_formats.collectives import by_key
        from pgmpi_formats.prf import format_prf
        pdir = Path(tempfile.mkdtemp(prefix="regimes-prf-"))
        (pdir / f"{args.call}_p2.prf").write_text(format_prf(by_key(args.call).mpi_name, 2,
                                                             [(args.size, args.size, args.mock)]))
        # the sizes a demo validation job measures: the range and its neighbours 1 KiB and 128 KiB
        sizes, algs, prof_env = f"1024,{args.size},131072", "default,tuned", {
            "PGMPITUNE_PROFILE_DIR": str(pdir)}
        args.mock = "tuned"
    for cond in args.cond:
        env_add, extra, bench_extra = (CONDITIONS[cond] + ([],))[:3]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **env_add, **prof_env)
        load0 = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.runs):
                out = Path(tmp) / f"r{r}.txt"
                cmd = launcher + extra + [str(bench), f"--calls={calls}", f"--sizes={sizes}",
                                          f"--algorithms={algs}", f"--nrep={args.nrep}", f"--mpirun-index={r}",
                                          f"--output={out}", *bench_extra]
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    print(f"{cond}: pgmpi-bench failed: {(p.stdout + p.stderr)[-300:]}")
                    break
            else:
                cells = build_cells(read_files([Path(tmp)]))
                med = {}
                for i in range(len(cells)):
                    alg = cells.algorithms[cells.alg[i]]
                    if cells.tests[cells.test[i]].lower().endswith(args.call) and int(cells.msize[i]) == args.size \
                            and alg in ("default", "default_control", args.mock):
                        for run, m in zip(cells.sample_runs(i), cells.sample(i)):
                            med.setdefault(alg, {})[int(run)] = float(m)
                runs = sorted(set(med.get("default", {})) & set(med.get(args.mock, {})))
                ratios = [med["default"][r] / med[args.mock][r] for r in runs]
                ctrl = [med["default"][r] / med["default_control"][r] for r in runs if r in med.get("default_control", {})] or [1.0]
                load1 = os.getloadavg()[0]
                lab = " (loaded machine)" if max(load0, load1) > 1.2 else ""
                print(f"{cond:10s} [{args.context}] {' '.join([*(f'{k}={v}' for k, v in env_add.items()), *extra, *bench_extra]) or '-'}; "
                      f"load {load0:.2f}->{load1:.2f}{lab}")
                print("   default us: " + " ".join(f"{1e6 * med['default'][r]:6.1f}" for r in runs))
                print("   mock-up us: " + " ".join(f"{1e6 * med[args.mock][r]:6.1f}" for r in runs))
                print("   ratio d/m : " + " ".join(f"{x:6.2f}" for x in ratios)
                      + f"   control ratio {min(ctrl):.2f}-{max(ctrl):.2f}")
                print("   " + split_regimes(ratios).line())
                sys.stdout.flush()


if __name__ == "__main__":
    main()
