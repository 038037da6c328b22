"""`cells: from-usage` (scheduler/from_usage.py): tonight's campaign files from the users' usage cells, within
the night's budget, loadable by the agent's own campaign reader."""
from __future__ import annotations

import pytest
import yaml

from scheduler.campaign import load_campaign
from scheduler.from_usage import FromUsageError, cells_from_api, layout_of, tonight, write_tonight
from scheduler.usage_plan import Cell, CellState

BASE = {"name": "usage", "machine": "m1", "backend": "local", "cells": "from-usage",
        "usage": {"share": 0.9, "sample": 0.0, "refresh_nights": 30}, "budget": {"node_hours_per_night": 1.0},
        "modules": [{"name": "openmpi/4.1.4", "mpi": "openmpi"}, {"name": "mpich/4.0.2", "mpi": "mpich"}],
        "mpiruns": 3, "control": True}

API = [  # as GET /api/v1/machines/<m>/libraries/<lib>/usage gives them (per algorithm)
    {"collective": "MPI_Allreduce", "bytes_lo": 8, "p": 4, "rank_seconds": 900.0},
    {"collective": "MPI_Allreduce", "bytes_lo": 8, "p": 4, "rank_seconds": 100.0},
    {"collective": "MPI_Bcast", "bytes_lo": 65536, "p": 16, "rank_seconds": 400.0},
    {"collective": "MPI_Alltoall", "bytes_lo": 1024, "p": 4, "rank_seconds": 60.0},
    {"collective": "MPI_Gather", "bytes_lo": 64, "p": 4, "rank_seconds": 2.0},
    {"collective": "MPI_Barrier", "bytes_lo": 0, "p": 4, "rank_seconds": 50.0},      # not a collective of ours
]


def test_layouts_fill_nodes_and_api_rows_merge_per_cell():
    assert layout_of(4, 8) == (1, 4) and layout_of(16, 8) == (2, 8) and layout_of(12, 8) == (2, 6)
    cells = {u.cell: u.rank_seconds for u in cells_from_api(API, ppn=8)}
    assert cells[Cell("allreduce", 8, 4, "1x4")] == 1000.0
    assert Cell("bcast", 65536, 16, "2x8") in cells and len(cells) == 4


def test_tonight_writes_loadable_campaigns_of_the_cells_that_hold_the_time(tmp_path):
    usage = {"openmpi/4.1.4": cells_from_api(API, ppn=8), "mpich/4.0.2": cells_from_api(API[:1], ppn=8)}
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(BASE))
    paths, text = write_tonight(base, usage, tmp_path / "night", machine_nodes=2, night=1)
    assert paths and (tmp_path / "night" / "plan.txt").read_text() == text
    loaded = [load_campaign(p) for p in paths]             # the agent's own reader accepts them
    by = {(c.modules[0].name, c.layouts[0].nodes, c.layouts[0].ppn): c for c in loaded}
    ompi = by[("openmpi/4.1.4", 1, 4)]
    assert set(ompi.collectives) == {"allreduce"} and ompi.sizes_for("allreduce") == [8, 15]
    assert set(by[("openmpi/4.1.4", 2, 8)].collectives) == {"bcast"}
    assert ("mpich/4.0.2", 1, 4) in by
    assert "gather" not in text.split("keep")[0]            # 90 % of the time is held without gather's 2 s
    assert "of the users' observed collective time" in text


def test_a_decided_cell_is_kept_and_the_budget_binds():
    usage = {"openmpi/4.1.4": cells_from_api(API, ppn=8)}
    decided = {Cell("allreduce", 8, 4, "1x4"): CellState(Cell("allreduce", 8, 4, "1x4"), "none", 2)}
    camps, plan, text = tonight(BASE, usage, machine_nodes=2, night=1, states=decided)
    assert all("allreduce" not in c["collectives"] for c in camps)
    assert "keep    openmpi/4.1.4 allreduce 8 B p=4: decided 2 night(s) ago: none" in text
    tiny = dict(BASE, budget={"node_hours_per_night": 1e-6})
    camps, plan, text = tonight(tiny, usage, machine_nodes=2, night=1)
    assert camps == [] and "over budget" in text


def test_a_base_without_from_usage_is_refused():
    with pytest.raises(FromUsageError, match="cells: from-usage"):
        tonight(dict(BASE, cells=None), {}, machine_nodes=1, night=0)


def test_the_services_layout_and_verdicts_decide_tonights_cells(tmp_path):
    """The API's `layout` (where the jobs ran) wins over filling nodes; its `verdict` with the age keeps a cell
    decided recently out of tonight per library (module), one decided too long ago is measured again; the
    deployed example file plans loadable campaigns."""
    from pathlib import Path
    from scheduler.from_usage import states_from_api
    api = [dict(API[0], layout="4x1", verdict={"state": "violation", "age_nights": 3},
                violation={"mockup": "allreduce_as_reduce_bcast", "msize": 8, "speedup": 1.5}),
           dict(API[2], layout="4x4", verdict={"state": "none", "age_nights": 40}),
           dict(API[3], layout="3x3")]                   # 9 ranks is not p = 4: the layout is not believed
    cells = {u.cell for u in cells_from_api(api, ppn=8)}
    assert cells == {Cell("allreduce", 8, 4, "4x1"), Cell("bcast", 65536, 16, "4x4"), Cell("alltoall", 1024, 4, "1x4")}
    states = states_from_api(api, ppn=8)
    assert states[Cell("allreduce", 8, 4, "4x1")] == CellState(Cell("allreduce", 8, 4, "4x1"), "violation", 3, 0.5)
    usage = {"openmpi/4.1.4": cells_from_api(api, ppn=8), "mpich/4.0.2": cells_from_api(api, ppn=8)}
    camps, plan, text = tonight(BASE, usage, machine_nodes=4, night=2, module_states={"openmpi/4.1.4": states})
    measured = {(c["modules"][0]["name"], k) for c in camps for k in c["collectives"]}
    assert ("openmpi/4.1.4", "allreduce") not in measured and ("mpich/4.0.2", "allreduce") in measured
    assert ("openmpi/4.1.4", "bcast") in measured                # decided 40 nights ago, refresh after 30
    assert "keep    openmpi/4.1.4 allreduce 8 B p=4: decided 3 night(s) ago: violation" in text
    example = Path(__file__).resolve().parents[3] / "deploy" / "scheduler" / "usage.example.yaml"
    paths, _ = write_tonight(example, usage, tmp_path / "night", machine_nodes=100, night=2)
    assert paths and all(load_campaign(p).machine == "hydra" for p in paths)


def test_usage_upload_finds_the_spool_in_the_site_file(tmp_path, monkeypatch):
    """Without --spool the agent reads usage_dir of the site file (the directory the modules record into)."""
    from click.testing import CliRunner
    from scheduler.cli import agent
    site = tmp_path / "site.conf"
    monkeypatch.setenv("PGMPI_SITE_CONFIG", str(site))
    site.write_text("machine = m1\n")
    args = ["usage-upload", "--machine", "m1", "--service-url", "http://127.0.0.1:9", "--token-file", str(site)]
    res = CliRunner().invoke(agent, args)
    assert res.exit_code != 0 and f"no --spool and no usage_dir in {site}" in res.output, res.output
    site.write_text(f"usage_dir = {tmp_path}/spool\n")
    res = CliRunner().invoke(agent, args)
    assert res.exit_code != 0 and f"{tmp_path}/spool: no such spool directory" in res.output, res.output


def test_a_base_algorithm_list_keeps_only_tonights_mockups_and_cells_without_one_are_kept():
    """The base lists allreduce's mock-up only: bcast has nothing to measure against (kept, with the reason),
    and tonight's files carry the mock-ups of their own collectives (the campaign reader refuses others)."""
    usage = {"openmpi/4.1.4": cells_from_api(API, ppn=8)}
    base = dict(BASE, algorithms=["default", "allreduce_as_reduce_bcast"], modules=BASE["modules"][:1])
    camps, plan, text = tonight(base, usage, machine_nodes=2, night=1)
    assert [set(c["collectives"]) for c in camps] == [{"allreduce"}], camps
    assert camps[0]["algorithms"] == ["default", "allreduce_as_reduce_bcast"]
    assert "keep    openmpi/4.1.4 bcast 65536 B p=16: no alternative of it in the base's algorithms" in text, text
    assert camps[0]["sequential"] == {"looks": [3]} and camps[0]["mpiruns"] == 3     # BASE: mpiruns 3
