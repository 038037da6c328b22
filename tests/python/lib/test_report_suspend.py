"""pgmpitune_report_suspend (pgmpitune.h): while suspended, calls are not counted in the #@pgmpi report, what
was counted before stays, counting resumes where it was, and the report is printed at MPI_Finalize even when
the program ends suspended. pgmpi-bench suspends the report inside its timed loops (lib/bench/README.md,
"Output"); that the timed calls then take an application's path (no PMPI_Type_size) is checked on the call
trace in tests/python/bench/test_bench_vs_min_loop.py."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("pgmpi_root_conftest_suspend", Path(__file__).parents[1] / "conftest.py")
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)
mpi_install, mpirun_cmd = _root.mpi_install, _root.mpirun_cmd

pytestmark = pytest.mark.mpi

# 8 B: 1 counted call, then 3 suspended; 16 B: 2 counted after resuming, then 4 suspended, and the program
# ends suspended. Each rank checks its data and the return values of the switch.
APP = r"""
#include <mpi.h>
#include <stdio.h>
#include "pgmpitune.h"
static int bad;
static void bcasts(int n, int times, int r) {
    char b[16];
    for (int i = 0; i < times; i++) {
        for (int k = 0; k < n; k++) b[k] = (char)(r == 0 ? 7 : 1);
        MPI_Bcast(b, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (int k = 0; k < n; k++) bad += b[k] != 7;
    }
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    bcasts(8, 1, r);
    bad += pgmpitune_report_suspend(1) != 0;
    bcasts(8, 3, r);
    bad += pgmpitune_report_suspend(0) != 1;
    bcasts(16, 2, r);
    bad += pgmpitune_report_suspend(1) != 0;
    bcasts(16, 4, r);
    int tb; PMPI_Allreduce(&bad, &tb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) printf("app: wrong %d\n", tb);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
"""


def test_suspended_calls_are_not_counted_and_the_report_still_comes_out(mpi, tmp_path):
    prefix = mpi_install(mpi)
    (tmp_path / "app.c").write_text(APP)
    exe = tmp_path / "app"
    subprocess.run([f"mpicc.{mpi}", "-O1", "-o", str(exe), str(tmp_path / "app.c"), f"-I{prefix}/include",
                    f"-L{prefix}/lib", "-lpgmpitune", f"-Wl,-rpath,{prefix}/lib"], check=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PGMPITUNE_VERBOSE="1")
    env.pop("PGMPITUNE_PROFILE_DIR", None)
    cmd = mpirun_cmd(mpi, 2) + (["-x", "PGMPITUNE_VERBOSE"] if mpi == "openmpi" else [])
    p = subprocess.run(cmd + [str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "app: wrong 0" in p.stdout, p.stdout
    counts = {(int(n), a): int(k) for n, a, k in re.findall(r"^#@pgmpi count MPI_Bcast (\d+) (\S+) (\d+)$",
                                                            p.stdout, re.M)}
    assert counts == {(8, "default"): 1, (16, "default"): 2}, p.stdout
