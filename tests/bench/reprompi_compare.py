#!/usr/bin/env python3
"""pgmpi-bench against a genuine ReproMPI `mpibenchmark` (built by you, outside this tree).

The two tools alternate mpirun by mpirun (R mpiruns each), same calls, sizes, MPI_BYTE, 2 ranks,
MPI_Barrier synchronisation, run-time = maximum over ranks in both, N measurements per (call, size).
Printed per (call, size): the median over mpiruns of each mpirun's median (µs) for every arm and the
ratio of each pgmpi-bench arm to ReproMPI; then, per pgmpi-bench arm, the stability of each mpirun
(for every arm: the median of each quarter of a cell's measurements against the cell's median: a regime switch
inside an mpirun shows as a quarter outside ±10 %).

  tests/bench/reprompi_compare.py --reprompi /path/to/mpibenchmark [--mpi openmpi] [--runs 5]
      [--mode barrier,roundtime,window] [--window-us 3000] [--arm 'label=extra pgmpi-bench args' ...]
      [--no-reasons] [--no-clock] [--where one-node|cluster] [--cells mode:call:size,...]
  --cells reruns only the cells named (e.g. issue 34's last five: 'roundtime:bcast:1K,roundtime:bcast:1M,
  roundtime:allgather:1K,window:allreduce:8,window:allreduce:1K'): each mode named measures the calls x sizes
  of its cells, one mpirun per arm and round with the same jobs in both tools, and its tables show only them.
  --where cluster runs every arm with srun -N<np>, one rank per virtual node of deploy/cluster.sh (the
  shared cluster; TCP between the nodes), so the clock control shows each tool's global clock across nodes.

The last table per method is the agreement table of issue 34: per (call, size) the paired ratio
pgmpi-bench / ReproMPI, whether it is within +-5 %, and for a cell outside the measured reason: the reason
controls below run in the same rounds, each changing one respect in which the two measurements differ;
a control whose paired ratio is within +-5 % where the plain comparison is not names the reason
(lib/bench/README.md, "Compared with ReproMPI") -- under one rule for every control (control_guard): each
tool the control runs anew (pgmpi-bench; both tools for fbox-off and short-wait) reproduces itself against
its repeat in the same rounds within +-5 %, and that plain repeat leaves the cell outside +-5 %; otherwise
the control's run may be one more draw of a cell that follows the mpiruns, and it names nothing (the
line shows "not named: ..." next to its ratio). Each cell's line says which control named it ("named by
..."); the run ends with a table per method: within, named (per control), undecided (A/A), no reason.
A cell that no control brings within +-5 % says "no measured reason" with every control's ratio.
  fbox-off    (Open MPI) both tools with OMPI_MCA_btl_vader_fbox_max=0, paired against each other: the
              shared-memory fast boxes, whose state the message history of each tool sets (8 B-1 KiB)
  zero-page   pgmpi-bench --buffer-touch=reprompi against the plain ReproMPI: ReproMPI leaves the send
              buffers of Allgather (Alltoall, Gather, ...) unwritten, backed by the kernel's zero page
  margin      (round-time) pgmpi-bench with --rt-multiplier=6 against the plain ReproMPI: about ReproMPI's
              margin (3 x mean of 10 barrier+Bcast against pgmpi-bench's 3 x slowest of 10 Allreduce), so about
              its wait before each measurement and its share of late starts; reaches a cell only where the
              margins differ (ReproMPI's >= 1.5x, margins_differ)
  lib-path    (window) ReproMPI with libpgmpitune preloaded, its report off (LD_PRELOAD, the ranks only) against
              pgmpi-bench once more: the call's path -- each timed call of pgmpi-bench runs libpgmpitune's entry
              point besides PMPI_<call> (ReproMPI: PMPI_<call> alone); pgmpi-bench sets the report on but
              suspends it inside its timed loops (pgmpitune_report_suspend), so no PMPI_Type_size and no count
              there (until 2026-11-26 both ran, and this control set PGMPITUNE_VERBOSE=1 to match)
  method      (window) pgmpi-bench --method=reprompi against the plain ReproMPI: ReproMPI's buffers (per cell,
              malloc'd, its initialisation) and no check round -- what pgmpi-bench does around the call
  short-wait  (window) both tools with a 200 us window: a measurement after milliseconds of waiting
              is slow on this VM whatever the clock (the 3 ms window's 8 B figures, 10-20 us)
  start-messages (window, round-time) pgmpi-bench --start-agreement=reprompi against the plain ReproMPI: the
              messages that agree on the start times -- ReproMPI's (window: rank 0's T0 by MPI_Bcast; round-time:
              MPI_Barrier, rank 0's start down a binomial tree of sends, a flag exchange after every measurement,
              its margin = 3 x the mean of 10 barrier+tree times) where pgmpi-bench sends one MPI_Allreduce(MAX)
              and no one-way message (the parity of one-way messages sets Open MPI's fast boxes, cause 3 of
              lib/bench/README.md); the same clock model, run-time and late rule
  clock       (window, round-time) each tool's global clock against the true offset between the ranks'
              MPI_Wtime (tests/bench/wtime_truth.c preloaded: ranks of one kernel and time namespace read one
              CLOCK_MONOTONIC, on one node and on the virtual cluster's nodes, --where cluster), ReproMPI's
              from its --verbose per-process rows, pgmpi-bench's from its "# clockmodel" lines; a table per
              mode with the valid shares and margins; names a cell when the two tools' errors differ by >= 5 %
              of the run-time and the paired ratio with each mpirun's error taken off is within +-5 %
  call-clock  (window, round-time) computed from the main arms' own mpiruns, no extra ones: tests/bench/call_clock.c
              preloaded with wtime_truth.c records every measured call's entry and exit per rank on CLOCK_MONOTONIC
              (one clock for the ranks of one kernel), so per measurement the arrival skew (max entry - min entry),
              the call's own time from the last arrival (max exit - max entry) and the true global time (max exit
              - min entry), whichever tool ran; names a cell "machine" when the own times differ by the same ratio
              as the reports (within +-5 % of it), or "start" when the own times agree within +-5 % and the skews
              differ by >= 5 % of the run-time in the reports' direction (the tool with the larger skew has the
              worse start); prints each tool's share of slow-level measurements (own > 1.5x the cell's fast floor)
  clock-error (window, round-time) computed, no extra mpiruns: the largest #@pgmpi clockcheck error of
              pgmpi-bench's mpiruns in that cell against the cell's run-time
  regime      each tool once more with the same command in the same rounds (pgmpi/again next to ReproMPI,
              ReproMPI/again next to pgmpi): names a cell only where a tool disagrees with its own repeat
              by more than +-5 % (paired) and the repeat agrees with the other tool within +-5 %. Not a
              difference of method: the cell's figure depends on which mpiruns fell into the machine's slow
              regime (Allreduce 1 MiB: 135-200 us or 740-960 us per mpirun, in both tools; lib/bench/README.md)

levels      computed from the main arms and the repeats (or the main arms alone, --no-reasons), no extra
              mpiruns: small calls run on one of two levels that flip every 0.3-6 s on this VM
              (tests/bench/level_watch.c), so a cell's mpiruns sit at one of two levels in both tools (round-time
              Bcast 1 KiB: about 0.45 or 1.2 us per mpirun, whichever tool) and a six-round median follows how
              many of each tool's mpiruns met each level; split at the largest step (>= 1.25x) between the
              sorted per-mpirun medians (at least 15 % of them on each side), it names the cell only where each
              tool has mpiruns on both levels, level by level the tools agree within +-5 %, and the tools'
              shares per level do not differ (Fisher's exact test, p >= 0.05; where they differ the tool may
              decide its level, and nothing is named)

A cell that nothing names is "undecided (A/A)" when a tool against its own repeat (the same command in the
same rounds) is itself outside +-5 % and at least as far from 1 as the two tools are from each other: the
machine's mpiruns cannot decide it to +-5 %; counted apart from the reasons (aa_spread).

--mode (one or a comma list, each a table of its own) chooses the synchronisation of both tools (issue 34, the agreement per method):
  barrier    ReproMPI --proc-sync=MPI_Barrier (local run-times)      pgmpi-bench --proc-sync=mpi_barrier
  window     ReproMPI --clock-sync=HCA --proc-sync=window --window-size=W --runtime-type=global
             pgmpi-bench --proc-sync=window --window-size=W
  roundtime  ReproMPI --clock-sync=HCA --proc-sync=roundtime --rt-bench-time-ms=20000 --runtime-type=global
             (without --rt-bench-time-ms ReproMPI's time slot is 0 and it stops after one measurement; it
             repeats every late measurement, so under load a job would run for ever: 20 s per (call, size)
             bounds it, a quiet job takes well under a second, and a job cut short shows as a valid share
             below 100 %)
             pgmpi-bench --proc-sync=roundtime
Both files are read by pgmpi_formats.results (ReproMPI's errorcode column: invalid window measurements dropped,
as pgmpi-bench drops its late ones; ReproMPI's round-time writes no errorcodes because it repeats a measurement
that a rank started late -- round_time_sync.c returns REPROMPI_INVALID_MEASUREMENT and the loop does not count it --
so its file holds nrep valid ones, where pgmpi-bench's holds nrep minus its `#@pgmpi invalid`).
The share of invalid measurements per tool and cell is printed next to the table.

Without --arm one pgmpi-bench arm runs with its defaults; the first arm is the one the agreement table
judges (plus the common arguments above); the mode's
synchronisation options come last, so an arm's --method=reprompi keeps them.
Use `uptime` before: figures taken under load > 1.2 are noise of other jobs.
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLS = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "allgather": "MPI_Allgather"}


def parse_size(s: str) -> int:
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "KMG" else s) * mult


def parse_cells(spec: str, modes=None) -> dict[str, set[tuple[str, int]]]:
    """--cells: 'mode:call:size,...' -> mode -> {(call, bytes)}, e.g. 'roundtime:bcast:1K,window:allreduce:8'.
    Each mode then measures the calls x sizes its cells name (one mpirun per arm and round, the same jobs in
    both tools) and reports only the cells named.  Bad input: ValueError naming the item and the choices."""
    modes = modes or MODES
    out: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) != 3:
            raise ValueError(f"--cells: '{item}' is not mode:call:size (e.g. roundtime:bcast:1K)")
        mode, call, size = (x.strip() for x in parts)
        if mode not in modes:
            raise ValueError(f"--cells: '{item}': unknown mode '{mode}' (choices: {', '.join(modes)})")
        c = call.lower().removeprefix("mpi_")
        if c not in CALLS:
            raise ValueError(f"--cells: '{item}': unknown call '{call}' (choices: {', '.join(CALLS)})")
        try:
            n = parse_size(size)
        except ValueError:
            n = -1
        if n <= 0:
            raise ValueError(f"--cells: '{item}': bad size '{size}' (bytes, or with K/M/G: 8, 1K, 1M)")
        out[mode].add((c, n))
    if not out:
        raise ValueError("--cells: no cell given (mode:call:size, comma list)")
    return dict(out)


def report_cells(calls: list, sizes: list, only=None) -> list[tuple[str, int]]:
    """The (call, bytes) cells a table shows: every measured one, or those of --cells (only)."""
    return [(c, n) for c in calls for n in sizes if only is None or (c, n) in only]


def mpirun(mpi: str, np: int, where: str = "one-node") -> list[str]:
    """The launch: mpirun on this machine, or srun on deploy/cluster.sh's virtual nodes, one rank per node
    (the shared cluster, PGMPI_STATE_DIR=/work/main/.state; never brought down here)."""
    if where == "cluster":
        return ["srun", f"-N{np}", "--ntasks-per-node=1", f"--mpi={'pmix' if mpi == 'openmpi' else 'pmi2'}"]
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


def cluster_env() -> dict:
    """`deploy/cluster.sh env`: SLURM_CONF and the MPI settings its jobs need (TCP on the nodes' bridge)."""
    env = dict(os.environ, PGMPI_STATE_DIR=os.environ.get("PGMPI_STATE_DIR", "/work/main/.state"))
    out = subprocess.run([str(ROOT / "deploy/cluster.sh"), "env"], capture_output=True, text=True, env=env,
                         check=True).stdout
    return {k: v for line in out.splitlines() for kv in line.removeprefix("export ").split()
            for k, _, v in [kv.partition("=")] if v}


CLUSTER_ENV: dict = {}    # filled by main() for --where cluster; env_for adds it to every launch


def env_for(mpi: str, exe: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGMPI", "SLURM_"))}
    env.update(CLUSTER_ENV)
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
    "roundtime": (["--clock-sync=HCA", "--proc-sync=roundtime", "--rt-bench-time-ms=20000",
                   "--runtime-type=global"], ["--proc-sync=roundtime"]),
}


def run(cmd: list[str], env: dict, timeout: float = 900) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {shlex.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout


FBOX_OFF = {"OMPI_MCA_btl_vader_fbox_max": "0"}
SHORT_WINDOW_US = 200     # window mode's short-wait control: above the run-time of 8 B-64 KiB here


@dataclass
class Arm:
    label: str
    kind: str                      # reprompi | pgmpi | loop | loop+lib
    args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    ref: str | None = "ReproMPI"   # the ReproMPI arm its ratios are taken against
    window_us: float | None = None  # window mode: this arm's window instead of --window-us
    with_lib: bool = False         # ReproMPI with libpgmpitune preloaded: its calls take pgmpi-bench's path


@dataclass
class Reason:
    name: str
    text: str
    arm: str                       # the pgmpi-bench arm whose paired ratio shows it
    reruns: tuple = ("pgmpi",)     # the tools whose mpiruns the control runs anew (control_guard)
    applies: Callable[[str, int], bool] = lambda call, n: True   # the cells its mechanism can reach


FBOX_MAX_BYTES = 4096     # Open MPI 4.1 btl_vader_fbox_size: larger messages never use a fast box
UNWRITTEN = {"MPI_Allgather", "MPI_Alltoall", "MPI_Gather", "MPI_Scatter", "MPI_Reduce_scatter"}


def reason_arms(mode: str, mpi: str, main_args: list) -> tuple[list[Arm], list[Reason]]:
    """The controls of the agreement table (module docstring)."""
    arms, reasons = [], []
    if mpi == "openmpi":
        arms += [Arm("ReproMPI/fbox-off", "reprompi", env=FBOX_OFF, ref=None),
                 Arm("pgmpi/fbox-off", "pgmpi", list(main_args), FBOX_OFF, ref="ReproMPI/fbox-off")]
        reasons.append(Reason("fbox-off", "Open MPI's shared-memory fast boxes: a small message's latency depends on "
                              "the message history each tool leaves in them; both tools with fast boxes off",
                              "pgmpi/fbox-off", BOTH, lambda call, n: n <= FBOX_MAX_BYTES))
    if mode == "window":
        arms += [Arm("ReproMPI/short-wait", "reprompi", ref=None, window_us=SHORT_WINDOW_US),
                 Arm("pgmpi/short-wait", "pgmpi", list(main_args), ref="ReproMPI/short-wait",
                     window_us=SHORT_WINDOW_US)]
        reasons.append(Reason("short-wait", "milliseconds of waiting for the window before each measurement, after which "
                              "a call is slow and varies on this VM (tests/bench/sync_wait.py: not the clock); both tools "
                              f"with a {SHORT_WINDOW_US:g} us window", "pgmpi/short-wait", BOTH))
    if mode == "window":
        arms += [Arm("ReproMPI/lib", "reprompi", ref=None, with_lib=True),
                 Arm("pgmpi/lib", "pgmpi", list(main_args), ref="ReproMPI/lib"),
                 Arm("pgmpi/method", "pgmpi", list(main_args) + ["--method=reprompi"])]
        reasons.append(Reason("lib-path", "the call's path: pgmpi-bench calls MPI_<call> through libpgmpitune (its "
                              "report suspended inside the timed region, as an application runs it with the report "
                              "off), where ReproMPI calls the MPI library straight; ReproMPI with libpgmpitune "
                              "preloaded, report off (the same calls, tests/python/bench/call_trace.c)",
                              "pgmpi/lib", BOTH))
        reasons.append(Reason("method", "what pgmpi-bench does around the call: buffers once for the largest cell "
                              "(ReproMPI: per cell, malloc'd, its initialisation) and the check round before a "
                              "cell; pgmpi-bench --method=reprompi (the window options kept)", "pgmpi/method"))
    if mode in ("roundtime", "window"):
        arms.append(Arm("pgmpi/rp-start", "pgmpi", list(main_args) + ["--start-agreement=reprompi"]))
        reasons.append(Reason("start-messages", "the messages that agree on start times: ReproMPI's (window: rank 0's "
                              "T0 by MPI_Bcast; round-time: MPI_Barrier, rank 0's start down a tree of sends, the "
                              "flags exchanged after every measurement, its margin rule) against pgmpi-bench's one "
                              "MPI_Allreduce with no one-way message; pgmpi-bench --start-agreement=reprompi",
                              "pgmpi/rp-start"))
    if mode == "roundtime":
        arms.append(Arm("pgmpi/rp-margin", "pgmpi", list(main_args) + [f"--rt-multiplier={RP_MARGIN_MULT:g}"]))
        reasons.append(Reason("margin", "round-time's margin: ReproMPI waits 3 x the mean of 10 barrier+Bcast times, "
                              "pgmpi-bench 3 x the slowest of 10 Allreduce agreements (the clock control prints both "
                              "per mpirun; named only where ReproMPI's is >= 1.5x and pgmpi-bench reproduces itself), "
                              "so each measurement follows a different wait and a different share of late starts "
                              f"(ReproMPI repeats them, pgmpi-bench drops them); pgmpi-bench with --rt-multiplier="
                              f"{RP_MARGIN_MULT:g} (about ReproMPI's margin)", "pgmpi/rp-margin"))
    # the repeats: ReproMPI/again first in the list, so that it runs next to the main pgmpi-bench arm
    arms.insert(0, Arm(REPRO_AGAIN, "reprompi", ref=None))
    arms.append(Arm(PGMPI_AGAIN, "pgmpi", list(main_args)))
    arms.append(Arm("pgmpi/zero-page", "pgmpi", list(main_args) + ["--buffer-touch=reprompi"]))
    reasons.append(Reason("zero-page", "ReproMPI leaves Allgather's send buffer unwritten (the kernel's zero page, "
                          "always in cache); pgmpi-bench writes its buffers on purpose; with ReproMPI's buffers",
                          "pgmpi/zero-page", ("pgmpi",), lambda call, n: call in UNWRITTEN))
    return arms, reasons


REPRO_AGAIN, PGMPI_AGAIN = "ReproMPI/again", "pgmpi/again"
BOTH = ("pgmpi", "ReproMPI")      # a control that changes both tools (fbox-off, short-wait)
# round-time's margin control: pgmpi-bench's margin times this is about ReproMPI's (the clock control prints
# both per mpirun: ReproMPI 8-25 us, pgmpi-bench 4.7-7.4 us at the default 3, 2026-11-26 11:12 UTC, load 6.6)
RP_MARGIN_MULT = 6


def within(r: float) -> bool:
    return abs(r - 1) <= 0.05


def regime(med: dict, main: str, key) -> tuple[str | None, str]:
    """The repeats' verdict on a cell outside +-5 %: (reason or None, the ratios for "no measured reason").
    A regime is named only where one tool's two mpiruns of a round disagree by more than +-5 % (paired) and
    its repeat agrees with the other tool within +-5 %: the difference then follows the mpiruns, not the tool."""
    if REPRO_AGAIN not in med or PGMPI_AGAIN not in med:
        return None, ""
    pg, pg2 = med[main].get(key, []), med[PGMPI_AGAIN].get(key, [])
    rp, rp2 = med["ReproMPI"].get(key, []), med[REPRO_AGAIN].get(key, [])
    pg_self, rp_self = paired_ratio(pg, pg2), paired_ratio(rp, rp2)
    pg_again, rp_again = paired_ratio(pg2, rp), paired_ratio(pg, rp2)
    shown = (f"regime: pgmpi/pgmpi-again {pg_self:.2f}, pgmpi-again/ReproMPI {pg_again:.2f}, "
             f"ReproMPI/ReproMPI-again {rp_self:.2f}, pgmpi/ReproMPI-again {rp_again:.2f}")
    found = []
    if not within(pg_self) and within(pg_again):
        found.append(f"pgmpi-bench's repeat in the same rounds {pg_again:.2f} (pgmpi-bench against its repeat "
                     f"{pg_self:.2f}; per-mpirun medians {fmt(pg)} and {fmt(pg2)})")
    if not within(rp_self) and within(rp_again):
        found.append(f"against ReproMPI's repeat in the same rounds {rp_again:.2f} (ReproMPI against its "
                     f"repeat {rp_self:.2f}; per-mpirun medians {fmt(rp)} and {fmt(rp2)})")
    if not found:
        return None, shown
    return ("regime: the machine's per-mpirun regime, not the method (a tool disagrees with its own repeat "
            "in the same rounds): " + "; ".join(found)), shown


LEVEL_GAP = 1.25     # levels: the largest step between sorted per-mpirun medians that splits a cell in two
LEVEL_SIDE = 0.15    # ... leaving at least this share of the mpiruns on each side


def split_at_step(xs: list) -> float | None:
    """The cut between two levels: the geometric middle of the largest step (>= LEVEL_GAP x) between the
    sorted values that leaves at least LEVEL_SIDE of them (and 2) on each side, so that one descheduled
    mpirun (a 17x outlier) is not a level; None for one level."""
    xs = sorted(v for v in xs if v == v and v > 0)
    side = max(2, math.ceil(LEVEL_SIDE * len(xs)))
    steps = [(xs[i] / xs[i - 1], (xs[i] * xs[i - 1]) ** 0.5) for i in range(side, len(xs) - side + 1)]
    if not steps:
        return None
    step, cut = max(steps)
    return cut if step >= LEVEL_GAP else None


def levels(med: dict, main: str, key, probes: dict | None = None) -> tuple[str | None, str]:
    """The levels verdict on a cell outside +-5 % that no control names: (reason or None, what was seen).
    This VM runs small calls on one of two levels that flip every 0.3-6 s (tests/bench/level_watch.c),
    whichever tool runs, so a cell measured in milliseconds sits on one of them per mpirun (round-time Bcast
    1 KiB 0.45-0.70 or 1.1-1.5 us, Allgather and the barrier rows with it; Bcast 1 MiB 83-96 or 103-126 us, on
    another state), and a median over six rounds then follows how many of each tool's mpiruns met each level.
    Each tool's mpiruns are pooled with its repeat's where there is one (the same command in the same rounds;
    `--no-reasons` runs have none, and many rounds instead) and split at the largest step (>= LEVEL_GAP x)
    between the sorted per-mpirun medians that leaves LEVEL_SIDE of them on each side (split_at_step).
    Named only where each tool has mpiruns on both levels, level by level the tools agree within +-5 %
    (median against median), and the tools' shares of mpiruns on each level do not differ (Fisher's exact
    test, p >= 0.05): then the cell's figure is which level the mpiruns met, not a difference of method.
    Where the shares differ the tool may decide its level: not named.  A systematic difference between the
    tools cannot pass: split between the tools, each tool sits on one level only.  With `probes` (each
    mpirun's level probe, wtime_truth.c: the median of 1000 barriers at MPI_Finalize, not the cell's own
    figure) the line says in how many mpiruns the probe's own split puts the mpirun on the same level: the
    small cells' levels follow it (tests/bench/level_probe.py), the 1 MiB cells' do not."""
    tools = {"pgmpi-bench": tuple(a for a in (main, PGMPI_AGAIN) if a in med),
             "ReproMPI": tuple(a for a in ("ReproMPI", REPRO_AGAIN) if a in med)}
    runs = {t: [(arm, r, v) for arm in arms for r, v in enumerate(med[arm].get(key, [])) if v == v and v > 0]
            for t, arms in tools.items()}
    if any(len(x) < 2 for x in runs.values()):
        return None, ""
    cut = split_at_step([v for x in runs.values() for _a, _r, v in x])
    if cut is None:
        return None, "levels: one level"
    lo = {t: [v for _a, _r, v in x if v < cut] for t, x in runs.items()}
    hi = {t: [v for _a, _r, v in x if v > cut] for t, x in runs.items()}
    shown = (f"levels at {cut * 1e6:.3f} us: pgmpi-bench {len(lo['pgmpi-bench'])} low/{len(hi['pgmpi-bench'])} "
             f"high, ReproMPI {len(lo['ReproMPI'])} low/{len(hi['ReproMPI'])} high")
    pr = [(probes[a][r], v) for x in runs.values() for a, r, v in x
          if probes and r < len(probes.get(a, [])) and probes[a][r] == probes[a][r]]
    pcut = split_at_step([p for p, _ in pr]) if pr else None
    if pr:
        same = sum((p > pcut) == (v > cut) for p, v in pr) if pcut else 0
        shown += f" (the level probe puts {same} of {len(pr)} mpiruns on the same level)"
    if not all(lo[t] and hi[t] for t in tools):
        return None, shown + ", a tool on one level only"
    r_lo = statistics.median(lo["pgmpi-bench"]) / statistics.median(lo["ReproMPI"])
    r_hi = statistics.median(hi["pgmpi-bench"]) / statistics.median(hi["ReproMPI"])
    from scipy.stats import fisher_exact
    p = fisher_exact([[len(lo["pgmpi-bench"]), len(hi["pgmpi-bench"])], [len(lo["ReproMPI"]), len(hi["ReproMPI"])]])[1]
    shown += f", per level {r_lo:.2f} (low) {r_hi:.2f} (high), shares p={p:.2f}"
    if not (within(r_lo) and within(r_hi)) or p < 0.05:
        return None, shown
    return ("the mpiruns' level, not the method: each mpirun of both tools sits on one of two levels (" + shown
            + "); level by level the tools agree, and their shares of mpiruns per level do not differ"), shown


def round_interval(med: dict, main: str, key):
    """The rounds' paired ratios main / ReproMPI as the project states every effect: geometric mean with its
    95 % t interval on the log ratios (service.analysis.stats.ratios_ci)."""
    from service.analysis.stats import ratios_ci
    xs, rs = med[main].get(key, []), med["ReproMPI"].get(key, [])
    return ratios_ci([x / y for x, y in zip(xs, rs) if x == x and y == y and x > 0 and y > 0])


def interval_spread(ci) -> str | None:
    """The interval verdict on a cell that nothing names and A/A leaves open: "undecided (interval)" when the
    rounds' 95 % interval of the paired ratio holds 1 -- the rounds do not show that the tools differ, nor that
    they agree within +-5 %; counted with the undecided cells, never as a reason."""
    if ci.low is None or not ci.low <= 1 <= ci.high:
        return None
    return (f"undecided (interval): the rounds' paired ratios do not exclude 1 ({ci.text()}, t on log ratios): "
            "this machine's mpiruns show neither a difference nor agreement within +-5 %")


def aa_spread(med: dict, main: str, key) -> str | None:
    """The A/A verdict on a cell that no control and no regime names: "undecided" when a tool, against its own
    repeat in the same rounds (the same command: an A/A comparison), is itself outside +-5 % (paired) and at
    least as far from 1 as the two tools are from each other.  Then this machine's mpiruns cannot decide the
    cell to +-5 %: not a reason, and not agreement; counted apart.  A systematic difference (each tool
    reproducing itself) is never undecided."""
    if REPRO_AGAIN not in med or PGMPI_AGAIN not in med:
        return None
    pg, rp = med[main].get(key, []), med["ReproMPI"].get(key, [])
    cross = paired_ratio(pg, rp)
    pg_self, rp_self = paired_ratio(pg, med[PGMPI_AGAIN].get(key, [])), paired_ratio(rp, med[REPRO_AGAIN].get(key, []))
    far = [x for x in (pg_self, rp_self) if x == x and x > 0 and not within(x)]
    if not far or not (cross == cross and cross > 0):
        return None
    worst = max(abs(math.log(x)) for x in far)
    if abs(math.log(cross)) > worst:
        return None
    return (f"undecided (A/A): a tool against its own repeat in the same rounds is as far from 1 as the two "
            f"tools are from each other (pgmpi/pgmpi-again {pg_self:.2f}, ReproMPI/ReproMPI-again {rp_self:.2f}, "
            f"pgmpi/ReproMPI {cross:.2f}): this machine's mpiruns do not decide the cell to +-5 %")


def clockcheck(text: str) -> dict[tuple[str, int], float]:
    """pgmpi-bench's #@pgmpi clockcheck per (call, bytes): the model's error after the cell, seconds."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "#@pgmpi" and f[1] == "clockcheck":
            out[(f[2], int(f[3]))] = float(f[4])
    return out


def build_truth(mpi: str) -> Path:
    """tests/bench/wtime_truth.c as an LD_PRELOAD library (the `clock` control)."""
    so = Path(tempfile.mkdtemp()) / "libwtime_truth.so"
    subprocess.run([f"mpicc.{mpi}", "-O2", "-shared", "-fPIC", "-o", str(so), str(ROOT / "tests/bench/wtime_truth.c"),
                    "-ldl"], check=True)
    return so


def probe_of(path: Path) -> float:
    """The mpirun's level probe from wtime_truth.c's "probe <seconds>" line (nan without one)."""
    if path.exists():
        for line in path.read_text().splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "probe":
                return float(f[1])
    return float("nan")


def truth_ranks(path: Path) -> dict[int, tuple[float, str, str, str]]:
    """rank -> (d, boot_id, time namespace, host) from wtime_truth.c's "rank d boot_id timens host" lines
    (d = MPI_Wtime - CLOCK_MONOTONIC of that rank); a line without the clock's identity is left out."""
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            f = line.split()
            if len(f) == 5:
                out[int(f[0])] = (float(f[1]), f[2], f[3], f[4])
    return out


def true_offsets(path: Path) -> dict[int, float]:
    """rank -> the true offset of rank 0's MPI_Wtime against the rank's (global - local).  Exact only where
    the rank reads rank 0's CLOCK_MONOTONIC: the same kernel (boot_id) and the same time namespace, on one
    node or on the virtual cluster's nodes (deploy/cluster.sh: one kernel, no time namespace); a rank whose
    clock is another (a real second machine, a time namespace) gets no offset, so no clock error is
    computed for it rather than a wrong one."""
    d = truth_ranks(path)
    if 0 not in d or d[0][1] == "unknown":
        return {}
    _, boot, timens, _ = d[0]
    return {r: d[0][0] - v for r, (v, b, t, _) in d.items() if r != 0 and b == boot and t == timens}


def build_call_clock(mpi: str) -> Path:
    """tests/bench/call_clock.c as an LD_PRELOAD library (the `call-clock` control)."""
    so = Path(tempfile.mkdtemp()) / "libcall_clock.so"
    subprocess.run([f"mpicc.{mpi}", "-O2", "-shared", "-fPIC", "-o", str(so), str(ROOT / "tests/bench/call_clock.c"),
                    "-ldl"], check=True)
    return so


@dataclass
class Witness:
    """One cell of one mpirun as call_clock.c saw it: per measurement (seconds, CLOCK_MONOTONIC) the arrival
    skew (max entry - min entry), the call's own time from the last arrival (max exit - max entry) and the
    true global time (max exit - min entry); extra = MPI_BYTE calls of the cell before the measured ones."""
    skew: list
    own: list
    glob: list
    extra: int


def call_clock_read(path: Path, nrep: int) -> tuple[dict, str | None]:
    """call_clock.c's file -> ({(MPI_<call>, bytes): Witness}, None) or ({}, why not).  The measured calls of a
    cell are each rank's last nrep MPI_BYTE calls of that call and size (both tools measure on MPI_BYTE; their
    own agreement messages use other types; pgmpi-bench's calls of a cell before those are not measurements);
    the i-th of every rank is one measurement (collectives are called in the same order on every rank).
    Refused: a rank whose clock is not rank 0's (another boot_id or time namespace: no common clock), lost
    records, a cell with fewer than nrep calls or with different counts on the ranks."""
    if not path.exists():
        return {}, "no call-clock file"
    ident, lost, seq = {}, {}, defaultdict(lambda: defaultdict(list))
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "clock":
            ident[int(f[1])] = (f[2], f[3])
        elif len(f) == 3 and f[0] == "lost":
            lost[int(f[1])] = int(f[2])
        elif len(f) == 6 and f[0].isdigit() and f[3] == "1" and f[1] in CALLS:
            seq[(CALLS[f[1]], int(f[2]))][int(f[0])].append((int(f[4]) * 1e-9, int(f[5]) * 1e-9))
    if 0 not in ident or ident[0][0] == "unknown":
        return {}, "no clock identity of rank 0"
    other = [r for r, v in ident.items() if v != ident[0]]
    if other:
        return {}, f"ranks {other} read another clock than rank 0 (boot_id or time namespace)"
    if any(lost.values()):
        return {}, f"records lost (buffer full): {lost}"
    out = {}
    for key, per in seq.items():
        ranks = sorted(ident)
        counts = {len(per.get(r, [])) for r in ranks}
        if len(counts) != 1 or min(counts) < nrep:
            continue
        calls = [per[r][-nrep:] for r in ranks]
        skew, own, glob = [], [], []
        for i in range(nrep):
            ent = [c[i][0] for c in calls]
            ext = [c[i][1] for c in calls]
            skew.append(max(ent) - min(ent))
            own.append(max(ext) - max(ent))
            glob.append(max(ext) - min(ent))
        out[key] = Witness(skew, own, glob, min(counts) - nrep)
    return out, None


def slow_share(own: list, floor: float) -> float:
    """The share of measurements at the slow level: own time above 1.5x the cell's fast floor (the 10th
    percentile of both tools' own times pooled; the two levels are about 2x apart, tests/bench/level_watch.c)."""
    return sum(x > 1.5 * floor for x in own) / len(own) if own else float("nan")


def call_clock_verdict(rp: list, pg: list, rp_rep: list, pg_rep: list) -> tuple[str | None, str]:
    """The call-clock control on one cell: rp/pg = each round's Witness of ReproMPI and pgmpi-bench (None where
    missing), rp_rep/pg_rep = each round's reported median (seconds).  (reason or None, what was seen).
      machine: the calls' own time (from the last arrival) differs by the same ratio as the reports (their ratio
               within +-5 % of each other, both outside +-5 %): the call itself ran slower in one tool's mpiruns,
               whatever either tool's synchronisation did;
      start:   the own times agree within +-5 % and the arrival skews differ by >= 5 % of ReproMPI's run-time in
               the direction of the reports: the ranks entered the call further apart in one tool (its start is
               worse), so its global run-time is longer by the skew.
    Paired per round like every ratio here; every line shows the medians (us) and each tool's slow-level share."""
    rounds = [(a, b, x, y) for a, b, x, y in zip(rp, pg, rp_rep, pg_rep) if a and b and x == x and y == y]
    if not rounds:
        return None, "call-clock: no witness"
    med = statistics.median
    rep = median_or_nan(y / x for _, _, x, y in rounds)
    own = median_or_nan(med(b.own) / med(a.own) for a, b, _, _ in rounds)
    glob = median_or_nan(med(b.glob) / med(a.glob) for a, b, _, _ in rounds)
    dskew = median_or_nan(med(b.skew) - med(a.skew) for a, b, _, _ in rounds)
    rm = median_or_nan(x for _, _, x, _ in rounds)
    pooled = sorted(v for a, b, _, _ in rounds for v in a.own + b.own)
    floor = pooled[len(pooled) // 10]
    rs, ps = (median_or_nan(slow_share(w.own, floor) for w in ws) for ws in
              ([a for a, _, _, _ in rounds], [b for _, b, _, _ in rounds]))
    seen = (f"call-clock: own {own:.2f}, true global {glob:.2f}, skew pgmpi - ReproMPI {dskew * 1e6:+.3f} us, "
            f"ReproMPI own/skew {median_or_nan(med(a.own) for a, _, _, _ in rounds) * 1e6:.3f}/"
            f"{median_or_nan(med(a.skew) for a, _, _, _ in rounds) * 1e6:.3f} us, pgmpi "
            f"{median_or_nan(med(b.own) for _, b, _, _ in rounds) * 1e6:.3f}/"
            f"{median_or_nan(med(b.skew) for _, b, _, _ in rounds) * 1e6:.3f} us, slow-level share "
            f"ReproMPI {rs * 100:.0f} %, pgmpi {ps * 100:.0f} %")
    if within(rep):
        return None, seen
    if not within(own) and within(own / rep):
        return (f"machine: the calls' own time from the last arrival differs by {own:.2f} as the reports by "
                f"{rep:.2f} ({seen})"), seen
    if within(own) and rm == rm and abs(dskew) >= 0.05 * rm and (dskew > 0) == (rep > 1):
        worse = "pgmpi-bench's" if dskew > 0 else "ReproMPI's"
        return (f"start: the calls' own time agrees ({own:.2f}); {worse} ranks arrive {abs(dskew) * 1e6:.3f} us "
                f"further apart, so {worse} start is worse ({seen})"), seen
    return None, seen


def model_offsets(text: str) -> dict[tuple[str, int], dict[int, float]]:
    """(call, bytes) -> rank -> the tool's global-clock offset (global - local) for that cell: pgmpi-bench's
    "# clockmodel" comment (after the cell), or, from ReproMPI's --verbose per-process rows, the median of
    gl_tstart_sec - loc_tstart_sec (its HCA3O model has offsets only: one value per job).  The project's reader
    (pgmpi_formats.results) reduces those rows to run-times and keeps no offsets, so they are read here."""
    out: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
    cols: list[str] = []
    per: dict[tuple[str, int, int], list] = defaultdict(list)
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "#" and f[1] == "clockmodel":
            offs = f[4:f.index("slopes")] if "slopes" in f else f[4:]
            for r, v in enumerate(offs, start=1):
                out[(f[2], int(f[3]))][r] = float(v)
        elif f and f[0] == "process" and "gl_tstart_sec" in f:
            cols = f
        elif cols and len(f) == len(cols) and f[0].isdigit() and f[0] != "0":
            row = dict(zip(cols, f))
            per[(row["test"], int(row["count"]), int(row["process"]))].append(
                float(row["gl_tstart_sec"]) - float(row["loc_tstart_sec"]))
    for (call, n, r), xs in per.items():
        out[(call, n)][r] = statistics.median(xs)
    return out


def clock_errors(text: str, truth: dict[int, float]) -> dict[tuple[str, int], float]:
    """(call, bytes) -> the largest |model offset - true offset| over ranks, seconds (the global clock's error)."""
    return {key: max(abs(v - truth[r]) for r, v in offs.items() if r in truth)
            for key, offs in model_offsets(text).items() if any(r in truth for r in offs)}


def margin_of(text: str, reprompi: bool) -> float:
    """Round-time's margin, seconds: ReproMPI's #@bcast_runtime_s x its --bcast-mult (3, the default used
    here); pgmpi-bench's "# roundtime margin"."""
    for line in text.splitlines():
        if reprompi and line.startswith("#@bcast_runtime_s="):
            return 3 * float(line.split("=", 1)[1])
        if not reprompi and line.startswith("# roundtime margin "):
            return float(line.split()[3])
    return float("nan")


def median_or_nan(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def paired_ratio(xs: list, ref: list) -> float:
    """Median over rounds of the arm's median / its ReproMPI's median in the same round."""
    return median_or_nan(x / y for x, y in zip(xs, ref) if x == x and y == y and y > 0)


def syncs(mode: str, window_us: float) -> tuple[list, list]:
    rp_sync, pg_sync = list(MODES[mode][0]), list(MODES[mode][1])
    if mode == "window":
        rp_sync.append(f"--window-size={window_us:g}")
        pg_sync.append(f"--window-size={window_us:g}")
    return rp_sync, pg_sync


def rank_env(mpi: str, env: dict) -> list[str]:
    """mpirun options that set `env` in the ranks only, not in mpirun itself (-x for Open MPI, -env for MPICH)."""
    return [x for k, v in env.items() for x in (["-x", f"{k}={v}"] if mpi == "openmpi" else ["-env", k, v])]


def lib_launch(mpi: str, where: str, tenv: dict, libtune: str) -> tuple[list[str], dict]:
    """The lib-path control's ReproMPI launch: (mpirun options, environment) that put libpgmpitune into every
    rank's call path with its report off: pgmpi-bench suspends its report inside timed loops
    (pgmpitune_report_suspend), so each timed call of the default takes the path an application's does, and
    with the report off ReproMPI's call takes that path too (no PMPI_Type_size, no count).  The
    library comes after wtime_truth.c (tenv's LD_PRELOAD), whose MPI_Finalize chains on to the library's.
    With mpirun the variables go to the ranks only (-x / -env, as the loop+lib arm), not to mpirun itself;
    srun passes its environment on."""
    lib = {"LD_PRELOAD": ":".join(x for x in (tenv.get("LD_PRELOAD"), libtune) if x)}
    if where == "cluster":
        return [], {**tenv, **lib}
    rest = {k: v for k, v in tenv.items() if k != "LD_PRELOAD"}
    return rank_env(mpi, lib), rest


def run_mode(a, mode: str, bench: str, calls: list, sizes: list, loop, only=None) -> dict | None:
    """One mode's rounds and tables; only: the (call, bytes) cells of --cells to report (None: all)."""
    rp_sync, pg_sync = syncs(mode, a.window_us)
    user = [tuple(x.split("=", 1)) for x in (a.arm or ["pgmpi="])]
    arms = [Arm("ReproMPI", "reprompi", ref=None)] + [Arm(lb, "pgmpi", shlex.split(x)) for lb, x in user]
    main_label = arms[1].label
    # with --no-reasons: [ReproMPI, main, other arms]
    reasons: list[Reason] = []
    if a.reasons:
        extra, reasons = reason_arms(mode, a.mpi, arms[1].args)
        # every pgmpi-bench arm next to the ReproMPI it is paired with (the order reverses every other round):
        # the main ReproMPI between the main arm and the arms paired with it, each other ReproMPI first
        # and ReproMPI's repeat on the main arm's other side
        same = [x for x in extra if x.ref == "ReproMPI"]
        first = [x for x in extra if x.label == REPRO_AGAIN]
        arms = first + arms[1:2] + arms[:1] + same + arms[2:] + [x for x in extra if x not in same + first]
    if a.reprompi == "none":
        arms = [x for x in arms if x.kind != "reprompi"]
        for x in arms:
            x.ref = None
    if loop:
        arms += [Arm("loop", "loop"), Arm("loop+lib", "loop+lib")]
    libtune = str(Path(bench).resolve().parents[1] / "lib" / "libpgmpitune.so")
    print(f"\n## mode {mode} ({a.where}: {' '.join(mpirun(a.mpi, a.np, a.where))})\n# uptime: {uptime()}")
    kept: dict[str, dict] = defaultdict(lambda: defaultdict(list))    # arm -> (call, size) -> valid share
    med: dict[str, dict] = {x.label: defaultdict(list) for x in arms}
    clk: dict[tuple[str, int], list] = defaultdict(list)              # main arm's clockcheck per mpirun
    # the clock control (window, round-time): each arm's true clock error per cell and mpirun, its margin
    clocked = mode in ("window", "roundtime") and a.truth is not None
    clkerr: dict[str, dict] = {x.label: defaultdict(list) for x in arms}
    margins: dict[str, list] = defaultdict(list)
    probes: dict[str, list] = defaultdict(list)     # each mpirun's level probe (wtime_truth.c), seconds
    witness: dict[str, dict] = defaultdict(lambda: defaultdict(list))   # arm -> cell -> Witness per round
    quarters: dict[str, list] = defaultdict(list)
    hosts_seen: dict[str, int] = defaultdict(int)    # the clock control: where the ranks ran, per mpirun
    refused = 0                                       # ranks whose clock was not rank 0's (true_offsets)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.runs):
            # every other round in reverse order: no arm always follows the same one
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                rp_sync, pg_sync = syncs(mode, arm.window_us or a.window_us)
                # the clock control: wtime_truth.c preloaded (it wraps MPI_Finalize only) and ReproMPI's
                # per-process rows (--verbose, first: after the other options it resets --runtime-type)
                truth_file = Path(tmp) / f"truth-{arm.label.replace('/', '_')}-{r}.txt"
                tenv = {"LD_PRELOAD": str(a.truth), "WTIME_TRUTH_FILE": str(truth_file)} \
                    if clocked and not arm.kind.startswith("loop") else {}
                # the call-clock control: call_clock.c after wtime_truth.c (each chains MPI_Finalize on)
                cc_file = Path(tmp) / f"callclock-{arm.label.replace('/', '_')}-{r}.txt"
                if tenv and a.call_clock is not None:
                    tenv = {**tenv, "LD_PRELOAD": f"{a.truth}:{a.call_clock}", "CALL_CLOCK_FILE": str(cc_file)}
                if arm.kind == "reprompi":
                    pre, lenv = lib_launch(a.mpi, a.where, tenv, libtune) if arm.with_lib else ([], tenv)
                    cmd = mpirun(a.mpi, a.np, a.where) + pre + [a.reprompi] + (["--verbose"] if tenv else []) + [
                        "--calls-list=" + ",".join(CALLS[c] for c in calls),
                        "--msizes-list=" + ",".join(map(str, sizes)), f"--nrep={a.nrep}", *rp_sync]
                    text = run(cmd, {**env_for(a.mpi, a.reprompi), **arm.env, **lenv})
                elif arm.kind.startswith("loop"):
                    env = {**env_for(a.mpi, bench), **arm.env}
                    pre = rank_env(a.mpi, {"LD_PRELOAD": libtune})
                    if a.where == "cluster":       # srun passes the environment on
                        env.update({"LD_PRELOAD": libtune} if arm.kind == "loop+lib" else {})
                        pre = []
                    cmd = mpirun(a.mpi, a.np, a.where) + (pre if arm.kind == "loop+lib" else []) + [
                        str(loop), str(a.nrep), ",".join(calls), ",".join(map(str, sizes))]
                    text = run(cmd, env)
                else:
                    out = Path(tmp) / f"{arm.label.replace('/', '_')}-{r}.txt"
                    cmd = mpirun(a.mpi, a.np, a.where) + [bench, "--calls=" + ",".join(calls), "--algorithms=default",
                                                 "--sizes=" + ",".join(map(str, sizes)), f"--nrep={a.nrep}",
                                                 f"--output={out}"] + arm.args + pg_sync
                    run(cmd, {**env_for(a.mpi, bench), **arm.env, **tenv})
                    text = out.read_text()
                    if arm.label == main_label:
                        for key, e in clockcheck(text).items():
                            clk[key].append(e)
                got = rows(text, arm.kind != "pgmpi")
                if tenv:
                    errs = clock_errors(text, true_offsets(truth_file))
                    ranks = truth_ranks(truth_file)
                    hosts_seen["+".join(h for _, (_, _, _, h) in sorted(ranks.items()))] += 1
                    refused += len(ranks) - 1 - len(true_offsets(truth_file)) if ranks else 0
                    margins[arm.label].append(margin_of(text, arm.kind == "reprompi"))
                    probes[arm.label].append(probe_of(truth_file))
                    if "CALL_CLOCK_FILE" in tenv:
                        wit, why = call_clock_read(cc_file, a.nrep)
                        if why:
                            print(f"# call-clock {arm.label} round {r + 1}: {why}", file=sys.stderr)
                        for c in calls:
                            for n in sizes:
                                witness[arm.label][(CALLS[c], n)].append(wit.get((CALLS[c], n)))
                    for c in calls:
                        for n in sizes:
                            clkerr[arm.label][(CALLS[c], n)].append(errs.get((CALLS[c], n), float("nan")))
                for c in calls:                     # a cell with no valid measurement is a gap, not a shift
                    for n in sizes:
                        key = (CALLS[c], n)
                        xs = got.get(key, [])
                        kept[arm.label][key].append(len(xs) / a.nrep)
                        med[arm.label][key].append(statistics.median(xs) if xs else float("nan"))
                        q = len(xs) // 4
                        if q >= 5:
                            m = statistics.median(xs)
                            quarters[arm.label].append((r, key, [statistics.median(xs[i * q:(i + 1) * q]) / m
                                                                 for i in range(4)]))
            print(f"# {mode}: mpirun round {r + 1}/{a.runs} done", file=sys.stderr)
    print("# valid measurements per cell (median share over mpiruns): " + "; ".join(
        f"{lb} " + " ".join(f"{k[0][4:]}/{k[1]}={statistics.median(v) * 100:.0f}%" for k, v in kv.items())
        for lb, kv in kept.items()))
    rp_sync, pg_sync = syncs(mode, a.window_us)
    print(f"\n{a.mpi}, {a.np} ranks, MPI_BYTE, mode {mode} (ReproMPI {' '.join(rp_sync)}; pgmpi-bench "
          f"{' '.join(pg_sync)}), nrep {a.nrep}, {a.runs} mpiruns per arm, alternating (every other round in"
          " reverse order); median of per-mpirun medians (us) [min-max]; ratio = arm / its ReproMPI;"
          " paired = median over rounds of (arm / its ReproMPI) within a round (adjacent mpiruns share the"
          " VM's regime, so this is the estimate that regime switches between rounds do not move); the"
          " arms with /fbox-off are paired against ReproMPI/fbox-off")
    shown = [x for x in arms if x.ref is not None]
    head = "| call, size | ReproMPI | " + " | ".join(f"{x.label} | ratio | paired" for x in shown) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    paired: dict[tuple[str, tuple], float] = {}
    for c, n in report_cells(calls, sizes, only):
        key = (CALLS[c], n)
        ref = med.get("ReproMPI", {}).get(key)
        if not ref:
            for x in arms:
                xs = [v for v in med[x.label].get(key, []) if v == v]
                if xs:
                    print(f"# {x.label} {CALLS[c][4:]} {n} B: {statistics.median(xs) * 1e6:.3f} us "
                          f"[{min(xs) * 1e6:.2f}-{max(xs) * 1e6:.2f}]")
            continue
        cells = [f"{CALLS[c][4:]} {n} B", fmt(ref)]
        for x in shown:
            xs, rs = med[x.label].get(key, []), med[x.ref].get(key, [])
            pr = paired_ratio(xs, rs)
            paired[(x.label, key)] = pr
            ratio = median_or_nan(v for v in xs if v == v) / median_or_nan(v for v in rs if v == v)
            cells += [fmt(xs), f"{ratio:.2f}", f"{pr:.2f}"]
        print("| " + " | ".join(cells) + " |")
    # a switch inside an mpirun, per arm; "shared" = an arm that does not run pgmpi-bench (ReproMPI or the
    # plain loop) switched in the same round at the same (call, size): the machine, not the tool
    switched = {lb: {(r, k) for r, k, q in qs if max(abs(x - 1) for x in q) > 0.10} for lb, qs in quarters.items()}
    independent = [x.label for x in arms if x.kind in ("reprompi", "loop")]
    for lb, qs in quarters.items():
        bad = [(r, k, q) for r, k, q in qs if (r, k) in switched[lb]]
        shared = [(r, k) for r, k, _q in bad
                  if any((r, k) in switched.get(o, set()) for o in independent if o != lb)]
        print(f"# {lb}: quarter medians within ±10 % of the cell median in {len(qs) - len(bad)} of {len(qs)} "
              f"(mpirun, call, size) cells; of the {len(bad)} switches, {len(shared)} shared with "
              f"{' or '.join(o for o in independent if o != lb) or '-'} in the same round")
        if a.verbose:
            for r, k, q in bad:
                tag = "  (shared)" if (r, k) in shared else ""
                print(f"#   mpirun {r} {k[0]} {k[1]} B: quarters/median = " + " ".join(f"{x:.2f}" for x in q) + tag)
    if clocked:
        print("# clock control: ranks ran on " + ", ".join(f"{h} ({n} mpiruns)" for h, n in hosts_seen.items())
              + f"; ranks without rank 0's clock (another boot_id or time namespace: no true offset) {refused}")
    if only is not None or a.verbose:      # a --cells run: every mpirun's median, for the reader to judge
        for c, n in report_cells(calls, sizes, only):
            key = (CALLS[c], n)
            print(f"# per-mpirun medians (us, by round) {CALLS[c][4:]} {n} B: " + "; ".join(
                f"{x.label} " + " ".join(f"{v * 1e6:.3f}" for v in med[x.label].get(key, [])) for x in arms))
        if any(probes.values()):
            print("# per-mpirun level probe (us, median of 1000 barriers at MPI_Finalize, by round): " + "; ".join(
                f"{x.label} " + " ".join(f"{v * 1e6:.3f}" for v in probes[x.label]) for x in arms if probes.get(x.label)))
    if clocked and "ReproMPI" in med:
        clock_table(mode, calls, sizes, med, kept, clkerr, margins, main_label, only)
    counts = None
    if "ReproMPI" in med:
        if witness:
            call_clock_table(mode, calls, sizes, med, witness, main_label, only)
        counts = agreement_table(mode, calls, sizes, med, main_label, paired, reasons, clk,
                                 clkerr if clocked else {}, margins, only, probes if clocked else None,
                                 witness)
    print(f"# uptime: {uptime()}")
    return counts


def corrected_ratio(pg: list, pe: list, rp: list, re: list) -> float:
    """The paired ratio with each mpirun's clock error taken off its median: median over rounds of
    (pgmpi median - pgmpi's clock error) / (ReproMPI median - ReproMPI's clock error).  First order: under
    "max global end - min global start" a rank whose global clock is off by e stamps its start or end e off,
    and for a call whose ranks wait for each other the run-time gains |e| (lib/bench/README.md)."""
    return median_or_nan((x - ex) / (y - ey) for x, ex, y, ey in zip(pg, pe, rp, re)
                         if all(v == v for v in (x, ex, y, ey)) and y - ey > 0 and x - ex > 0)


def clock_material(pe: list, re: list, rm: float) -> bool:
    """The two tools' clock errors differ by at least 5 % of the cell's run-time (median over rounds)."""
    d = median_or_nan(abs(x - y) for x, y in zip(pe, re) if x == x and y == y)
    return d == d and rm > 0 and d >= 0.05 * rm


def clock_table(mode, calls, sizes, med, kept, clkerr, margins, main_label, only=None) -> None:
    """The clock control: per cell each tool's global-clock error against the true offset (wtime_truth.c),
    its share of valid measurements and the paired ratio with the errors taken off (corrected_ratio)."""
    def us(xs):
        xs = [v for v in xs if v == v]
        return f"{statistics.median(xs) * 1e6:.3f} [{max(xs) * 1e6:.2f}]" if xs else "-"

    def pct(xs):
        return f"{statistics.median(xs) * 100:.0f}" if xs else "-"
    print(f"\n### Clock control, mode {mode}: each tool's global clock against the true offset (one kernel's "
          "CLOCK_MONOTONIC, tests/bench/wtime_truth.c), per cell median [max] over mpiruns, us; valid %; paired ratio with each "
          "mpirun's clock error taken off its median")
    print("| call, size | ReproMPI us | clock error ReproMPI | clock error pgmpi | valid % ReproMPI | valid % pgmpi "
          "| paired | paired, clock errors off |")
    print("|---|---|---|---|---|---|---|---|")
    for c, n in report_cells(calls, sizes, only):
        key = (CALLS[c], n)
        rp, pg = med["ReproMPI"].get(key, []), med[main_label].get(key, [])
        re, pe = clkerr["ReproMPI"].get(key, []), clkerr[main_label].get(key, [])
        print(f"| {CALLS[c][4:]} {n} B | {median_or_nan(v for v in rp if v == v) * 1e6:.3f} | {us(re)} | "
              f"{us(pe)} | {pct(kept['ReproMPI'].get(key, []))} | {pct(kept[main_label].get(key, []))} | "
              f"{paired_ratio(pg, rp):.2f} | {corrected_ratio(pg, pe, rp, re):.2f} |")
    if mode == "roundtime":
        print("# round-time margin per mpirun (us): " + "; ".join(
            f"{lb} {statistics.median(v) * 1e6:.2f} [{min(v) * 1e6:.2f}-{max(v) * 1e6:.2f}]"
            for lb, v in margins.items() if v and all(x == x for x in v)))
    print("# clock error per mpirun (us, all cells): " + "; ".join(
        f"{lb} {statistics.median(e) * 1e6:.3f} [{min(e) * 1e6:.3f}-{max(e) * 1e6:.3f}]"
        for lb, kv in clkerr.items() for e in [[v for xs in kv.values() for v in xs if v == v]] if e))


def margins_differ(margins: dict, main: str) -> bool:
    """The margin control's mechanism reaches a cell only where the margins differ: ReproMPI's median margin
    over its mpiruns at least 1.5x pgmpi-bench's (whether its run is more than one draw is control_guard's)."""
    rp, pg = [v for v in margins.get("ReproMPI", []) if v == v], [v for v in margins.get(main, []) if v == v]
    return bool(rp and pg) and statistics.median(rp) >= 1.5 * statistics.median(pg)


TOOL_RUNS = {"pgmpi": (None, PGMPI_AGAIN), "ReproMPI": ("ReproMPI", REPRO_AGAIN)}


def control_guard(med: dict, main: str, key, reruns: tuple) -> str | None:
    """The one rule for every control that runs mpiruns of its own (issue 34: "or the measured reason").
    A control's arm is one more mpirun of each tool it changes (`reruns`); its ratio within +-5 % is a
    measured reason only if a plain repeat of those tools, the same command in the same rounds, does not
    move the cell as far.  So it may name a cell only where
      1. each tool it reruns reproduces itself: against its repeat within +-5 % (paired), and
      2. those repeats, in place of the control, leave the cell outside +-5 % (pgmpi/again against ReproMPI,
         or against ReproMPI/again where the control reruns both): the disagreement reproduces, the control
         removes it.
    None: the control may name the cell; else why not (printed next to the control's ratio).  A control that
    reruns nothing (the clock controls: computed from the main arms' own mpiruns) passes by construction;
    the regime control is the repeat itself and has the opposite rule (a tool that does not reproduce itself)."""
    if not reruns:
        return None
    if any(med.get(again) is None for t in reruns for again in [TOOL_RUNS[t][1]]):
        return "no repeat in the same rounds"
    pg, pg2 = med[main].get(key, []), med[PGMPI_AGAIN].get(key, [])
    rp = med["ReproMPI"].get(key, [])
    rp2 = med[REPRO_AGAIN].get(key, []) if REPRO_AGAIN in med else rp
    refused = []
    for t in reruns:
        a, b = (pg, pg2) if t == "pgmpi" else (rp, rp2)
        self_ratio = paired_ratio(a, b)
        if not within(self_ratio):
            refused.append(f"{t}/{t}-again {self_ratio:.2f}")
    again = paired_ratio(pg2, rp2 if "ReproMPI" in reruns else rp)
    if not refused and within(again):
        refused.append(f"the plain repeat already {again:.2f}")
    return "not named: " + ", ".join(refused) if refused else None


def call_clock_table(mode, calls, sizes, med, witness, main_label, only=None) -> None:
    """The call-clock control's figures per cell (tests/bench/call_clock.c): what each tool's measured calls
    were on one CLOCK_MONOTONIC, median over mpirun medians, us, and the calls seen before the measured ones."""
    print(f"\n### Call-clock control, mode {mode}: every measured call on CLOCK_MONOTONIC (tests/bench/call_clock.c), "
          "median over mpiruns of each mpirun's median, us: arrival skew (max entry - min entry), own time "
          "(max exit - max entry), true global (max exit - min entry); extra = MPI_BYTE calls before the measured")
    print("| call, size | tool | reported | skew | own | true global | reported / true global | extra | mpiruns |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c, n in report_cells(calls, sizes, only):
        key = (CALLS[c], n)
        for lb in ("ReproMPI", main_label):
            ws = [w for w in witness.get(lb, {}).get(key, []) if w]
            def m(attr):
                return median_or_nan(statistics.median(getattr(w, attr)) for w in ws) * 1e6
            rep = median_or_nan(v for v in med[lb].get(key, []) if v == v) * 1e6
            print(f"| {CALLS[c][4:]} {n} B | {lb} | {rep:.3f} "
                  f"| {m('skew'):.3f} | {m('own'):.3f} | {m('glob'):.3f} | {rep / m('glob'):.2f} | "
                  f"{','.join(sorted({str(w.extra) for w in ws})) or '-'} | {len(ws)} |")


def agreement_table(mode, calls, sizes, med, main_label, paired, reasons, clk, clkerr=None, margins=None,
                    only=None, probes=None, witness=None) -> dict:
    """Issue 34's table: per cell the paired ratio, within +-5 %, and the measured reason (module docstring).
    Every control passes control_guard; each line says which named the cell.  Returns the counts for the
    final table (summary_table)."""
    print(f"\n### Agreement with ReproMPI, mode {mode} ({main_label} / ReproMPI, paired)")
    print("| method | call, size | ReproMPI us | pgmpi-bench us | paired | within ±5 % | reason (control: paired) "
          "| rounds: geometric mean, 95 % CI |")
    print("|---|---|---|---|---|---|---|---|")
    counts = {"within": 0, "named": defaultdict(int), "undecided": 0, "none": 0, "total": 0}
    for c, n in report_cells(calls, sizes, only):
        key = (CALLS[c], n)
        counts["total"] += 1
        pr = paired.get((main_label, key), float("nan"))
        ok = within(pr)
        rm = median_or_nan(v for v in med["ReproMPI"].get(key, []) if v == v)
        pm = median_or_nan(v for v in med[main_label].get(key, []) if v == v)
        why = "-"
        if not ok:
            found, shown = [], []           # (control, text) that named; every control's ratio
            for rs in reasons:
                cr_ = paired.get((rs.arm, key), float("nan"))
                reaches = rs.applies(*key) and (rs.name != "margin" or margins_differ(margins or {}, main_label))
                guard = control_guard(med, main_label, key, rs.reruns) if reaches and within(cr_) else None
                if reaches and within(cr_) and guard is None:
                    found.append((rs.name, f"{rs.text}: {cr_:.2f}"))
                shown.append(f"{rs.name} {cr_:.2f}" + ("" if reaches else " n/a")
                             + (f" ({guard})" if guard else ""))
            e = max(clk.get(key, []), default=float("nan"))
            if mode in ("window", "roundtime") and e == e and min(rm, pm) > 0 and e >= 0.5 * min(rm, pm):
                found.append(("clock-error", f"the global clock's error after the cell ({e * 1e6:.2f} us, "
                              f"#@pgmpi clockcheck) is at least half the run-time"))
            cr = float("nan")
            if clkerr:
                pe, re = clkerr[main_label].get(key, []), clkerr["ReproMPI"].get(key, [])
                cr = corrected_ratio(med[main_label].get(key, []), pe, med["ReproMPI"].get(key, []), re)
                if within(cr) and clock_material(pe, re, rm):
                    found.append(("clock", f"the two tools' global clocks are off by different amounts "
                                  f"(true error per mpirun ReproMPI {fmt(re)}, pgmpi-bench {fmt(pe)} us; "
                                  f"tests/bench/wtime_truth.c); with each mpirun's error taken off its "
                                  f"median: {cr:.2f}"))
            cc_shown = ""
            if witness:
                cc, cc_shown = call_clock_verdict(witness["ReproMPI"].get(key, []), witness[main_label].get(key, []),
                                                  med["ReproMPI"].get(key, []), med[main_label].get(key, []))
                if cc:
                    found.append(("call-clock", cc))
                shown.append(cc_shown)
            # the repeats only where no control of a mechanism names the cell
            reg, reg_shown = regime(med, main_label, key) if not found else (None, "")
            if reg:
                found.append(("regime", reg.removeprefix("regime: ")))
            lev, lev_shown = levels(med, main_label, key, probes) if not found else (None, "")
            if lev:
                found.append(("levels", lev))
            undecided = aa_spread(med, main_label, key) if not found else None
            if not found and not undecided and "ReproMPI" in med and main_label in med:
                undecided = interval_spread(round_interval(med, main_label, key))
            if found:
                by = "+".join(name for name, _ in found)
                counts["named"][by] += 1
                why = f"named by {by}: " + (found[0][1] if len(found) == 1 else
                                             "; ".join(f"{name}: {text}" for name, text in found))
                refused = [x for x in shown if "(not named" in x]
                if refused:
                    why += " (refused: " + ", ".join(refused) + ")"
                if cc_shown and all(name != "call-clock" for name, _ in found):
                    why += f" ({cc_shown})"
            elif undecided:
                counts["undecided"] += 1
                seen = shown + ([lev_shown] if lev_shown else [])
                why = undecided + (" (" + ", ".join(seen) + ")" if seen else "")
            else:
                counts["none"] += 1
                why = "no measured reason (" + ", ".join(shown) + (
                    f", clockcheck {e * 1e6:.2f} us" if e == e else "") + (
                    f", clock errors off {cr:.2f}" if cr == cr else "") + (
                    f", {reg_shown}" if reg_shown else "") + (f", {lev_shown}" if lev_shown else "") + ")"
        counts["within"] += ok
        ci = round_interval(med, main_label, key) if "ReproMPI" in med and main_label in med else None
        print(f"| {mode} | {CALLS[c][4:]} {n} B | {rm * 1e6:.3f} | {pm * 1e6:.3f} | {pr:.2f} | "
              f"{'yes' if ok else 'no'} | {why} | {ci.text() if ci else '-'} |")
    named = sum(counts["named"].values())
    print(f"# {mode}: within ±5 % {counts['within']} of {counts['total']}; outside, named {named} "
          f"({named_by(counts)}); undecided (A/A or interval) {counts['undecided']}; no measured reason {counts['none']}")
    return counts


def named_by(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts["named"].items())) or "-"


def summary_table(per_mode: dict) -> None:
    """The run's last table: per method how its cells came out (each agreement_table's counts)."""
    print("\n### Agreement with ReproMPI per method (issue 34: within ±5 %, or the measured reason)")
    print("| method | cells | within ±5 % | outside, named (by control) | undecided (A/A or interval) | no measured reason |")
    print("|---|---|---|---|---|---|")
    for mode, k in per_mode.items():
        print(f"| {mode} | {k['total']} | {k['within']} | {sum(k['named'].values())} ({named_by(k)}) | "
              f"{k['undecided']} | {k['none']} |")


def fmt(xs: list) -> str:
    xs = [v for v in xs if v == v]
    if not xs:
        return "-"
    return f"{statistics.median(xs) * 1e6:.3f} [{min(xs) * 1e6:.2f}-{max(xs) * 1e6:.2f}]"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reprompi", required=True,
                    help="path of ReproMPI's mpibenchmark; 'none': only the other arms (stability figures)")
    ap.add_argument("--pgmpi-bench", default=None, help="default: build/install/<mpi>/bin/pgmpi-bench")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--where", default="one-node", choices=["one-node", "cluster"],
                    help="cluster: srun -N<np>, one rank per virtual node of deploy/cluster.sh (TCP between "
                         "nodes; the clock control still holds: one kernel, one CLOCK_MONOTONIC)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--nrep", type=int, default=1000)
    ap.add_argument("--calls", default="allreduce,bcast,allgather")
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--min-loop", action="store_true",
                    help="add two arms: tests/bench/min_loop.c (plain MPI) and the same loop with libpgmpitune "
                         "preloaded (the library's own cost, nothing forced)")
    ap.add_argument("--mode", default="barrier,roundtime,window",
                    help="comma list of barrier, roundtime, window (one table each)")
    ap.add_argument("--window-us", type=float, default=3000, help="--mode window: the window of both tools")
    ap.add_argument("--cells", default=None,
                    help="only these cells, 'mode:call:size' comma list (e.g. 'roundtime:bcast:1K,window:allreduce:8'): "
                         "replaces --mode/--calls/--sizes; each mode named runs the calls x sizes of its cells in one "
                         "mpirun per arm and round (the same jobs in both tools) and reports only the cells named")
    ap.add_argument("--arm", action="append", default=[],
                    help="'label=extra pgmpi-bench arguments' (repeatable); default: one arm 'pgmpi='")
    ap.add_argument("--no-reasons", dest="reasons", action="store_false",
                    help="no reason controls (fewer mpiruns; the agreement table then says no reason)")
    ap.add_argument("--verbose", action="store_true", help="list every switch inside an mpirun")
    ap.add_argument("--no-clock", dest="clock", action="store_false",
                    help="window/roundtime: no clock control (tests/bench/wtime_truth.c preloaded, ReproMPI "
                         "--verbose; ranks of one kernel: one node or the virtual cluster)")
    ap.add_argument("--no-call-clock", dest="call_clock_on", action="store_false",
                    help="window/roundtime: no call-clock control (tests/bench/call_clock.c preloaded with the clock "
                         "control: every measured call's entry and exit on CLOCK_MONOTONIC)")
    a = ap.parse_args()
    if a.where == "cluster":
        CLUSTER_ENV.update(cluster_env())
    modes = [m.strip() for m in a.mode.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"--mode: unknown {', '.join(bad)} (choices: {', '.join(MODES)})")
    bench = a.pgmpi_bench or str(ROOT / "build/install" / a.mpi / "bin/pgmpi-bench")
    calls = [c.strip() for c in a.calls.split(",")]
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    cells = None
    if a.cells:
        try:
            cells = parse_cells(a.cells)
        except ValueError as e:
            ap.error(str(e))
        modes = [m for m in MODES if m in cells]
    loop = None
    if a.min_loop:
        loop = Path(tempfile.mkdtemp()) / "min_loop"
        subprocess.run([f"mpicc.{a.mpi}", "-O2", "-o", str(loop), str(ROOT / "tests/bench/min_loop.c")], check=True)
    a.truth = build_truth(a.mpi) if a.clock and {"window", "roundtime"} & set(modes) else None
    a.call_clock = build_call_clock(a.mpi) if a.truth is not None and a.call_clock_on else None
    per_mode = {}
    for mode in modes:
        if cells:      # the calls x sizes of the mode's cells, in the order of CALLS and of size
            per_mode[mode] = run_mode(a, mode, bench, [c for c in CALLS if any(x == c for x, _ in cells[mode])],
                                      sorted({n for _, n in cells[mode]}), loop, cells[mode])
        else:
            per_mode[mode] = run_mode(a, mode, bench, calls, sizes, loop)
    if any(per_mode.values()):
        summary_table({m: k for m, k in per_mode.items() if k})


if __name__ == "__main__":
    main()
