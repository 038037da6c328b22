#!/usr/bin/env python3
"""Native tuning on every MPI library the site installs, one row each (issue 35's five-row table):

    .venv/bin/python tests/bench/native_libraries.py [--ids openmpi mpich openmpi5 mpich5 intelmpi] [--keep DIR]

Per library (deploy/mpi-libraries.tsv id, built into build/install/<id>, 2 ranks, its own mpirun):
  discovered  the algorithms the library offers (Open MPI: its own ompi_info; MPICH: pgmpi-bench --list-native
              through MPI_T; Intel MPI: the preset ranges of its own impi_info -v)
  searched    an exhaustive search of MPI_Allreduce (and MPI_Bcast) at a few sizes: Open MPI and MPICH through
              the search driver (scheduler/native_driver.py, `--mpiruns` sweeps); Intel MPI, which reads
              I_MPI_ADJUST_* once at MPI_Init, one mpirun per preset (each alone) and one for the default,
              `--mpiruns` rounds, paired per round
  decided     service/analysis/native_decision.decide over those runs, written by the library's own writer for
              its exact version (pgmpi_formats/native_file.render) and read back by that version's reader
  validated   the validation job (scheduler/native_validation.py, local backend) that loads the file through
              the modules of deploy/modules.py as a user does, measuring each rule at the sizes the decision
              measured (decided_at, as a native candidate carries them; Intel MPI: file, default and preset
              mpiruns per round), judged by service/analysis/native_validation.judge
  published   into a profile root of its own (service/profiles/publish.py, the version's reader checks it)
  user job    `module load <id> pgmpitunelib` with that root, then a user program (tests/bench/native_user_app.c,
              not pgmpi-bench) at the chosen allreduce cell: under the module, with the file's variables unset
              (the default) and with the chosen algorithm forced, `--pairs` rounds in alternating order:
              medians, results check, and the algorithm fingerprint (NaN payloads under MPI_SUM: which rank's
              operand survives) under each.  On Intel MPI the program is linked with -lpgmpitune after `module load`:
              the module names the native.impi and the library's MPI_Init sets its variables at the job sizes it
              was decided for (lib/src/core/native_env.c); a program without the library gets no native tuning.
The decision's own file is validated and published only when it passed.  Where it has no validated allreduce
choice, the user job runs the library's fastest allreduce variant of the search instead, from a demonstration
file published with --force semantics, to show the mechanism (marked "forced").
Prints the figures and the machine load; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib" / "python"))

from pgmpi_formats import impi_adjust, native, native_file  # noqa: E402
from pgmpi_formats.ompi_rules import Decision  # noqa: E402
from pgmpi_formats.results import read_file  # noqa: E402
from scheduler import launchers  # noqa: E402
from service.analysis.native_decision import Run, decide, runs_from_files  # noqa: E402

SIZES = {"allreduce": [32, 4096, 65536], "bcast": [4096]}
LMOD = "/usr/share/lmod/lmod/init/bash"
FILE_VARS = ("OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename",
             "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", "I_MPI_ADJUST_ALLREDUCE", "I_MPI_ADJUST_BCAST",
             impi_adjust.FILE_VAR)


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


class Lib:
    def __init__(self, lib_id: str, work: Path):
        self.lib = launchers.library(lib_id)
        self.id, self.family = lib_id, self.lib.family.name
        self.version = self.lib.row.reported_version
        self.env = self.lib.row.environment()
        self.env.update(self.lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
        for k in FILE_VARS:
            self.env.pop(k, None)
        self.bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
        self.mpirun = [self.lib.mpirun, "-np", "2", *self.lib.family.mpirun_args(1, 2, False)]
        self.work = work / lib_id
        self.work.mkdir(parents=True, exist_ok=True)

    def run(self, argv, env=None, **kw):
        return subprocess.run(argv, capture_output=True, text=True, env={**self.env, **(env or {})}, timeout=600, **kw)

    def discover(self) -> tuple[str, object]:
        if self.family == "openmpi":
            d = native.discover("openmpi", env=self.env, version=self.version)
            return f"{sum(len(v) for v in d.algorithms.values())} algorithms in {len(d.algorithms)} collectives (ompi_info {d.version})", d
        if self.family == "mpich":
            p = self.run([*self.mpirun[:1], "-np", "1", str(self.bench), "--list-native"])
            d = native.parse_listing(p.stdout)
            return f"{sum(len(v) for v in d.algorithms.values())} algorithms in {len(d.algorithms)} collectives (MPI_T)", d
        d = impi_adjust.discover(self.env)
        return (f"presets of {len(d.presets)} collectives (impi_info -v {d.version}; allreduce 1-{d.presets.get('allreduce')}, "
                f"bcast 1-{d.presets.get('bcast')})"), d

    def search(self, mpiruns: int, nrep: int, sizes: dict | None = None, max_preset: int = 8) -> tuple[dict, str, float]:
        """{(key, size, 2): [Run]}, a line, launch seconds.  `sizes` ({collective: [bytes]}, SIZES by default)
        and `max_preset` (Intel MPI: presets 1-max_preset) for tests/bench/intel_tuner_compare.py."""
        grid = sizes or SIZES
        t0 = time.time()
        if self.family != "intelmpi":
            (self.work / "native-algorithms.txt").write_text(
                self.run([*self.mpirun[:1], "-np", "1", str(self.bench), "--list-native"]).stdout)
            files = []
            for i in range(mpiruns):
                spec = {"prefix": f"search-{i}", "control": True, "confirm": 0,
                        "bench_args": [f"--nrep={nrep}", f"--mpirun-index={i}", "--campaign=five"],
                        "collectives": {k: {"search": "exhaustive", "sizes": s, "segments": [1024], "lookahead": 2,
                                            "prune": 0.5, "neighbour": "none"} for k, s in grid.items()}}
                out = self.work / f"search-{i}.json"
                p = self.run([sys.executable, "-m", "scheduler.native_driver", "--spec", json.dumps(spec), "--launcher",
                              shlex.join(self.mpirun), "--bench", str(self.bench), "--output", str(out)], cwd=ROOT)
                if p.returncode:
                    raise RuntimeError(f"search driver: {p.stderr[-800:]}")
                files += [self.work / f for f in json.loads(out.read_text())["files"]]
            cells = runs_from_files(files)
            return cells, f"exhaustive, {len(cells)} cells, {len(files)} mpiruns", time.time() - t0
        # Intel MPI: a preset is fixed at MPI_Init, so each runs alone; rounds pair them with the default
        presets = {k: list(range(1, min(self.disc.presets.get(k, 0), max_preset) + 1)) for k in grid}
        cells: dict = {}
        n, failed = 0, []
        for i in range(mpiruns):
            arms = [("default", {})] + [(f"native:{a}", {f"I_MPI_ADJUST_{impi_adjust.VARIABLES[k].upper()}": str(a)})
                                        for k in grid for a in presets[k]]
            per: dict = {}
            for label, env in (arms if i % 2 == 0 else arms[::-1]):
                keys = [k for k in grid if label == "default" or f"I_MPI_ADJUST_{impi_adjust.VARIABLES[k]}" in env]
                sizes = sorted({s for k in keys for s in grid[k]})
                # one file per mpirun: a preset label names a preset of each collective
                out = self.work / f"intel-{i}-{label.replace(':', '_')}{'' if label == 'default' else '-' + keys[0]}.txt"
                p = self.run([*self.mpirun, str(self.bench), f"--calls={','.join(keys)}",
                              f"--sizes={','.join(map(str, sizes))}", "--algorithms=default", f"--nrep={nrep}",
                              "--no-barrier-rows", f"--output={out}"], env=env)
                n += 1
                if p.returncode:    # a preset that does not run at p = 2 (or fails its check): never chosen
                    failed.append(f"{','.join(keys)} {label}: {(p.stderr.strip().splitlines() or ['exit ' + str(p.returncode)])[-1][:120]}")
                    continue
                run = read_file(out)
                rows: dict = {}
                for t, m, x in zip(run.test, run.msize, run.runtime):
                    rows.setdefault((run.tests[t], int(m)), []).append(float(x))
                for (name, m), xs in rows.items():
                    key = name.removeprefix("MPI_").lower()
                    if key in grid and m in grid[key]:
                        per.setdefault((key, m, 2), {})[label] = statistics.median(xs)
            for cell, medians in per.items():
                cells.setdefault(cell, []).append(Run(medians, alone=True))
        return cells, (f"exhaustive over presets 1-{max(map(len, presets.values()), default=0)}, {len(cells)} cells, {n} mpiruns (each alone)"
                       + (f", {len(failed)} failed ({'; '.join(failed[:4])})" if failed else "")), time.time() - t0


def modules(work: Path, ids) -> Path:
    root = work / "modules"
    subprocess.run([sys.executable, str(ROOT / "deploy" / "modules.py"), "--root", str(root), *ids],
                   check=True, capture_output=True, text=True)
    return root


def validate(lib: Lib, name: str, text: str, mods: Path, decided_at: list) -> str:
    from scheduler.backends import make_backend
    from scheduler.native_validation import NativeValidationJob
    from service.analysis.native_validation import judge
    job = NativeValidationJob(lib.work / "validate", "five", lib.id, lib.version, name, text,
                              f"{lib.id}/{lib.lib.row.version}", "pgmpitunelib", [str(mods / "Core")],
                              nprocs=2, rounds=5, nrep=30, decided_at=decided_at)
    backend = make_backend(None, "local")
    job.write(backend)
    try:
        job.submit(backend=backend, timeout=600)
    except RuntimeError as exc:
        return f"job failed: {str(exc)[:300]}"
    v = judge(job.cells, job.figures(), lib.lib.family.native or lib.family, 0.10)
    cells = "; ".join(f"{c['collective']} {c['msize']} B {c['label']} (rule {c['range'][0]}-{c['range'][1]} B): "
                      + (f"default/file {c['ratio']:.2f}x, {c.get('evidence')}" if c.get("ratio") else "not timed")
                      for c in v["cells"])
    return f"{v['state']}" + (": " + "; ".join(v["problems"][:3]) if v["problems"] else "") + f" [{cells}]"


def user_job(lib: Lib, mods: Path, root: Path, cell: tuple[int, str], pairs: int, reps: int) -> str:
    nbytes, label = cell
    app = lib.work / "app"
    c = lib.run([str(lib.lib.row.mpicc), "-O2", "-o", str(app), str(ROOT / "tests" / "bench" / "native_user_app.c")])
    if c.returncode:
        return f"compile failed: {c.stderr[-300:]}"
    (lib.work / "site.conf").write_text(f"profile_root = {root}\nmachine = five\n")
    v = native.parse_label(label)
    if lib.family == "openmpi":
        force = (f"OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm="
                 f"{lib.disc.value('allreduce', v.name)}" + (f" OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize={v.seg}" if v.seg else ""))
        unset = "-u OMPI_MCA_coll_tuned_use_dynamic_rules -u OMPI_MCA_coll_tuned_dynamic_rules_filename"
    elif lib.family == "mpich":
        force, unset = f"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM={v.name}", "-u MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
    else:
        force = f"I_MPI_ADJUST_ALLREDUCE={v.name}"
        unset = f"-u I_MPI_ADJUST_ALLREDUCE -u I_MPI_ADJUST_BCAST -u {impi_adjust.FILE_VAR}"
    run = shlex.join(lib.mpirun)
    lines = [f". {LMOD}", f"module use {mods / 'Core'}", f"export PGMPI_SITE_CONFIG={lib.work / 'site.conf'}",
             f"module load {lib.id}/{lib.lib.row.version} pgmpitunelib",
             f"env | grep -E '^(OMPI_MCA_coll_tuned|MPIR_CVAR_COLL|I_MPI_ADJUST|{impi_adjust.FILE_VAR})' "
             "| sed 's/^/VAR /' || true"]
    if lib.family == "intelmpi":
        # Intel MPI's native.impi reaches a job only through libpgmpitune's MPI_Init (at the sizes it was decided
        # for; the module names the file): the user links the library after `module load`, as a user does
        app = lib.work / "app-linked"
        lines.append(f"mpicc -O2 -o {app} {ROOT / 'tests' / 'bench' / 'native_user_app.c'} -lpgmpitune || exit 3")
    for i in range(pairs):
        on = f"echo -n 'FILE '; {run} {app} {nbytes} {reps} allreduce"
        off = f"echo -n 'DEFAULT '; env {unset} {run} {app} {nbytes} {reps} allreduce"
        forced = f"echo -n 'FORCED '; env {unset} {force} {run} {app} {nbytes} {reps} allreduce"
        lines += [on, off, forced] if i % 2 == 0 else [forced, off, on]
    env = {k: v for k, v in lib.env.items() if not k.startswith(("PGMPI", "MODULE", "LMOD", "_ModuleTable"))}
    env["PATH"] = "/usr/bin:/bin"
    env.pop("LD_LIBRARY_PATH", None)
    res = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True, env=env, timeout=900)
    rows = re.findall(r"^(FILE|DEFAULT|FORCED) bytes=\d+ median_us=([\d.]+) correct=(\w+) fingerprint=(\S+)$",
                      res.stdout, re.M)
    if res.returncode or not rows:
        return f"user job failed ({res.returncode}): {(res.stderr or res.stdout)[-400:]}"
    t = {a: statistics.median([float(x) for b, x, _, _ in rows if b == a]) for a in ("FILE", "DEFAULT", "FORCED")}
    fp = {a: sorted({f for b, _, _, f in rows if b == a}) for a in ("FILE", "DEFAULT", "FORCED")}
    ok = all(c == "yes" for _, _, c, _ in rows)
    var = "; ".join(m.group(1) for m in re.finditer(r"^VAR (\S+)$", res.stdout, re.M)) or "none"
    ran = ("yes, by fingerprint" if fp["FILE"] == fp["FORCED"] != fp["DEFAULT"] else
           "same fingerprint as the default: judge by time" if fp["FORCED"] == fp["DEFAULT"] else "NO")
    return (f"module set {var}; allreduce {nbytes} B: file {t['FILE']:.2f} us, default {t['DEFAULT']:.2f} us, "
            f"{label} forced {t['FORCED']:.2f} us (medians of {pairs} mpiruns each); fingerprint file {fp['FILE']}, "
            f"forced {fp['FORCED']}, default {fp['DEFAULT']}: the chosen algorithm ran: {ran}; results correct: "
            f"{'yes' if ok else 'NO'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", nargs="+", default=["openmpi", "mpich", "openmpi5", "mpich5", "intelmpi"])
    ap.add_argument("--mpiruns", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=30)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--keep", type=Path)
    a = ap.parse_args()
    from service.profiles import publish as pub
    work = a.keep or Path(tempfile.mkdtemp(prefix="native-five-"))
    work.mkdir(parents=True, exist_ok=True)
    mods = modules(work, a.ids)
    print(f"# load {load()} at start (a loaded machine when > 1.2: 2 cores shared); 2 ranks; work in {work}", flush=True)
    for lib_id in a.ids:
        lib = Lib(lib_id, work)
        row = {"library": f"{lib.family} {lib.version} ({lib_id})"}
        try:
            row["discovered"], lib.disc = lib.discover()
            cells, row["searched"], secs = lib.search(a.mpiruns, a.nrep)
            row["searched"] += f", {secs:.0f} s"
            res = decide(cells, library=lib.family)
            decs = res.native_decisions()
            chosen = [d for d in decs if d.label != "default"]
            row["decided"] = (", ".join(f"{d.key} {d.nbytes} B {d.label}" for d in chosen) or "default everywhere "
                              "(no algorithm beats the default significantly)")
            root = work / "profiles"
            # 1. the decision itself: written by the version's writer, read back, validated as users load it,
            # published only when validation passed
            passed = False
            if not chosen:
                row["file"], row["validation"] = "none: nothing decided", "nothing to validate"
            else:
                try:
                    name, text = native_file.render(lib.family, decs, version=lib.version)
                except ValueError as exc:       # e.g. a native.impi that would have to leave a gap
                    name, text = None, None
                    row["file"], row["validation"] = f"none: {exc}", "nothing to validate"
                if text:
                    (lib.work / name).write_text(text)
                    row["file"] = f"{name} ({len(text)} bytes, read back by {lib.family} {lib.version}'s reader)"
                    pub.check_native_file(name, text, lib.family, lib.version)
                    # validated where the decision measured (its cells, as a native candidate carries them)
                    row["validation"] = validate(lib, name, text, mods, sorted(res.decisions))
                    passed = row["validation"].startswith("passed")
                    if passed:
                        r = pub.publish(root, "five", lib.family, lib.version, {name: text}, actor="native_libraries.py",
                                        validated=False, checker=["/bin/true"], mpi=lib.family, native_validated=True)
                        row["published"] = f"version {r.version} -> {r.target}/current"
                    else:
                        row["published"] = "nothing: its validation did not pass"
            # 2. the user job at the decision's allreduce cell, when it passed validation; else a demonstration
            # file with the search's fastest allreduce variant, published with --force semantics (marked forced)
            cell = next(((d.nbytes, d.label) for d in chosen if d.key == "allreduce"), None) if passed else None
            if cell is None:
                best = {}         # (one the version's writer takes: MPICH 5's parameterised algorithms it refuses)
                for (k, s, _p), runs in cells.items():
                    if k == "allreduce":
                        meds = {x: statistics.median([r[x] for r in runs if x in r]) for r in runs for x in r
                                if x.startswith("native:")}
                        for x in sorted(meds, key=meds.get):
                            try:
                                native_file.render(lib.family, [Decision("allreduce", 2, s, x)], version=lib.version)
                            except (ValueError, KeyError):
                                continue
                            best[s] = x
                            break
                s = max(best) if best else SIZES["allreduce"][-1]
                cell = (s, best.get(s))
                if cell[1] is None:
                    raise RuntimeError("the search measured no allreduce variant")
                # the demonstration file holds that variant at every allreduce size measured (a native.impi
                # cannot leave a gap), the decision's other collectives as decided
                demo = [Decision(d.key, d.nprocs, d.nbytes, cell[1] if d.key == "allreduce" else d.label) for d in decs]
                if not any(d.key == "allreduce" for d in demo):
                    demo.append(Decision("allreduce", 2, s, cell[1]))
                name, text = native_file.render(lib.family, demo, version=lib.version)
                pub.check_native_file(name, text, lib.family, lib.version)
                r = pub.publish(root, "five", lib.family, lib.version, {name: text}, actor="native_libraries.py",
                                validated=False, force=True, reason="bench: demonstration", checker=["/bin/true"],
                                mpi=lib.family, native_validated=False)
                row["user job file"] = (f"a demonstration {name}, version {r.version} -> {r.target}/current [FORCED]: "
                                        f"the search's fastest allreduce variant {cell[1]} at {s} B, to show the "
                                        "mechanism (the decision's own file has no validated allreduce choice)")
            row["user job"] = user_job(lib, mods, root, cell, a.pairs, a.reps)
        except Exception as exc:        # a row that could not be completed says why; the others go on
            row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        print(f"\n## {row.pop('library')} (load {load()})")
        for k, v in row.items():
            print(f"  {k:11} {v}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
