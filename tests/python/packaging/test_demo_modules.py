"""The modulefiles `make demo` writes (deploy/demo.py _write_modules), through real Lmod and both MPIs:
load, compile with `mpicc app.c -lpgmpitune`, run with the line the demo prints (as whoever runs the
tests: root under `make test`), and see in the report which algorithm served each call. With nothing
published the run is silent; the load says once how the ranks get the library."""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
APP = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int in[4096] = {1}, out[4096];
    MPI_Allreduce(in, out, 4096, MPI_INT, MPI_SUM, MPI_COMM_WORLD);     /* 16384 B */
    MPI_Allreduce(in, out, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD);       /* 64 B */
    int p; MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (out[0] != p) return 1;
    MPI_Finalize();
    return 0;
}
"""
PRF = """# pgtune profile
MPI_Allreduce
2 # nb. of processes
1 # nb. of mock-up impl.
1 allreduce_as_reduce_bcast
1 # nb. of ranges
16384 16384 1
"""


def _demo():
    spec = importlib.util.spec_from_file_location("pgmpi_demo", ROOT / "deploy" / "demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("mpi,version", [("openmpi", "4.1.4"), ("mpich", "4.0.2")])
def test_demo_module_compiles_links_and_runs_tuned(tmp_path, lmod_init, mpi, version):
    if not (ROOT / "build/install" / mpi / "lib/libpgmpitune.so").exists():
        pytest.fail(f"build/install/{mpi} missing: run `deploy/build-lib.sh all` (make test does)")
    demo = _demo()
    profiles = tmp_path / "profiles"
    tree = demo._write_modules(tmp_path, profiles, "box", {mpi: version})
    (tmp_path / "app.c").write_text(APP)
    script = f"""set -e
. {lmod_init}
module use {tree}
module load pgmpitunelib/{mpi}
cd {tmp_path}
mpicc app.c -o app -lpgmpitune
{demo.launch_line(mpi)}
"""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # nothing published yet: no warning, the report says the directory is missing; the load note once
    assert "warning" not in r.stderr and "#@pgmpi config profile_dir_missing 1" in r.stdout
    assert r.stderr.count("ranks are tuned only with the library in them") == 1
    assert "#@pgmpi alg MPI_Allreduce 16384 default" in r.stdout
    # published: the 16 KiB call goes to the mock-up, the 64 B call stays default
    current = profiles / "box" / f"{mpi}-{version}" / "current"
    current.mkdir(parents=True)
    (current / "allreduce_p2.prf").write_text(PRF)
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "#@pgmpi alg MPI_Allreduce 16384 allreduce_as_reduce_bcast" in r.stdout
    assert "#@pgmpi alg MPI_Allreduce 64 default" in r.stdout and "warning" not in r.stderr


def test_demo_says_what_it_reuses_and_fresh_starts_a_new_campaign(tmp_path):
    """deploy/demo.py's choice of campaign from the agent's state: the first run measures `demo`, a second
    reuses it and says when it was measured and how many jobs completed, FRESH=1 starts demo-2."""
    from scheduler.state import State
    demo = _demo()
    assert demo._pick_campaign(tmp_path / "agent", fresh=False) == ("demo", None)
    st = State(tmp_path / "agent")
    with st.tx():
        st.ensure_campaign("demo", {}, None)
        st.add_job("demo", "openmpi-n1x2", {"launches": [{}, {}]}, kind="measure")
        st.add_job("demo", "mpich-n1x2", {"launches": [{}]}, kind="measure")
        st.update_job("demo", "openmpi-n1x2", state="COMPLETED")
    st.close()
    name, reused = demo._pick_campaign(tmp_path / "agent", fresh=False)
    assert name == "demo" and reused.startswith("reusing campaign demo measured ")
    assert "(1 of 2 job(s) completed" in reused and "make demo FRESH=1" in reused
    assert demo._pick_campaign(tmp_path / "agent", fresh=True) == ("demo-2", None)
