#!/usr/bin/env python3
"""Exhaustive native-algorithm campaign at p=2 and the reduced searches (MGD, SMGD) on the same data.

    .venv/bin/python tests/bench/native_search.py --out /tmp/native [--mpis openmpi,mpich] [--runs 3]
    .venv/bin/python tests/bench/native_search.py --out /tmp/native --no-measure     # evaluate saved files

Measures, per MPI, allreduce, bcast, reduce and allgather at 8 B - 1 MiB with pgmpi-bench: the default and
every native algorithm the library offers (Open MPI also at segment sizes 1K-256K), interleaved in one
mpirun, R mpiruns.  A cell's value per variant is the median over mpiruns of the per-mpirun medians.  Then,
per cell, exhaustive / MGD / SMGD (service/analysis/native_search.py) over the native variants: experiments,
measuring time (sum of the visited variants' run-times) and the loss of each search's choice against the
exhaustive optimum.  Finally the decision per cell (fastest of the default and the natives, a native only
when it beats the default by --min-gain) as the libraries' own files: Open MPI's rules file and MPICH's JSON,
both checked by their readers.  Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pgmpi_formats import mpich_json as mj                    # noqa: E402
from pgmpi_formats import native                              # noqa: E402
from pgmpi_formats import ompi_rules as orr                   # noqa: E402
from pgmpi_formats.results import read_file                   # noqa: E402
from service.analysis.native_search import SEARCHES, Cell, search   # noqa: E402

CALLS = ["allreduce", "bcast", "reduce", "allgather"]
SIZES = [8, 64, 512, 4096, 32768, 262144, 1048576]
SEGS = [1024, 4096, 16384, 65536, 262144]
MPI_NAME = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "reduce": "MPI_Reduce", "allgather": "MPI_Allgather"}


def algorithms(d: native.Discovery) -> str:
    out = ["default"]
    for key in CALLS:
        for name in d.names(key):
            if (key, name) in native.ORDER_UNSAFE[d.library]:
                continue                                   # never selectable; the check round would drop them
            out.append(native.format_label(name))
            if d.has_segments(key):
                out += [native.format_label(name, s) for s in SEGS]
    return ",".join(dict.fromkeys(out))


def measure(mpi: str, out: Path, runs: int, nrep: int) -> list[Path]:
    prefix = ROOT / "build" / "install" / mpi / "bin"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    d = native.discover(mpi, bench=str(prefix / "pgmpi-bench"), mpirun=[f"mpirun.{mpi}", "-np", "1"], env=env)
    (out / f"native-{mpi}.json").write_text(d.dumps())
    files = []
    for r in range(runs):
        f = out / f"{mpi}-run{r}.txt"
        f.unlink(missing_ok=True)
        cmd = [f"mpirun.{mpi}", "-np", "2", str(prefix / "pgmpi-bench"), f"--calls={','.join(CALLS)}",
               f"--algorithms={algorithms(d)}", f"--sizes={','.join(map(str, SIZES))}", f"--nrep={nrep}",
               "--no-barrier-rows", f"--mpirun-index={r}", f"--output={f}"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit(f"{' '.join(cmd[:4])} ... failed ({p.returncode}): {p.stderr[-800:]}")
        files.append(f)
    return files


def cells(files: list[Path]):
    per = defaultdict(lambda: defaultdict(list))                 # (call, size) -> label -> [run medians]
    for f in files:
        run = read_file(f)
        groups = defaultdict(list)
        for t, m, a, x in zip(run.test, run.msize, run.algorithm, run.runtime):
            groups[(run.tests[t], int(m), run.algorithms[a])].append(float(x))
        for (call, m, a), xs in groups.items():
            per[(call, m)][a].append(statistics.median(xs))
    return {k: {a: statistics.median(v) for a, v in labels.items()} for k, labels in per.items()}


def as_cell(labels: dict[str, float]) -> Cell:
    times: dict[str, dict] = defaultdict(dict)
    for label, t in labels.items():
        v = native.parse_label(label)
        if v:
            times[v.name][v.seg] = t
    return Cell(dict(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mpis", default="openmpi,mpich")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=20)
    ap.add_argument("--min-gain", type=float, default=0.05, help="a native replaces the default only above this gain")
    ap.add_argument("--no-measure", action="store_true")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    print(f"# load before: {os.getloadavg()[0]:.2f} (loaded machine when > 1.2)")
    for mpi in a.mpis.split(","):
        files = sorted(a.out.glob(f"{mpi}-run*.txt")) if a.no_measure else measure(mpi, a.out, a.runs, a.nrep)
        d = native.Discovery.from_json(__import__("json").loads((a.out / f"native-{mpi}.json").read_text()))
        data = cells(files)
        print(f"\n## {mpi} {d.version}, p=2, {len(files)} mpiruns, load now {os.getloadavg()[0]:.2f}")
        for key in CALLS:
            print(f"  {key}: discovered {', '.join(d.names(key))}"
                  f"{' (segment sizes)' if d.has_segments(key) else ''}")
        print(f"\n{'call':10} {'size':>8} {'default us':>10} {'best native':>34} {'us':>8} {'gain':>6} | "
              + " | ".join(f"{k:>11} exp loss" for k in SEARCHES))
        tot = {k: [0, 0.0, []] for k in SEARCHES}
        decisions = []
        for key in CALLS:
            for size in SIZES:
                labels = data.get((MPI_NAME[key], size))
                if not labels:
                    continue
                cell = as_cell(labels)
                if not cell.times:
                    continue
                res = {k: search(k, cell, size) for k in SEARCHES}
                best = res["exhaustive"].choice
                tdef, tbest = labels["default"], cell.t(best)
                gain = tdef / tbest - 1
                label = native.format_label(*best)
                decisions.append(orr.Decision(key, 2, size, label if gain > a.min_gain else "default"))
                cols = []
                for k, r in res.items():
                    loss = cell.loss(r.choice, size)
                    tot[k][0] += len(r.experiments)
                    tot[k][1] += r.cost(cell)
                    tot[k][2].append(loss)
                    cols.append(f"{len(r.experiments):>11} {loss * 100:4.1f}%")
                print(f"{key:10} {size:>8} {tdef * 1e6:>10.2f} {label:>34} {tbest * 1e6:>8.2f} {gain * 100:5.0f}% | "
                      + " | ".join(cols))
        ex = tot["exhaustive"]
        print(f"\n{'search':10} {'experiments':>11} {'fewer':>6} {'time s':>9} {'less time':>9} "
              f"{'mean loss':>9} {'max loss':>8} {'cells > 3 %':>11}")
        for k, (n, t, losses) in tot.items():
            print(f"{k:10} {n:>11} {ex[0] / n:>5.1f}x {t:>9.5f} {ex[1] / t:>8.1f}x {statistics.mean(losses) * 100:>8.2f}% "
                  f"{max(losses) * 100:>7.1f}% {sum(x > 0.03 for x in losses):>5}/{len(losses)}")
        changed = [x for x in decisions if x.label != "default"]
        print(f"\ndecisions: {len(changed)} of {len(decisions)} cells leave the default "
              f"(gain > {a.min_gain:.0%}): " + ", ".join(f"{x.key} {x.nbytes} {x.label}" for x in changed))
        if mpi == "openmpi":
            text = orr.write_rules(decisions, native.discover("openmpi"), comment="native_search.py, p=2")
            (a.out / "openmpi.rules").write_text(text)
            orr.parse_rules(text, "openmpi.rules", native.discover("openmpi"), native.ORDER_UNSAFE["openmpi"])
            print(f"wrote {a.out / 'openmpi.rules'} (read back by ompi_rules.parse_rules)")
        elif mpi == "mpich":
            lib = mj.find_library()
            base, known = mj.builtin_tree(lib), mj.algorithm_names(lib)
            tree = mj.generate(decisions, base, known)
            problems = mj.check_tree(tree, base, known)
            (a.out / "mpich.json").write_text(mj.dumps(tree))
            print(f"wrote {a.out / 'mpich.json'}: " + ("complete (mpich_json.check_tree)" if not problems
                                                       else "REFUSED: " + "; ".join(problems)))


if __name__ == "__main__":
    main()
