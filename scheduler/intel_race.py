"""Intel MPI's race across mpirun rounds (`search: race` on an Intel MPI module), run by the search driver
(scheduler/native_driver.py, which hands a spec with an "intel" section here).

Intel MPI reads I_MPI_ADJUST_<COLL> once at MPI_Init, so a preset can be measured only in an mpirun of its own
(pgmpi-bench accepts native:<p> only when the launch forces exactly that preset, lib/bench/bench_native.c), and
the default in another mpirun of the same round (same --mpirun-index: the analysis pairs them,
service/analysis/native_decision.cells_of_mpiruns) -- the exhaustive path's launches (planner.
intel_preset_launches).  The race keeps that pairing and drops presets between rounds:

  round 0    every preset 1-N the module's Intel MPI lists (impi_info -v, in the spec) at every cell, with the
             race's first-stage repetitions (first_nrep), one mpirun per preset number (it forces that preset on
             every raced collective that has it), and one default mpirun at the campaign's repetitions in the
             middle of the round (the reference of every preset: at 16 repetitions, first in the round, it ran
             bcast 256 KiB at 1158 us against 44-59 us in the later rounds, and every preset "beat" it), no
             control arm (a control measured with a few repetitions would set the decision's null spread, as
             native_driver's race says);
  drop       per cell only the KEEP fastest presets that beat the default of the round stay;
  rounds 1-  the survivors at the campaign's repetitions: mpirun j forces the j-th survivor of each collective
             (each collective its own variable), measuring at the union of those survivors' cells' sizes, and the
             default mpirun with the control arm; after round 1 a survivor stays only while its paired ratio
             (median over its rounds) beats the default by the minimum gain; rounds up to the campaign's mpiruns, so a survivor has as many paired
             ratios as under exhaustive and the decision (the same rules as for exhaustive) confirms or refuses it.

Order within a round alternates (presets ascending after the default in even rounds, the reverse in odd ones),
as the exhaustive path does.  What the race cannot save: an mpirun start-up per preset in round 0 (an Intel MPI
mpirun start-up costs about as much as the measuring of a small grid: tests/bench/native_search.py prints both).
"""
from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pgmpi_formats.results import read_file

KEEP = 2               # survivors per cell after round 0 (native_search.py's race keeps two as well)
MIN_GAIN = 0.05        # service/analysis/native_decision.decide's default min_gain


def presets_of(spec: dict) -> dict[str, list[int]]:
    """{collective: [presets 1-N]} of the raced collectives (the planner wrote N from impi_info -v)."""
    top = spec["intel"]["presets"]
    return {k: list(range(1, int(top[k]) + 1)) for k in spec["collectives"]}


def _nrep_args(args: list[str], n: int | None) -> list[str]:
    args = [x for x in args if not x.startswith("--mpirun-index=")]
    return args if n is None else [x for x in args if not x.startswith("--nrep=")] + [f"--nrep={n}"]


class Rounds:
    """The race's mpiruns; seconds = the wall time of every pgmpi-bench mpirun, start-up and exit included."""

    def __init__(self, spec: dict, outdir: Path):
        self.spec, self.outdir = spec, outdir
        self.files: list[str] = []
        self.seconds = 0.0
        self.mpiruns = 0
        self.per_mpirun: list[float] = []

    def _run(self, name: str, keys: list[str], sizes: list[int], algs: str, env: dict, nrep: int | None,
             index: int):
        s = self.spec
        argv = shlex.split(s["launcher"]) + [s["bench"], f"--calls={','.join(keys)}",
                                             f"--sizes={','.join(map(str, sizes))}", f"--algorithms={algs}",
                                             "--no-barrier-rows", *_nrep_args(list(s["bench_args"]), nrep),
                                             f"--mpirun-index={index}", f"--output={name}"]
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=self.outdir, capture_output=True, text=True, env={**os.environ, **env})
        dt = time.perf_counter() - t0
        self.seconds += dt
        self.per_mpirun.append(dt)
        self.mpiruns += 1
        if p.returncode != 0:
            # a preset that does not run here (or fails pgmpi-bench's results check): never chosen
            print(f"pgmpi-search: {name}: exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:200]}",
                  file=sys.stderr)
            return None
        self.files.append(name)
        return read_file(self.outdir / name)

    def round(self, index: int, alive: dict[str, dict[int, list[int]]], nrep: int | None, control: bool,
              default_nrep: int | None = None) -> dict:
        """One round: the default mpirun over every cell still raced and the surviving presets' mpiruns (default_nrep:
        round 0's default at that count, mid-round).  Returns {(key, size): {label: median seconds}} ("default"
        and "native:<p>")."""
        from pgmpi_formats import impi_adjust
        from pgmpi_formats.collectives import by_mpi_name
        prefix = self.spec["prefix"]
        keys = [k for k in alive if alive[k]]
        sizes = sorted({s for k in keys for s in alive[k]})
        launches = [("default", keys, sizes, "default" + (",default_control" if control else ""),
                     {"PGMPI_NATIVE_EVIDENCE": "1"})]
        # mpirun j forces the j-th surviving preset of each collective (its own variable each: pgmpi-bench labels
        # a call native:<p> only where its variable is p), so a round is 1 + the most survivors of one collective
        # mpiruns, not 1 + all collectives' survivors together; a collective's sizes within an mpirun cannot take
        # different presets (pgmpi-bench accepts only a bare preset, no ranges)
        per = {k: sorted({p for ps in alive[k].values() for p in ps}) for k in keys}
        for j in range(max((len(v) for v in per.values()), default=0)):
            chosen = {k: v[j] for k, v in per.items() if j < len(v)}
            at = sorted({s for k, p in chosen.items() for s, ps in alive[k].items() if p in ps})
            tag = (f"native-{next(iter(chosen.values()))}" if len(set(chosen.values())) == 1
                   else "native-" + "-".join(f"{k}{p}" for k, p in chosen.items()))
            launches.append((tag, list(chosen), at, ",".join(sorted({f"native:{p}" for p in chosen.values()})),
                             {f"I_MPI_ADJUST_{impi_adjust.VARIABLES[k]}": str(p) for k, p in chosen.items()}))
        out: dict = {}
        order = launches if index % 2 == 0 else launches[::-1]
        if default_nrep is not None:
            # round 0: the default, the one reference of 1 + N mpiruns, in the middle of the round (the first mpirun
            # of a library after a pause runs slow here, and the load drifts over the round) and at full count
            order = launches[1:len(launches) // 2 + 1] + launches[:1] + launches[len(launches) // 2 + 1:]
        for tag, ks, ss, algs, env in order:
            run = self._run(f"{prefix}-r{index}-{tag}.txt", ks, ss, algs, env,
                            default_nrep if tag == "default" and default_nrep is not None else nrep, index)
            if run is None and tag == "default":
                sys.exit(f"pgmpi-bench's default mpirun of round {index} failed: no preset can be paired")
            if run is None:
                continue
            rows: dict = {}
            for t, m, a, x in zip(run.test, run.msize, run.algorithm, run.runtime):
                rows.setdefault((run.tests[t], int(m), run.algorithms[a]), []).append(float(x))
            for (name, m, lab), xs in rows.items():
                c = by_mpi_name(name)
                if c is not None and c.key in ks and lab != "default_control":
                    out.setdefault((c.key, m), {})[lab] = statistics.median(xs)
        return out


def race(spec: dict, outdir: Path) -> dict:
    """Runs the race; returns the search driver's report (native_driver.main's fields).  A spec whose every
    collective says `exhaustive` runs the same rounds without dropping anything, every round at the campaign's
    repetitions with the control arm: the planner's exhaustive launches (intel_preset_launches) driven from
    here, so that tests/bench/native_search.py times both with one clock."""
    from .native_driver import bench_nrep, first_nrep
    exhaustive = all(e["search"] == "exhaustive" for e in spec["collectives"].values())
    t0 = time.perf_counter()
    rounds_total = max(2, int(spec.get("confirm", 0)) or 3)   # the campaign's mpiruns (at least two ratios)
    presets = presets_of(spec)
    alive = {k: {int(s): list(presets[k]) for s in e["sizes"]} for k, e in spec["collectives"].items()}
    ratios: dict = {}          # (key, size, p) -> [default / preset per round]
    times: dict = {}           # (key, size, label) -> [median per round]
    path_rounds: dict = {}     # (key, size) -> [[labels measured] per round]
    r = Rounds(spec, outdir)
    full = bench_nrep(spec) or None
    first = full if exhaustive else min(first_nrep(spec, e) for e in spec["collectives"].values())
    for i in range(rounds_total):
        if not any(alive[k] for k in alive):
            break
        for k in alive:
            for s, ps in alive[k].items():
                path_rounds.setdefault((k, s), []).append([f"native:{p}" for p in ps])
        got = r.round(i, alive, first if i == 0 else full,
                      control=bool(spec.get("control")) and (i > 0 or exhaustive),
                      default_nrep=full if i == 0 and not exhaustive else None)
        for (k, s), med in got.items():
            for lab, x in med.items():
                times.setdefault((k, s, lab), []).append(x)
            d = med.get("default")
            for p in alive.get(k, {}).get(s, []):
                x = med.get(f"native:{p}")
                if d and x:
                    ratios.setdefault((k, s, p), []).append(d / x)
        for k in ([] if exhaustive else alive):
            for s in list(alive[k]):
                ps = alive[k][s]
                if i == 0:      # round 0: the KEEP fastest that beat the default there
                    beat = sorted((p for p in ps if ratios.get((k, s, p), [0.0])[-1] > 1.0),
                                  key=lambda p: -ratios[(k, s, p)][-1])
                    ps = beat[:KEEP]
                else:           # later: only while the paired ratio over its rounds beats the minimum gain
                    ps = [p for p in ps if len(ratios.get((k, s, p), [])) > i
                          and statistics.median(ratios[(k, s, p)]) > 1 + MIN_GAIN]
                if ps:
                    alive[k][s] = ps
                else:
                    del alive[k][s]
    paths: dict = {}
    for k, e in spec["collectives"].items():
        for s in map(int, e["sizes"]):
            med = {lab: statistics.median(xs) for (k2, s2, lab), xs in times.items() if (k2, s2) == (k, s)}
            best = max(((p, statistics.median(v)) for (k2, s2, p), v in ratios.items() if (k2, s2) == (k, s)
                        and len(v) >= 2), key=lambda x: x[1], default=None)
            paths.setdefault(k, {})[str(s)] = {
                "kind": "race" if not exhaustive else "exhaustive", "rounds": path_rounds.get((k, s), []),
                "times": {lab: x for lab, x in med.items() if lab != "default"},
                "reference": med.get("default"),
                "choice": f"native:{best[0]}" if best and best[1] > 1 + MIN_GAIN else None,
                "ratios": {f"native:{p}": v for (k2, s2, p), v in ratios.items() if (k2, s2) == (k, s)}}
    return {"search": {k: e["search"] for k, e in spec["collectives"].items()}, "library": "intelmpi",
            "version": spec["intel"].get("version", ""), "files": r.files,
            "paths": paths, "grid": {k: {str(s): len(presets[k]) for s in e["sizes"]}
                                     for k, e in spec["collectives"].items()},
            "mode": {k: "intel rounds" for k in spec["collectives"]},
            "defaults": {k: {str(s): statistics.median(times[(k, int(s), "default")])
                             for s in e["sizes"] if (k, int(s), "default") in times}
                         for k, e in spec["collectives"].items()},
            "confirm": {"mpiruns": 0, "launch_seconds": 0.0, "cells": {}, "rounds": []},
            "mpiruns": r.mpiruns, "rounds": len(next(iter(path_rounds.values()), [])),
            "launch_seconds": round(r.seconds, 3), "mpirun_seconds": [round(x, 3) for x in r.per_mpirun],
            "wall_seconds": round(time.perf_counter() - t0, 3)}
