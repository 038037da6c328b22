#!/usr/bin/env python3
"""Each mpirun's level against its cells' figures, for pgmpi-bench and a genuine ReproMPI alike (issue 34).

Some mpiruns of this VM run every small call about 2x slower than others, whichever tool runs (round-time
Bcast 1 KiB 0.45-0.70 or 1.3-1.5 us per mpirun; the level flips every 0.3-6 s, tests/bench/level_watch.c:
it is the machine's, over time).  This script shows it: it runs the two
tools alternately, each mpirun with tests/bench/wtime_truth.c preloaded, whose MPI_Finalize times 1000
back-to-back barriers ("probe": their median on rank 0, after the tool's own work), and prints per mpirun
the probe next to the median of every cell.  If the cells' medians split with the probe in both tools, the
level is the mpirun's, not the tool's: the `levels` verdict of reprompi_compare.py classes mpiruns by it.

  tests/bench/level_probe.py --reprompi /path/to/mpibenchmark [--runs 6] [--mode roundtime|window|barrier]
      [--calls bcast,allgather] [--sizes 1K] [--nrep 300]
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_compare():
    spec = importlib.util.spec_from_file_location("reprompi_compare", HERE / "reprompi_compare.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reprompi", required=True, help="ReproMPI's mpibenchmark")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--runs", type=int, default=6, help="mpiruns per tool, alternating")
    ap.add_argument("--mode", default="roundtime", choices=["barrier", "window", "roundtime"])
    ap.add_argument("--window-us", type=float, default=3000)
    ap.add_argument("--calls", default="bcast,allgather")
    ap.add_argument("--sizes", default="1K")
    ap.add_argument("--nrep", type=int, default=300)
    a = ap.parse_args()
    m = load_compare()
    calls = [c.strip() for c in a.calls.split(",")]
    bad = [c for c in calls if c not in m.CALLS]
    if bad:
        ap.error(f"--calls: unknown {', '.join(bad)} (choices: {', '.join(m.CALLS)})")
    sizes = [m.parse_size(s) for s in a.sizes.split(",")]
    bench = str(m.ROOT / "build/install" / a.mpi / "bin/pgmpi-bench")
    truth = m.build_truth(a.mpi)
    rp_sync, pg_sync = m.syncs(a.mode, a.window_us)
    print(f"# {m.uptime()}")
    print(f"{a.mpi}, 2 ranks, mode {a.mode}, nrep {a.nrep}; per mpirun: the probe (median of 1000 barriers at "
          f"MPI_Finalize, us) and each cell's median (us)")
    print("| round | tool | probe us | " + " | ".join(f"{m.CALLS[c][4:]} {n} B" for c in calls for n in sizes) + " |")
    print("|---|---|---|" + "---|" * (len(calls) * len(sizes)))
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.runs):
            for tool in (("pgmpi-bench", "ReproMPI") if r % 2 == 0 else ("ReproMPI", "pgmpi-bench")):
                tf = Path(tmp) / f"truth-{tool}-{r}.txt"
                tenv = {"LD_PRELOAD": str(truth), "WTIME_TRUTH_FILE": str(tf)}
                pre = m.rank_env(a.mpi, tenv)
                if tool == "ReproMPI":
                    text = m.run(m.mpirun(a.mpi, 2) + pre + [a.reprompi, "--calls-list=" + ",".join(
                        m.CALLS[c] for c in calls), "--msizes-list=" + ",".join(map(str, sizes)),
                        f"--nrep={a.nrep}", *rp_sync], m.env_for(a.mpi, a.reprompi))
                else:
                    out = Path(tmp) / f"pgmpi-{r}.txt"
                    m.run(m.mpirun(a.mpi, 2) + pre + [bench, "--calls=" + ",".join(calls), "--algorithms=default",
                                                      "--sizes=" + ",".join(map(str, sizes)), f"--nrep={a.nrep}",
                                                      f"--output={out}"] + pg_sync, m.env_for(a.mpi, bench))
                    text = out.read_text()
                got = m.rows(text, tool == "ReproMPI")
                cells = [got.get((m.CALLS[c], n), []) for c in calls for n in sizes]
                print(f"| {r + 1} | {tool} | {m.probe_of(tf) * 1e6:.3f} | " + " | ".join(
                    f"{statistics.median(xs) * 1e6:.3f}" if xs else "-" for xs in cells) + " |", flush=True)
    print(f"# {m.uptime()}")


if __name__ == "__main__":
    main()
