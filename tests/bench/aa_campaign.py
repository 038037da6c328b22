#!/usr/bin/env python3
"""Real A/A campaign with the control arm: the default measured twice, interleaved, on real MPI (prints figures).

R mpiruns of pgmpi-bench (2 ranks) measure 6 collectives x 6 sizes with `--algorithms=default,default_control`;
the analysis (paired_t, the default) tests default_control against the default like any mock-up. Printed: the
control's false-alarm rate (flagged / tested at alpha, no adjustment), the number of control discoveries with
BH across the campaign (the goal: <= alpha and 0), the null ratio spread and the machine load.

Usage: .venv/bin/python tests/bench/aa_campaign.py [--mpi openmpi|mpich] [--runs 10] [--nrep 50] [--keep DIR]
Needs pgmpi-bench with the control label (it refuses unknown algorithms: the script stops with its message).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.reader import read_files  # noqa: E402

CALLS = "MPI_Allreduce,MPI_Bcast,MPI_Allgather,MPI_Reduce,MPI_Scan,MPI_Alltoall"
SIZES = "8,64,1024,8192,65536,262144"


def mpirun(mpi: str) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "-n", "2"]
    return ["mpiexec.mpich", "-n", "2"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="mpich")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nrep", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--keep", type=Path, default=None, help="keep the raw files here")
    args = ap.parse_args()
    bench = ROOT / "build" / "install" / args.mpi / "bin" / "pgmpi-bench"
    if not bench.exists():
        sys.exit(f"no {bench}: run deploy/build-lib.sh {args.mpi}")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = args.keep or Path(tempfile.mkdtemp(prefix="aa-"))
    out.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    for r in range(args.runs):
        f = out / f"aa-{args.mpi}-{r}.txt"
        if f.exists():
            f.unlink()
        cmd = mpirun(args.mpi) + [str(bench), f"--calls={CALLS}", f"--sizes={SIZES}",
                                  "--algorithms=default,default_control", f"--nrep={args.nrep}",
                                  f"--mpirun-index={r}", "--campaign=aa", f"--output={f}"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            sys.exit(f"pgmpi-bench failed (exit {p.returncode}): {p.stderr.strip()[:500]}")
    rs = read_files(sorted(out.glob("aa-*.txt")))
    print(f"{args.mpi}: {args.runs} mpiruns x 6 collectives x 6 sizes, nrep {args.nrep}, 2 ranks; "
          f"load {load0:.2f} -> {os.getloadavg()[0]:.2f}{' (loaded machine)' if load0 > 1.2 else ''}")
    for fdr in (False, True):
        a = analyze(rs, alpha=args.alpha, fdr=fdr, kinds=("pattern",))
        c = a.control
        print(f"  {'BH  ' if fdr else 'raw '}: {c.line()}; false-alarm rate {c.false_alarm_rate:.3f}")
    if args.keep is None:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
