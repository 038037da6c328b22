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
    # the native half's campaign (demo-native) is measured next to it and never taken for the demo's own
    st = State(tmp_path / "agent")
    with st.tx():
        st.ensure_campaign("demo-native", {}, None)
    st.close()
    assert demo._pick_campaign(tmp_path / "agent", fresh=False)[0] == "demo"
    assert demo._pick_campaign(tmp_path / "agent", fresh=True) == ("demo-2", None)


@pytest.mark.parametrize("mpi,version,name,var", [("openmpi", "4.1.4", "native.rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename"),
                                                  ("mpich", "4.0.2", "native.json", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE")])
def test_demo_module_points_the_library_at_a_published_native_file(tmp_path, lmod_init, mpi, version, name, var):
    """The demo's module sets the variables that make the MPI read the native file of its current set (the
    site's rule, pgmpitune-site.lua native_env_at), and follows a site file named by PGMPI_SITE_CONFIG (a
    native validation job stages its candidate so)."""
    demo = _demo()
    tree = demo._write_modules(tmp_path, tmp_path / "profiles", "box", {mpi: version})

    def loaded(env_extra=""):
        script = f". {lmod_init}\nmodule use {tree}\n{env_extra}module load pgmpitunelib/{mpi}\nenv\n"
        r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert var not in loaded()                                   # nothing published: nothing set
    for root, machine in ((tmp_path / "profiles", "box"), (tmp_path / "staged", "other")):
        v1 = root / machine / f"{mpi}-{version}" / "versions" / "1"
        v1.mkdir(parents=True)
        (v1 / name).write_text("1\n")
        (v1.parent.parent / "current").symlink_to("versions/1")
    env = loaded()
    assert env[var] == str(tmp_path / "profiles" / "box" / f"{mpi}-{version}" / "versions" / "1" / name)
    assert env["PGMPITUNE_PROFILE_DIR"] == str(tmp_path / "profiles" / "box" / f"{mpi}-{version}" / "current")
    (tmp_path / "site.conf").write_text(f"profile_root = {tmp_path / 'staged'}\nmachine = other\n")
    env = loaded(f"export PGMPI_SITE_CONFIG={tmp_path / 'site.conf'}\n")
    assert env[var] == str(tmp_path / "staged" / "other" / f"{mpi}-{version}" / "versions" / "1" / name)
