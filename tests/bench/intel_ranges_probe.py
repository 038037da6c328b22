#!/usr/bin/env python3
"""Which preset Intel MPI runs under I_MPI_ADJUST_ALLREDUCE values with several message ranges, with and without
Intel's process-range suffix "@<pmin>-<pmax>": the NaN-payload fingerprint of MPI_Allreduce (pgmpi-bench's check
round, PGMPI_NATIVE_EVIDENCE=1) at 2, 4 and 8 KiB, 2 ranks, each value in an mpirun of its own, named by the
bare preset whose fingerprint it matches.

    .venv/bin/python tests/bench/intel_ranges_probe.py

Needs build/install/intelmpi (deploy/build-lib.sh intelmpi).  Prints the table and the load; asserts nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib" / "python"))
from pgmpi_formats import mpi_libraries  # noqa: E402

SIZES = (2048, 4096, 8192)
VALUES = ("", "3", "8", "8:0-4095@2-2;3:4096-2147483647@2-2", "3:4096-2147483647@2-2;8:0-4095@2-2",
          "8:0-4095@1-2;3:4096-2147483647@1-2", "8:0-4095;3:4096-2147483647", "3:0-4095;8:4096-2147483647",
          "3:0-4095;8:4096-8191;3:8192-2147483647", "8:4096-8191")


def fingerprints(env: dict, work: Path) -> dict[int, str]:
    out = work / "fp.txt"
    out.unlink(missing_ok=True)
    subprocess.run(["mpirun", "-np", "2", str(ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"),
                    "--calls=allreduce", f"--sizes={','.join(map(str, SIZES))}", "--nrep=3", "--no-barrier-rows",
                    "--algorithms=default", f"--output={out}"], env=env, cwd=work, check=True, capture_output=True)
    got = {}
    for line in out.read_text().splitlines():
        if line.startswith("#@pgmpi fingerprint MPI_Allreduce "):
            f = line.split()
            got[int(f[3])] = f[5]
    return got


def main() -> None:
    lib = mpi_libraries.mpi_library("intelmpi")
    base = {k: v for k, v in lib.environment().items() if not k.startswith("I_MPI_ADJUST_")}
    base.update(PGMPI_NATIVE_EVIDENCE="1")
    base.pop("PGMPITUNE_NATIVE_IMPI", None)
    print(f"# Intel MPI {lib.version}, 2 ranks, MPI_Allreduce fingerprints; load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = {v: fingerprints({**base, **({"I_MPI_ADJUST_ALLREDUCE": v} if v else {})}, Path(tmp)) for v in VALUES}
    names = {"": "default", "3": "3", "8": "8"}

    def who(size, fp):
        return next((names[v] for v in ("", "3", "8") if runs[v][size] == fp), "other")
    print(f"{'I_MPI_ADJUST_ALLREDUCE':45} " + " ".join(f"{s:>8}" for s in SIZES))
    for v in VALUES:
        print(f"{v or '(unset)':45} " + " ".join(f"{who(s, runs[v][s]):>8}" for s in SIZES))
    print(f"# load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
