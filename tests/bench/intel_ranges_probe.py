#!/usr/bin/env python3
"""Which preset Intel MPI runs under I_MPI_ADJUST_ALLREDUCE values with several message ranges, with and without
Intel's process-range suffix "@<pmin>-<pmax>", with preset 0 in a range, and under Intel's JSON tuning file
(I_MPI_TUNING: "coll=Allreduce" / "ppn=" / "comm_size=" / "comm_id=" / "msg_size=<upper bound>" / "ALLREDUCE=<preset>")
with and without a catch-all "msg_size=-1" entry and for another ppn: the NaN-payload fingerprint of MPI_Allreduce
(pgmpi-bench's check round, PGMPI_NATIVE_EVIDENCE=1) at 8 B - 1 MiB, 2 ranks, each value in an mpirun of its
own, named by the bare setting whose fingerprint it matches (unset, 3 or 8).  The question behind it: can any
of Intel's two ways leave a message size to the library's own table while forcing a preset at another?

    .venv/bin/python tests/bench/intel_ranges_probe.py

Needs build/install/intelmpi (deploy/build-lib.sh intelmpi).  Prints the table and the load; asserts nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib" / "python"))
from pgmpi_formats import mpi_libraries  # noqa: E402

SIZES = (8, 16, 32, 64, 512, 1024, 2048, 4096, 8192, 32768, 65536, 1048576)
VALUES = ("", "3", "8", "8:0-4095@2-2;3:4096-2147483647@2-2", "3:4096-2147483647@2-2;8:0-4095@2-2",
          "8:0-4095@1-2;3:4096-2147483647@1-2", "8:0-4095;3:4096-2147483647", "3:0-4095;8:4096-2147483647",
          "3:0-4095;8:4096-8191;3:8192-2147483647", "8:4096-8191",
          # preset 0 ("the library decides", Intel's documentation), alone and as a range
          "0", "0:0-2147483647", "0:0-4095;3:4096-2147483647", "3:0-4095;0:4096-2147483647",
          "3:4096-2147483647;0:0-4095", "8:4096-8191;0:0-4095;0:8192-2147483647")


def tuning_file(entries: dict, ppn: str = "ppn=2") -> dict:
    return {"coll=Allreduce": {ppn: {"comm_size=2": {"comm_id=-1": {
        f"msg_size={k}": {f"ALLREDUCE={q}": {}} for k, q in entries.items()}}}}}


# I_MPI_TUNING files: {label: JSON tree}; msg_size is an entry's upper bound, -1 every size beyond the others
FILES = {
    "json 4095:3": tuning_file({4095: 3}),
    "json 4095:3, -1:8": tuning_file({4095: 3, -1: 8}),
    "json 1024:8, 4095:3": tuning_file({1024: 8, 4095: 3}),
    "json 4095:0, -1:3": tuning_file({4095: 0, -1: 3}),
    "json ppn=4 -1:3 (no ppn=2 entry)": tuning_file({-1: 3}, ppn="ppn=4"),
}


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
        for label, tree in FILES.items():
            f = Path(tmp) / "tuning.json"
            f.write_text(json.dumps(tree))
            runs[label] = fingerprints({**base, "I_MPI_TUNING": str(f)}, Path(tmp))
    names = {"": "default", "3": "3", "8": "8"}

    def who(size, fp):
        return next((names[v] for v in ("", "3", "8") if runs[v][size] == fp), "other")
    print(f"{'I_MPI_ADJUST_ALLREDUCE or I_MPI_TUNING':45} " + " ".join(f"{s:>8}" for s in SIZES))
    for v in (*VALUES, *FILES):
        print(f"{v or '(unset)':45} " + " ".join(f"{who(s, runs[v][s]):>8}" for s in SIZES))
    print(f"# load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
