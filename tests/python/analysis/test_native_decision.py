"""One decision per call (service/analysis/native_decision.py): the fastest of the default, the library's own
algorithms and the mock-ups under the paired verdict rules, a mock-up with natively retuned parts refused,
and a cell going to the native file or the .prf, never both."""
from __future__ import annotations

import math

import numpy as np

from service.analysis.native_decision import decide, explain_lines, mockup_parts, validation_refusals

NOISE = [1.00, 1.01, 0.99, 1.02, 0.98]          # the same drift per mpirun for every algorithm in it
JITTER = [0.0, 0.01, -0.01, 0.005, -0.005]      # and 1 % of its own


def runs(**medians):
    """Five mpiruns; each label's median scaled by the mpirun's drift (paired design) and a little jitter."""
    return [{label.replace("__", ":"): t * d * (1 + JITTER[(r + i) % 5]) for i, (label, t) in enumerate(medians.items())}
            | {"default_control": medians["default"] * d * (1 + JITTER[(r + 3) % 5])} for r, d in enumerate(NOISE)]


def test_native_wins_and_goes_to_the_native_file_only():
    cells = {("bcast", 4096, 2): runs(default=10.0, native__binomial=8.0, bcast_as_scatter_allgather=9.5),
             ("bcast", 8, 2): runs(default=1.0, native__binomial=0.99)}
    r = decide(cells)
    d = r.decisions[("bcast", 4096, 2)]
    assert (d.choice, d.kind) == ("native:binomial", "native") and "x faster than the default (paired over 5 mpiruns" in d.reason
    assert r.decisions[("bcast", 8, 2)].choice == "default"        # 1 % gain is below min_gain
    assert [x.label for x in r.native_decisions()] == ["default", "native:binomial"]
    assert r.prf_ranges() == {}                                     # the same cell never in both files


def test_a_mockup_whose_parts_are_natively_retuned_is_refused():
    cells = {("bcast", 4096, 2): runs(default=10.0, native__binomial=8.0, bcast_as_scatter_allgather=6.0),
             ("allgather", 4096, 2): runs(default=10.0, native__ring=7.0)}
    d = decide(cells).decisions[("bcast", 4096, 2)]
    mock = next(c for c in d.candidates if c.label == "bcast_as_scatter_allgather")
    assert mock.refused and "allgather" in mock.refused and "runs under the native file (none given)" in mock.refused
    assert d.choice == "native:binomial"
    # without the retuned part the faster mock-up wins and becomes a .prf range, not a native rule
    alone = decide({("bcast", 4096, 2): runs(default=10.0, native__binomial=8.0, bcast_as_scatter_allgather=6.0)})
    assert alone.decisions[("bcast", 4096, 2)].choice == "bcast_as_scatter_allgather"
    assert alone.prf_ranges() == {("bcast", 2): [(4096, 4096, "bcast_as_scatter_allgather")]}
    assert [x.label for x in alone.native_decisions()] == ["default"]
    nat = next(c for c in alone.decisions[("bcast", 4096, 2)].candidates if c.label == "native:binomial")
    assert nat.refused == "a mock-up won this cell in the first pass, so the native file keeps the default here"
    assert mockup_parts("allreduce_as_reducescatterblock_allgather") == {"reducescatterblock", "allgather"}


def test_the_control_arm_and_a_single_mpirun_keep_the_default():
    noisy = runs(default=10.0, native__chain=9.0)
    for i, r in enumerate(noisy):
        r["default_control"] = r["default"] * (1.3 if i % 2 else 0.75)      # null spread 33 %
    d = decide({("reduce", 1024, 2): noisy}).decisions[("reduce", 1024, 2)]
    assert d.choice == "default" and "null spread" in d.candidates[0 if d.candidates[0].label != "default" else 1].refused
    one = decide({("reduce", 1024, 2): runs(default=10.0, native__chain=5.0)[:1]})
    c = next(c for c in one.decisions[("reduce", 1024, 2)].candidates if c.label == "native:chain")
    assert one.decisions[("reduce", 1024, 2)].choice == "default" and "need 2" in c.refused
    text = "\n".join(explain_lines(one.decisions[("reduce", 1024, 2)], ["search path: [chain]"]))
    assert "native:chain" in text and "search path" in text and text.splitlines()[-1].startswith("chosen: default")


def test_a_choice_its_validation_job_failed_is_refused_and_the_next_one_wins():
    # the search measured split_binary_tree interleaved with the other variants; the validation job, which
    # runs the file alone as users do, found it did not run there (Open MPI bcast 512 B at 2 ranks)
    cells = {("bcast", 512, 2): runs(default=10.0, native__split_binary_tree=2.0, native__binomial=8.0),
             ("bcast", 1024, 2): runs(default=10.0, native__split_binary_tree=2.0),
             ("bcast", 4096, 2): runs(default=10.0, native__split_binary_tree=2.0)}
    verdict = {"id": 7, "state": "failed", "cells": [
        {"collective": "bcast", "nprocs": 2, "msize": 512, "range": [512, 4095], "label": "native:split_binary_tree",
         "problems": ["(b) the file's choice did not run"]},
        {"collective": "bcast", "nprocs": 2, "msize": 4096, "range": [4096, None], "label": "native:split_binary_tree",
         "problems": []},
        {"collective": "bcast", "nprocs": 4, "msize": 1024, "range": [0, None], "label": "native:split_binary_tree",
         "problems": ["(c) tuned slower"]}]}
    refused = validation_refusals(verdict, cells, "verdict.json record 7")
    assert set(refused) == {("bcast", 512, 2, "native:split_binary_tree"), ("bcast", 1024, 2, "native:split_binary_tree")}
    r = decide(cells, refused=refused)
    d = r.decisions[("bcast", 512, 2)]
    assert d.choice == "native:binomial"
    failed = next(c for c in d.candidates if c.label == "native:split_binary_tree")
    assert failed.refused.startswith("failed validation (verdict.json record 7: 512 B): (b) the file's choice did not run")
    assert r.decisions[("bcast", 1024, 2)].choice == "default"
    assert r.decisions[("bcast", 4096, 2)].choice == "native:split_binary_tree"     # its rule passed


def test_an_intel_candidate_failing_only_in_its_gaps_refuses_that_collectives_choices():
    """Intel MPI's native.impi: a gap between ranges is measured as a "default" cell; once I_MPI_ADJUST_<COLL> is
    set Intel MPI changes its choice there, so a failed gap is the variable's doing.  It goes back as a refusal
    of every native choice of that collective at that p (else the next candidate is the same file, asked up to
    `candidates` times); other collectives and other p keep theirs; other libraries' gaps refuse nothing."""
    cells = {("allreduce", 8, 2): runs(default=2.0, native__3=1.0, native__8=1.5),
             ("allreduce", 4096, 2): runs(default=2.0, native__3=3.0),
             ("allreduce", 65536, 2): runs(default=2.0, native__3=1.0),
             ("allreduce", 8, 4): runs(default=2.0, native__3=1.0),
             ("bcast", 8, 2): runs(default=2.0, native__1=1.0)}
    first = decide(cells)
    assert [(x.key, x.nprocs, x.nbytes, x.label) for x in first.native_decisions() if x.key == "allreduce"
            and x.nprocs == 2] == [("allreduce", 2, 8, "native:3"), ("allreduce", 2, 4096, "default"),
                                   ("allreduce", 2, 65536, "native:3")]
    verdict = {"id": 9, "cells": [
        {"collective": "allreduce", "nprocs": 2, "msize": 8, "range": [0, 4095], "label": "native:3", "problems": []},
        {"collective": "allreduce", "nprocs": 2, "msize": 4096, "range": [4096, 32767], "label": "default",
         "problems": ["(b) the file keeps the default here, but the reduction's fingerprint under the file is not "
                      "the default's"]},
        {"collective": "allreduce", "nprocs": 2, "msize": 65536, "range": [65536, 2147483647], "label": "native:3",
         "problems": []},
        {"collective": "bcast", "nprocs": 2, "msize": 8, "range": [0, 2147483647], "label": "native:1",
         "problems": []}]}
    assert validation_refusals(verdict, cells, "record 9") == {}          # a gap of another library's file
    refused = validation_refusals(verdict, cells, "record 9", gap_refuses_collective=True)
    assert set(refused) == {("allreduce", 8, 2, "native:3"), ("allreduce", 8, 2, "native:8"),
                            ("allreduce", 4096, 2, "native:3"), ("allreduce", 65536, 2, "native:3")}, refused
    assert "a size the file leaves to the library" in refused[("allreduce", 8, 2, "native:3")]
    again = decide(cells, refused=refused)
    assert {(k, s, p): d.choice for (k, s, p), d in again.decisions.items()} == {
        ("allreduce", 8, 2): "default", ("allreduce", 4096, 2): "default", ("allreduce", 65536, 2): "default",
        ("allreduce", 8, 4): "native:3", ("bcast", 8, 2): "native:1"}


def test_a_collective_the_intel_file_leaves_to_the_library_retunes_nothing():
    """Intel MPI's native.impi holds a collective only where a preset won at every measured size (impi_adjust.trim):
    bcast, where the default won at 64 KiB, gets no variable.  decide(library="intelmpi") applies that before
    choosing: bcast's presets are refused, so its 8 B cell goes to the mock-up that also won there (it used to
    stay native:1 and then reach no file: the default, a missed win), and allgather's mock-up built on bcast
    competes as measured, against bcast's default (it used to be refused as "natively retuned").  The file
    written is the same text, still saying why bcast is left out; other libraries' files keep every choice."""
    from pgmpi_formats import impi_adjust, native_file
    cells = {("bcast", 8, 2): runs(default=10.0, native__1=6.0, bcast_as_scatter_allgather=8.0),
             ("bcast", 65536, 2): runs(default=10.0, native__1=20.0),
             ("allgather", 4096, 2): runs(default=10.0, allgather_as_gather_bcast=5.0),
             ("reduce", 4096, 2): runs(default=10.0, native__2=7.0),
             ("reduce", 65536, 2): runs(default=10.0, native__2=7.0)}
    old = decide(cells)             # as for a library whose ranges leave gaps to the default
    assert old.decisions[("bcast", 8, 2)].choice == "native:1"
    assert "natively retuned" in next(c.refused for c in old.decisions[("allgather", 4096, 2)].candidates
                                      if c.label == "allgather_as_gather_bcast")
    r = decide(cells, library="intelmpi")
    got = {(k, s): d.choice for (k, s, _p), d in r.decisions.items()}
    assert got == {("bcast", 8): "bcast_as_scatter_allgather", ("bcast", 65536): "default",
                   ("allgather", 4096): "allgather_as_gather_bcast", ("reduce", 4096): "native:2",
                   ("reduce", 65536): "native:2"}, got
    assert list(r.left_to_library) == ["bcast"] and r.decisions[("bcast", 8, 2)].left_to_library
    nat = next(c for c in r.decisions[("bcast", 8, 2)].candidates if c.label == "native:1")
    assert nat.refused.startswith("native.impi leaves bcast to the library: the library's default won at 65536 B")
    assert r.prf_ranges() == {("bcast", 2): [(8, 8, "bcast_as_scatter_allgather")],
                              ("allgather", 2): [(4096, 4096, "allgather_as_gather_bcast")]}
    # the file: reduce's preset at every size, bcast left out with the reason (the text as before)
    assert native_file.left_to_library("intelmpi", r.native_decisions()) == r.left_to_library
    assert impi_adjust.trim(r.native_decisions()) == impi_adjust.trim(old.native_decisions())   # what is written
    # a mock-up now free to compete (its part bcast runs the default) takes a reduce cell from the preset, so
    # the file would keep the default there: reduce is left to the library too (repeated until nothing more)
    more = decide({**cells, ("reduce", 4096, 2): runs(default=10.0, native__2=7.0, reduce_as_bcast=5.0)},
                  library="intelmpi")
    assert sorted(more.left_to_library) == ["bcast", "reduce"]
    assert {s: d.choice for (k, s, _p), d in more.decisions.items() if k == "reduce"} == {4096: "reduce_as_bcast",
                                                                                          65536: "default"}
    # without a mock-up the cell keeps the library's default, and says why
    alone = decide({c: v for c, v in cells.items() if c[0] == "bcast"} |
                   {("bcast", 8, 2): runs(default=10.0, native__1=6.0)}, library="intelmpi")
    d = alone.decisions[("bcast", 8, 2)]
    assert d.choice == "default" and d.reason.startswith("the library's default: native.impi leaves bcast to the library")
    assert decide(cells, library="openmpi").decisions[("bcast", 8, 2)].choice == "native:1"


def test_second_pass_a_mockup_with_retuned_parts_competes_on_runs_under_that_very_file():
    from pgmpi_formats import native
    from service.analysis.native_decision import Run

    # first pass (no file): allgather gets a native choice; the bcast mock-up built on allgather was measured
    # with the library's default allgather, so that measurement cannot decide it
    plain = {("allgather", 4096, 2): runs(default=10.0, native__ring=7.0),
             ("bcast", 4096, 2): runs(default=10.0, bcast_as_scatter_allgather=6.0)}
    written = {}

    def digest(decisions):      # what analyze native-files does: the text it writes, hashed like pgmpi-bench
        text = "\n".join(f"{d.key} {d.nprocs} {d.nbytes} {d.label}" for d in decisions)
        written["text"] = text
        return native.file_digest(text)

    first = decide(plain, file_digest=digest)
    mock = next(c for c in first.decisions[("bcast", 4096, 2)].candidates if c.label == "bcast_as_scatter_allgather")
    assert "(none measured it)" in mock.refused and first.file_digest == native.file_digest(written["text"])
    # second pass: the same mock-up measured under exactly that file (its allgather now runs ring) wins; runs
    # under another (stale) file are ignored, whatever they say
    under = [Run(r, first.file_digest) for r in runs(default=10.0, bcast_as_scatter_allgather=7.5)]
    stale = [Run(r, "0123456789abcdef") for r in runs(default=10.0, bcast_as_scatter_allgather=20.0)]
    cells = dict(plain)
    cells[("bcast", 4096, 2)] = plain[("bcast", 4096, 2)] + under + stale
    r = decide(cells, file_digest=digest)
    d = r.decisions[("bcast", 4096, 2)]
    assert (d.choice, d.kind) == ("bcast_as_scatter_allgather", "mockup"), d.reason
    won = next(c for c in d.candidates if c.label == "bcast_as_scatter_allgather")
    assert won.under == first.file_digest and won.runs == 5 and 1.3 < won.paired_ratio < 1.4
    assert f"under native file {first.file_digest}" in d.reason
    assert r.prf_ranges() == {("bcast", 2): [(4096, 4096, "bcast_as_scatter_allgather")]}
    assert [x.label for x in r.native_decisions()] == ["native:ring"]    # the file it ran under: native cells only
    # measured under the file but not faster there: refused with the second pass's figures
    slow = dict(plain)
    slow[("bcast", 4096, 2)] = plain[("bcast", 4096, 2)] + [
        Run(x, first.file_digest) for x in runs(default=10.0, bcast_as_scatter_allgather=10.1)]
    s = decide(slow, file_digest=digest).decisions[("bcast", 4096, 2)]
    assert s.choice == "default"
    assert next(c for c in s.candidates if c.label != "default").refused.startswith("not significant")


def _raw(path, index, medians, campaign="ns"):
    """A raw file of one mpirun: per (label, seconds) 8 rows of MPI_Bcast at 512 B (1 % spread)."""
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
             "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
             f"#@campaign={campaign}", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for label, t in medians.items():
        lines += [f"MPI_Bcast {r} 512 {t * (1 + 0.01 * ((r * 7) % 5 - 2) / 2):.10e} {label}" for r in range(8)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_reduced_search_choice_is_decided_on_its_alone_mpiruns_not_the_interleaved_search(tmp_path):
    """native_driver confirms each choice in mpiruns of its own: the default alone, the variant alone, paired
    per round by #@mpirun_index.  The search's interleaved mpirun made split_binary_tree look 5x faster;
    alone, as an application runs it, it is 1.3x slower, so the default stays.  On a planted inverse (alone
    1.5x faster) it wins on the alone pairs only."""
    from service.analysis.native_decision import runs_from_files
    sbt = "native:split_binary_tree"
    drift = [1.0, 1.03, 0.98, 1.01]

    def job(factor):
        d = tmp_path / f"f{factor}"
        d.mkdir()
        files = [_raw(d / "search-0-bcast.txt", 0, {"default": 1e-6, sbt: 0.2e-6, "default_control": 1.01e-6})]
        for i, k in enumerate(drift):
            files.append(_raw(d / f"search-0-confirm-{i}-0.txt", i, {"default": 1e-6 * k, "default_control": 1.005e-6 * k}))
            files.append(_raw(d / f"search-0-confirm-{i}-1.txt", i, {sbt: factor * 1e-6 * k}))
        return runs_from_files(files)

    slower = job(1.3)
    runs_ = slower[("bcast", 512, 2)]
    assert sum(r.alone for r in runs_) == 4 and all(sbt in r and "default" in r for r in runs_ if r.alone)
    assert not any(sbt in r for r in runs_ if not r.alone)          # the interleaved measurement no longer counts
    d = decide(slower).decisions[("bcast", 512, 2)]
    assert d.choice == "default"
    c = next(c for c in d.candidates if c.label == sbt)
    assert c.runs == 4 and abs(c.paired_ratio - 1 / 1.3) < 0.02
    faster = decide(job(1 / 1.5)).decisions[("bcast", 512, 2)]
    assert faster.choice == sbt and "paired over 4 mpiruns" in faster.reason


def test_the_cells_to_confirm_are_those_the_search_saw_beat_the_default_by_the_minimum_gain_and_its_spread():
    from scheduler.native_driver import to_confirm
    paths = {"bcast": {"512": {"choice": "native:binomial", "times": {"native:binomial": 0.9}},
                       "4096": {"choice": "native:split_binary_tree:seg=1024",
                                "times": {"native:split_binary_tree:seg=1024": 0.5}},
                       "8": {"choice": "native:linear", "times": {"native:linear": 0.97}}},
             "reduce": {"512": {"choice": None, "times": {}}}}
    defaults = {"bcast": {"512": 1.0, "4096": 1.0, "8": 1.0}, "reduce": {"512": 1.0}}
    assert to_confirm(paths, defaults) == {"bcast": {512: "native:binomial", 4096: "native:split_binary_tree:seg=1024"}}
    assert to_confirm({"bcast": {"8": paths["bcast"]["8"]}}, defaults) == {}
    # a gain within the search's own control-arm spread (here 15 %) is not confirmed either
    assert to_confirm(paths, defaults, 0.15) == {"bcast": {4096: "native:split_binary_tree:seg=1024"}}


def test_a_later_confirmation_round_measures_only_the_cells_that_can_still_win():
    """native_driver measures a cell again only while its alone pairs can still pass the decision's interval
    rule.  Round 0: the pairs that showed the minimum gain (bcast 4096 at 1.03x stops, as it did before).
    Round 1: MPICH's reduce 512 KiB of the quiet run of 2026-11-26 (1.066x, then 0.773x) stops too, where
    until now every cell still ahead after round 0 had all three rounds; no third pair could have made it
    win (decide() refuses it for every third ratio from 0.5x to 20x), while a steady 1.3x goes on."""
    from scheduler.native_driver import confirm_rounds
    cells = {"bcast": {512: "native:binomial", 4096: "native:chain"}, "reduce": {524288: "native:binomial"}}
    ratio = {("bcast", 512): [1.3, 1.25, 1.28], ("bcast", 4096): [1.03, 1.4, 1.4],
             ("reduce", 524288): [1.066, 0.773, 1.184]}
    seen = []

    def confirm(cells_i, i):
        seen.append(i)
        mine = [(k, s) for k, per in cells_i.items() for s in per]
        return {c: 1.0 for c in mine}, {c: 1.0 / ratio[c][i] for c in mine}

    rounds = confirm_rounds(cells, 3, confirm)
    assert seen == [0, 1, 2]
    assert rounds == [{"bcast": {"512": "native:binomial", "4096": "native:chain"}, "reduce": {"524288": "native:binomial"}},
                      {"bcast": {"512": "native:binomial"}, "reduce": {"524288": "native:binomial"}},
                      {"bcast": {"512": "native:binomial"}}]
    # a failed variant (no median) stops at once
    assert confirm_rounds({"bcast": {8: "native:linear"}}, 3, lambda c, i: ({("bcast", 8): 1.0}, {})) == \
        [{"bcast": {"8": "native:linear"}}]
    # exact: what was not measured again could not have won
    for third in np.geomspace(0.5, 20, 60):
        cell_runs = [{"default": 1.0, "native:binomial": 1 / r, "default_control": 1.0}
                     for r in (1.066, 0.773, third)]
        assert decide({("reduce", 524288, 2): cell_runs}).decisions[("reduce", 524288, 2)].choice == "default"
    cell_runs = [{"default": 1.0, "native:binomial": 1 / r, "default_control": 1.0} for r in (1.3, 1.25, 1.27)]
    assert decide({("bcast", 512, 2): cell_runs}).decisions[("bcast", 512, 2)].choice == "native:binomial"


def test_rounds_past_the_campaigns_go_only_to_cells_that_can_still_win_and_have_not_shown_it():
    """confirm_rounds with most > total (spec confirm_max): after the campaign's 3 rounds, MPICH's allreduce
    128 B recursive_doubling of the loaded run of 2026-11-26 21:44 (1.245, 1.450, 1.182: refused, its 95 %
    interval over 3 mpiruns reaching 0.989x) gets more rounds until its pairs show the gain (decide() then
    takes it, here after a fourth), a steady 1.3x that passed after 3 rounds leaves, and a cell that cannot
    win even with every round left stops.  Without confirm_max nothing changes (3 rounds at most)."""
    from scheduler.native_driver import confirm_rounds
    cells = {"allreduce": {128: "native:recursive_doubling"}, "bcast": {512: "native:binomial"},
             "reduce": {524288: "native:binomial"}}
    ratio = {("allreduce", 128): [1.245, 1.450, 1.182, 1.30, 1.25, 1.2], ("bcast", 512): [1.3, 1.25, 1.28, 1.3],
             ("reduce", 524288): [1.066, 0.773, 0.8, 0.8, 0.8, 0.8]}

    def confirm(cells_i, i):
        mine = [(k, s) for k, per in cells_i.items() for s in per]
        return {c: 1.0 for c in mine}, {c: 1.0 / ratio[c][i] for c in mine}

    rounds = confirm_rounds(cells, 3, confirm, 6)
    # more rounds left make the futility rule more lenient: reduce 512 KiB (1.066, 0.773) still has its third
    # (a cost of confirm_max), and after it, at 0.8x, no three more rounds could carry it
    assert [sorted(k for k in r) for r in rounds] == [["allreduce", "bcast", "reduce"]] * 3 + [["allreduce"]]
    assert [sorted(k for k in r) for r in confirm_rounds(cells, 3, confirm)] == \
        [["allreduce", "bcast", "reduce"], ["allreduce", "bcast", "reduce"], ["allreduce", "bcast"]]
    runs = [{"default": 1.0, "native:recursive_doubling": 1 / r, "default_control": 1.0}
            for r in ratio[("allreduce", 128)][:len(rounds)]]
    assert decide({("allreduce", 128, 2): runs[:3]}).decisions[("allreduce", 128, 2)].choice == "default"
    assert decide({("allreduce", 128, 2): runs}).decisions[("allreduce", 128, 2)].choice == \
        "native:recursive_doubling"


def test_a_confirmation_round_measures_the_cells_count_unless_a_share_is_asked():
    """native_driver.confirm_nrep: a confirmation round measures each arm with the cell's campaign-wide count
    where it has one, else --nrep (CONFIRM_SHARE 1: every mpirun of a campaign measures its counts, issue 34); a
    spec's confirm_share k (tests/bench/native_search.py's race-half: 2) takes 1/k of it, rounded up, never
    fewer than two blocks of CONFIRM_BLOCK, never more than the count."""
    from scheduler.native_driver import CONFIRM_BLOCK, CONFIRM_SHARE, confirm_nrep
    assert CONFIRM_SHARE == 1 and CONFIRM_BLOCK == 4
    spec = {"bench_args": ["--nrep=100"], "collectives": {"bcast": {"nrep": {"512": 31}}}}
    assert confirm_nrep(spec, "bcast", 8) == 100
    assert confirm_nrep(spec, "bcast", 512) == 31             # the campaign-wide count
    half = dict(spec, confirm_share=2)
    assert confirm_nrep(half, "bcast", 8) == 50
    assert confirm_nrep(half, "bcast", 512) == 16             # halved up
    assert confirm_nrep(dict(half, bench_args=["--nrep=10"]), "bcast", 8) == 8     # two blocks of 4
    assert confirm_nrep(dict(half, bench_args=["--nrep=5"]), "bcast", 8) == 5      # never above the count


def test_can_still_win_is_the_best_bound_any_later_rounds_give():
    """can_still_win (native_driver) against a brute force over the later rounds' log ratio c (all equal, on a
    fine grid; unequal ones only widen the interval), the grid's best bound checked with the decision's own
    ratio_ci."""
    from scipy import stats

    from scheduler.native_driver import can_still_win
    from service.analysis.stats import ratio_ci
    rng = np.random.default_rng(7)
    grid = np.linspace(-1.0, 3.0, 8001)
    checked = 0
    for _ in range(200):
        m, left = int(rng.integers(1, 4)), int(rng.integers(0, 3))
        if m + left < 2:
            continue
        x = rng.normal(0.12, 0.15, m)
        n = m + left
        allx = np.concatenate([np.repeat(x[None, :], len(grid), 0), np.repeat(grid[:, None], left, 1)], 1)
        low = allx.mean(1) - stats.t.ppf(0.975, n - 1) * allx.std(1, ddof=1) / math.sqrt(n)
        at = int(np.argmax(low))
        assert abs(math.log(ratio_ci(list(allx[at])).low) - low[at]) < 1e-9
        if abs(low[at] - math.log(1.05)) > 1e-3 and at < len(grid) - 1:
            assert can_still_win(list(np.exp(x)), left) == (low[at] > math.log(1.05)), (x, left)
            checked += 1
    assert checked > 100
    assert can_still_win([], 2) and not can_still_win([1.5], 0) and not can_still_win([0.0, 1.5], 1)


def _raw_cells(path, index, cells, campaign="ns"):
    """A raw file of one mpirun: {(bytes): {label: seconds}}, 8 rows of MPI_Bcast per label and size."""
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
             "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
             f"#@campaign={campaign}", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    for size, medians in cells.items():
        for label, t in medians.items():
            lines += [f"MPI_Bcast {r} {size} {t * (1 + 0.01 * ((r * 7) % 5 - 2) / 2):.10e} {label}" for r in range(8)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_batched_confirmations_pair_each_cell_with_its_own_variant(tmp_path):
    """native_driver confirms a round in two mpiruns over every cell to confirm: the default at each cell in
    one, each cell's chosen variant in the other -- different variants at different cells, one per cell, so
    no cell interleaves two of its algorithms.  Each cell pairs its default with its own variant per round;
    the search's interleaved measurement stops counting there.  At 512 B binomial alone is 1.5x faster (it
    wins); at 4096 B split_binary_tree, 5x faster interleaved, is 1.3x slower alone (the default stays).
    (Before, a file was "alone" only when it measured one label in all its cells: this one was taken for an
    interleaved mpirun without a default, and binomial could not win.)"""
    from service.analysis.native_decision import runs_from_files
    bin_, sbt = "native:binomial", "native:split_binary_tree:seg=1024"
    files = [_raw_cells(tmp_path / "search-0-bcast.txt", 0,
                        {512: {"default": 1e-6, bin_: 0.7e-6}, 4096: {"default": 4e-6, sbt: 0.8e-6}})]
    for i, k in enumerate([1.0, 1.03, 0.98, 1.01]):
        files.append(_raw_cells(tmp_path / f"search-0-confirm-{i}-default.txt", i,
                                {512: {"default": 1e-6 * k, "default_control": 1.004e-6 * k},
                                 4096: {"default": 4e-6 * k, "default_control": 4.01e-6 * k}}))
        files.append(_raw_cells(tmp_path / f"search-0-confirm-{i}-chosen.txt", i,
                                {512: {bin_: 1e-6 * k / 1.5}, 4096: {sbt: 4e-6 * k * 1.3}}))
    cells = runs_from_files(files)
    for size, label in ((512, bin_), (4096, sbt)):
        paired = [r for r in cells[("bcast", size, 2)] if r.alone]
        assert len(paired) == 4 and all(set(r) == {"default", "default_control", label} for r in paired)
        assert not any(label in r for r in cells[("bcast", size, 2)] if not r.alone)
    res = decide(cells).decisions
    assert res[("bcast", 512, 2)].choice == bin_ and "paired over 4 mpiruns" in res[("bcast", 512, 2)].reason
    assert res[("bcast", 4096, 2)].choice == "default"


def test_a_native_choice_states_its_effect_with_the_interval_that_cleared_the_threshold():
    d = decide({("bcast", 4096, 2): runs(default=10.0, native__binomial=8.0)}).decisions[("bcast", 4096, 2)]
    c = next(x for x in d.candidates if x.label == d.choice)
    assert d.choice == "native:binomial" and c.ci[0] - 1 > 0.05 and c.ci[0] < c.paired_ratio < c.ci[1]
    assert f"95 % CI {c.ci[0]:.3f}-{c.ci[1]:.3f}x" in d.reason


def test_the_threshold_is_the_control_arms_spread_at_the_cells_size_class():
    # A race's control arm is measured only at the cells it confirms, mostly noisy small ones: one spread over
    # every cell let their 25 % refuse a steady 1.15x at 256 KiB, where two medians of the default differ by 1 %.
    def with_control(cell_runs, spread):
        for i, r in enumerate(cell_runs):
            r["default_control"] = r["default"] * (1 + (spread if i % 2 else -spread))
        return cell_runs
    cells = {("allreduce", 32, 2): with_control(runs(default=1.0, native__recursive_doubling=0.87), 0.25),
             ("allreduce", 128, 2): with_control(runs(default=1.0, native__recursive_doubling=0.87), 0.25),
             ("allreduce", 262144, 2): with_control(runs(default=100.0, native__recursive_doubling=87.0), 0.01)}
    r = decide(cells)
    assert r.decisions[("allreduce", 262144, 2)].choice == "native:recursive_doubling"
    for size in (32, 128):          # the same 1.15x within the small class's own 25 % stays refused
        d = r.decisions[("allreduce", size, 2)]
        c = next(c for c in d.candidates if c.label == "native:recursive_doubling")
        assert d.choice == "default" and "size class" in c.refused
    assert r.spreads[0] > 0.2 and r.spreads[2] < 0.02 and r.spread == r.spreads[0]
    # a class without any control arm takes the spread over every cell, never none
    bare = {("bcast", 1 << 20, 2): [{k: v for k, v in x.items() if k != "default_control"}
                                    for x in runs(default=100.0, native__binomial=87.0)],
            ("bcast", 8, 2): with_control(runs(default=1.0, native__binomial=0.99), 0.25)}
    rb = decide(bare)
    assert rb.spreads[2] == rb.spreads[0] > 0.2 and rb.decisions[("bcast", 1 << 20, 2)].choice == "default"


def _raw_served(path, index, blocks, campaign="ns"):
    """A raw file of one --serve mpirun: [(bytes, {label: seconds})] one served command each, in order."""
    lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
             "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
             f"#@campaign={campaign}", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
    foot = []
    for n, (size, medians) in enumerate(blocks, 1):
        for label, t in medians.items():
            lines += [f"MPI_Bcast {r} {size} {t * (1 + 0.01 * ((r * 7) % 5 - 2) / 2):.10e} {label}" for r in range(8)]
        foot.append(f"#@pgmpi served {n} MPI_Bcast {size} {next(iter(medians))}")
    path.write_text("\n".join(lines + foot) + "\n")
    return path


def test_a_confirmation_round_in_one_mpirun_pairs_each_cell_within_it(tmp_path):
    """native_driver confirms a round in one mpirun: at each cell the control arm, the default and the chosen
    variant, each alone (one served command each, nothing next to it).  The pair is within the mpirun, so a
    round whose whole mpirun ran 2.5x slower (MPICH here) moves both sides: binomial, 1.5x faster alone, wins
    over 3 rounds; split_binary_tree, 5x faster in the interleaved search, is 1.3x slower alone and the default
    stays.  A plain "cell" command naming one label but measuring the default next to it is no such block."""
    from service.analysis.native_decision import Blocks, mark_blocks, runs_from_files
    bin_, sbt = "native:binomial", "native:split_binary_tree:seg=1024"
    files = [_raw_cells(tmp_path / "search-0-bcast.txt", 0,
                        {512: {"default": 1e-6, bin_: 0.7e-6}, 4096: {"default": 4e-6, sbt: 0.8e-6}})]
    for i, k in enumerate([2.5, 1.0, 1.03]):
        blocks = []
        for size, label, factor in ((512, bin_, 1 / 1.5), (4096, sbt, 1.3)):
            t = 1e-6 if size == 512 else 4e-6
            blocks += [(size, {"default_control": t * k * 1.004}), (size, {"default": t * k}),
                       (size, {label: t * k * factor})]
        # the round's warm-up first (1 B, the default alone): its milliseconds belong to no cell
        files.append(_raw_served(tmp_path / f"search-0-confirm-{i}.txt", i, [(1, {"default": 3e-3})] + blocks))
    cells = runs_from_files(files)
    assert ("bcast", 1, 2) not in cells
    for size, label in ((512, bin_), (4096, sbt)):
        paired = [r for r in cells[("bcast", size, 2)] if r.alone]
        assert len(paired) == 3 and all(set(r) == {"default", "default_control", label} for r in paired)
        assert not any(label in r for r in cells[("bcast", size, 2)] if not r.alone)
    res = decide(cells).decisions
    assert res[("bcast", 512, 2)].choice == bin_ and "paired over 3 mpiruns" in res[("bcast", 512, 2)].reason
    assert res[("bcast", 4096, 2)].choice == "default"
    plain = {("bcast", 512, 2): {"default": 1.0, bin_: 0.7, "default_control": 1.0}}
    assert not isinstance(mark_blocks(plain, ["#@pgmpi served 1 MPI_Bcast 512 native:binomial"])[("bcast", 512, 2)], Blocks)
    assert not isinstance(mark_blocks(plain, ["#@pgmpi served 1 MPI_Bcast 512 native:binomial",
                                              "#@pgmpi served 2 MPI_Bcast 512 default"])[("bcast", 512, 2)], Blocks)


def test_an_intel_collective_fills_the_defaults_sizes_with_a_preset_measured_as_fast():
    """Intel MPI's native.impi cannot leave a size of a set variable to the library's default.  Where a preset
    won at some size of a collective (reduce 64 KiB, 5x), each size where the default won gets the fastest
    preset whose paired interval says it is not slower than the default beyond the control arm's noise
    (8 B: native:5 and native:8 as fast, native:5 the faster; native:3 30 % slower is no fill), so reduce is
    written at every size instead of left to the library.  Other libraries keep their default there (a range
    leaves the rest to it); a size where no preset is as fast leaves the collective to the library, as before."""
    from pgmpi_formats import impi_adjust
    cells = {("reduce", 8, 2): runs(default=10.0, native__3=13.0, native__8=10.0, native__5=9.9),
             ("reduce", 65536, 2): runs(default=10.0, native__8=2.0),
             ("reduce", 1048576, 2): runs(default=10.0, native__8=10.5, native__2=9.8),
             ("bcast", 8, 2): runs(default=10.0, native__1=10.0)}       # no preset won: no fill, no variable
    r = decide(cells, library="intelmpi")
    got = {(k, s): (d.choice, d.fill) for (k, s, _p), d in r.decisions.items()}
    assert got == {("reduce", 8): ("native:5", True), ("reduce", 65536): ("native:8", False),
                   ("reduce", 1048576): ("native:2", True), ("bcast", 8): ("default", False)}, got
    assert r.left_to_library == {}
    d = r.decisions[("reduce", 8, 2)]
    assert d.kind == "native" and d.reason.startswith("fills a size where the default won (gain 0.5 % <= 5.0 %")
    assert "measured as fast as the default: 1.005x (paired over 5 mpiruns, 95 % CI 0.998-" in d.reason
    slower = next(c for c in d.candidates if c.label == "native:3")
    assert slower.refused and slower.fill is None
    assert "fills: as fast as the default" in "\n".join(explain_lines(d))
    # the file holds reduce at every size, the fills included; bcast (default everywhere) gets no variable
    disc = impi_adjust.Discovery("2021.13", {"reduce": 11, "bcast": 16})
    adj = impi_adjust.parse(impi_adjust.write(r.native_decisions(), disc), "filled.impi", disc)
    assert adj.environment() == {"I_MPI_ADJUST_REDUCE": "5:0-65535@2-2;8:65536-1048575@2-2;2:1048576-2147483647@2-2"}
    # Open MPI / MPICH: the default stays the default where it won
    assert decide(cells, library="openmpi").decisions[("reduce", 8, 2)].choice == "default"
    # no preset as fast at 1 MiB (native:8 5 % slower, beyond the 1.5 % spread): reduce left to the library
    none = decide({**cells, ("reduce", 1048576, 2): runs(default=10.0, native__8=10.5)}, library="intelmpi")
    assert list(none.left_to_library) == ["reduce"]
    assert "1048576 B (p=2) and no preset was measured as fast there" in none.left_to_library["reduce"]
    assert {s: d.choice for (k, s, _p), d in none.decisions.items() if k == "reduce"} == {
        8: "default", 65536: "default", 1048576: "default"}
    # as fast by the median, but mpirun to mpirun 0.8x or 1.25x: the interval does not bound the loss
    wide = runs(default=10.0, native__8=10.0)
    for i, x in enumerate(wide):
        x["native:8"] = x["default"] * (1.25 if i % 2 else 0.8)
    assert list(decide({**cells, ("reduce", 8, 2): wide}, library="intelmpi").left_to_library) == ["reduce"]


def test_a_fill_its_validation_job_failed_goes_back_to_the_library():
    """The validation job loads the filled file as users do and judges the fill's range like any other; a failed
    one is refused at its cells, and a cell where validation refused a native choice is never filled again:
    the collective goes back to the library, as a failed gap did before fills."""
    cells = {("reduce", 8, 2): runs(default=10.0, native__5=9.9, native__8=10.0),
             ("reduce", 65536, 2): runs(default=10.0, native__8=2.0)}
    first = decide(cells, library="intelmpi")
    assert [(x.nbytes, x.label) for x in first.native_decisions()] == [(8, "native:5"), (65536, "native:8")]
    verdict = {"id": 4, "cells": [
        {"collective": "reduce", "nprocs": 2, "msize": 8, "range": [0, 65535], "label": "native:5",
         "problems": ["(c) tuned slower than the default: 0.870x"]},
        {"collective": "reduce", "nprocs": 2, "msize": 65536, "range": [65536, 2147483647], "label": "native:8",
         "problems": []}]}
    refused = validation_refusals(verdict, cells, "record 4", gap_refuses_collective=True)
    assert set(refused) == {("reduce", 8, 2, "native:5")}
    again = decide(cells, refused=refused, library="intelmpi")
    assert list(again.left_to_library) == ["reduce"]             # native:8, as fast at 8 B, is not tried instead
    assert {s: d.choice for (k, s, _p), d in again.decisions.items()} == {8: "default", 65536: "default"}
    assert again.decisions[("reduce", 65536, 2)].left_to_library
