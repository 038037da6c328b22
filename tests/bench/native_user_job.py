#!/usr/bin/env python3
"""A user's job after `module load pgmpitunelib`, on both MPIs: the published native decision file selects an
algorithm at one allreduce cell that is clearly slower than the library's default there (a demonstration, so
the effect is visible in time; a real file selects the faster one), and a small user program
(tests/bench/native_user_app.c, not pgmpi-bench) shows by measurement that the file's choice runs, with
correct results.

    .venv/bin/python tests/bench/native_user_job.py [--pairs 6] [--reps 60]
    .venv/bin/python tests/bench/native_user_job.py --published ROOT --machine M \
        --cell openmpi=bcast:4096:native:split_binary_tree:seg=2048 --cell mpich=allreduce:32:native:recursive_doubling

The second form uses what the site published (a validated native file under the profile root ROOT, as
`pgmpi profile publish` left it) instead of the demonstration file, at the given cell per MPI.

Per MPI: `pairs` pairs of mpiruns after one `module load`, alternating which runs first: the job as users get
it (the module's variables name the published file) and the same job with the file's variable unset (the
library's default).  Printed: the median run-time of each, the paired ratio file / default per pair and their
median, the results check, and the algorithm fingerprint (NaN payloads under MPI_SUM; the same as
pgmpi-bench's #@pgmpi fingerprint) with and without the file, against the forced algorithm's.  The file is
published with --force semantics (a demonstration, no validation record): never do that at a site.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib" / "python"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "python"))

from pgmpi_formats import mpich_json as mj  # noqa: E402
from pgmpi_formats import native, ompi_rules as orr  # noqa: E402
from pgmpi_formats.ompi_rules import Decision  # noqa: E402
from service.profiles import publish as pub  # noqa: E402
from plain_module import module_tree as module  # noqa: E402

VERSIONS = {"openmpi": "4.1.4", "mpich": "4.0.2"}
# measured at 2 ranks here: Open MPI allreduce 1 MiB default ~115 us, recursive_doubling ~540 us;
# MPICH allreduce 64 KiB default ~22 us, recursive_doubling ~156 us (lib/bench/README.md has the campaign)
CELL = {"openmpi": (1048576, "native:recursive_doubling"), "mpich": (65536, "native:recursive_doubling")}
VARS = {"openmpi": "OMPI_MCA_coll_tuned_dynamic_rules_filename", "mpich": "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"}
FORCE = {"openmpi": "OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_{call}_algorithm={v}{seg}",
         "mpich": "MPIR_CVAR_{CALL}_INTRA_ALGORITHM={name}"}


def decision_file(mpi: str, nbytes: int, label: str) -> tuple[str, str]:
    decs = [Decision("allreduce", 2, 8, "default"), Decision("allreduce", 2, nbytes, label),
            Decision("allreduce", 2, nbytes * 2, "default")]
    if mpi == "openmpi":
        return "native.rules", orr.write_rules(decs, native.discover("openmpi"))
    lib = mj.find_library()
    return "native.json", mj.dumps(mj.generate(decs, mj.builtin_tree(lib), mj.algorithm_names(lib)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--published", type=Path, help="site profile root with published native files")
    ap.add_argument("--machine", default="bench")
    ap.add_argument("--cell", action="append", default=[], help="MPI=call:bytes:label (with --published)")
    args = ap.parse_args()
    cells = {}
    for c in args.cell:
        mpi, _, rest = c.partition("=")
        call, nb, label = rest.split(":", 2)
        cells[mpi] = (call, int(nb), label)
    if args.published and set(cells) != set(VERSIONS):
        ap.error(f"--published needs --cell for each of {', '.join(VERSIONS)}")
    print(f"# load: {open('/proc/loadavg').read().split()[0]} (loaded machine when > 1.2)")
    for mpi in VERSIONS:
        with tempfile.TemporaryDirectory(prefix=f"native-user-{mpi}-") as tmp:
            top = Path(tmp)
            app = top / "app"
            subprocess.run([f"mpicc.{mpi}", "-O2", "-o", str(app), str(ROOT / "tests/bench/native_user_app.c")],
                           check=True)
            if args.published:
                call, nbytes, label = cells[mpi]
                root = args.published
            else:
                (nbytes, label), call = CELL[mpi], "allreduce"
                name, text = decision_file(mpi, nbytes, label)
                root = top / "profiles"
                pub.publish(root, args.machine, mpi, VERSIONS[mpi], {name: text}, actor="native_user_job.py",
                            validated=False, force=True, reason="demonstration of the module mechanism",
                            checker=["/bin/true"], mpi=mpi)
            (top / "site.conf").write_text(f"profile_root = {root}\nmachine = {args.machine}\n")
            mods = module(top, mpi)
            run = f"mpirun.{mpi} -np 2" + (" --oversubscribe" if mpi == "openmpi" else "")
            variant = native.parse_label(label)
            value = native.FALLBACK[mpi].value(call, variant.name)
            seg = f" OMPI_MCA_coll_tuned_{call}_algorithm_segmentsize={variant.seg}" if variant.seg else ""
            force = FORCE[mpi].format(v=value, name=variant.name, call=call, CALL=call.upper(), seg=seg)
            lines = [". /usr/share/lmod/lmod/init/bash", f"module use {mods}", f"export PGMPI_SITE_CONFIG={top}/site.conf",
                     "module load pgmpitunelib/0.1.0", f"echo \"VAR ${{{VARS[mpi]}:-unset}}\""]
            for i in range(args.pairs):
                on = f"echo -n 'FILE '; {run} {app} {nbytes} {args.reps} {call}"
                off = f"echo -n 'DEFAULT '; env -u {VARS[mpi]} {run} {app} {nbytes} {args.reps} {call}"
                lines += [on, off] if i % 2 == 0 else [off, on]
                forced = f"echo -n 'FORCED '; env -u {VARS[mpi]} {force} {run} {app} {nbytes} {args.reps} {call}"
                lines.append(forced)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_MCA_", "MPIR_CVAR_", "PGMPI"))}
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            res = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True, env=env)
            if res.returncode != 0:
                print(res.stdout, res.stderr, file=sys.stderr)
                return 1
            rows = re.findall(r"^(FILE|DEFAULT|FORCED) bytes=\d+ median_us=([\d.]+) correct=(\w+) fingerprint=(\S+)$",
                              res.stdout, re.M)
            var = re.search(r"^VAR (.*)$", res.stdout, re.M).group(1)
            f = [float(t) for a, t, _, _ in rows if a == "FILE"]
            d = [float(t) for a, t, _, _ in rows if a == "DEFAULT"]
            ratios = [x / y for x, y in zip(f, d)]
            fps = {a: {fp for b, _, _, fp in rows if b == a} for a in ("FILE", "DEFAULT", "FORCED")}
            correct = all(c == "yes" for _, _, c, _ in rows)
            print(f"{mpi}: module set {VARS[mpi]}={var}")
            fo = [float(t) for a, t, _, _ in rows if a == "FORCED"]
            print(f"{mpi}: {call} {nbytes} B, file selects {label}: file {statistics.median(f):.2f} us, default "
                  f"{statistics.median(d):.2f} us, {label} forced {statistics.median(fo):.2f} us (medians of "
                  f"{len(f)} mpiruns each); paired ratio file/default median {statistics.median(ratios):.2f}x, "
                  f"per pair {' '.join(f'{r:.2f}' for r in ratios)}; file/forced "
                  f"{statistics.median([x / y for x, y in zip(f, fo)]):.2f}x")
            print(f"{mpi}: results correct in every run: {'yes' if correct else 'NO'}; fingerprint under the file "
                  f"{sorted(fps['FILE'])}, forced {label} {sorted(fps['FORCED'])}, default {sorted(fps['DEFAULT'])}: "
                  + (f"the file's choice ran: {'yes' if fps['FILE'] == fps['FORCED'] != fps['DEFAULT'] else 'NO'}"
                     if call == "allreduce" else "no fingerprint for bcast: judge by time (file against forced "
                     "and default)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
