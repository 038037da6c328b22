"""Publishing with the real pgmpitune-check, and an application run under the tuned library that uses
the published profile (its #@pgmpi report shows the redirected sizes) until a rollback."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from dash_helpers import mpirun_cmd, mpi_install
from service.profiles import publish as pub

pytestmark = pytest.mark.mpi

APP = r"""
#include <mpi.h>
#include <stdlib.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int sizes[] = {8, 1024, 65536, 262144};
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 4; i++) {
        int n = sizes[i];
        char *a = malloc(n), *b = malloc(n);
        for (int k = 0; k < n; k++) a[k] = (char)(rank + k);
        MPI_Allreduce(a, b, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        for (int k = 0; k < n; k++) if (b[k] != (char)((0 + k) | (1 + k))) { fprintf(stderr, "wrong result\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
        free(a); free(b);
    }
    MPI_Finalize();
    return 0;
}
"""

PROFILE = """# pgtune profile
#@pgmpi profile_version 1
#@pgmpi machine testbox
MPI_Allreduce
2
1
1 allreduce_as_reduce_bcast
1
1024 65536 1
"""


def test_real_checker_gates_publication(tmp_path, mpi):
    prefix = mpi_install(mpi)
    checker = str(prefix / "bin" / "pgmpitune-check")
    ok = pub.publish(tmp_path, "testbox", mpi, "x", {"allreduce_p2.prf": PROFILE}, actor="a", validated=True,
                     checker=checker)
    assert ok.check.ok and ok.version == 1
    bad = PROFILE.replace("allreduce_as_reduce_bcast", "allreduce_as_nothing")
    with pytest.raises(pub.PublishError, match=r"allreduce_p2.prf:\d+.*allreduce_as_nothing"):
        pub.publish(tmp_path, "testbox", mpi, "x", {"allreduce_p2.prf": bad}, actor="a", validated=True,
                    checker=checker)
    assert pub.current_version(ok.target) == 1
    assert (ok.target / "current" / "allreduce_p2.prf").read_text() == PROFILE


def run_app(mpi, exe: Path, profile_dir: Path) -> dict[int, str]:
    prefix = mpi_install(mpi)
    env = dict(os.environ, PGMPITUNE_PROFILE_DIR=str(profile_dir), PGMPITUNE_VERBOSE="1",
               LD_PRELOAD=str(prefix / "lib" / "libpgmpitune.so"))
    if mpi == "openmpi":
        cmd = mpirun_cmd(mpi, 2) + ["-x", "LD_PRELOAD", "-x", "PGMPITUNE_PROFILE_DIR", "-x", "PGMPITUNE_VERBOSE", str(exe)]
    else:
        cmd = mpirun_cmd(mpi, 2) + ["-genvall", str(exe)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    algs = {}
    for m in re.finditer(r"^#@pgmpi alg MPI_Allreduce (\d+) (\S+)", res.stdout + res.stderr, re.M):
        algs[int(m.group(1))] = m.group(2)
    assert algs, "no #@pgmpi report: is the library preloaded?\n" + res.stdout + res.stderr
    return algs


def test_application_uses_published_profile_until_rollback(tmp_path, mpi):
    prefix = mpi_install(mpi)
    src = tmp_path / "app.c"
    src.write_text(APP)
    exe = tmp_path / "app"
    subprocess.run([f"mpicc.{mpi}", "-O1", "-o", str(exe), str(src)], check=True)
    root = tmp_path / "root"
    checker = str(prefix / "bin" / "pgmpitune-check")
    first = pub.publish(root, "testbox", mpi, "x", {"allreduce_p2.prf": PROFILE.replace("1024 65536 1", "8 8 1")},
                        actor="admin", validated=True, checker=checker)
    current = first.target / "current"      # what the module sets PGMPITUNE_PROFILE_DIR to
    before = run_app(mpi, exe, current)
    assert before[8] == "allreduce_as_reduce_bcast"
    assert before[1024] == before[65536] == before[262144] == "default"
    pub.publish(root, "testbox", mpi, "x", {"allreduce_p2.prf": PROFILE}, actor="admin", validated=True,
                checker=checker)
    tuned = run_app(mpi, exe, current)
    assert tuned == {8: "default", 1024: "allreduce_as_reduce_bcast", 65536: "allreduce_as_reduce_bcast",
                     262144: "default"}
    pub.rollback(root, "testbox", mpi, "x", actor="admin")
    assert run_app(mpi, exe, current) == before
