#!/usr/bin/env python3
"""Could a native.impi fill the sizes where Intel MPI's default won with a preset of the default's fingerprint
(issue 35; scheduler/README.md, "Filling the default's sizes")?  Only if such a preset gave the default's
results.  This runs tests/bench/intel_fill_probe.c once under the default and once per preset of
I_MPI_ADJUST_ALLREDUCE (1-max, without ranges), at each process count and size, and prints per cell:
how many presets share the default's fingerprint (the NaN-payload signature pgmpi-bench records), and how
many of those give other result bits than the default on doubles of mixed signs and exponents (a sum whose
bits depend on the association order), and how many presets give the default's bits with another fingerprint.

    .venv/bin/python tests/bench/intel_fill_probe.py [--np 2,4] [--sizes 8,64,1024,4096,65536,1048576]

Needs the intelmpi row of deploy/mpi-libraries.tsv installed.  More ranks than cores: ranks yield when idle.
Prints the figures and the load; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib" / "python"))
from pgmpi_formats import impi_adjust, mpi_libraries  # noqa: E402

HERE = Path(__file__).resolve().parent
YIELD = {"I_MPI_PIN": "0", "I_MPI_THREAD_YIELD": "2", "I_MPI_SPIN_COUNT": "1"}


def run(lib, exe: Path, np: int, sizes: list[int], preset: int | None) -> dict[int, tuple[str, str]]:
    env = {k: v for k, v in lib.environment().items() if not k.startswith("I_MPI_ADJUST_")}
    env.update(YIELD)
    if preset is not None:
        env["I_MPI_ADJUST_ALLREDUCE"] = str(preset)
    p = subprocess.run([str(lib.mpirun), "-np", str(np), str(exe), *map(str, sizes)], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"preset {preset} np {np}: {p.stderr[-800:]}")
    out = {}
    for line in p.stdout.splitlines():
        n, fp, bits, _agree = line.split()
        out[int(n)] = (fp, bits)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", default="2,4")
    ap.add_argument("--sizes", default="8,64,1024,4096,65536,1048576")
    a = ap.parse_args()
    lib = mpi_libraries.mpi_library("intelmpi")
    if not lib.installed:
        raise SystemExit(f"intelmpi: {lib.prefix} missing (deploy/install-mpis.sh)")
    top = impi_adjust.discover(lib.environment()).presets["allreduce"]
    sizes = [int(s) for s in a.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="fillprobe"))
    exe = work / "intel_fill_probe"
    subprocess.run([str(Path(lib.prefix) / "bin" / "mpicc"), "-O2", "-o", str(exe), str(HERE / "intel_fill_probe.c"),
                    "-lm"], env=lib.environment(), check=True)
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{'np':>3} {'bytes':>8}  {'fp = default':>12}  {'of which other bits':>19}  {'same bits, other fp':>19}")
    for np in (int(x) for x in a.np.split(",")):
        default = run(lib, exe, np, sizes, None)
        presets = {k: run(lib, exe, np, sizes, k) for k in range(1, top + 1)}
        for n in sizes:
            fp0, bits0 = default[n]
            same_fp = [k for k, r in presets.items() if r[n][0] == fp0]
            other_bits = [k for k in same_fp if presets[k][n][1] != bits0]
            bits_only = [k for k, r in presets.items() if r[n][1] == bits0 and r[n][0] != fp0]
            print(f"{np:>3} {n:>8}  {len(same_fp):>4} of {top:<5}  {len(other_bits):>4} {str(other_bits[:8]):>14}  "
                  f"{len(bits_only):>4} {str(bits_only[:8]):>14}")
    print(f"load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
