"""The search driver: runs inside a campaign job (after `module load`, in the Slurm allocation) and searches
the MPI library's own algorithms x segment sizes of the collectives whose campaign entry says `search:`.

    python -m scheduler.native_driver --spec '{...}' --launcher 'mpirun -np 2' --bench .../pgmpi-bench \
        --output search-0.json

MGD and SMGD are sequential (each round's variants depend on the times measured before), so the search runs
in one job: every round of every (collective, message size) measures that round's variants interleaved with
the default (`default` in every round: each experiment has a paired reference), message sizes ascending so a
size can start from its neighbour's path.  The rounds of one collective share one pgmpi-bench mpirun
(`--serve`: the driver sends it one cell per round and reads the medians back), since an mpirun's start-up
costs more than a round of microsecond calls; only a grid with more variants than pgmpi-bench takes at
once (MAX_LABELS) falls back to one mpirun per round.  `exhaustive` is the same loop with
one round per cell: every variant.  `race` measures every variant of a cell with first_nrep repetitions and
only the two fastest that beat the default again (the round repeated), its collectives sharing one mpirun.  Each mpirun's raw file is a campaign result like any other (uploaded,
stored); `--output` lists them and records every search's path (rounds, times, pruned methods, choice),
which the agent keeps with the campaign (<state>/campaigns/<name>/search-<job>-<i>.json).
A variant that fails pgmpi-bench's check round has no rows: it counts as measured and is never chosen.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pgmpi_formats import native
from pgmpi_formats.results import read_file
from pgmpi_formats.native_search import REFERENCE, SEGMENTED, WARMUP_BYTES, grid, run_sizes

NEVER = float("inf")
CONTROL = "default_control"


def spaces_for(d: native.Discovery, key: str, sizes: list[int], segments: list[int]) -> dict[int, dict]:
    """Per message size, the cell's variants: the library's algorithms of `key` that are safe for every
    operation (native.ORDER_UNSAFE), segment sizes only for the methods that take one."""
    methods = [n for n in d.names(key) if (key, n) not in native.ORDER_UNSAFE.get(d.library, ())]
    segmented = SEGMENTED.get(d.library, {}).get(key, set()) if d.has_segments(key) else set()
    return {s: grid(methods, segmented, segments, s) for s in sizes}


MIN_GAIN = 0.05       # service/analysis/native_decision.decide's default min_gain
# a confirmation round measures each cell's arms alone in alternating blocks of this many repetitions, A B C
# C B A A B C ..., in one pgmpi-bench command (confirm; tests/bench/confirm_blocks.py measured 2, 5, 10, 50);
# even, so no block needs pgmpi-bench's untimed evening-out call (an odd count gets one more)
CONFIRM_BLOCK = 4
MAX_LABELS = 94        # pgmpi-bench's MAXALGS (lib/bench/bench.h) less default and default_control
# a confirmation round measures each arm with 1/CONFIRM_SHARE of the cell's count (confirm_nrep), in at most the
# spec's `confirm` rounds.  1: the campaign-wide count, as every other mpirun of the campaign (issue 34).  Half
# the count (a spec's confirm_share 2, tests/bench/native_search.py's race-half) halved the confirmations' time
# under load 6 with the same decisions, but on the quiet machine saved nothing (MPICH 4.0.2: race 22.0 % and
# 26.5 % of exhaustive's time against 24.4 % and 24.2 % with the whole count; a confirmation mpirun there is
# start-up, 0.08 s, not repetitions) and decided no better (loss on the evaluation 4.5 % / 4.2 % against
# 4.0 % / 2.8 %; docs/transcripts/native-search-evaluate-quiet-2026-11-26.txt), so the whole count stays.
# Tried and left: twice the rounds at half the count (under load 7-9 the expensive reduce 512 KiB could
# still win after every round and went through all six, 18 s of confirmations against 5.9 s the same hour).
CONFIRM_SHARE = 1
# A spec's confirm_max (more rounds than the campaign's `confirm`, only for a cell that can still win and has
# not yet shown it: confirm_rounds) is never set by the planner: loaded, twice the rounds (tests/bench/
# native_search.py's race-seq) cost MPICH 4.0.2 1.4-1.6x the race's time under the time rule's counts (0.8-2.6x
# at nrep 100) and did not decide better, and it doubles a 5 %-faster variant's chance to pass (docs/native-search-loss.md, tests/bench/confirm_stopping.py).


class Session:
    """One `pgmpi-bench --serve` mpirun measuring one collective's cells on request."""

    def __init__(self, argv: list[str], cwd: Path, log: Path, env: dict | None = None):
        self.log = log
        with open(log, "w") as err:          # a file, not a pipe: nobody reads stderr while it runs
            self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, bufsize=1, env=env)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-800:]

    def cell(self, mpi_name: str, size: int, labels: list[str], nrep: int | None = None,
             alone: bool = False, blocks: int = 0) -> dict[str, float]:
        more = (f" nrep={nrep}" if nrep else "") + (" alone" if alone else "") + (f" blocks={blocks}" if blocks else "")
        self.proc.stdin.write(f"cell {mpi_name} {size} {','.join(labels)}{more}\n")
        self.proc.stdin.flush()
        out: dict[str, float] = {}
        self.low = {}           # per label its lower quartile (the race's screening figure), else its median
        for line in self.proc.stdout:
            parts = line.split()
            if parts[:1] == ["done"]:
                return out
            if parts[:1] == ["error"]:
                raise RuntimeError(f"pgmpi-bench --serve refused {mpi_name} {size}: {line.strip()}")
            if parts[:1] == ["result"] and len(parts) in (3, 4):
                out[parts[1]] = NEVER if parts[2] == "failed" else float(parts[2])
                self.low[parts[1]] = float(parts[3]) if len(parts) == 4 else out[parts[1]]
        self.close()
        raise RuntimeError(f"pgmpi-bench --serve ended during {mpi_name} {size} (exit {self.proc.returncode}): "
                           f"{self.tail()}")

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self.proc.wait()
        return self.proc.returncode


class Launcher:
    def __init__(self, spec: dict, outdir: Path):
        self.spec, self.outdir = spec, outdir
        self.files: list[str] = []
        self.n = 0
        self.seconds = 0.0
        self.rounds = 0
        self.sessions: dict[str, Session] = {}
        self.defaults: dict[tuple[str, int], list[float]] = {}    # the default's median in each round of a cell
        self.controls: dict[tuple[str, int], list[float]] = {}    # default / default_control - 1, same rounds
        # where the measuring time goes: seconds of the search's cell commands by stage (a race's first stage,
        # its second; any other search's rounds), each confirmation round's start-up (launch to the warm-up
        # cell's answer) and cells, and the confirmations' cell commands by cell
        self.stage_seconds: dict[str, float] = {}
        self.confirm_parts: list[dict] = []

    def serve(self, keys: list[str], spaces: dict[str, dict[int, dict]], d: native.Discovery) -> bool:
        """Start one --serve mpirun for the collectives `keys` (every variant of their grids); False when
        some call would get more labels than pgmpi-bench takes (a label applies to every call that has its
        method).  Its whole life, start-up included, counts as launch time when it closes."""
        labels = sorted({native.format_label(m, seg) for k in keys for sp in spaces[k].values()
                         for m, segs in sp.items() for seg in segs})
        if any(sum(native.parse_label(lab).name in set(d.names(k)) for lab in labels) > MAX_LABELS for k in keys):
            return False
        name = f"{self.spec['prefix']}-{'-'.join(keys)}.txt"
        argv = self.argv(keys, sorted({s for k in keys for s in spaces[k]}), labels, name, "--serve")
        self.n += 1
        sess = Session(argv, self.outdir, self.outdir / (name[:-4] + ".log"))
        sess.started = time.perf_counter()
        for k in keys:
            self.sessions[k] = sess
        self.files.append(name)
        return True

    def close(self, key: str) -> None:
        sess = self.sessions.pop(key, None)
        if sess is None or sess in self.sessions.values():     # still serving another collective
            return
        if sess.close() != 0:
            sys.exit(f"pgmpi-bench --serve for {key} exited with {sess.proc.returncode}: {sess.tail()}")
        self.seconds += time.perf_counter() - sess.started

    def measure(self, key: str, size: int, batch: list) -> dict:
        """One round of a cell: its variants with the default, `batch.repeat` times the repetitions (race's
        second stage: one --serve command with that many more; one mpirun per pass without a session); per
        variant its median (of the passes' medians), and the default's under REFERENCE.  A race screens on
        the lower quartile instead (LOW_Q, for every arm alike): timing noise only adds, and a variant whose
        calls interleaved with the cell's others fall into a fast and a slow mode kept its fast one out of
        the second stage on the median (MPICH's allreduce recursive_doubling at 128 B: 0.9 us after the
        default, 3.5 us after smp or nb; the median of its 16 calls lost to the default, and a quiet run's
        race lost 30 % there).  Its choice is judged by the confirmations alone, on medians."""
        labels = [native.format_label(m, seg) for m, seg in batch]
        self.rounds += 1
        sess = self.sessions.get(key)
        got: dict[str, list[float]] = {}
        repeat = max(1, getattr(batch, "repeat", 1))
        entry = self.spec["collectives"][key]
        n = cell_nrep(self.spec, key, size)
        race = entry.get("search") == "race"
        base = first_nrep(self.spec, entry, size) if race else n or bench_nrep(self.spec)
        low: dict[str, list[float]] = {}
        stage = ("second" if repeat > 1 else "first") if race else "rounds"
        t_cmd = time.perf_counter()
        for _ in range(1 if sess is not None else repeat):
            if sess is not None:
                from pgmpi_formats.collectives import by_key
                # the session's --nrep unless the cell has its campaign-wide count or is a race's second stage
                one = sess.cell(by_key(key).mpi_name, size, labels,
                                repeat * base if repeat > 1 else (base if n else None))
                q = sess.low
            else:
                run = self.launch(key, [size], labels, f"{self.spec['prefix']}-{key}-{size}-r{self.n:03d}.txt")
                rows: dict[str, list[float]] = {}
                for a, x in zip(run.algorithm, run.runtime):
                    rows.setdefault(run.algorithms[a], []).append(float(x))
                one = {lab: statistics.median(xs) for lab, xs in rows.items()}
                q = {lab: lower_quartile(xs) for lab, xs in rows.items()}
            for lab, x in one.items():
                got.setdefault(lab, []).append(x)
                low.setdefault(lab, []).append(q.get(lab, x))
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + time.perf_counter() - t_cmd
        fig = low if race else got
        out = {v: (statistics.median(fig[lab]) if lab in fig else NEVER) for v, lab in zip(batch, labels)}
        if "default" in got:
            self.defaults.setdefault((key, size), []).extend(got["default"])
            out[REFERENCE] = statistics.median(fig["default"])
            # the control arm's spread in the search's own rounds (a race has none: see argv)
            if CONTROL in got:
                c = statistics.median(got[CONTROL])
                if c > 0:
                    self.controls.setdefault((key, size), []).append(out[REFERENCE] / c - 1)
        return out

    def argv(self, keys: list[str], sizes: list[int], labels: list[str], name: str, *extra: str) -> list[str]:
        """pgmpi-bench under the job's launcher: the labels with the default (and the control arm).  A race
        measures its first stage with few repetitions (first_nrep; its second stage repeats the round) and
        without the control arm: the decision's null spread is taken over every run of the campaign, and a
        control measured 3 times over would set it (28.5 % where the confirmations' own gave 7 %); its
        choices are judged on the confirmations, whose default mpirun has the control arm."""
        s = self.spec
        entry = s["collectives"].get(keys[0], {})
        race = entry.get("search") == "race"
        algs = ["default", *labels] + (["default_control"] if s.get("control") and not race else [])
        args = list(s["bench_args"])
        one = sizes[0] if len(sizes) == 1 else None       # a round's own mpirun: its cell's count
        n = first_nrep(s, entry, one) if race else (cell_nrep(s, keys[0], one) if one is not None else None)
        if n:
            args = [x for x in args if not x.startswith("--nrep=")] + [f"--nrep={n}"]
        return shlex.split(s["launcher"]) + [s["bench"], *extra, f"--calls={','.join(keys)}",
                                             f"--sizes={','.join(map(str, sizes))}", f"--algorithms={','.join(algs)}",
                                             "--no-barrier-rows", *args, f"--output={name}"]

    def confirm(self, cells: dict[str, dict[int, str]], index: int, name: str) -> tuple[dict, dict]:
        """One confirmation round (#@mpirun_index `index`) in one pgmpi-bench --serve mpirun over every cell to
        confirm: at each cell the default, the variant the search chose there and (when the campaign has one)
        the control arm, each alone in blocks of CONFIRM_BLOCK (4) consecutive repetitions, the blocks
        alternating -- control, default, variant, then variant, default, control, and so on until each has
        the cell's count (confirm_nrep) -- in one command ("cell ... blocks=4"; the order starts
        the other way in odd rounds).  Short alternating blocks let a load that drifts during the cell move all arms alike (2
        passes of nrep / 2, the way until 2026-11-26, left MPICH's control arm 4-36 % off the default at
        sub-microsecond cells: tests/bench/confirm_blocks.py), and one command per cell costs one round trip
        through the driver instead of one per block.  No cell interleaves two of its algorithms repetition
        by repetition (what made split_binary_tree look faster than it runs alone): 3 of every 4
        measurements follow a call of their own algorithm, and at Open MPI's bcast 512 B blocks of 2 and 5
        measured split_binary_tree as slow as its own mpirun did while interleaving made it look 10 % faster.
        The pair is within one mpirun, so an mpirun that lands in a slower regime (2-3x at small messages
        here, whole mpiruns) moves both sides.
        Its wall time, start-up included, counts as measuring time.  Returns ({(key, size): default's
        median}, {(key, size): variant's median})."""
        s = self.spec
        from pgmpi_formats.collectives import by_key
        control = ["default_control"] if s.get("control") else []
        algs = ["default", *sorted({lab for per in cells.values() for lab in per.values()}), *control]
        keys = sorted(cells)
        # WARMUP_BYTES: the default alone there first, so the mpirun's first calls (milliseconds each on MPICH
        # under load) fall on no cell's arm; the decision leaves its rows out (native_decision.mark_blocks)
        sizes = sorted({size for k in keys for size in cells[k]} | {WARMUP_BYTES})
        argv = shlex.split(s["launcher"]) + [s["bench"], "--serve", f"--calls={','.join(keys)}",
                                             f"--sizes={','.join(map(str, sizes))}", f"--algorithms={','.join(algs)}",
                                             "--no-barrier-rows", *s["bench_args"], f"--mpirun-index={index}",
                                             f"--output={name}"]
        self.n += 1
        t0 = time.perf_counter()
        sess = Session(argv, self.outdir, self.outdir / (name[:-4] + ".log"))
        default, chosen = {}, {}
        try:
            sess.cell(by_key(keys[0]).mpi_name, WARMUP_BYTES, ["default"], alone=True)
        except RuntimeError as exc:
            sys.exit(str(exc))
        part = {"start-up": round(time.perf_counter() - t0, 4), "cells": {}}
        try:
            for k in keys:
                for size, label in sorted(cells[k].items()):
                    nrep = confirm_nrep(s, k, size)          # the cell's campaign-wide count, else --nrep
                    got: dict[str, list[float]] = {}
                    order = [*control, "default", label] if index % 2 == 0 else [label, "default", *control]
                    # one command: pgmpi-bench alternates the arms in blocks itself; a count below two blocks
                    # of CONFIRM_BLOCK still gets two passes (blocks of nrep / 2)
                    block = max(1, min(CONFIRM_BLOCK, nrep // 2))
                    t_cell = time.perf_counter()
                    for a, x in sess.cell(by_key(k).mpi_name, size, order, nrep=nrep, blocks=block).items():
                        got[a] = [x]
                    part["cells"][f"{k} {size}"] = round(time.perf_counter() - t_cell, 4)
                    # the driver's look (still_ahead) takes each arm's median; the decision reads all rows
                    med = {a: statistics.median(xs) for a, xs in got.items()}
                    default[(k, size)], chosen[(k, size)] = med.get("default", NEVER), med.get(label, NEVER)
        except RuntimeError as exc:
            sys.exit(str(exc))
        if sess.close() != 0:
            sys.exit(f"pgmpi-bench --serve confirming round {index} exited with {sess.proc.returncode}: {sess.tail()}")
        self.seconds += time.perf_counter() - t0
        part["seconds"] = round(time.perf_counter() - t0, 4)
        self.confirm_parts.append(part)
        self.files.append(name)
        return default, chosen

    def launch(self, key: str, sizes: list[int], labels: list[str], name: str):
        argv = self.argv([key], sizes, labels, name)
        return self._run(argv, f"{key} {','.join(map(str, sizes))} ({', '.join(labels)})", name)

    def _run(self, argv: list[str], what: str, name: str):
        self.n += 1
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=self.outdir, capture_output=True, text=True)
        self.seconds += time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"pgmpi-bench {what} exited with {p.returncode}: {p.stderr[-800:]}")
        self.files.append(name)
        return read_file(self.outdir / name)


LOW_Q = 0.25       # pgmpi-bench --serve's second figure per label (lib/bench/bench_serve.c, SERVE_LOW_Q)


def lower_quartile(xs: list[float]) -> float:
    """The LOW_Q quantile of xs, linear between order statistics: what pgmpi-bench --serve answers."""
    v = sorted(xs)
    h = LOW_Q * (len(v) - 1)
    i = int(h)
    return v[i] + (h - i) * (v[i + 1] - v[i]) if i + 1 < len(v) else v[-1]


def bench_nrep(spec: dict, default: int = 0) -> int:
    """The search's --nrep (scheduler/planner.search_nrep: the fixed policy's, or predict's max_nrep)."""
    return next((int(x.split("=", 1)[1]) for x in spec["bench_args"] if x.startswith("--nrep=")), default)


def cell_nrep(spec: dict, key: str, size: int | None) -> int | None:
    """The cell's campaign-wide count (the planner's `nrep` per size: campaign nrep_from files or the previous
    night's counts, issue 34), None when the campaign has none for it."""
    n = spec["collectives"].get(key, {}).get("nrep", {}).get(str(size))
    return int(n) if n else None


def confirm_nrep(spec: dict, key: str, size: int) -> int:
    """A confirmation round's repetitions per arm at a cell: its campaign-wide count, else the search's --nrep,
    divided by the spec's confirm_share (CONFIRM_SHARE, 1; rounded up), but at least two blocks of
    CONFIRM_BLOCK and never more than the count.  The planner never sets confirm_share;
    tests/bench/native_search.py's race-half sets 2 (a measurement's arm)."""
    n = cell_nrep(spec, key, size) or bench_nrep(spec)
    return min(n, max(2 * CONFIRM_BLOCK, math.ceil(n / int(spec.get("confirm_share", CONFIRM_SHARE)))))


def first_nrep(spec: dict, entry: dict, size: int | None = None) -> int:
    """A race's first-stage repetitions: the entry's first_nrep, else a sixth of the cell's campaign-wide
    count or of the campaign's --nrep (at least 2): with RACE_REPEAT 3 its second stage gives the two kept
    variants and the default half of that count more, and on MPICH (4-7 methods, no segment sizes) the whole
    race stays near 15 % of an exhaustive campaign's repetitions."""
    if entry.get("first_nrep"):
        return int(entry["first_nrep"])
    nrep = (entry.get("nrep", {}).get(str(size)) if size is not None else None) or bench_nrep(spec, 12)
    return max(2, int(nrep) // 6)


def null_spread(controls: dict) -> float:
    """The search's own control arm: the 95th percentile (the largest below 20 rounds) of |default /
    default_control - 1| over its rounds -- how far apart one mpirun measures the same algorithm twice
    (service/analysis/native_decision.null_spread's rule, on the search's rounds)."""
    dev = sorted(abs(x) for xs in controls.values() for x in xs)
    if not dev:
        return 0.0
    return dev[-1] if len(dev) < 20 else dev[math.ceil(0.95 * len(dev)) - 1]


def to_confirm(paths: dict[str, dict], defaults: dict[str, dict[str, float]],
               threshold: float = 0.0) -> dict[str, dict[int, str]]:
    """The cells whose choice the search measured faster than the default by more than the decision's minimum
    gain and `threshold` (the search's control-arm spread) ({key: {size: label}}): one that is not cannot win
    its cell -- the decision refuses a gain within the minimum or the control arm's spread -- so it costs no
    confirmation."""
    out: dict[str, dict[int, str]] = {}
    for k, per in paths.items():
        for size, p in per.items():
            # a race judges its choice against the default of the same (second-stage) round
            ref = p.get("reference") if p.get("kind") == "race" and p.get("reference") else defaults[k].get(size, 0.0)
            gain = max(MIN_GAIN, threshold)
            if p["choice"] and p["times"].get(p["choice"], NEVER) * (1 + gain) < ref:
                out.setdefault(k, {})[int(size)] = p["choice"]
    return out


# the decision's interval (service/analysis/stats.CI_LEVEL: a t interval of the mean log ratio over mpiruns)
CI_LEVEL = 0.95


def can_still_win(ratios: list[float], left: int, gain: float = MIN_GAIN) -> bool:
    """Whether a cell whose alone pairs so far gave `ratios` (default / variant, one per confirmation round) can
    still pass the decision's interval rule after `left` more rounds: the lower bound of the 95 % t interval of
    the paired ratio over its mpiruns must exceed 1 + the threshold, which is never below the minimum gain
    (service/analysis/native_decision, rule 4; the alone pairs are the only runs of the cell the decision
    takes).  Only a cell that can still win is measured again: a later round costs its arms' repetitions and
    cannot change the decision of the others.  The most favourable later rounds give one same log ratio c
    (for a given sum, equal values spread least), and the bound is concave in c, so its maximum is where its
    derivative vanishes (or it grows without limit: alive).  With 3 rounds this keeps after round 0 exactly
    the cells whose pair showed the gain (what it did until 2026-11-26, after round 0 only) and after round 1
    those a third pair can still carry -- e.g. not MPICH's reduce 512 KiB binomial at 1.07 and 0.77 (quiet
    run 2026-11-26: its third round cost a quarter of the confirmations' time and it was refused)."""
    from scipy import stats
    x = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    if len(x) < len(ratios):        # a failed arm (no median) never wins
        return False
    m, k = len(x), max(0, left)
    n = m + k
    if m == 0:
        return k > 0
    if n < 2:
        return False                # no interval over one mpirun: "need 2"
    goal = math.log(1 + gain)
    t = float(stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1))
    mu = sum(x) / m
    ss = sum((v - mu) ** 2 for v in x)
    c = mu
    if k:
        a = m * k / n                       # the between-groups weight of (c - mu)^2 in the sum of squares
        b2 = n * (n - 1) / (t * m) ** 2
        if b2 * a >= 1:
            return True                     # the bound grows without limit as c does
        c = mu + math.sqrt(b2 * ss / (1 - b2 * a))
    allx = x + [c] * k
    mean = sum(allx) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in allx) / (n - 1))
    return mean - t * s / math.sqrt(n) > goal


def still_ahead(cells: dict[str, dict[int, str]], pairs: dict, left: int) -> dict[str, dict[int, str]]:
    """The cells measured again in the next confirmation round: those whose alone pairs so far ({(key, size):
    [default / variant per round]}) can still win with `left` more rounds (can_still_win)."""
    out: dict[str, dict[int, str]] = {}
    for k, per in cells.items():
        for size, label in per.items():
            if can_still_win(pairs.get((k, size), [0.0]), left):
                out.setdefault(k, {})[size] = label
    return out


def shown(cells: dict[str, dict[int, str]], pairs: dict) -> dict[str, dict[int, str]]:
    """The cells whose alone pairs so far already pass the decision's interval rule at the minimum gain
    (can_still_win with no round left): measuring them again can only lose what they showed."""
    out: dict[str, dict[int, str]] = {}
    for k, per in cells.items():
        for size, label in per.items():
            if can_still_win(pairs.get((k, size), [0.0]), 0):
                out.setdefault(k, {})[size] = label
    return out


def confirm_rounds(cells: dict[str, dict[int, str]], total: int, confirm, most: int | None = None) -> list[dict]:
    """Up to `total` confirmation rounds, `confirm(cells, i) -> ({(key, size): default's median}, {(key, size):
    variant's median})` measuring round i; after each round only the cells that can still win within `most`
    rounds (still_ahead; futility) go on.  most (spec confirm_max, default `total`): past the campaign's
    `total` rounds, a cell that can still win but has not yet shown it (shown) gets further rounds, one at a
    time, up to `most`; one that has shown it leaves (every cell keeps the campaign's rounds, as all its
    mpiruns measure alike).  The decision still judges every round's pair by its rules: stopping decides only
    which mpiruns exist.  Returns each round's cells ({key: {str(size): label}})."""
    most = max(total, most or total)
    rounds = []
    pairs: dict = {}            # (key, size) -> default / variant of each round's alone pair
    for i in range(most):
        if not cells:
            break
        rounds.append({k: {str(size): lab for size, lab in per.items()} for k, per in cells.items()})
        default, chosen = confirm(cells, i)
        for k, per in cells.items():
            for size in per:
                d, v = default.get((k, size), 0.0), chosen.get((k, size), NEVER)
                pairs.setdefault((k, size), []).append(d / v if 0 < v < NEVER else 0.0)
        cells = still_ahead(cells, pairs, most - i - 1)
        if i + 1 >= total:
            won = shown(cells, pairs)
            cells = {k: {s: lab for s, lab in per.items() if s not in won.get(k, {})} for k, per in cells.items()}
            cells = {k: per for k, per in cells.items() if per}
    return rounds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="the searched collectives, JSON (scheduler/planner.py)")
    ap.add_argument("--launcher", required=True, help="the job's MPI launcher line, e.g. 'mpirun -np 2'")
    ap.add_argument("--bench", required=True, help="pgmpi-bench of the job's module")
    ap.add_argument("--output", required=True, type=Path)
    a = ap.parse_args(argv)
    spec = dict(json.loads(a.spec), launcher=a.launcher, bench=a.bench)
    outdir = a.output.resolve().parent
    if "intel" in spec:     # Intel MPI: presets fixed at MPI_Init, one mpirun each (scheduler/intel_race.py)
        from .intel_race import race
        _write(a.output, race(spec, outdir))
        return 0
    listing = outdir / spec.get("listing", "native-algorithms.txt")
    d = native.parse_listing(listing.read_text())
    launcher = Launcher(spec, outdir)
    report = {"search": {}, "library": d.library, "version": d.version, "files": launcher.files,
              "paths": {}, "grid": {}}
    t0 = time.perf_counter()
    spaces = {k: spaces_for(d, k, e["sizes"], e["segments"]) for k, e in spec["collectives"].items()}
    # a race's collectives share one --serve mpirun (its start-up costs more than a short first stage)
    race = [k for k, e in spec["collectives"].items() if e["search"] == "race"]
    shared = len(race) > 1 and launcher.serve(race, spaces, d)
    for key, entry in spec["collectives"].items():
        t_start = time.perf_counter()
        served = (shared and key in race) or launcher.serve([key], spaces, d)
        report.setdefault("mode", {})[key] = "serve" if served else "mpirun per round"
        report["search"][key] = entry["search"]
        report.setdefault("neighbour", {})[key] = entry.get("neighbour", "none")
        report["grid"][key] = {str(s): sum(len(v) for v in sp.values()) for s, sp in spaces[key].items()}
        try:
            paths = run_sizes(entry["search"], spaces[key], lambda s, b, k=key: launcher.measure(k, s, b),
                              lookahead=entry["lookahead"], prune=entry["prune"],
                              neighbour=entry.get("neighbour", "none"))
        except RuntimeError as exc:
            sys.exit(str(exc))
        launcher.close(key)
        report.setdefault("collective_seconds", {})[key] = round(time.perf_counter() - t_start, 3)
        report["paths"][key] = {str(s): p.to_json() for s, p in paths.items()}
        print(f"pgmpi-search: {key} {entry['search']}: {sum(len(p.experiments) for p in paths.values())} "
              f"experiments over {len(paths)} sizes (grid {sum(report['grid'][key].values())})", file=sys.stderr)
    # Confirmation alone: a search measures each variant interleaved with the others in one mpirun, where an
    # algorithm can cost what it never costs in an application (Open MPI's split_binary_tree at 512 B:
    # tests/bench/native_interleave.py).  So every chosen variant is measured again without any other
    # algorithm of its cell next to it, as an application under the decision file runs it, paired with the
    # default alone: per round one mpirun over all the cells to confirm (Launcher.confirm: at each cell the
    # default, its own chosen variant and the control arm, each alone, one after the other), not one per
    # variant or arm -- an mpirun's start-up costs more than the few cells it measures, and a pair split over
    # two mpiruns carries the mpiruns' regimes (MPICH here: a whole mpirun 2-3x slower at small messages).
    # Different cells may run different variants in that mpirun, and the default follows the variant at a
    # cell: so does a job under the file; what the artefact needs, two algorithms of one cell alternating
    # repetition by repetition, never happens there.  A later round goes on only for the cells whose alone
    # pairs so far can still win the decision (still_ahead).  The decision pairs them within the mpirun
    # (service/analysis/native_decision.mark_blocks) and no longer takes the search's interleaved
    # measurement of a variant it has an alone measurement of.
    searched_runs, searched_secs = launcher.n, launcher.seconds
    # Only a choice the search measured faster than the default by the decision's minimum gain is confirmed:
    # one that is not cannot win its cell, and each confirmation is an mpirun start-up per round.
    report["defaults"] = {k: {str(s): statistics.median(v) for (k2, s), v in launcher.defaults.items() if k2 == k}
                          for k in report["paths"]}
    report["spread"] = null_spread(launcher.controls)
    cells = to_confirm(report["paths"], report["defaults"], report["spread"]) if int(spec.get("confirm", 0)) else {}
    rounds = confirm_rounds(cells, int(spec.get("confirm", 0)),
                            lambda c, i: launcher.confirm(c, i, f"{spec['prefix']}-confirm-{i}.txt"),
                            int(spec.get("confirm_max", 0)) or None)
    report["confirm"] = {"mpiruns": launcher.n - searched_runs, "launch_seconds": round(launcher.seconds - searched_secs, 3),
                         "cells": rounds[0] if rounds else {}, "rounds": rounds, "parts": launcher.confirm_parts}
    report["stage_seconds"] = {k: round(v, 4) for k, v in launcher.stage_seconds.items()}
    report["mpiruns"] = searched_runs
    report["rounds"] = launcher.rounds
    report["launch_seconds"] = round(searched_secs, 3)
    report["wall_seconds"] = round(time.perf_counter() - t0, 3)
    _write(a.output, report)
    return 0


def _write(output: Path, report: dict) -> None:
    tmp = output.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(tmp, output)


if __name__ == "__main__":
    raise SystemExit(main())
