#!/usr/bin/env python3
"""Can Intel MPI 2021.13 switch a collective's algorithm inside one running process (issue 35)?  If it could,
pgmpi-bench's `native:` variants on intelmpi could run interleaved in one mpirun, as MPICH's MPI_T path does,
instead of one mpirun per preset.  This tries every way found and decides each by the NaN-payload fingerprint
of tests/bench/intel_switch_probe.c (which rank's payload survives where follows the algorithm):

  reference   one mpirun per preset p with I_MPI_ADJUST_<COLL>=p at launch (the way known to work) and one
              without: a (preset, size) "tells" when its fingerprint differs from the default's there;
  inproc      after MPI_Init, MPI_T writes of MPIR_CVAR_USE_<COLL> (Intel's MPI_T alias of I_MPI_ADJUST_<COLL>)
              and setenv(I_MPI_ADJUST_<COLL>), each followed by a call on MPI_COMM_WORLD, on a new
              MPI_Comm_dup and on a new MPI_Comm_split; MPI_Comm_dup_with_info with those names as info keys;
  preinit     the MPI_T write between MPI_T_init_thread and MPI_Init (does MPI_T reach the selection at all?);
  env-first   setenv(I_MPI_ADJUST_<COLL>) right after MPI_Init, before the first collective call;
  launch env  MPICH's names at launch: MPIR_CVAR_USE_<COLL>=p, and MPIR_CVAR_<COLL>_INTRA_ALGORITHM=<name>
              with MPICH 4.0.2's algorithm names (the default's fingerprint at every size = no effect seen);
  comm_id     an Intel tuning file (I_MPI_TUNING, JSON) that gives communicators of different comm_id
              different presets, with and without I_MPI_TUNING_AUTO_COMM_LIST; control: comm_id=-1;
  sessions    MPI-4 sessions: setenv, then a new session (serial: the library finalized and initialised
              again; concurrent: one session kept open);
  comm_id hint  one communicator per preset p made by MPI_Comm_dup_with_info with Intel's info key
              "comm_id" = p, a tuning file whose comm_id=p entries force preset p, and
              I_MPI_TUNING_AUTO_COMM_USER=1 (which keeps the user's comm_id); without that variable as a control;
              what MPI_COMM_WORLD and a plain dup run under the file; whether the other collective keeps its
              default; and the median time of each preset interleaved in one mpirun against forced alone.

A mechanism "switches" when, at every telling (preset, size), it leaves the forced preset's fingerprint.
The timing figures are medians from a loaded machine: they are printed, not judged.

    .venv/bin/python tests/bench/intel_switch_probe.py [--sizes 8,4096,65536] [--presets 1-8]

Needs the intelmpi row of deploy/mpi-libraries.tsv installed; 2 ranks.  Prints the figures and the load;
asserts nothing.  Transcript: docs/transcripts/intel-switch-probe-2026-11-26.txt.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib" / "python"))
from pgmpi_formats import mpi_libraries  # noqa: E402

HERE = Path(__file__).resolve().parent
YIELD = {"I_MPI_PIN": "0", "I_MPI_THREAD_YIELD": "2", "I_MPI_SPIN_COUNT": "1"}
COLLS = ("allreduce", "reduce")
# MPICH 4.0.2's names (pgmpi-bench --list-native on the mpich build), tried as MPIR_CVAR_<COLL>_INTRA_ALGORITHM
MPICH_NAMES = {"allreduce": ("nb", "smp", "recursive_doubling", "reduce_scatter_allgather"),
               "reduce": ("binomial", "nb", "smp", "reduce_scatter_gather")}
INPROC_MODES = ("mpit", "mpit-dup", "mpit-split", "env", "env-dup", "env-split", "info-dup")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Probe:
    def __init__(self, lib, exe: Path):
        self.base = {k: v for k, v in lib.environment().items()
                     if not k.startswith(("I_MPI_ADJUST_", "I_MPI_TUNING", "MPIR_CVAR_"))}
        self.base.update(YIELD)
        self.mpirun, self.exe = str(lib.mpirun), str(exe)

    def run(self, args: list[str], env: dict[str, str] | None = None, np: int = 2):
        """(returncode, rows {(mode, preset, bytes): fingerprint}, stdout, stderr)"""
        p = subprocess.run([self.mpirun, "-np", str(np), self.exe, *args], env={**self.base, **(env or {})},
                           capture_output=True, text=True, timeout=300)
        rows = {}
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) == 5 and not line.startswith(("#", "cvar")):
                rows[(f[0], f[1], int(f[2]))] = f[3]
        return p.returncode, rows, p.stdout, p.stderr


def verdict(got: dict, forced: dict, default: dict) -> str:
    """got/forced/default: {(preset, bytes): fingerprint} over the telling cells"""
    took = sum(got.get(k) == forced[k] for k in forced)
    dflt = sum(got.get(k) == default[k] for k in forced)
    n = len(forced)
    what = "SWITCHES" if took == n else "no effect" if dflt == n else "mixed"
    return f"{what:9}  forced preset's fp {took:2}/{n}, default's fp {dflt:2}/{n}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8,4096,65536")
    ap.add_argument("--presets", default="1-8", help="a-b: the presets tried (and forced for reference)")
    ap.add_argument("--rounds", type=int, default=100, help="timed rounds of the timing comparison")
    a = ap.parse_args()
    lib = mpi_libraries.mpi_library("intelmpi")
    if not lib.installed:
        raise SystemExit(f"intelmpi: {lib.prefix} missing (deploy/install-mpis.sh)")
    lo, hi = (int(x) for x in a.presets.split("-"))
    presets = [str(p) for p in range(lo, hi + 1)]
    sizes = [int(s) for s in a.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="switchprobe"))
    exe = work / "intel_switch_probe"
    subprocess.run([str(Path(lib.prefix) / "bin" / "mpicc"), "-O2", "-o", str(exe),
                    str(HERE / "intel_switch_probe.c")], env=lib.environment(), check=True)
    pr = Probe(lib, exe)
    print(f"# Intel MPI {lib.version}, 2 ranks, sizes {sizes} B, presets {lo}-{hi}; load before: {load()}")

    # MPI_T: what the library offers
    p = subprocess.run([str(exe), "cvars"], env=pr.base, capture_output=True, text=True, timeout=60)
    cv = [line.split()[1:] for line in p.stdout.splitlines() if line.startswith("cvar ")]
    adjust = [n for n, al in cv if al.startswith("I_MPI_ADJUST_")]
    use = [n for n, al in cv if n.startswith("MPIR_CVAR_USE_") and al == "I_MPI_ADJUST_" + n[len("MPIR_CVAR_USE_"):]
           and not n.endswith(("_LIST", "_COMPOSITION", "_NETWORK", "_NODE"))]
    intra = [n for n, _ in cv if n.endswith("_INTRA_ALGORITHM")]
    tuning = [f"{n} ({al})" for n, al in cv if al.startswith("I_MPI_TUNING")]
    print(f"\n== MPI_T control variables: {len(cv)}; {len(adjust)} are aliases of I_MPI_ADJUST_* "
          f"({len(use)} select a collective's preset: MPIR_CVAR_USE_<COLL>, e.g. "
          f"{', '.join(n for n in use if n.endswith(('_ALLREDUCE', '_REDUCE')))}); "
          f"*_INTRA_ALGORITHM: {len(intra)} {intra[:4]}; I_MPI_TUNING*: {len(tuning)}")

    for coll in COLLS:
        C = coll.upper()
        print(f"\n==== {coll}")
        ref = {}
        _, rows, _, _ = pr.run(["comms", coll, a.sizes, "0"])
        default = {n: rows[("world", "-", n)] for n in sizes}
        for q in presets:
            _, rows, _, err = pr.run(["comms", coll, a.sizes, "0"], {f"I_MPI_ADJUST_{C}": q})
            if not rows:
                raise SystemExit(f"I_MPI_ADJUST_{C}={q}: {err[-600:]}")
            for n in sizes:
                ref[(q, n)] = rows[("world", "-", n)]
        telling = {k: v for k, v in ref.items() if v != default[k[1]]}
        dflt = {k: default[k[1]] for k in telling}
        print(f"reference (I_MPI_ADJUST_{C}=p at launch): default fp per size "
              f"{ {n: default[n][:8] for n in sizes} }; telling (preset, size) cells: {len(telling)} of {len(ref)}")
        for n in sizes:
            print(f"  {n:>6} B: " + " ".join(f"{q}={ref[(q, n)][:8]}" for q in presets))

        rc, rows, out, _ = pr.run(["inproc", coll, a.sizes, ",".join(presets)])
        head = next((line for line in out.splitlines() if line.startswith("#")), "")
        notes = sorted({line.split()[4] for line in out.splitlines() if line.startswith("mpit ")})
        print(f"inproc (after MPI_Init) rc={rc}; {head[2:]}; MPI_T reads back after each write: {notes}")
        for m in INPROC_MODES:
            got = {(q, n): rows.get((m, q, n)) for (q, n) in telling}
            print(f"  {m:24} {verdict(got, telling, dflt)}")

        for flag, what in (("--preinit", "mpit before MPI_Init"), ("--env-first", "env before 1st call")):
            got = {}
            for q in presets:
                if any(k[0] == q for k in telling):
                    _, rows, out, _ = pr.run(["inproc", coll, a.sizes, q, flag, q])
                    got.update({(q, n): rows.get(("world", "-", n)) for n in sizes})
            print(f"  {what:24} {verdict(got, telling, dflt)}")

        got = {}
        for q in presets:
            _, rows, _, _ = pr.run(["comms", coll, a.sizes, "0"], {f"MPIR_CVAR_USE_{C}": q})
            got.update({(q, n): rows.get(("world", "-", n)) for n in sizes})
        print(f"  {'MPIR_CVAR_USE_' + C + '=p':24} {verdict(got, telling, dflt)}  (at launch)")
        for name in MPICH_NAMES[coll]:
            _, rows, _, _ = pr.run(["comms", coll, a.sizes, "0"], {f"MPIR_CVAR_{C}_INTRA_ALGORITHM": name})
            changed = [n for n in sizes if rows.get(("world", "-", n)) != default[n]]
            print(f"  MPIR_CVAR_{C}_INTRA_ALGORITHM={name:26} (at launch) "
                  f"{'default fp at every size' if not changed else f'other fp at {changed}'}")

        # comm_id: two presets that tell apart from the default and from each other at the largest size
        big = sizes[-1]
        pick = []
        for q in presets:
            if (q, big) in telling and all(ref[(q, big)] != ref[(r, big)] for r in pick):
                pick.append(q)
        if len(pick) >= 2:
            ncomms = 6
            def tree(entries):
                return {f"coll={coll.capitalize()}": {"ppn=2": {"comm_size=2": entries}}}
            def leaf(q):
                return {"msg_size=-1": {f"{C}={q}": {}}}
            files = {
                "comm_id=-1 (control)": tree({"comm_id=-1": leaf(pick[0])}),
                "comm_id=0..63": tree({f"comm_id={i}": leaf(pick[i % 2]) for i in range(64)}),
                "comm_id=0..63 + AUTO_COMM_LIST": tree({f"comm_id={i}": leaf(pick[i % 2]) for i in range(64)}),
                "comm_id=0..63 reversed": tree({f"comm_id={i}": leaf(pick[i % 2]) for i in reversed(range(64))}),
            }
            name_of = {ref[(q, big)]: f"preset {q}" for q in pick} | {default[big]: "default"}
            for label, t in files.items():
                f = work / f"tuning-{len(label)}.json"
                f.write_text(json.dumps(t))
                env = {"I_MPI_TUNING": str(f)}
                if "AUTO_COMM_LIST" in label:
                    env["I_MPI_TUNING_AUTO_COMM_LIST"] = ",".join(str(i) for i in range(64))
                rc, rows, _, err = pr.run(["comms", coll, str(big), str(ncomms)], env)
                seen = [rows.get((m, "-", big)) for m in ["world"] + [f"dup{i}" for i in range(ncomms)]]
                print(f"  tuning file {label:31} rc={rc}: world + {ncomms} dups ran "
                      f"{[name_of.get(s, s) for s in seen]}")

        # per communicator: Intel's "comm_id" communicator hint, kept under I_MPI_TUNING_AUTO_COMM_USER=1, and a
        # tuning file whose comm_id=p entries force preset p (ppn and comm_size wildcards)
        f = work / f"hint-{coll}.json"
        f.write_text(json.dumps({f"coll={coll.capitalize()}": {"ppn=-1": {"comm_size=-1": {
            f"comm_id={q}": {"msg_size=-1": {f"{C}={q}": {}}} for q in presets}}}}))
        last = presets[-1]
        for user in (True, False):
            env = {"I_MPI_TUNING": str(f)} | ({"I_MPI_TUNING_AUTO_COMM_USER": "1"} if user else {})
            rc, rows, out, err = pr.run(["hint", coll, a.sizes, ",".join(presets)], env)
            got = {(q, n): rows.get(("hint", q, n)) for (q, n) in telling}
            label = "comm_id hint + file" + (" + AUTO_COMM_USER=1" if user else "")
            print(f"  {label:40} rc={rc} {verdict(got, telling, dflt)}")
            for m in ("world", "plain-dup"):
                seen = [rows.get((m, "-", n)) for n in sizes]
                as_last = sum(x == ref[(last, n)] for x, n in zip(seen, sizes))
                as_dflt = sum(x == default[n] for x, n in zip(seen, sizes))
                print(f"    {m:10} (no hint entry): the file's last entry's (preset {last}) fp at {as_last} of "
                      f"{len(sizes)} sizes, the default's at {as_dflt}")
        # both collectives in one file, each with the same comm_id=p entries (pgmpi-bench refuses this)
        other = COLLS[1 - COLLS.index(coll)]
        both = work / f"both-{coll}.json"
        both.write_text(json.dumps({f"coll={c.capitalize()}": {"ppn=-1": {"comm_size=-1": {
            f"comm_id={q}": {"msg_size=-1": {f"{c.upper()}={q}": {}}} for q in presets}}} for c in (coll, other)}))
        rc, rows, _, _ = pr.run(["hint", coll, a.sizes, ",".join(presets)],
                                {"I_MPI_TUNING": str(both), "I_MPI_TUNING_AUTO_COMM_USER": "1"})
        got = {(q, n): rows.get(("hint", q, n)) for (q, n) in telling}
        wrong = sorted({q for (q, n) in telling if got[(q, n)] not in (telling[(q, n)], dflt[(q, n)])}, key=int)
        print(f"  {'the same, file naming both collectives':40} rc={rc} {verdict(got, telling, dflt)}; "
              f"presets with a third fingerprint: {wrong}")
        hinted = {"I_MPI_TUNING": str(f), "I_MPI_TUNING_AUTO_COMM_USER": "1"}
        _, rows, _, _ = pr.run(["comms", other, a.sizes, "0"], hinted)
        _, rows0, _, _ = pr.run(["comms", other, a.sizes, "0"])
        same = sum(rows.get(("world", "-", n)) == rows0.get(("world", "-", n)) for n in sizes)
        print(f"    {other} under this {coll}-only file: its default's fp at {same} of {len(sizes)} sizes")

        # timing at the largest size: the hinted communicators interleaved in one mpirun (rotating order) against
        # one mpirun per preset forced at launch timing MPI_COMM_WORLD alone, and the default
        rounds = str(a.rounds)
        _, _, out, _ = pr.run(["hint-time", coll, str(big), ",".join(presets), rounds], hinted)
        inter = {line.split()[1]: float(line.split()[3]) for line in out.splitlines() if line.startswith("time ")}
        forced = {}
        for q in presets:
            _, _, out, _ = pr.run(["hint-time", coll, str(big), "-", rounds], {f"I_MPI_ADJUST_{C}": q})
            forced[q] = float(out.split()[3])
        _, _, out, _ = pr.run(["hint-time", coll, str(big), "-", rounds])
        print(f"  median us at {big} B over {rounds} rounds (load {load()}); "
              f"default alone {float(out.split()[3]):.1f}:")
        print("    preset       " + " ".join(f"{q:>7}" for q in presets))
        print("    interleaved  " + " ".join(f"{inter.get(q, float('nan')):7.1f}" for q in presets))
        print("    forced alone " + " ".join(f"{forced[q]:7.1f}" for q in presets))

        for mode, order in (("serial", f"-,{pick[0] if pick else presets[0]}"), ("concurrent", ",".join(presets))):
            rc, rows, out, err = pr.run(["sessions", coll, a.sizes, order, mode])
            got = {(q, n): rows.get((f"session-{mode}", q, n)) for (q, n) in telling if q in order.split(",")}
            sig = re.search(r"KILLED BY SIGNAL: (\d+ \([^)]*\))", err + out)
            crash = f"signal {sig.group(1)}" if sig else f"exit {rc}"
            if mode == "serial":
                print(f"  sessions, serial         rc={rc}: first session (no preset) "
                      f"{'ran' if rows else 'did not run'}; after MPI_Session_finalize the next "
                      f"MPI_Session_init {'crashed: ' + crash if rc else 'ran'}")
            else:
                print(f"  sessions, concurrent     {verdict(got, {k: telling[k] for k in got}, dflt)}")
    print(f"\nload after: {load()}")


if __name__ == "__main__":
    main()
