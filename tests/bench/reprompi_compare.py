#!/usr/bin/env python3
"""pgmpi-bench against a genuine ReproMPI `mpibenchmark` (built by you, outside this tree).

The two tools alternate mpirun by mpirun (R mpiruns each), same calls, sizes, MPI_BYTE, 2 ranks,
MPI_Barrier synchronisation, run-time = maximum over ranks in both, N measurements per (call, size).
Printed per (call, size): the median over mpiruns of each mpirun's median (µs) for every arm and the
ratio of each pgmpi-bench arm to ReproMPI; then, per pgmpi-bench arm, the stability of each mpirun
(for every arm: the median of each quarter of a cell's measurements against the cell's median: a regime switch
inside an mpirun shows as a quarter outside ±10 %).

  tests/bench/reprompi_compare.py --reprompi /path/to/mpibenchmark [--mpi openmpi] [--runs 5]
      [--mode barrier|window|roundtime] [--window-us 3000] [--arm 'label=extra pgmpi-bench args' ...]

--mode chooses the synchronisation of both tools (issue 34, the agreement per method):
  barrier    ReproMPI --proc-sync=MPI_Barrier (local run-times)      pgmpi-bench --proc-sync=mpi_barrier
  window     ReproMPI --clock-sync=HCA --proc-sync=window --window-size=W --runtime-type=global
             pgmpi-bench --proc-sync=window --window-size=W
  roundtime  ReproMPI --clock-sync=HCA --proc-sync=roundtime --rt-bench-time-ms=<large> --runtime-type=global
             (without --rt-bench-time-ms ReproMPI's time slot is 0 and it stops after one measurement)
             pgmpi-bench --proc-sync=roundtime
Both files are read by pgmpi_formats.results (ReproMPI's errorcode column: invalid window measurements dropped,
as pgmpi-bench drops its late ones; ReproMPI's round-time keeps late measurements: it defines no errorcodes).
The share of invalid measurements per tool and cell is printed next to the table.

Without --arm one pgmpi-bench arm runs with its defaults (plus the common arguments above); the mode's
synchronisation options come last, so an arm's --method=reprompi keeps them.
Use `uptime` before: figures taken under load > 1.2 are noise of other jobs.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLS = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "allgather": "MPI_Allgather"}


def parse_size(s: str) -> int:
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "KMG" else s) * mult


def mpirun(mpi: str, np: int) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


def env_for(mpi: str, exe: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGMPI", "SLURM_"))}
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    # ReproMPI's build puts libmpits.so next to its build tree, not on the rpath of every build
    libdirs = [str(p.parent) for p in Path(exe).resolve().parents[1].rglob("libmpits.so*")][:1]
    if libdirs:
        env["LD_LIBRARY_PATH"] = ":".join(libdirs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    return env


def rows(text: str, reprompi: bool) -> dict[tuple[str, int], list[float]]:
    """(call, bytes) -> run-times in execution order (ReproMPI with MPI_BYTE: count = bytes)."""
    if "#@procsync=window" in text or "#@procsync=roundtime" in text:
        return rows_read(text)
    out: dict[tuple[str, int], list[float]] = defaultdict(list)
    for line in text.splitlines():
        f = line.split()
        if not f or f[0].startswith("#") or f[0] == "test" or not f[0].startswith("MPI_"):
            continue
        if f[0] == "MPI_Barrier":
            continue
        if reprompi and len(f) >= 4:
            out[(f[0], int(f[2]))].append(float(f[3]))
        elif not reprompi and len(f) >= 5 and f[4] == "default":
            out[(f[0], int(f[2]))].append(float(f[3]))
    return out


def rows_read(text: str) -> dict[tuple[str, int], list[float]]:
    """The valid measurements of the default, through the project's reader (errorcode columns, global clocks)."""
    sys.path.insert(0, str(ROOT / "lib" / "python"))
    from pgmpi_formats.results import parse_text
    r = parse_text(text, "compare.txt")
    out: dict[tuple[str, int], list[float]] = defaultdict(list)
    d = r.algorithms.index("default") if "default" in r.algorithms else -1
    for t, m, x, a in zip(r.test.tolist(), r.msize.tolist(), r.runtime.tolist(), r.algorithm.tolist()):
        if r.tests[t] != "MPI_Barrier" and a == d:
            out[(r.tests[t], int(m))].append(x)
    return out


MODES = {
    "barrier": (["--proc-sync=MPI_Barrier"], ["--sync=mpi_barrier"]),
    "window": (["--clock-sync=HCA", "--proc-sync=window", "--runtime-type=global"], ["--proc-sync=window"]),
    "roundtime": (["--clock-sync=HCA", "--proc-sync=roundtime", "--rt-bench-time-ms=10000000",
                   "--runtime-type=global"], ["--proc-sync=roundtime"]),
}


def run(cmd: list[str], env: dict, timeout: float = 900) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {shlex.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reprompi", required=True,
                    help="path of ReproMPI's mpibenchmark; 'none': only the other arms (stability figures)")
    ap.add_argument("--pgmpi-bench", default=None, help="default: build/install/<mpi>/bin/pgmpi-bench")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--nrep", type=int, default=1000)
    ap.add_argument("--calls", default="allreduce,bcast,allgather")
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--min-loop", action="store_true",
                    help="add two arms: tests/bench/min_loop.c (plain MPI) and the same loop with libpgmpitune "
                         "preloaded (the library's own cost, nothing forced)")
    ap.add_argument("--mode", choices=list(MODES), default="barrier")
    ap.add_argument("--window-us", type=float, default=3000, help="--mode window: the window of both tools")
    ap.add_argument("--arm", action="append", default=[],
                    help="'label=extra pgmpi-bench arguments' (repeatable); default: one arm 'pgmpi='")
    a = ap.parse_args()
    rp_sync, pg_sync = list(MODES[a.mode][0]), list(MODES[a.mode][1])
    if a.mode == "window":
        rp_sync.append(f"--window-size={a.window_us:g}")
        pg_sync.append(f"--window-size={a.window_us:g}")
    kept: dict[str, dict] = defaultdict(lambda: defaultdict(list))    # arm -> (call, size) -> valid share
    bench = a.pgmpi_bench or str(ROOT / "build/install" / a.mpi / "bin/pgmpi-bench")
    calls = [c.strip() for c in a.calls.split(",")]
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    arms = [("ReproMPI", None)] + [tuple(x.split("=", 1)) for x in (a.arm or ["pgmpi="])]
    if a.reprompi == "none":
        arms = arms[1:]
    loop = None
    if a.min_loop:
        loop = Path(tempfile.mkdtemp()) / "min_loop"
        subprocess.run([f"mpicc.{a.mpi}", "-O2", "-o", str(loop), str(ROOT / "tests/bench/min_loop.c")], check=True)
        arms += [("loop", "@loop"), ("loop+lib", "@loop+lib")]
    libtune = str(Path(bench).resolve().parents[1] / "lib" / "libpgmpitune.so")
    print(f"# uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    med: dict[str, dict] = {label: defaultdict(list) for label, _ in arms}
    quarters: dict[str, list] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.runs):
            for label, extra in arms:
                if extra is None:
                    cmd = mpirun(a.mpi, a.np) + [a.reprompi, "--calls-list=" + ",".join(CALLS[c] for c in calls),
                                                 "--msizes-list=" + ",".join(map(str, sizes)), f"--nrep={a.nrep}",
                                                 *rp_sync]
                    text = run(cmd, env_for(a.mpi, a.reprompi))
                elif extra.startswith("@loop"):
                    env = env_for(a.mpi, bench)
                    pre = ["-x", f"LD_PRELOAD={libtune}"] if a.mpi == "openmpi" else ["-env", "LD_PRELOAD", libtune]
                    cmd = mpirun(a.mpi, a.np) + (pre if extra == "@loop+lib" else []) + [
                        str(loop), str(a.nrep), ",".join(calls), ",".join(map(str, sizes))]
                    text = run(cmd, env)
                else:
                    out = Path(tmp) / f"{label}-{r}.txt"
                    cmd = mpirun(a.mpi, a.np) + [bench, "--calls=" + ",".join(calls), "--algorithms=default",
                                                 "--sizes=" + ",".join(map(str, sizes)), f"--nrep={a.nrep}",
                                                 f"--output={out}"] + shlex.split(extra) + pg_sync
                    run(cmd, env_for(a.mpi, bench))
                    text = out.read_text()
                for key, xs in rows(text, extra is None or extra.startswith("@loop")).items():
                    kept[label][key].append(len(xs) / a.nrep)
                    m = statistics.median(xs)
                    med[label][key].append(m)
                    q = len(xs) // 4
                    if q >= 5:
                        qs = [statistics.median(xs[i * q:(i + 1) * q]) / m for i in range(4)]
                        quarters[label].append((r, key, qs))
            print(f"# mpirun round {r + 1}/{a.runs} done", file=sys.stderr)
    print(f"\n# valid measurements per cell (median share over mpiruns): " + "; ".join(
        f"{lb} " + " ".join(f"{k[0][4:]}/{k[1]}={statistics.median(v) * 100:.0f}%" for k, v in kv.items())
        for lb, kv in kept.items()))
    print(f"\n{a.mpi}, {a.np} ranks, MPI_BYTE, mode {a.mode} (ReproMPI {' '.join(rp_sync)}; pgmpi-bench "
          f"{' '.join(pg_sync)}), nrep {a.nrep}, {a.runs} mpiruns per arm, alternating;"
          " median of per-mpirun medians (us); ratio = arm / ReproMPI; [min-max of per-mpirun medians];"
          " paired = median over rounds of (arm / ReproMPI) within a round (adjacent mpiruns share the VM's"
          " regime, so this is the estimate that regime switches between rounds do not move)")
    head = "| call, size | ReproMPI | " + " | ".join(f"{lb} | ratio | paired" for lb, e in arms if e is not None) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    worst, worst_paired = defaultdict(float), defaultdict(float)
    for c in calls:
        for n in sizes:
            key = (CALLS[c], n)
            ref = med.get("ReproMPI", {}).get(key)
            if not ref:
                for lb, e in arms:
                    xs = med[lb].get(key, [])
                    if xs:
                        print(f"# {lb} {CALLS[c][4:]} {n} B: {statistics.median(xs) * 1e6:.3f} us "
                              f"[{min(xs) * 1e6:.2f}-{max(xs) * 1e6:.2f}]")
                continue
            rm = statistics.median(ref)
            cells = [f"{CALLS[c][4:]} {n} B", f"{rm * 1e6:.3f} [{min(ref) * 1e6:.2f}-{max(ref) * 1e6:.2f}]"]
            for lb, e in arms:
                if e is None:
                    continue
                xs = med[lb].get(key, [])
                if not xs:
                    cells += ["-", "-", "-"]
                    continue
                pm = statistics.median(xs)
                paired = statistics.median(x / y for x, y in zip(xs, ref)) if len(xs) == len(ref) else float("nan")
                worst[lb] = max(worst[lb], abs(pm / rm - 1))
                worst_paired[lb] = max(worst_paired[lb], abs(paired - 1))
                cells += [f"{pm * 1e6:.3f} [{min(xs) * 1e6:.2f}-{max(xs) * 1e6:.2f}]", f"{pm / rm:.2f}", f"{paired:.2f}"]
            print("| " + " | ".join(cells) + " |")
    for lb in worst:
        print(f"# {lb}: largest |ratio - 1| = {worst[lb] * 100:.1f} %, largest |paired - 1| = "
              f"{worst_paired[lb] * 100:.1f} %")
    # a switch inside an mpirun, per arm; "shared" = an arm that does not run pgmpi-bench (ReproMPI or the
    # plain loop) switched in the same round at the same (call, size): the machine, not the tool
    switched = {lb: {(r, k) for r, k, q in qs if max(abs(x - 1) for x in q) > 0.10} for lb, qs in quarters.items()}
    independent = [lb for lb, e in arms if e is None or e == "@loop"]
    for lb, qs in quarters.items():
        bad = [(r, k, q) for r, k, q in qs if (r, k) in switched[lb]]
        shared = [(r, k) for r, k, _q in bad
                  if any((r, k) in switched.get(o, set()) for o in independent if o != lb)]
        print(f"# {lb}: quarter medians within ±10 % of the cell median in {len(qs) - len(bad)} of {len(qs)} "
              f"(mpirun, call, size) cells; of the {len(bad)} switches, {len(shared)} shared with "
              f"{' or '.join(o for o in independent if o != lb) or '-'} in the same round")
        for r, k, q in bad:
            tag = "  (shared)" if (r, k) in shared else ""
            print(f"#   mpirun {r} {k[0]} {k[1]} B: quarters/median = " + " ".join(f"{x:.2f}" for x in q) + tag)
    print(f"# uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
