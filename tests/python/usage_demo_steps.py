"""The usage demonstration of issue 33 on the virtual cluster, as steps shared by its test
(tests/python/scheduler/test_usage_demo.py) and its bench script (tests/bench/usage_demo.py): three small
applications with known collective mixes (tests/bench/usage_app.c), run as Slurm jobs after
`module load openmpi/4.1.4 pgmpitunelib` with usage recording switched on by the site file; then, once a
profile is published, again in paired, interleaved mpiruns: the library's default (an empty profile
directory) against the module's profile directory, in alternating order.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LMOD_INIT = "/usr/share/lmod/lmod/init/bash"

# name -> (iterations, mix): the mixes differ on purpose. solver and stats call MPI_Allreduce at 1 KiB (where
# the test planted a slow default), halo never does: the profile must speed up the first two and leave halo.
APPS = {
    "solver": (40, ["allreduce:1024:8", "allreduce:8:2"]),
    "halo": (40, ["bcast:4096:4", "allgather:64:1"]),
    "stats": (40, ["reduce:256:2", "allreduce:1024:2"]),
}
APP_LINE = re.compile(r"^usage_app (\S+) seconds=([0-9.]+) checksum=([0-9a-f]{16})$", re.M)


@dataclass(frozen=True)
class AppRun:
    app: str
    arm: str            # "first" (before any profile), "default" or "profile"
    pair: int
    seconds: float
    checksum: str
    text: str           # the run's whole output (the library's report with PGMPITUNE_VERBOSE=1)


def build_app(workdir: Path, mpi: str = "openmpi") -> Path:
    """usage_app linked with libpgmpitune of build/install/<mpi> (tuned mode, as a user links it)."""
    lib = ROOT / "build" / "install" / mpi / "lib"
    if not (lib / "libpgmpitune.so").exists():
        raise RuntimeError(f"{lib}/libpgmpitune.so missing: deploy/build-lib.sh {mpi}")
    exe = workdir / "usage_app"
    subprocess.run([f"mpicc.{mpi}", "-O2", "-o", str(exe), str(ROOT / "tests/bench/usage_app.c"), f"-L{lib}",
                    "-lpgmpitune", f"-Wl,-rpath,{lib}"], check=True)
    return exe


def job_script(workdir: Path, exe: Path, modulepaths: list[Path], modules: str, arms: list[tuple[str, int, str | None]],
               mpirun: str, apps: dict = APPS) -> Path:
    """A Slurm batch script: Lmod, `module load <modules>`, then for each (arm, pair, profile dir or None for
    the module's own) every app once, each mpirun's output in <workdir>/out/<app>-<arm>-<pair>.txt."""
    out = workdir / "out"
    out.mkdir(parents=True, exist_ok=True)
    lines = ["#!/bin/bash", "set -eu", f". {LMOD_INIT}"] + [f"module use {p}" for p in modulepaths] + \
        [f"module load {modules}", "export PGMPITUNE_VERBOSE=1"]
    for arm, pair, pdir in arms:
        for app, (iters, mix) in apps.items():
            over = f"-x PGMPITUNE_PROFILE_DIR={pdir} " if pdir else ""
            lines.append(f"{mpirun} {over}{exe} {app} {iters} {' '.join(mix)} > {out}/{app}-{arm}-{pair}.txt 2>&1")
    script = workdir / f"job-{arms[0][0]}.sh"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def paired_arms(pairs: int, empty_dir: Path) -> list[tuple[str, int, str | None]]:
    """default (an empty profile directory: the library's default) and profile (the module's directory, the
    published set), interleaved, the order alternating from pair to pair."""
    arms = []
    for i in range(pairs):
        both = [("default", i, str(empty_dir)), ("profile", i, None)]
        arms += both if i % 2 == 0 else both[::-1]
    return arms


def read_runs(workdir: Path, arms: list[tuple[str, int, str | None]], apps: dict = APPS) -> list[AppRun]:
    runs = []
    for arm, pair, _ in arms:
        for app in apps:
            text = (workdir / "out" / f"{app}-{arm}-{pair}.txt").read_text()
            m = APP_LINE.search(text)
            if not m or m.group(1) != app:
                raise RuntimeError(f"{app} {arm} {pair}: no result line in its output:\n{text[-2000:]}")
            runs.append(AppRun(app, arm, pair, float(m.group(2)), m.group(3), text))
    return runs


def sbatch(script: Path, env: dict, nodes: int = 2, ppn: int = 1, partition: str = "vc", timeout: int = 600) -> str:
    """Submit the script (its log next to it) and wait until it completed (polled every half second: sbatch
    --wait polls far more slowly); returns the job id."""
    log = script.with_suffix(".log")
    res = subprocess.run(["sbatch", "--parsable", f"-p{partition}", f"-N{nodes}", f"--ntasks-per-node={ppn}",
                          f"-o{log}", str(script)], capture_output=True, text=True, env=env, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"sbatch {script.name}: {res.stderr}")
    job = res.stdout.strip().split(";")[0]
    end = time.time() + timeout
    while time.time() < end:
        out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, env=env).stdout
        state = re.search(r"JobState=(\S+)", out)
        if state and state.group(1) not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            if state.group(1) != "COMPLETED":
                raise RuntimeError(f"job {job} ({script.name}): {state.group(1)}\n{log.read_text() if log.exists() else ''}")
            return job
        time.sleep(0.5)
    raise RuntimeError(f"job {job} ({script.name}) not finished after {timeout} s")
