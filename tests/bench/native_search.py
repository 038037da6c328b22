#!/usr/bin/env python3
"""The native searches against exhaustive, from campaign files run through the agent (Slurm by default):

    .venv/bin/python tests/bench/native_search.py --state-dir /tmp/ns ns-exhaustive.yaml ns-mgd.yaml ns-smgd.yaml
    .venv/bin/python tests/bench/native_search.py --state-dir /tmp/ns --no-submit ns-exhaustive ns-mgd ns-smgd

The first campaign must search `exhaustive` (over the grid of pgmpi_formats/native_search.py: message
sizes 8 B - 1 MiB in powers of two, segment sizes 1 KiB - 512 KiB below each message size for the methods
that take one); the others `mgd` / `smgd`.  Submits each campaign in turn (so their jobs never share the
machine), then prints scheduler/search_report.py's table per MPI library: MGD and SMGD replayed on the
exhaustive results (each neighbour mode) and each reduced campaign's own search judged on them --
experiments, their measuring time, and the loss of each choice against the exhaustive optimum of its cell,
next to the scan bound (the most a search that measures every method of a cell can save on that grid).
Then the decision per cell (service/analysis/native_decision.py) over the exhaustive campaign.  Prints
figures with the machine load; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scheduler.campaign import load_campaign          # noqa: E402
from scheduler.search_report import report            # noqa: E402
from service.analysis.native_decision import decide, runs_from_files   # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="+", help="campaign files (or names with --no-submit); exhaustive first")
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--no-submit", action="store_true", help="report on campaigns already in the state dir")
    a = ap.parse_args()
    names = []
    for ref in a.campaigns:
        if a.no_submit:
            names.append(ref)
            continue
        name = load_campaign(ref).name
        print(f"# {name}: submitting, load {os.getloadavg()[0]:.2f}", flush=True)
        p = subprocess.run([str(ROOT / ".venv" / "bin" / "pgmpi"), "campaign", "submit", ref, "--state-dir",
                            str(a.state_dir), "--watch", "--interval", "2"], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{name}: pgmpi campaign submit failed ({p.returncode}): {p.stderr[-800:]}")
        print(f"# {name}: done, load {os.getloadavg()[0]:.2f}", flush=True)
        names.append(name)
    print(f"# load {os.getloadavg()[0]:.2f} (loaded machine when > 1.2)\n")
    print(report(a.state_dir, names[0], names[1:]))
    for job in sorted((a.state_dir / "campaigns" / names[0]).glob("*/attempt-*")):
        files = sorted(job.glob("search-*.txt"))
        if not files:
            continue
        res = decide(runs_from_files(files))
        changed = [d for d in res.decisions.values() if d.choice != "default"]
        print(f"## decision over {job.parent.name} ({len(files)} mpiruns): {len(changed)} of {len(res.decisions)} "
              f"cells leave the default (null spread {100 * res.spread:.1f} %): "
              + ", ".join(f"{d.key} {d.size} {d.choice}" for d in sorted(changed, key=lambda d: (d.key, d.size))))


if __name__ == "__main__":
    main()
