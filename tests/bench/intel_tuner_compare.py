#!/usr/bin/env python3
"""Against Intel's own tuner (issue 35): Intel MPI's `mpitune_fast` and our native search on the same Intel MPI,
the same machine, the same collectives and sizes at p = 2, then a user program under both results.

    .venv/bin/python tests/bench/intel_tuner_compare.py [--colls allreduce,bcast,reduce,allgather]
        [--sizes 8,1024,65536,1048576] [--mpiruns 5] [--nrep 30] [--max-preset N] [--search exhaustive|race]
        [--rounds 8] [--iters 40] [--keep DIR] [--guest]

Needs build/install/intelmpi (deploy/build-lib.sh intelmpi) and the intelmpi row of deploy/mpi-libraries.tsv.
Intel's autotuner runs only on a processor whose cpuid vendor is GenuineIntel: on this AMD host, --guest runs
all of it inside deploy/intel-guest.sh's emulated Skylake guest (scheduler/README.md, "Intel's own tuner").
  1. Intel's tuner: `mpitune_fast -hosts <this host> -n 1 -ppn 2 -c <colls> -d DIR`, its wall time, what it
     printed, and what its output file holds: whether it is byte-identical to the generic table the library
     loads by itself, and (part 3) whether it changes any algorithm (fingerprints).  Then the tuner's own
     tuning job re-run by hand (the environment mpitune_fast gives IMB-MPI1: I_MPI_TUNING_MODE=auto:cluster,
     I_MPI_TUNING_BIN_DUMP, I_MPI_TUNING_METADATA_DUMP=1): whether its dump differs from the generic table
     (on a processor that is not GenuineIntel it does not, and the metadata file the tool merges is missing).
  2. Ours, as a campaign runs it: `--search exhaustive` (tests/bench/native_libraries.py's Intel search: one
     pgmpi-bench mpirun per preset 1-max, each alone, and one for the default, `--mpiruns` rounds in
     alternating order; Intel MPI reads I_MPI_ADJUST_* once at MPI_Init) or `--search race` (the search
     driver's Intel race, scheduler/intel_race.py: every preset once at a sixth of the count, then the two
     fastest per cell that beat the default, `--mpiruns` rounds in all); then
     service/analysis/native_decision.decide, the version's own writer (native.impi), and the validation job
     as users load it (scheduler/native_validation.py, judged by service/analysis/native_validation.judge).
     Its time: search + validation.
  3. A user program (tests/bench/intel_tuner_app.c: an iterative kernel, not a benchmark of either tool) under
     (a) the library's defaults, (b) Intel's file (I_MPI_TUNING_BIN=<it>), (c) our native.impi's variables,
     and a control arm (the default again), `--rounds` rounds of one mpirun each in rotating order; per cell the paired ratio (a)/(x) per round,
     geometric mean and 95 % t-interval over the rounds; its checksum under every arm (the state holds exact
     integers: every algorithm must give the same bits) and rank 0's serial recomputation.
Prints the figures and the machine load; asserts nothing.  A tuner that produced nothing is said to have
produced nothing: its file is still run as arm (b), as a user would load it.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

HERE = Path(__file__).resolve().parent
PRELOAD = HERE.parents[1] / "build" / "install" / "intelmpi" / "lib" / "libpgmpitune.so"
sys.path.insert(0, str(HERE))
import native_libraries as nl  # noqa: E402  (its Intel search, modules and validation job)

from pgmpi_formats import impi_adjust, native_file  # noqa: E402
from service.analysis.native_decision import decide, runs_from_files  # noqa: E402

ARMS = ("a", "b", "c", "z")
ARM_NAMES = {"a": "(a) default", "b": "(b) Intel's file", "c": "(c) ours", "z": "control: default again"}


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def cpu_vendor() -> str:
    for line in open("/proc/cpuinfo"):
        if line.startswith("vendor_id"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def loaded_table(lib: nl.Lib, app: Path) -> str:
    """The tuning file the library loads by itself (its I_MPI_DEBUG start-up line)."""
    p = lib.run([*lib.mpirun, str(app), "1", "8"], env={"I_MPI_DEBUG": "5"})
    m = re.search(r'Load tuning file: "([^"]+)"', p.stdout + p.stderr)
    return m.group(1) if m else ""


def intel_tuner(lib: nl.Lib, colls: list[str], work: Path, generic: str) -> dict:
    out = work / "mpitune"
    out.mkdir(parents=True, exist_ok=True)
    tool = Path(lib.env["I_MPI_ROOT"]) / "bin" / "mpitune_fast"
    argv = [str(tool), "-hosts", socket.gethostname(), "-n", "1", "-ppn", "2", "-c", ",".join(colls), "-d", str(out)]
    t0 = time.time()
    p = lib.run(argv, cwd=out)
    secs = time.time() - t0
    text = p.stdout + p.stderr
    (work / "mpitune.log").write_text(f"$ {' '.join(argv)}\n{text}")
    missing = sorted({m for m in colls if re.search(rf"Missing file to merge \S*result_\w+?_{m}_", text)})
    files = sorted(out.glob("*_merged_*.dat"))
    r = {"argv": " ".join(argv), "secs": secs, "rc": p.returncode, "missing": missing, "file": files[-1] if files else None,
         "completed": "Tuning successfully completed" in text, "log": work / "mpitune.log"}
    if r["file"] and generic:
        r["same_bytes"] = Path(generic).read_bytes() == r["file"].read_bytes()
    return r


def tuning_job_evidence(lib: nl.Lib, app: Path, work: Path, generic: str) -> str:
    """The tuner's own tuning job environment around our app: does the library autotune, does it write the
    metadata file the tool merges?"""
    dump = work / "autotune-dump.dat"
    env = {"I_MPI_DEBUG": "5", "I_MPI_TUNING_MODE": "auto:cluster", "I_MPI_TUNING_METADATA_DUMP": "1",
           "I_MPI_TUNING_AUTO_ITER_NUM": "4", "I_MPI_TUNING_AUTO_WARMUP_ITER_NUM": "1", "I_MPI_TUNING_BIN_DUMP": str(dump)}
    p = lib.run([*lib.mpirun, str(app), "40", "8,1024,65536"], env=env)
    said = "; ".join(sorted({m.strip() for m in re.findall(r"MPI startup\(\): (I_MPI_TUNING\w+ environment variable is not "
                                                           r"supported\.)", p.stdout + p.stderr)})) or "no message"
    meta = Path(str(dump) + "_metadata")
    same = dump.exists() and generic and dump.read_bytes() == Path(generic).read_bytes()
    return (f"cpu vendor {cpu_vendor()}; the library said: {said}; dump "
            + ("missing" if not dump.exists() else "byte-identical to the generic table" if same else "DIFFERS from the generic table")
            + f"; {meta.name} {'written' if meta.exists() else 'not written'}")


def race(lib: nl.Lib, colls: list[str], sizes: list[int], a, work: Path) -> tuple[dict, str, float]:
    """Our race over Intel's presets, as a campaign's `search: race` runs it: the search driver's Intel rounds
    (scheduler/intel_race.py: every preset at a sixth of the count in round 0, then the two fastest per cell
    that beat the default, `--mpiruns` rounds in all, each preset and the default in mpiruns of their own).
    Returns ({(key, size, 2): [Run]}, a line, the wall time of its pgmpi-bench mpiruns)."""
    top = {k: min(lib.disc.presets[k], a.max_preset or 10**6) for k in colls}
    d = work / "race"
    d.mkdir(parents=True, exist_ok=True)
    spec = {"prefix": "search-0", "control": True, "confirm": a.mpiruns,
            "intel": {"version": lib.disc.version, "presets": top},
            "bench_args": [f"--nrep={a.nrep}", "--campaign=intel-tuner-compare", "--module-name=intelmpi"],
            "collectives": {k: {"search": "race", "sizes": sizes, "segments": []} for k in colls}}
    out = d / "search-0.json"
    p = lib.run([sys.executable, "-m", "scheduler.native_driver", "--spec", json.dumps(spec), "--launcher",
                 shlex.join(lib.mpirun), "--bench", str(lib.bench), "--output", str(out)], cwd=nl.ROOT)
    if p.returncode:
        raise RuntimeError(f"search driver: {p.stderr[-800:]}")
    rep = json.loads(out.read_text())
    cells = runs_from_files([d / f for f in rep["files"]])
    secs = rep["launch_seconds"] + rep.get("confirm", {}).get("launch_seconds", 0.0)
    return cells, (f"race over presets 1-{max(top.values())}, {len(cells)} cells, {len(rep['files'])} mpiruns "
                   f"({a.mpiruns} rounds, each preset alone)"), secs


def ours(lib: nl.Lib, colls: list[str], sizes: list[int], a, work: Path) -> dict:
    lib.disc = impi_adjust.discover(lib.env)
    if a.search == "race":
        cells, line, secs = race(lib, colls, sizes, a, work)
    else:
        cells, line, secs = lib.search(a.mpiruns, a.nrep, sizes={c: sizes for c in colls},
                                       max_preset=a.max_preset or 10**6)
    res = decide(cells, library="intelmpi")
    decs = res.native_decisions()
    chosen = [d for d in decs if d.label != "default"]
    r = {"search": line, "search_secs": secs, "chosen": chosen, "text": None, "verdict": "nothing to validate",
         "validate_secs": 0.0, "why": {}}
    for cell, cd in sorted(res.decisions.items()):     # per cell: the fastest preset and what decided it
        cands = [c for c in cd.candidates if c.label != "default" and c.run_ratios]
        if cd.choice != "default":
            r["why"][cell[:2]] = f"{cd.choice}: {cd.reason}"
        elif cands:
            best = max(cands, key=lambda c: c.paired_ratio)
            r["why"][cell[:2]] = (f"default; fastest preset {best.label} {best.paired_ratio:.2f}x"
                                  + (f" (refused: {best.refused})" if best.refused else ""))
    if not chosen:
        return r
    try:
        name, text = native_file.render("intelmpi", decs, version=lib.version)
    except ValueError as exc:       # the writer leaves every collective where the default won somewhere
        r["verdict"] = f"no file: {exc}"
        return r
    (work / name).write_text(text)
    r["text"], r["file"] = text, work / name
    r["adjust"] = impi_adjust.parse(text, name, lib.disc)
    mods = nl.modules(work, ["intelmpi"])
    t0 = time.time()
    r["verdict"] = nl.validate(lib, name, text, mods, sorted(res.decisions))
    r["validate_secs"] = time.time() - t0
    return r


def parse_app(text: str) -> dict:
    cells = {(c, int(b)): float(t) for c, b, t in re.findall(r"^cell (\S+) (\d+) median_us=([\d.]+)$", text, re.M)}
    fps = {(c, int(b)): f for c, b, f in re.findall(r"^fingerprint (\S+) (\d+) (\S+)$", text, re.M)}
    m = re.search(r"^checksum=(\S+) correct=(\w+)$", text, re.M)
    return {"cells": cells, "fps": fps, "checksum": m.group(1) if m else None, "correct": m.group(2) if m else "no"}


def interval(ratios: list[float]) -> tuple[float, float, float]:
    logs = [math.log(x) for x in ratios]
    g = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(g), float("nan"), float("nan")
    lo, hi = stats.t.interval(0.95, len(logs) - 1, loc=g, scale=stats.sem(logs)) if statistics.pstdev(logs) > 0 else (g, g)
    return math.exp(g), math.exp(lo), math.exp(hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--colls", default="allreduce,bcast,reduce,allgather")
    ap.add_argument("--sizes", default="8,1024,65536,1048576")
    ap.add_argument("--mpiruns", type=int, default=5, help="rounds of our search (3 decided nothing at load 9)")
    ap.add_argument("--nrep", type=int, default=30)
    ap.add_argument("--max-preset", type=int, default=0,
                    help="search presets 1-N; 0 (default): every preset impi_info lists, as a campaign searches "
                         "(in the emulated guest 1-8 missed allreduce's winners 25 and 27)")
    ap.add_argument("--search", choices=("exhaustive", "race"), default="exhaustive",
                    help="our search: every preset in each of --mpiruns rounds, or the race (scheduler/intel_race.py)")
    ap.add_argument("--rounds", type=int, default=8, help="rounds of the user program (three mpiruns each)")
    ap.add_argument("--iters", type=int, default=40, help="kernel iterations per user-program mpirun")
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--guest", action="store_true",
                    help="run all of it inside deploy/intel-guest.sh's GenuineIntel guest (both tuners, the program)")
    a = ap.parse_args()
    if a.guest:
        return in_guest(a)
    colls, sizes = a.colls.split(","), [int(s) for s in a.sizes.split(",")]
    work = a.keep or Path(tempfile.mkdtemp(prefix="intel-tuner-"))
    work.mkdir(parents=True, exist_ok=True)
    lib = nl.Lib("intelmpi", work)
    print(f"# Intel MPI {lib.version}, {cpu_vendor()} ({socket.gethostname()}), 2 ranks; load {load()} at start "
          f"(2 cores shared: loaded when > 1.2); work in {work}", flush=True)
    app = work / "intel_tuner_app"
    c = lib.run([str(lib.lib.row.mpicc), "-O2", "-o", str(app), str(HERE / "intel_tuner_app.c")])
    if c.returncode:
        print(f"compile failed: {c.stderr[-500:]}")
        return 1
    generic = loaded_table(lib, app)

    # 1. Intel's tuner
    it = intel_tuner(lib, colls, work, generic)
    print(f"\n## Intel's tuner (load {load()})\n  $ {it['argv']}\n  wall time {it['secs']:.1f} s, exit {it['rc']}, "
          f"'Tuning successfully completed': {'yes' if it['completed'] else 'no'}; log {it['log']}")
    print(f"  collectives with no tuning result ('Missing file to merge'): {len(it['missing'])} of {len(colls)}"
          + (f" ({', '.join(it['missing'])})" if it["missing"] else ""))
    if it["file"]:
        print(f"  its file: {it['file'].name} ({it['file'].stat().st_size} bytes); the library's own table {Path(generic).name}: "
              + ("byte-identical" if it.get("same_bytes") else "bytes differ (whether it selects differently: fingerprints below)"))
    else:
        print("  its file: none written")
    print(f"  why (its tuning job's environment around the user program): {tuning_job_evidence(lib, app, work, generic)}",
          flush=True)

    # 2. ours
    try:
        o = ours(lib, colls, sizes, a, work)
    except Exception as exc:                        # say why, and run the user program without arm (c)
        o = {"error": f"{type(exc).__name__}: {str(exc)[:600]}", "text": None}
    print(f"\n## Our native search (load {load()})")
    if "error" in o:
        print(f"  failed: {o['error']}")
    else:
        print(f"  {o['search']}: {o['search_secs']:.1f} s; validation {o['validate_secs']:.1f} s; "
              f"total {o['search_secs'] + o['validate_secs']:.1f} s")
        print(f"  decided: {', '.join(f'{d.key} {d.nbytes} B {d.label}' for d in o['chosen']) or 'default everywhere'}")
        if o["text"]:
            print("  " + "\n  ".join(ln for ln in o["text"].splitlines() if not ln.startswith("#")))
        print(f"  validation: {o['verdict']}")
        for (coll, s), why in o["why"].items():
            print(f"    {coll} {s} B: {why}")
    validated = bool(o.get("text")) and str(o.get("verdict", "")).startswith("passed")
    # (c) only where ours wrote a file (else users keep the default, which (a) is); the control arm, the
    # default in mpiruns of its own, gives each cell's null spread to read the other intervals against
    arm_env = {"a": {}, "b": {"I_MPI_TUNING_BIN": str(it["file"])} if it["file"] else None,
               # as users load it: the module names the file, libpgmpitune (preloaded here, the program is
               # not linked with it) sets the variables at MPI_Init for the job sizes the file was decided at
               "c": {"PGMPITUNE_NATIVE_IMPI": str(o["file"]), "LD_PRELOAD": str(PRELOAD)} if o.get("text") else None,
               "z": {}}
    arms = [x for x in ARMS if arm_env[x] is not None]

    # 3. the user program, interleaved
    runs: dict[str, list[dict]] = {x: [] for x in arms}
    for i in range(a.rounds):
        k = i % len(arms)               # each arm in each position in turn, then the same rotations reversed
        order = arms[k:] + arms[:k]
        for x in (order[::-1] if (i // len(arms)) % 2 else order):
            p = lib.run([*lib.mpirun, str(app), str(a.iters), ",".join(map(str, sizes))], env=arm_env[x])
            (work / f"app-{i}-{x}.txt").write_text(p.stdout + p.stderr)
            r = parse_app(p.stdout)
            if p.returncode or not r["cells"]:
                r = {"cells": {}, "fps": {}, "checksum": None, "correct": f"run failed ({p.returncode}): {p.stderr[-200:]}"}
            runs[x].append(r)
    print(f"\n## User program (tests/bench/intel_tuner_app.c, {a.iters} iterations per mpirun, {a.rounds} rounds of "
          f"{len(arms)} mpiruns in rotating order; load {load()})")
    print("  speed-up = (a)'s median call time / the arm's, per round; geometric mean [95 % interval over rounds]"
          + ("" if "c" in arms else "; no arm (c): ours decided the default everywhere, so users keep (a)"))
    head = f"  {'cell':22} {'(a) us':>9}"
    for x in arms[1:]:
        head += f"  {ARM_NAMES[x]:>30}"
    print(head + "  ours sets / fingerprint (b), (c) vs (a)")
    apart = []          # (arm, cell, g, lo, hi, control interval): intervals that exclude 1
    for coll in colls:
        for s in sizes:
            key = (coll, s)
            ok = [i for i in range(a.rounds) if all(key in runs[x][i]["cells"] for x in arms)]
            if not ok:
                print(f"  {coll + ' ' + str(s) + ' B':22} no complete round")
                continue
            line = f"  {coll + ' ' + str(s) + ' B':22} {statistics.median(runs['a'][i]['cells'][key] for i in ok):9.2f}"
            iv = {x: interval([runs["a"][i]["cells"][key] / runs[x][i]["cells"][key] for i in ok]) for x in arms[1:]}
            for x in arms[1:]:
                g, lo, hi = iv[x]
                line += f"  {g:12.2f} [{lo:5.2f}, {hi:5.2f}]     "
                if x in ("b", "c") and (hi < 1 or lo > 1):
                    apart.append((x, key, g, lo, hi, iv["z"]))
            note = []
            if "c" in arms:
                preset = o["adjust"].lookup(coll, 2, s)
                note.append(f"preset {preset}" if preset else
                            ("outside every range (gap)" if coll in o["adjust"].table else "not set"))
            fa = {runs["a"][i]["fps"].get(key) for i in ok} - {None}
            if fa:
                note.append("fp " + " ".join(f"{x}:{'same' if {runs[x][i]['fps'].get(key) for i in ok} == fa else 'DIFFERS'}"
                                             for x in arms[1:]))
            print(line + "  " + "; ".join(note))
    sums = {x: sorted({r["checksum"] for r in runs[x]} - {None}) for x in arms}
    allsame = len({c for x in arms for c in sums[x]}) == 1 and all(len(runs[x]) == a.rounds for x in arms)
    correct = all(r["correct"] == "yes" for x in arms for r in runs[x])
    print(f"  results identical across arms: {'yes' if allsame else 'NO'} (checksums {sums}); serial recomputation "
          f"on rank 0 agrees in every mpirun: {'yes' if correct else 'NO'}")

    print(f"\n## Summary (load {load()} at end)")
    print(f"  {'tool':14} {'tuning time':>12}  result")
    print(f"  {'mpitune_fast':14} {it['secs']:10.1f} s  "
          + (f"{it['file'].name}: " + ("the generic table, byte for byte" if it.get("same_bytes") else
                                      "not the generic table's bytes") if it["file"] else "no file")
          + (f"; no tuning result for {', '.join(it['missing'])} (its autotuner does not run on a {cpu_vendor()} CPU)"
             if it["missing"] else ""))
    if "error" not in o:
        print(f"  {'ours':14} {o['search_secs'] + o['validate_secs']:10.1f} s  "
              f"search {o['search_secs']:.1f} s + validation {o['validate_secs']:.1f} s; native.impi "
              + ("validated" if validated else f"NOT validated ({str(o['verdict'])[:60]}...): users would keep the default; "
                 "arm (c) runs the candidate anyway" if o.get("text") else "not written (default everywhere)"))
    # an interval excluding 1 counts only beyond the control arm's (the same default, its own mpiruns)
    print("  cells whose interval excludes 1 (beyond the control arm: no overlap with its interval there):")
    for x, key, g, lo, hi, (zg, zlo, zhi) in apart:
        beyond = hi < zlo or lo > zhi
        why = ""
        if x == "c":
            pre = o["adjust"].lookup(key[0], 2, key[1])
            why = (f"; preset {pre} set here by our file" if pre else
                   "; a gap of our file: Intel MPI 2021.13 runs another algorithm outside every range once the "
                   "variable is set" if key[0] in o["adjust"].table else
                   f"; our file sets nothing for {key[0]}: the same configuration as (a)")
        print(f"    {ARM_NAMES[x]} {'worse' if hi < 1 else 'better'}: {key[0]} {key[1]} B {g:.2f}x [{lo:.2f}, {hi:.2f}], "
              f"control {zg:.2f}x [{zlo:.2f}, {zhi:.2f}]: {'beyond the control' if beyond else 'within the control spread'}{why}")
    if not apart:
        print("    none")
    return 0


def in_guest(a) -> int:
    """Re-run this script, whole, in the guest: the same machine and library for both tuners and the user program.
    The guest's /tmp is its own memory, so the work directory (--keep, default under the worktree) is shared."""
    import os
    import subprocess
    root = HERE.parent.parent
    work = (a.keep or root / "build" / f"intel-tuner-guest-{int(time.time())}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    argv = [a for a in sys.argv[1:] if a != "--guest"]
    if "--keep" not in argv:
        argv += ["--keep", str(work)]
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv]
    print(f"# in the guest (deploy/intel-guest.sh, emulated GenuineIntel): {shlex.join(cmd)}", flush=True)
    return subprocess.run([str(root / "deploy" / "intel-guest.sh"), "run", "--share", str(work), "--", *cmd],
                          cwd=root, env=os.environ).returncode


if __name__ == "__main__":
    sys.exit(main())
