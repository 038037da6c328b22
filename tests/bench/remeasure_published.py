#!/usr/bin/env python3
"""Re-measure a published profile set independently: default vs tuned interleaved in 7 fresh mpiruns (prints).

For every redirected range of the .prf files in PROFILE_DIR (e.g. a demo's profiles/<machine>/mpich-<v>/current)
pgmpi-bench measures the range's ends and middle with `--algorithms=default,tuned` and PGMPITUNE_PROFILE_DIR set,
2 ranks; per size the median over mpiruns of default/tuned from the same mpirun, and the per-mpirun ratios.
A published range is slower than the default when that median is < 1.

Usage: .venv/bin/python tests/bench/remeasure_published.py PROFILE_DIR [--mpi mpich] [--runs 7] [--nrep 100]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from service.analysis.profiles import parse_prf  # noqa: E402
from service.analysis.validation import figures  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile_dir", type=Path)
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="mpich")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--nrep", type=int, default=100)
    args = ap.parse_args()
    bench = ROOT / "build" / "install" / args.mpi / "bin" / "pgmpi-bench"
    ranges = []
    for f in sorted(args.profile_dir.glob("*.prf")):
        prf = parse_prf(f.read_text(), str(f))
        for lo, hi, alg in prf["ranges"]:
            if alg != "default":
                mid = int(round((lo * hi) ** 0.5)) if lo > 0 else hi // 2
                ranges.append((prf["mpi_name"], sorted({lo, mid, hi}), alg, (lo, hi)))
    if not ranges:
        sys.exit(f"{args.profile_dir}: no redirected range")
    launcher = ["mpirun.openmpi", "-n", "2"] if args.mpi == "openmpi" else ["mpiexec.mpich", "-n", "2"]
    env = dict(os.environ, PGMPITUNE_PROFILE_DIR=str(args.profile_dir.resolve()), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    calls = sorted({r[0] for r in ranges})
    sizes = sorted({s for r in ranges for s in r[1]})
    load0 = os.getloadavg()[0]
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"re-{i}.txt"
            cmd = launcher + [str(bench), f"--calls={','.join(calls)}", f"--sizes={','.join(map(str, sizes))}",
                              "--algorithms=default,tuned", f"--nrep={args.nrep}", f"--mpirun-index={i}",
                              f"--output={out}"]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                sys.exit(f"pgmpi-bench failed: {p.stderr.strip()[:400]}")
            files.append(("paired", out.read_text()))
    figs = {(f["collective"], f["msize"]): f for f in figures(files, 2)}
    print(f"{args.profile_dir}: {args.runs} mpiruns, nrep {args.nrep}, 2 ranks, {args.mpi}; load {load0:.2f} -> "
          f"{os.getloadavg()[0]:.2f}{' (loaded machine)' if load0 > 1.2 else ''}")
    worst = None
    for name, ss, alg, (lo, hi) in ranges:
        for s in ss:
            f = next((v for (c, m), v in figs.items() if m == s and name.lower().endswith(c)), None)
            if f is None:
                continue
            worst = f["speedup"] if worst is None else min(worst, f["speedup"])
            print(f"  {name} {lo}-{hi} -> {alg}: {s} B default/tuned {f['speedup']:.2f}x (per mpirun "
                  + ", ".join(f"{r:.2f}" for r in f["run_ratios"]) + ")")
    print(f"  slowest published point: {worst:.2f}x ({'SLOWER than the default' if worst < 1 else 'not slower'})")


if __name__ == "__main__":
    main()
