"""The reduced searches over native algorithms x segment sizes (pgmpi_formats/native_search.py) on cells
whose answer is known: which experiments each visits, what it chooses, its loss against exhaustive."""
from __future__ import annotations

import pytest

from service.analysis.native_search import Cell, search

SEGS = [1024, 2048, 4096, 8192, 16384, 32768]
MSG = 65536


def curve(start, values):
    """method times: unsegmented `start`, then `values` from the largest segment down"""
    return {None: start, **dict(zip(reversed(SEGS), values))}


CELL = Cell({
    # a local minimum at 16K, the true one two steps further (at 4K): MGD must look past the first minimum
    "chain": curve(10.0, [8.0, 7.0, 7.5, 6.0, 6.5, 9.0]),
    "binomial": curve(9.0, [9.0, 9.0, 9.0, 9.0, 9.0, 9.0]),       # does not segment: a flat curve
    "linear": curve(30.0, [30.0, 30.0, 30.0, 30.0, 30.0, 30.0]),  # clearly worse from the start
})


def test_exhaustive_visits_everything_below_the_message_size():
    r = search("exhaustive", CELL, MSG)
    assert len(r.experiments) == 3 * 7 and r.choice == ("chain", 4096)
    # segment sizes at or above the message are not searched (the seed paper)
    assert len(search("exhaustive", CELL, 8192).experiments) == 3 * 4


def test_mgd_looks_past_the_first_minimum():
    r = search("mgd", CELL, MSG)
    assert r.choice == ("chain", 4096) and CELL.loss(r.choice, MSG) == 0
    flat = [v for v in r.experiments if v[0] == "binomial"]
    assert flat == [("binomial", None), ("binomial", 32768), ("binomial", 16384), ("binomial", 8192)]
    # a flat curve stops once more than `lookahead` steps brought nothing
    short = search("mgd", CELL, MSG, lookahead=0)
    assert short.choice == ("chain", 16384) and CELL.loss(short.choice, MSG) == pytest.approx(1 / 6)


def test_smgd_scans_orders_and_prunes():
    r = search("smgd", CELL, MSG)
    assert r.choice == ("chain", 4096)
    assert [v for v in r.experiments if v[0] == "linear"] == [("linear", None)]   # pruned after its scan
    assert len(r.experiments) < len(search("mgd", CELL, MSG).experiments) < 21
    assert r.cost() < search("exhaustive", CELL, MSG).cost() / 2
    with pytest.raises(ValueError, match="valid: exhaustive, mgd, smgd, race"):
        search("random", CELL, MSG)


def test_race_measures_every_variant_briefly_and_only_cells_with_a_challenger_again():
    """race: round 0 every variant once (the driver: few repetitions); a second round, `repeat` times over,
    only for the `keep` fastest that beat the default in round 0 (REFERENCE), and the second round's times
    choose.  A cell where nothing beat the default costs one round."""
    from pgmpi_formats.native_search import REFERENCE, run
    space = CELL.space(MSG)
    second = {("chain", 2048): 5.5}                 # round 0 was unlucky for it: measured again, it is best

    def measure(ref):
        def m(batch):
            got = {v: (second.get(v, CELL.t(v)) if getattr(batch, "repeat", 1) > 1 else CELL.t(v)) for v in batch}
            return {**got, REFERENCE: ref}
        return m
    r = run("race", space, measure(8.5), keep=2, repeat=4)
    assert len(r.rounds) == 2 and len(r.rounds[0]) == 21 and r.repeats == [1, 4]
    assert r.rounds[1] == [("chain", 4096), ("chain", 2048)] and r.choice == ("chain", 2048)
    assert r.to_json()["repeats"] == [1, 4]
    # nothing beats the default: one round, no repetitions spent
    alone = run("race", space, measure(5.0), keep=2, repeat=4)
    assert alone.repeats == [1] and len(alone.experiments) == 21 and alone.choice == ("chain", 4096)
    # a replay without the default's time keeps the two fastest of round 0 for the second round
    assert search("race", CELL, MSG).rounds[1] == [("chain", 4096), ("chain", 2048)]


def test_a_native_verdict_never_becomes_a_prf_redirection():
    from types import SimpleNamespace
    from service.analysis.verdicts import redirect_refusal
    why = redirect_refusal(SimpleNamespace(algorithm="native:recursive_doubling"), None, 0.1)
    assert why and "own decision file" in why


def test_neighbour_start_keeps_the_pruned_out_and_starts_at_the_neighbours_segment():
    prev = search("smgd", CELL, MSG)
    assert prev.pruned == ["linear"] and prev.best_segment["chain"] == 4096
    r = search("smgd", CELL, 2 * MSG, start=prev)
    assert all(v[0] != "linear" for v in r.experiments)
    assert r.rounds[0][0] == ("chain", 4096)          # the descent starts where the neighbour's optimum was


def test_grid_segments_only_the_methods_that_take_a_segment_size():
    from service.analysis.native_search import SEGMENTS, grid
    g = grid(["binomial", "basic_linear"], {"binomial"}, SEGMENTS, 4096)
    assert g == {"binomial": [None, 2048, 1024], "basic_linear": [None]}


def test_scan_bound_is_variants_over_methods_and_only_prune_passes_it():
    from service.analysis.native_search import bound_row, replay, table
    small = Cell({"chain": curve(4.0, [3.0, 2.0, 2.5, 2.8, 3.0, 3.5]), "linear": {None: 1.0}})
    cells = {("bcast", MSG): CELL, ("bcast", 8192): small, ("reduce", MSG): CELL}
    b = bound_row(cells, "bcast")
    # 3 methods x 7 variants at 64 KiB; at 8 KiB chain has 4 variants below the size (its 2.0 at 16 KiB is
    # not one), linear 1: 26 / 5; the time is each method's cheapest variant
    assert (b.experiments, b.seconds, b.losses) == (5, 6.0 + 9.0 + 30.0 + 2.8 + 1.0, [])
    ex = replay(cells, "bcast", "exhaustive")[0]
    assert ex.experiments == 26
    for kind in ("mgd", "smgd"):
        for nb in ("none", "segment"):
            assert replay(cells, "bcast", kind, neighbour=nb)[0].experiments >= b.experiments
    # "prune" keeps chain (pruned at 8 KiB: 4.0 against linear's 1.0) out at 64 KiB
    pruned = replay(cells, "bcast", "smgd", neighbour="prune", rescan_every=99)[0]
    assert pruned.experiments < replay(cells, "bcast", "smgd")[0].experiments
    text = table([ex, b]).splitlines()
    bound_line = next(x for x in text if x.startswith("bcast      scan bound"))
    assert f"{26 / 5:>5.1f}x" in bound_line and bound_line.split()[-3:] == ["-", "-", "-"]
    assert any(x.startswith("ALL        scan bound") and "5.2x" in x for x in text)
