#!/usr/bin/env python3
"""Run the tests whose outcome rests on measured times N times (default 20) and print failures/N per test
(issue 34, point 5: "a chain test must not depend on the VM's phase").

    export PGMPI_STATE_DIR=/work/main/.state; eval "$(deploy/slurm.sh env)"
    export PGMPI_TEST_DATABASE_URL=$(deploy/postgres.sh url)
    .venv/bin/python tests/bench/timing_tests.py [--rounds 20] [--only SUBSTRING ...] [--list]

Each round is one pytest process over the whole list (so the tests see the machine as `make test` gives it
to them, one after another); the load average is printed before every round. Prints, per test, failures/N,
the mean seconds per run and the first line of each failure. Asserts nothing: the figures go into the report.

The list: every test of `make test` whose outcome depends on times pgmpi-bench (or pgmpi-dtbench, or the
usage records) measured, or on the machine's load, and what each rests on: "virtual clock" (the ranks read
tests/python/delay_interposer.py's tick counter: every mpirun gives the same figures whatever the load), "rule"
(a bound that holds for any timing), "planted" (an outcome forced far beyond any measured difference), "either
branch" (each outcome of a real measurement checked against the files), "wall clock"/"load" (bounds on
elapsed time far from the effect, events the test waits for). tests/README.md, "Tests independent of timing
luck", says what is not listed and why (synthetic data, the C suite).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = [  # (node id, what its outcome rests on); the kinds are explained in tests/README.md, "timing luck"
    # -- virtual clock: MPI_Wtime is delay_interposer.py's tick counter, every mpirun gives the same figures
    ("tests/python/scheduler/test_slurm_violation.py::test_violation_becomes_a_validated_candidate",
     "virtual clock: Slurm campaign -> verdict -> candidate -> validation (issue 34's failure, 1.43x control)"),
    ("tests/python/scheduler/test_native_validation.py::test_validation_job_on_slurm_recorded_and_gating_publication",
     "virtual clock: native file's validation job on Slurm, rule (c) not slower"),
    ("tests/python/scheduler/test_native_validation.py::test_validation_job_goes_through_any_backend",
     "virtual clock: the same through the local backend"),
    ("tests/python/analysis/test_real_interposer.py::test_slowed_sizes_found_and_redirected",
     "virtual clock: pgmpi-bench data -> exactly the slowed sizes -> profile -> redirection (both MPIs)"),
    ("tests/python/scheduler/test_native_nightly.py",
     "virtual clock: the nightly native chain on Slurm to a published native.rules; a validation that fails"),
    ("tests/python/scheduler/test_native_intel.py::test_intel_candidate_validated_as_users_load_it_failed_cell_back_then_published",
     "virtual clock (Intel mode): Intel candidate -> validation jobs -> verdicts -> published"),
    ("tests/python/scheduler/test_native_intel_nightly.py",
     "virtual clock (Intel mode): the nightly chain on Intel MPI to a published native.impi"),
    ("tests/python/scheduler/test_intel_race.py",
     "virtual clock (Intel mode): the race drops presets between rounds, the decision pairs them"),
    ("tests/python/scheduler/test_native_intel_fill.py",
     "virtual clock (Intel mode): a filled native.impi in a real Intel job, the fill ran, results exact"),
    ("tests/python/scheduler/test_usage_looks.py",
     "virtual clock: the looks of a from-usage night (planted win decided at look 1, jittered cell to the last)"),
    ("tests/python/scheduler/test_usage_demo.py",
     "virtual clock: usage -> profile -> faster apps on the virtual cluster"),
    ("tests/python/packaging/test_pip_install.py::test_installed_copy_runs_a_campaign_end_to_end",
     "virtual clock: the pip-installed copy's campaign -> verdict -> validation"),
    ("tests/python/scheduler/test_cluster.py::test_campaign_on_2x2_gives_a_layout_profile_the_library_applies_on_2x2_not_1x4",
     "virtual clock: 2x2 campaign -> layout profile applied on 2x2, not 1x4 (start-ups launched again on Open "
     "MPI 4.1.4's TCP crash in PMPI_Init, tests/cluster/launch-again-on-init-crash.sh)"),
    ("tests/python/scheduler/test_cluster.py::test_two_and_three_node_campaigns_reach_the_service_with_their_layout",
     "load: 2- and 3-node campaigns through the agent and Slurm on virtual nodes (start-ups under load)"),
    ("tests/python/scheduler/test_cluster.py::test_registry_library_campaign_across_nodes",
     "load: Open MPI 5 (srun) and Intel MPI (hydra) campaigns on 2 virtual nodes x 2"),
    ("tests/python/scheduler/test_cluster.py::test_mpi_across_nodes_records_the_layout",
     "load: pgmpi-bench across virtual nodes records the layout the launcher made"),
    # -- rule: a repetition, time-budget or bound rule whose outcome holds for any timing the machine gives
    ("tests/python/scheduler/test_local_backend.py::test_next_night_measures_with_the_previous_nights_repetitions",
     "rule: predicted counts carried from night 1 to night 2 (equal whatever was predicted)"),
    ("tests/python/scheduler/test_local_backend.py::test_search_under_predict_takes_the_campaign_wide_counts_else_max_nrep",
     "rule: a search under predict takes the pilot's counts, else max nrep (equal whatever was predicted)"),
    ("tests/python/scheduler/test_campaign.py::test_campaign_wide_nrep_every_mpirun_measures_the_pilots_counts",
     "rule: the pilot's predicted counts in every mpirun (equal whatever was predicted)"),
    ("tests/python/bench/test_pgmpi_bench.py::test_predict_stops_at_min_when_rules_pass_and_records_nrep",
     "rule: thresholds 100 pass at the minimum for any timing"),
    ("tests/python/bench/test_pgmpi_bench.py::test_predict_all_rules_must_pass_else_max",
     "rule: threshold 0 never passes"),
    ("tests/python/bench/test_pgmpi_bench.py::test_time_rule_nrep_bounds",
     "rule: tnrep1 given, K and max bound nrep"),
    ("tests/python/bench/test_pgmpi_bench.py::test_time_rule_measures_tnrep1_at_one_byte",
     "rule: nrep = max(ceil(t_nrep1 / l), K) within one for rounding, l the pilot's minimum latency that "
     "pgmpi-bench writes (# pilot ... latency_min_sec=)"),
    ("tests/python/bench/test_pgmpi_bench.py::test_time_budget_stops_early",
     "rule: >= 10 Allreduce of 1 KiB in a 0.2 s budget (needs < 20 ms per call)"),
    ("tests/python/bench/test_native.py::test_serve_takes_nrep_per_cell_under_a_time_budget",
     "rule: 9 repetitions of a 64 B Allreduce inside a 60 s budget"),
    ("tests/python/lib/test_usage_records.py::test_a_job_leaves_one_complete_record_of_its_mix",
     "rule: sampled collective time < 3/2 x period x rank time (each sample stands for < 3/2 period calls)"),
    ("tests/python/bench/test_bench_clock_sync.py::test_clock_methods_write_valid_output",
     "rule: every measurement written or counted late; load: the clock check's error < the 20 ms window "
     "(0.002-0.03 us measured), round-time keeps at least one of 12 measurements"),
    ("tests/python/scheduler/test_native_validation.py::test_native_validate_measures_with_the_sync_it_is_given",
     "rule: a 500 us window under load; asserts the method in both arms' raw files, not a count of valid ones"),
    ("tests/python/scheduler/test_dt_campaign.py::test_dtbench_measures_with_the_campaigns_sync",
     "rule: pgmpi-dtbench under the campaign's window/round-time; asserts the recorded method"),
    # -- planted: the outcome is forced far beyond any measured difference
    ("tests/python/bench/test_native.py::test_race_searches_in_one_mpirun_and_confirms_every_cell_in_one_per_round",
     "planted: MIN_GAIN and the control spread at -1e9, every choice is confirmed whatever the figures"),
    # -- either branch: the test checks both outcomes of a real measurement, each against the files
    ("tests/python/scheduler/test_local_backend.py::test_demo_native_step_decides_validates_through_the_module_and_publishes_only_what_passed",
     "either branch: publishes exactly when the (real-clock) validation passed"),
    ("tests/python/scheduler/test_slurm_search.py",
     "either branch: the confirmed cells are those the search measured faster by the margin, from the report; "
     "pruning checked on the report, not by how much of the grid it left out"),
    ("tests/python/scheduler/test_slurm_campaign.py",
     "either branch: asserts the chain (candidates <= violations, a validation per candidate), not a verdict"),
    ("tests/python/scheduler/test_slurm_datatypes.py",
     "either branch: each guideline 'holds' or 'violated', the pages show it"),
    # -- wall clock and load: a bound on elapsed time, or events whose order the load can change
    ("tests/python/scheduler/test_local_backend.py::test_local_cancel",
     "wall clock: cancel returns within 10 s (the job sleeps 120 s)"),
    ("tests/python/scheduler/test_local_backend.py::test_local_cancel_and_walltime",
     "wall clock: a 3 s walltime kills a 120 s sleep three times within the agent's 60 s"),
    ("tests/python/scheduler/test_faults.py",
     "load: agent killed / crash / service down / Slurm's time limit / slurmctld restart at points the test "
     "waits for (each wait bounded, 60-300 s)"),
]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def tally(runs: dict[str, int], secs: dict[str, float], fails: dict[str, list[str]]) -> str:
    """failures/runs, mean seconds and the failures' first lines, one test per line"""
    out = []
    for name in sorted(runs):
        out.append(f"{len(fails.get(name, [])):2d}/{runs[name]}  {secs[name] / runs[name]:6.1f} s  {name}")
        out += ["       " + re.sub(r"\s+", " ", f) for f in fails.get(name, [])]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--only", action="append", default=[],
                    help="run only the tests whose node id contains this (repeatable: any of them)")
    ap.add_argument("--tally", type=Path, help="rewrite this file with failures/runs per test after every round")
    ap.add_argument("--list", action="store_true", help="print the list and what each test rests on")
    a = ap.parse_args()
    tests = [(t, why) for t, why in TESTS if not a.only or any(o in t for o in a.only)]
    if a.list:
        for t, why in tests:
            print(f"{t}\n    {why}")
        return 0
    py = ROOT / ".venv/bin/python"
    fails: dict[str, list[str]] = {}
    runs: dict[str, int] = {}
    secs: dict[str, float] = {}
    t_all = time.time()
    for r in range(a.rounds):
        with tempfile.TemporaryDirectory() as td:
            xml = Path(td) / "junit.xml"
            t0, l0 = time.time(), load()
            subprocess.run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
                            f"--junitxml={xml}", *[t for t, _ in tests]], cwd=ROOT, capture_output=True, text=True,
                           env=os.environ)
            n_fail = 0
            for case in ET.parse(xml).getroot().iter("testcase"):
                name = f"{case.get('classname')}::{case.get('name')}"
                runs[name] = runs.get(name, 0) + 1
                secs[name] = secs.get(name, 0.0) + float(case.get("time") or 0)
                bad = case.find("failure") if case.find("failure") is not None else case.find("error")
                if bad is not None:
                    n_fail += 1
                    fails.setdefault(name, []).append(f"round {r + 1}: " + (bad.get("message") or "")[:200])
                    msg = re.sub(r"\s+", " ", bad.get("message") or "")[:300]
                    print(f"  FAILED {name}: {msg}", flush=True)
            if a.tally:      # the figures so far, so that a run stopped early still has them
                a.tally.write_text(f"after {r + 1} of {a.rounds} rounds\n" + tally(runs, secs, fails) + "\n")
            print(f"round {r + 1}/{a.rounds}: {n_fail} failure(s), {time.time() - t0:.0f} s, load before {l0}, "
                  f"after {load()}", flush=True)
    print(f"\n{a.rounds} rounds in {(time.time() - t_all) / 60:.1f} min")
    print(tally(runs, secs, fails))
    return 0


if __name__ == "__main__":
    sys.exit(main())
