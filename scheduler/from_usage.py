"""`cells: from-usage`: tonight's campaign files from what the site's users ran (issue 33).

A base campaign file says `cells: from-usage` instead of listing collectives and layouts, with
`usage: {share: 0.9, sample: 0.1, refresh_nights: 30}` and `budget: {node_hours_per_night: N}` (default
1 % of the machine's node-hours, `machine_nodes` × 24 × 0.01). For each module, the agent reads the service's
usage cells of that library (GET /api/v1/machines/<m>/libraries/<lib>/usage), scheduler/usage_plan.py picks the
cells within the night's share of the budget, and this module writes one ordinary campaign file per (module,
layout): the chosen collectives at the chosen sizes (a bucket is measured at its lower bound and at its upper
bound, so a redirect found there covers the bucket), nothing else. Those files go through `pgmpi campaign
submit` as any other: the paired test, the control arm, FDR and validation are the campaign's own. Each is
sequential (`sequential:`, scheduler/looks.py): the agent looks at its cells after 3, 4, ... up to the base's
`mpiruns` (or `usage.looks`) and measures only the undecided ones further; the plan reserves the most a cell
may cost (every look) and the agent charges what ran.
The plan -- what was chosen, why, what was kept with its verdict's age, what did not fit -- is written next
to them (plan.txt) for the admin.
"""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import yaml

from pgmpi_formats import mpi_libraries
from pgmpi_formats.collectives import by_mpi_name
from .usage_plan import (Cell, CellState, CellUsage, CostModel, Plan, SequentialDesign, default_budget,
                         plan_night)


class FromUsageError(ValueError):
    pass


def library_identity(mpi_id: str) -> str:
    """The service's name of a library id's results: <family>-<reported version> (e.g. openmpi-4.1.4)."""
    lib = mpi_libraries.mpi_library(mpi_id)
    return f"{lib.family}-{lib.reported_version}"


def layout_of(p: int, ppn: int) -> tuple[int, int]:
    """The layout a job of p ranks has on nodes of `ppn` cores, filled node by node (what Slurm gives a
    job that asks for p tasks): p <= ppn is one node."""
    nodes = max(1, math.ceil(p / ppn))
    return nodes, math.ceil(p / nodes)


def _layout(it: dict, ppn: int) -> str:
    """The cell's layout: the one its jobs ran in (the service's `layout`, from the records), else the layout a
    job of p ranks gets on nodes of `ppn` cores."""
    lay = it.get("layout")
    if isinstance(lay, str) and re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", lay):
        n, per = (int(v) for v in lay.split("x"))
        if n * per == int(it["p"]):
            return lay
    nodes, per = layout_of(int(it["p"]), ppn)
    return f"{nodes}x{per}"


def cells_from_api(items: list[dict], ppn: int) -> list[CellUsage]:
    out = []
    for it in items:
        coll = by_mpi_name(it["collective"])      # the record's MPI name -> the campaign file's key
        if coll is None or it["p"] < 2:
            continue
        out.append(CellUsage(Cell(coll.key, int(it["bytes_lo"]), int(it["p"]), _layout(it, ppn)),
                             float(it["rank_seconds"])))
    # one cell per (collective, bucket, p): the API gives them per algorithm too
    merged: dict[Cell, float] = {}
    for u in out:
        merged[u.cell] = merged.get(u.cell, 0.0) + u.rank_seconds
    return [CellUsage(c, t) for c, t in merged.items()]


def states_from_api(items: list[dict], ppn: int) -> dict[Cell, CellState]:
    """The last verdict of each cell with its age (the service's `verdict`: the newest analysis that measured
    the cell), so that a cell decided recently keeps it and is not measured tonight."""
    out: dict[Cell, CellState] = {}
    for it in items:
        coll, v = by_mpi_name(it["collective"]), it.get("verdict")
        if coll is None or it["p"] < 2 or not isinstance(v, dict) or v.get("state") not in ("violation", "none"):
            continue
        gain = 0.0
        if v["state"] == "violation" and isinstance(it.get("violation"), dict):
            gain = max(0.0, float(it["violation"].get("speedup") or 1.0) - 1.0)
        cell = Cell(coll.key, int(it["bytes_lo"]), int(it["p"]), _layout(it, ppn))
        out[cell] = CellState(cell, v["state"], int(v.get("age_nights") or 0), gain)
    return out


def fetch_usage(client, base: dict) -> tuple[dict[str, list[CellUsage]], dict[str, dict[Cell, CellState]], int]:
    """(module name -> its usage cells, module name -> their last verdicts, the machine's node count) from the
    service, for the base campaign's machine and modules. Raises the client's Unreachable / Rejected."""
    from urllib.parse import quote
    machine = quote(str(base.get("machine", "")), safe="")
    _, m = client.request("GET", f"/api/v1/machines/{machine}")
    ppn = int(m.get("cores_per_node") or 1)
    usage, states = {}, {}
    for mod in base.get("modules") or []:
        lib = quote(library_identity(mod.get("mpi", "")), safe="")
        _, j = client.request("GET", f"/api/v1/machines/{machine}/libraries/{lib}/usage")
        usage[mod["name"]] = cells_from_api(j.get("cells", []), ppn)
        states[mod["name"]] = states_from_api(j.get("cells", []), ppn)
    return usage, states, int(m.get("nodes") or 1)


def tonight(base: dict, usage: dict[str, list[CellUsage]], *, machine_nodes: int, night: int,
            states: dict[Cell, CellState] | None = None, cost: CostModel | None = None,
            module_states: dict[str, dict[Cell, CellState]] | None = None) -> tuple[list[dict], Plan, str]:
    """(campaign dicts, the plan over all modules, the plan's text). `usage`: module name -> its cells;
    `states`: the cells' last verdicts for every module, `module_states`: per module (the service's, per
    library), which win."""
    if base.get("cells") != "from-usage":
        raise FromUsageError("the base campaign must say `cells: from-usage`")
    opts = base.get("usage") or {}
    share = float(opts.get("share", 0.9))
    sample = float(opts.get("sample", 0.1))
    refresh = int(opts.get("refresh_nights", 30))
    if not (0 < share <= 1 and 0 <= sample <= 1 and refresh >= 1):
        raise FromUsageError("usage: share in (0, 1], sample in [0, 1], refresh_nights >= 1")
    budget = (base.get("budget") or {}).get("node_hours_per_night")
    budget = float(budget) if budget is not None else default_budget(machine_nodes)
    modules = base.get("modules") or []
    if not modules:
        raise FromUsageError("the base campaign names no module")
    looks = sequential_looks(base)
    all_usages = [u for m in modules for u in usage.get(m["name"], [])]
    # one budget for the night, spent across the modules where the saving per cost is largest
    tagged = {}
    for m in modules:
        for u in usage.get(m["name"], []):
            tagged[Cell(u.cell.collective, u.cell.bytes_lo, u.cell.p, f"{m['name']}|{u.cell.layout}")] = (m, u)
    # a cell whose collective has no alternative in the base's algorithm list cannot be measured against one
    algs = base.get("algorithms", "all")
    def has_alternative(coll: str) -> bool:
        return not isinstance(algs, list) or any(a.startswith((f"{coll}_as_", "native:")) for a in algs)
    alone = {c for c in tagged if not has_alternative(c.collective)}
    plan = plan_night([CellUsage(c, u.rank_seconds) for c, (_, u) in tagged.items() if c not in alone],
                      {Cell(c.collective, c.bytes_lo, c.p, f"{m['name']}|{c.layout}"): s
                       for m in modules for c, s in {**(states or {}), **(module_states or {}).get(m["name"], {})}.items()},
                      budget, cost, share=share, sample_fraction=sample, night=night, refresh_nights=refresh,
                      rounds=looks[-1] / (cost or CostModel()).mpiruns_per_round)
    plan.kept += [(c, "no alternative of it in the base's algorithms") for c in sorted(alone, key=str)]
    groups: dict[tuple[str, str], dict[str, set[int]]] = {}
    for ch in plan.chosen:
        mname, layout = ch.cell.layout.split("|", 1)
        sizes = groups.setdefault((mname, layout), {}).setdefault(ch.cell.collective, set())
        sizes.add(max(1, ch.cell.bytes_lo))
        if ch.cell.bytes_lo > 1:
            sizes.add(2 * ch.cell.bytes_lo - 1)
    out = []
    for (mname, layout), colls in sorted(groups.items()):
        nodes, ppn = (int(v) for v in layout.split("x"))
        c = copy.deepcopy({k: v for k, v in base.items() if k not in ("cells", "usage")})
        c["name"] = f"{base['name']}-n{night}-{mname.replace('/', '_')}-{layout}"
        c["modules"] = [m for m in modules if m["name"] == mname]
        c["layouts"] = [{"nodes": nodes, "ppn": ppn}]
        c["collectives"] = {k: {"sizes": sorted(v)} for k, v in sorted(colls.items())}
        if isinstance(algs, list):      # the base's list, less the mock-ups of collectives not measured tonight
            c["algorithms"] = [a for a in algs if a == "default" or a.startswith("native:")
                               or any(a.startswith(f"{k}_as_") for k in colls)]
        c["mpiruns"] = looks[-1]
        c["sequential"] = {"looks": list(looks)}
        c["budget"] = {"node_hours": round(sum(ch.node_hours for ch in plan.chosen
                                                 if ch.cell.layout == f"{mname}|{layout}") * 1.5 + 0.01, 3)}
        out.append(c)
    total = sum(u.rank_seconds for u in all_usages) or 1.0
    measured = sum(tagged[ch.cell][1].rank_seconds for ch in plan.chosen) / total
    lines = [f"night {night}: {len(plan.chosen)} cell(s) in {len(out)} campaign file(s), "
             f"{plan.spent_node_hours:.3g} of {budget:.3g} node-hours; they hold {measured:.1%} of the users' "
             f"observed collective time"]
    for ch in plan.chosen:
        m, u = tagged[ch.cell]
        lines.append(f"  measure {m['name']} {ch.cell.collective} {ch.cell.bytes_lo} B p={ch.cell.p}: {ch.reason}, "
                     f"{u.rank_seconds / total:.1%} of the time, {ch.node_hours:.3g} node-h")
    for cell, why in plan.kept:
        mname = cell.layout.split("|", 1)[0]
        lines.append(f"  keep    {mname} {cell.collective} {cell.bytes_lo} B p={cell.p}: {why}")
    return out, plan, "\n".join(lines) + "\n"


def sequential_looks(base: dict) -> tuple[int, ...]:
    """The looks of tonight's cells: `usage.looks`, else after 3, 4 and the base's `mpiruns` (the design of
    usage_plan.SequentialDesign, whose last look is the most mpiruns a cell gets; 6 without `mpiruns`)."""
    opts = base.get("usage") or {}
    if opts.get("looks") is not None:
        looks = opts["looks"]
        if not (isinstance(looks, list) and looks and all(isinstance(n, int) for n in looks)
                and looks[0] >= 2 and all(b > a for a, b in zip(looks, looks[1:]))):
            raise FromUsageError(f"usage.looks: increasing mpirun counts from 2 on, e.g. [3, 4, 6]; got {looks!r}")
        return tuple(looks)
    last = base.get("mpiruns", SequentialDesign().looks[-1])
    if not isinstance(last, int) or last < 2:
        raise FromUsageError(f"mpiruns: at least 2 for the looks of a from-usage night, got {last!r}")
    return tuple(n for n in SequentialDesign().looks[:-1] if n < last) + (last,)


def write_tonight(base_path: Path, usage: dict[str, list[CellUsage]], out_dir: Path, **kw) -> tuple[list[Path], str]:
    try:
        base = yaml.safe_load(Path(base_path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise FromUsageError(f"{base_path}: {e}") from None
    campaigns, plan, text = tonight(base, usage, **kw)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for c in campaigns:
        p = out_dir / f"{c['name']}.yaml"
        p.write_text(yaml.safe_dump(c, sort_keys=False))
        paths.append(p)
    (out_dir / "plan.txt").write_text(text)
    return paths, text
