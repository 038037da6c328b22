"""The regime control of tests/bench/reprompi_compare.py (issue 34): it may name a cell outside +-5 % only
where a tool disagrees with its own repeat in the same rounds and the repeat agrees with the other tool; a
systematic difference (both pgmpi-bench mpiruns of a round equally far from ReproMPI) must stay without a
reason.  The other controls follow one rule (control_guard): a control names a cell only where each tool it
runs anew reproduces itself and its plain repeat leaves the cell outside +-5 %.  Per-round medians are
planted; no MPI runs."""
from __future__ import annotations

from bench_scripts import bench_script

KEY = ("MPI_Allreduce", 1048576)


def load_compare():
    return bench_script("reprompi_compare", "reprompi_compare")


def medians(pgmpi, again, reprompi, reprompi_again):
    """arm -> {cell: per-round medians (seconds)}, as run_mode collects them."""
    return {"pgmpi": {KEY: pgmpi}, "pgmpi/again": {KEY: again},
            "ReproMPI": {KEY: reprompi}, "ReproMPI/again": {KEY: reprompi_again}}


RP = [160e-6, 158e-6, 162e-6, 159e-6]


def test_a_slow_level_in_some_mpiruns_of_one_tool_is_the_regime():
    m = load_compare()
    # the quiet rerun's shape: 2 of 4 pgmpi-bench mpiruns at the slow level, its repeat never
    med = medians([165e-6, 760e-6, 150e-6, 740e-6], [152e-6, 160e-6, 150e-6, 158e-6], RP, RP)
    reason, _ = m.regime(med, "pgmpi", KEY)
    assert reason is not None and reason.startswith("regime:")
    assert "pgmpi-bench's repeat" in reason


def test_the_slow_level_in_reprompis_mpiruns_is_the_regime_too():
    m = load_compare()
    slow_rp = [160e-6, 780e-6, 790e-6, 159e-6]
    med = medians([160e-6] * 4, [161e-6] * 4, slow_rp, RP)
    reason, _ = m.regime(med, "pgmpi", KEY)
    assert reason is not None and "ReproMPI's repeat" in reason


def test_a_systematic_difference_is_not_called_a_regime():
    m = load_compare()
    # both pgmpi-bench mpiruns of every round 16 % above ReproMPI: a difference of method
    med = medians([x * 1.16 for x in RP], [x * 1.17 for x in RP], RP, [x * 1.01 for x in RP])
    reason, shown = m.regime(med, "pgmpi", KEY)
    assert reason is None
    assert "pgmpi/pgmpi-again 0.99" in shown


def test_a_repeat_that_happens_to_agree_does_not_name_a_cell_its_tool_reproduces():
    m = load_compare()
    # pgmpi-bench 1.08, its repeat 1.04: the repeat is within +-5 % by luck of the draw, but the tool
    # agrees with itself (1.04), so nothing shows that the cell follows the mpiruns
    med = medians([x * 1.08 for x in RP], [x * 1.04 for x in RP], RP, RP)
    reason, _ = m.regime(med, "pgmpi", KEY)
    assert reason is None


def test_the_agreement_table_counts_regime_cells_apart(capsys):
    m = load_compare()
    med = medians([165e-6, 760e-6, 150e-6, 740e-6], [152e-6, 160e-6, 150e-6, 158e-6], RP, RP)
    paired = {("pgmpi", KEY): m.paired_ratio(med["pgmpi"][KEY], RP)}
    m.agreement_table("roundtime", ["allreduce"], [1048576], med, "pgmpi", paired, [], {})
    out = capsys.readouterr().out
    assert "| roundtime | Allreduce 1048576 B |" in out and "| no | named by regime: the machine's per-mpirun regime" in out
    assert "outside, named 1 (regime 1); undecided (A/A or interval) 0; no measured reason 0" in out


def test_a_tool_as_far_from_its_own_repeat_as_from_the_other_tool_is_undecided(capsys):
    m = load_compare()
    # pgmpi-bench 1.30 against ReproMPI, but 0.74 against its own repeat in the same rounds, and the repeat
    # does not land within +-5 % of ReproMPI either (so the regime rule does not name it)
    med = medians([x * 1.30 for x in RP], [x * 1.75 for x in RP], RP, [x * 0.80 for x in RP])
    assert m.regime(med, "pgmpi", KEY)[0] is None
    verdict = m.aa_spread(med, "pgmpi", KEY)
    assert verdict is not None and verdict.startswith("undecided (A/A)")
    paired = {("pgmpi", KEY): m.paired_ratio(med["pgmpi"][KEY], RP)}
    m.agreement_table("window", ["allreduce"], [1048576], med, "pgmpi", paired, [], {})
    out = capsys.readouterr().out
    assert "| no | undecided (A/A)" in out
    assert "outside, named 0 (-); undecided (A/A or interval) 1; no measured reason 0" in out


def test_a_systematic_difference_is_never_undecided():
    m = load_compare()
    # both tools reproduce themselves (0.99-1.01), pgmpi-bench 16 % above: a difference of method stays one
    med = medians([x * 1.16 for x in RP], [x * 1.17 for x in RP], RP, [x * 1.01 for x in RP])
    assert m.aa_spread(med, "pgmpi", KEY) is None
    # a tool that varies against itself by less than the tools differ does not hide the difference either
    med = medians([x * 1.30 for x in RP], [x * 1.20 for x in RP], RP, RP)
    assert m.aa_spread(med, "pgmpi", KEY) is None


def test_the_clock_control_reads_both_tools_offsets_and_the_true_one(tmp_path):
    m = load_compare()
    truth = tmp_path / "truth.txt"
    # MPI_Wtime - CLOCK_MONOTONIC per rank, with what makes it one clock (boot_id, time namespace) and the host
    truth.write_text("0 -45634.060698143 0b68cd93-4847 4026531834 node1\n"
                     "1 -45634.060641413 0b68cd93-4847 4026531834 node2\n")
    true = m.true_offsets(truth)[1]
    assert abs(true - (-56.73e-6)) < 1e-9
    pgmpi = "#@pgmpi clockcheck MPI_Allreduce 8 1.0e-08\n# clockmodel MPI_Allreduce 8 -5.6760e-05\n"
    reprompi = ("process test nrep count loc_tstart_sec loc_tend_sec gl_tstart_sec gl_tend_sec\n"
                "      0 MPI_Allreduce 0 8 0.0010 0.0011 0.0010 0.0011\n"
                "      1 MPI_Allreduce 0 8 0.0020 0.0021 0.00194322 0.00204322\n"
                "      1 MPI_Allreduce 1 8 0.0030 0.0031 0.00294322 0.00304322\n")
    e_pg = m.clock_errors(pgmpi, {1: true})[KEY[0], 8]
    e_rp = m.clock_errors(reprompi, {1: true})[KEY[0], 8]
    assert abs(e_pg - 0.03e-6) < 1e-9 and abs(e_rp - 0.05e-6) < 1e-9
    # a clock error taken off each mpirun's median: 1.2 us vs 1.0 us with pgmpi's clock 0.2 us off -> 1.00
    assert abs(m.corrected_ratio([1.2e-6], [0.2e-6], [1.0e-6], [0.0]) - 1.0) < 1e-9
    assert m.clock_material([0.2e-6], [0.0], 1.0e-6) and not m.clock_material([0.02e-6], [0.0], 1.0e-6)


def test_the_margin_control_names_only_a_reproducible_cell_whose_margins_differ(capsys):
    m = load_compare()
    margin = m.Reason("margin", "round-time's margin", "pgmpi/rp-margin")
    med = medians([x * 1.20 for x in RP], [x * 1.21 for x in RP], RP, RP)
    med["pgmpi/rp-margin"] = {KEY: list(RP)}
    paired = {("pgmpi", KEY): 1.20, ("pgmpi/rp-margin", KEY): 1.00}
    # margins 11 us against 5 us, pgmpi-bench reproduces itself: named
    m.agreement_table("roundtime", ["allreduce"], [1048576], med, "pgmpi", paired, [margin], {}, {},
                      {"ReproMPI": [11e-6] * 4, "pgmpi": [5e-6] * 4})
    assert "| no | named by margin: round-time's margin: 1.00" in capsys.readouterr().out
    # the same margins on both sides: the control arm is one more draw, not the mechanism
    m.agreement_table("roundtime", ["allreduce"], [1048576], med, "pgmpi", paired, [margin], {}, {},
                      {"ReproMPI": [6e-6] * 4, "pgmpi": [5e-6] * 4})
    assert "| no | named by margin" not in capsys.readouterr().out
    # pgmpi-bench against its own repeat 1.20 / 0.90: not reproducible, so not named either
    med["pgmpi/again"] = {KEY: [x * 0.90 for x in RP]}
    m.agreement_table("roundtime", ["allreduce"], [1048576], med, "pgmpi", paired, [margin], {}, {},
                      {"ReproMPI": [11e-6] * 4, "pgmpi": [5e-6] * 4})
    assert "| no | named by margin" not in capsys.readouterr().out


def control_case(m, mode, pg, pg2, rp, rp2, ctl=1.00):
    """Every control of `mode` (Open MPI) with its arm planted at ratio `ctl` against its ReproMPI, the main
    arm at 1.20; the margins differ (ReproMPI 11 us, pgmpi-bench 5 us), so only control_guard decides."""
    _arms, reasons = m.reason_arms(mode, "openmpi", [])
    med = medians(pg, pg2, rp, rp2)
    paired = {("pgmpi", KEY): m.paired_ratio(pg, rp)}
    for rs in reasons:
        med[rs.arm] = {KEY: [x * ctl for x in RP]}
        paired[(rs.arm, KEY)] = ctl
    margins = {"ReproMPI": [11e-6] * 4, "pgmpi": [5e-6] * 4}
    return reasons, med, paired, margins


ALL_MODES = ("barrier", "roundtime", "window")
SMALL = ("MPI_Allgather", 8)     # every control's mechanism reaches it (fast boxes, unwritten buffer)


def small(med):
    return {arm: {SMALL: v[KEY]} for arm, v in med.items()}


def table(m, capsys, mode, reasons, med, paired, margins):
    counts = m.agreement_table(mode, ["allgather"], [8], small(med), "pgmpi",
                               {(arm, SMALL): v for (arm, _k), v in paired.items()}, reasons, {}, {}, margins)
    return counts, capsys.readouterr().out


def test_no_control_names_a_cell_whose_pgmpi_bench_disagrees_with_its_own_repeat(capsys):
    m = load_compare()
    # pgmpi-bench 1.20 against ReproMPI, but 1.20 / 1.40 = 0.86 against its own repeat in the same rounds
    # (not far enough for A/A, and its repeat does not agree with ReproMPI, so neither undecided nor the
    # regime): each control's run (1.00) may be one more draw; the old script named the cell by every control
    for mode in ALL_MODES:
        reasons, med, paired, margins = control_case(
            m, mode, [x * 1.20 for x in RP], [x * 1.40 for x in RP], RP, RP)
        assert {rs.name for rs in reasons} >= {"fbox-off", "zero-page"}
        counts, out = table(m, capsys, mode, reasons, med, paired, margins)
        assert counts["none"] == 1 and sum(counts["named"].values()) == 0, out
        assert "named by" not in out and "(not named: pgmpi/pgmpi-again 0.86)" in out


def test_a_control_of_both_tools_needs_reprompi_to_reproduce_itself_too(capsys):
    m = load_compare()
    # pgmpi-bench reproduces itself (1.00); ReproMPI against its repeat 1.25: fbox-off and short-wait rerun
    # ReproMPI as well, so their runs may be one more ReproMPI draw; zero-page and margin keep the plain
    # ReproMPI mpirun of the round (paired), so they still name the cell
    for mode in ALL_MODES:
        reasons, med, paired, margins = control_case(
            m, mode, [x * 1.20 for x in RP], [x * 1.20 for x in RP], RP, [x / 1.25 for x in RP])
        counts, out = table(m, capsys, mode, reasons, med, paired, margins)
        both = {rs.name for rs in reasons if "ReproMPI" in rs.reruns}
        assert both and not both & set("+".join(counts["named"]).split("+")), out
        assert "zero-page" in "+".join(counts["named"]), out
        assert "(not named: ReproMPI/ReproMPI-again 1.25)" in out


def test_a_control_no_better_than_the_plain_repeat_names_nothing(capsys):
    m = load_compare()
    # pgmpi-bench 1.08, its repeat 1.04 against ReproMPI (and 1.04 against each other, within +-5 %): the
    # plain repeat already brings the cell within +-5 %, so a control at 1.00 shows no mechanism
    reasons, med, paired, margins = control_case(
        m, "roundtime", [x * 1.08 for x in RP], [x * 1.04 for x in RP], RP, RP)
    counts, out = table(m, capsys, "roundtime", reasons, med, paired, margins)
    assert sum(counts["named"].values()) == 0 and "not named: the plain repeat already 1.04" in out


def test_a_reproducible_difference_a_control_removes_is_named_with_the_control(capsys):
    m = load_compare()
    # both tools reproduce themselves, pgmpi-bench 1.20 in both its mpiruns, the control 1.00
    for mode in ALL_MODES:
        reasons, med, paired, margins = control_case(
            m, mode, [x * 1.20 for x in RP], [x * 1.21 for x in RP], RP, [x * 1.01 for x in RP])
        counts, out = table(m, capsys, mode, reasons, med, paired, margins)
        names = "+".join(rs.name for rs in reasons)
        assert dict(counts["named"]) == {names: 1}, out
        assert f"| no | named by {names}: " in out
        assert f"outside, named 1 ({names} 1); undecided (A/A or interval) 0; no measured reason 0" in out


def test_without_the_repeats_no_control_names_a_cell(capsys):
    m = load_compare()
    reasons, med, paired, margins = control_case(
        m, "barrier", [x * 1.20 for x in RP], [x * 1.21 for x in RP], RP, RP)
    del med["pgmpi/again"], med["ReproMPI/again"]
    counts, out = table(m, capsys, "barrier", reasons, med, paired, margins)
    assert counts["none"] == 1 and "no repeat in the same rounds" in out


def test_the_last_table_counts_each_method_by_what_named_its_cells(capsys):
    m = load_compare()
    per = {}
    reasons, med, paired, margins = control_case(
        m, "barrier", [x * 1.20 for x in RP], [x * 1.21 for x in RP], RP, RP)
    per["barrier"], _ = table(m, capsys, "barrier", reasons, med, paired, margins)
    reasons, med, paired, margins = control_case(
        m, "window", [x * 1.20 for x in RP], [x * 1.40 for x in RP], RP, RP)
    per["window"], _ = table(m, capsys, "window", reasons, med, paired, margins)
    m.summary_table(per)
    out = capsys.readouterr().out
    assert "| barrier | 1 | 0 | 1 (fbox-off+zero-page 1) | 0 | 0 |" in out
    assert "| window | 1 | 0 | 0 (-) | 0 | 1 |" in out


def test_the_true_offset_needs_rank_0s_clock_not_its_node(tmp_path):
    m = load_compare()
    truth = tmp_path / "truth.txt"
    # ranks 1 and 2 on other virtual nodes of one kernel (same boot_id and time namespace): exact, kept;
    # rank 3 in another time namespace and rank 4 on another kernel: their CLOCK_MONOTONIC is another clock,
    # so no true offset for them (a clock error computed from it would be the namespaces' offset)
    truth.write_text("0 -100.000000000 0b68cd93-4847 4026531834 node1\n"
                     "1 -100.000001000 0b68cd93-4847 4026531834 node2\n"
                     "2 -99.999998000 0b68cd93-4847 4026531834 node3\n"
                     "3 -3700.000000000 0b68cd93-4847 4026532999 node3\n"
                     "4 -55.000000000 77777777-0000 4026531834 node4\n")
    true = m.true_offsets(truth)
    assert set(true) == {1, 2}
    assert abs(true[1] - 1e-6) < 1e-9 and abs(true[2] + 2e-6) < 1e-9
    assert [h for _, (_, _, _, h) in sorted(m.truth_ranks(truth).items())] == ["node1", "node2", "node3", "node3",
                                                                               "node4"]
    # without rank 0's identity there is nothing to compare with
    truth.write_text("0 -100.0 unknown 0 node1\n1 -100.000001 unknown 0 node2\n")
    assert m.true_offsets(truth) == {}


def test_the_cluster_launch_is_one_rank_per_virtual_node():
    m = load_compare()
    assert m.mpirun("openmpi", 2, "cluster") == ["srun", "-N2", "--ntasks-per-node=1", "--mpi=pmix"]
    assert m.mpirun("mpich", 3, "cluster") == ["srun", "-N3", "--ntasks-per-node=1", "--mpi=pmi2"]
    assert m.mpirun("openmpi", 2)[0] == "mpirun.openmpi"


def test_the_lib_path_control_gives_reprompi_pgmpi_benchs_call_path():
    m = load_compare()
    # pgmpi-bench's timed call of the default runs libpgmpitune's entry point with the report suspended
    # (pgmpitune_report_suspend in run_phase): the control puts the library, report off, into ReproMPI's ranks
    truth = {"LD_PRELOAD": "/t/libwtime_truth.so", "WTIME_TRUTH_FILE": "/t/truth.txt"}
    pre, env = m.lib_launch("openmpi", "one-node", truth, "/b/libpgmpitune.so")
    assert pre == ["-x", "LD_PRELOAD=/t/libwtime_truth.so:/b/libpgmpitune.so"]
    assert env == {"WTIME_TRUTH_FILE": "/t/truth.txt"}        # not preloaded into mpirun itself
    pre, env = m.lib_launch("mpich", "one-node", {}, "/b/libpgmpitune.so")
    assert pre == ["-env", "LD_PRELOAD", "/b/libpgmpitune.so"] and env == {}
    pre, env = m.lib_launch("openmpi", "cluster", truth, "/b/libpgmpitune.so")
    assert pre == [] and "PGMPITUNE_VERBOSE" not in env and env["LD_PRELOAD"].endswith(":/b/libpgmpitune.so")
    # window mode runs it as a control of both tools (ReproMPI/lib next to a pgmpi-bench rerun paired with it)
    arms, reasons = m.reason_arms("window", "openmpi", [])
    lib = {x.label: x for x in arms}
    assert lib["ReproMPI/lib"].with_lib and lib["pgmpi/lib"].ref == "ReproMPI/lib"
    assert {r.name: r.reruns for r in reasons}["lib-path"] == m.BOTH
    assert "--method=reprompi" in lib["pgmpi/method"].args


def test_cells_names_mode_call_and_size_and_refuses_anything_else():
    m = load_compare()
    got = m.parse_cells("roundtime:Bcast:1K, roundtime:MPI_Allgather:1024,window:allreduce:8,roundtime:bcast:1M")
    assert got == {"roundtime": {("bcast", 1024), ("allgather", 1024), ("bcast", 1048576)},
                   "window": {("allreduce", 8)}}
    for bad, says in (("roundtime:bcast", "is not mode:call:size"),
                      ("hca:bcast:8", "unknown mode 'hca' (choices: barrier, window, roundtime)"),
                      ("window:alltoall:8", "unknown call 'alltoall' (choices: allreduce, bcast, allgather)"),
                      ("window:bcast:1X", "bad size '1X'"), ("window:bcast:0", "bad size '0'"), (" , ", "no cell")):
        try:
            m.parse_cells(bad)
        except ValueError as e:
            assert says in str(e), (bad, str(e))
        else:
            raise AssertionError(f"--cells {bad!r} was accepted")


def test_the_tables_of_a_cells_run_show_and_count_only_those_cells(capsys):
    m = load_compare()
    # a mode measures the calls x sizes of its cells (Bcast and Allgather at 1 KiB and 1 MiB); Allgather 1 MiB
    # ran along but was not asked for, so neither the agreement table nor its counts show it
    keys = {(c, n): (m.CALLS[c], n) for c in ("bcast", "allgather") for n in (1024, 1048576)}
    med = {arm: {k: list(RP) for k in keys.values()} for arm in ("pgmpi", "ReproMPI")}
    paired = {("pgmpi", k): 1.0 for k in keys.values()}
    only = {("bcast", 1024), ("bcast", 1048576), ("allgather", 1024)}
    counts = m.agreement_table("roundtime", ["bcast", "allgather"], [1024, 1048576], med, "pgmpi", paired, [], {},
                               only=only)
    out = capsys.readouterr().out
    assert counts["total"] == 3 and counts["within"] == 3
    assert "Bcast 1024 B" in out and "Bcast 1048576 B" in out and "Allgather 1024 B" in out
    assert "Allgather 1048576 B" not in out


def test_the_start_messages_control_runs_in_the_clock_modes_and_names_what_it_removes(capsys):
    m = load_compare()
    for mode in ALL_MODES:
        arms, reasons = m.reason_arms(mode, "openmpi", ["--seed=1"])
        rp_start = [a for a in arms if a.label == "pgmpi/rp-start"]
        assert bool(rp_start) == (mode != "barrier")
        if mode == "barrier":
            continue
        assert rp_start[0].args == ["--seed=1", "--start-agreement=reprompi"]
        # pgmpi-bench 1.20 in both its mpiruns, ReproMPI reproduces itself; only the start-messages arm at 1.00
        reasons_, med, paired, margins = control_case(
            m, mode, [x * 1.20 for x in RP], [x * 1.21 for x in RP], RP, [x * 1.01 for x in RP], ctl=1.20)
        med["pgmpi/rp-start"] = {KEY: list(RP)}
        paired[("pgmpi/rp-start", KEY)] = 1.00
        counts, out = table(m, capsys, mode, reasons_, med, paired, margins)
        assert dict(counts["named"]) == {"start-messages": 1}, out


LOW, HIGH = 0.45e-6, 1.20e-6       # round-time Bcast 1 KiB's two levels per mpirun (both tools)


def levels_case(m, pg, pg2, rp, rp2):
    key = ("MPI_Bcast", 1024)
    med = {"pgmpi": {key: pg}, "pgmpi/again": {key: pg2}, "ReproMPI": {key: rp}, "ReproMPI/again": {key: rp2}}
    return key, med


def test_a_cell_on_two_levels_in_both_tools_is_named_by_levels_where_each_level_agrees(capsys):
    m = load_compare()
    L, H = LOW, HIGH
    # pgmpi-bench 0.69 against ReproMPI (paired), each tool agreeing with its own repeat (1.00), so neither the
    # regime nor the A/A verdict applies; every mpirun of both tools sits at 0.45 or 1.20 us
    key, med = levels_case(m, [L, L, H, L, H, L], [H, L, L, L, H, H], [H, L, H, H, L, H], [H, L, L, H, H, L])
    assert abs(m.paired_ratio(med["pgmpi"][key], med["ReproMPI"][key]) - 0.69) < 0.01
    assert m.regime(med, "pgmpi", key)[0] is None and m.aa_spread(med, "pgmpi", key) is None
    reason, seen = m.levels(med, "pgmpi", key)
    assert reason and "pgmpi-bench 7 low/5 high, ReproMPI 5 low/7 high" in seen and "1.00 (low) 1.00 (high)" in seen
    paired = {("pgmpi", key): m.paired_ratio(med["pgmpi"][key], med["ReproMPI"][key])}
    counts = m.agreement_table("roundtime", ["bcast"], [1024], med, "pgmpi", paired, [], {})
    assert dict(counts["named"]) == {"levels": 1}, capsys.readouterr().out

    # the same shares, but pgmpi-bench's low level 15 % below ReproMPI's: a difference inside a level
    key, med = levels_case(m, *[[v * 0.85 if v == L else v for v in xs] for xs in
                                ([L, L, H, L, H, L], [H, L, L, L, H, H])], [H, L, H, H, L, H], [H, L, L, H, H, L])
    reason, seen = m.levels(med, "pgmpi", key)
    assert reason is None and "0.85 (low)" in seen
    # the tools land on different levels (pgmpi-bench 10 of 12 low, ReproMPI 4 of 12, p = 0.04): the tool may decide
    key, med = levels_case(m, [L, L, H, L, L, L], [L, H, L, L, L, L], [H, L, H, H, L, H], [H, L, H, L, H, H])
    reason, seen = m.levels(med, "pgmpi", key)
    assert reason is None and "shares p=0.04" in seen
    # without the repeats (a --no-reasons run of many rounds) each tool's own mpirun per round
    key, med = levels_case(m, [L, L, H, L, H, L], [H, L, L, L, H, H], [H, L, H, H, L, H], [H, L, L, H, H, L])
    del med["pgmpi/again"], med["ReproMPI/again"]
    assert "pgmpi-bench 4 low/2 high, ReproMPI 2 low/4 high" in m.levels(med, "pgmpi", key)[1]
    # a descheduled mpirun 17x above the rest is not a level: the split stays between the two levels
    key, med = levels_case(m, [L, L, H, L, H, L], [H, L, L, L, H, H], [H, L, H, H, L, H * 17], [H, L, L, H, H, L])
    reason, seen = m.levels(med, "pgmpi", key)
    assert "levels at 0.735 us" in seen, seen
    # one level (every mpirun within 1.25x of the next): nothing to split
    key, med = levels_case(m, [L * 0.9] * 6, [L * 0.92] * 6, [L * 1.1] * 6, [L * 1.08] * 6)
    assert m.levels(med, "pgmpi", key)[0] is None


def test_a_cell_whose_rounds_do_not_exclude_1_is_undecided_by_its_interval_and_a_tight_one_is_not(capsys):
    m = load_compare()
    key = ("MPI_Allreduce", 8)
    rp = [14e-6, 9e-6, 21e-6, 12e-6, 15e-6, 10e-6]
    # per-round ratios 0.55-1.40 (window 8 B after 3 ms of waiting): paired 0.79, its rounds' interval holds 1;
    # each tool within +-11 % of its repeat, so the A/A verdict does not apply
    pg = [x * r for x, r in zip(rp, (0.55, 1.40, 0.70, 0.85, 1.25, 0.74))]
    med = {"pgmpi": {key: pg}, "pgmpi/again": {key: [x * 1.1 for x in pg]},
           "ReproMPI": {key: rp}, "ReproMPI/again": {key: [x * 1.1 for x in rp]}}
    paired = {("pgmpi", key): m.paired_ratio(pg, rp)}
    assert m.aa_spread(med, "pgmpi", key) is None and not m.within(paired[("pgmpi", key)])
    counts = m.agreement_table("window", ["allreduce"], [8], med, "pgmpi", paired, [], {})
    out = capsys.readouterr().out
    assert counts["undecided"] == 1 and counts["none"] == 0 and "undecided (interval)" in out
    assert "(95 % CI 0." in out and "6 mpiruns)" in out
    # the same paired ratio in every round: the interval excludes 1, the cell stays without a reason
    pg = [x * 0.79 for x in rp]
    med["pgmpi"][key], med["pgmpi/again"][key] = pg, [x * 1.02 for x in pg]
    paired = {("pgmpi", key): m.paired_ratio(pg, rp)}
    counts = m.agreement_table("window", ["allreduce"], [8], med, "pgmpi", paired, [], {})
    assert counts["none"] == 1 and counts["undecided"] == 0, capsys.readouterr().out


def test_the_level_probe_is_shown_next_to_the_cells_own_levels(tmp_path, capsys):
    m = load_compare()
    L, H = LOW, HIGH
    cell = ([L, L, H, L, H, L], [H, L, L, L, H, H], [H, L, H, H, L, H], [H, L, L, H, H, L])
    key, med = levels_case(m, *cell)
    arms = ("pgmpi", "pgmpi/again", "ReproMPI", "ReproMPI/again")
    # the probe (median barrier at MPI_Finalize) at 0.24 or 0.50 us with the cell's level, as measured here
    probes = {arm: [0.50e-6 if v == H else 0.24e-6 for v in xs] for arm, xs in zip(arms, cell)}
    reason, seen = m.levels(med, "pgmpi", key, probes)
    assert reason and "(the level probe puts 24 of 24 mpiruns on the same level)" in seen, seen
    paired = {("pgmpi", key): m.paired_ratio(med["pgmpi"][key], med["ReproMPI"][key])}
    counts = m.agreement_table("roundtime", ["bcast"], [1024], med, "pgmpi", paired, [], {}, probes=probes)
    assert dict(counts["named"]) == {"levels": 1}, capsys.readouterr().out
    # a systematic 30 % difference, each tool on one level: never named
    key, med = levels_case(m, [L] * 6, [L * 1.01] * 6, [L * 1.32] * 6, [L * 1.33] * 6)
    reason, seen = m.levels(med, "pgmpi", key)
    assert reason is None and seen.endswith("a tool on one level only"), seen
    # the probe line of wtime_truth.c, next to the ranks' lines
    truth = tmp_path / "truth.txt"
    truth.write_text("probe 5.010000000e-07\n0 -100.000000000 0b68cd93-4847 4026531834 vm\n")
    assert m.probe_of(truth) == 5.01e-07 and 0 in m.truth_ranks(truth)
    assert m.probe_of(tmp_path / "none.txt") != m.probe_of(tmp_path / "none.txt")    # nan without a file
