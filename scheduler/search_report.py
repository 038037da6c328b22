"""The reduced native searches against an exhaustive campaign on the same machine, from the agent's state:

    text = report(state_dir, "ns-exhaustive", ["ns-mgd", "ns-smgd"])

Per job (module x layout) of the exhaustive campaign: its stored raw results become the table of every
(collective, size, method, segment) (pgmpi_formats/native_search.cells_from_files); MGD and SMGD are
replayed on that table (the same engine the search driver runs), and each reduced campaign's own recorded
search (search-<job>-<i>.json) is judged on it: experiments, their run-times in the exhaustive table, and
the loss of each choice against the exhaustive optimum of its cell.  The jobs' own measuring seconds (all
pgmpi-bench launches of the driver, mpirun start-up included) are printed next to them.  The noise floor of
the loss: rows "exh. sweep k / others" choose by exhaustive search on one sweep and are judged on the other
sweeps (a choice measured at another time loses that much by chance).  The "scan bound" rows: the most any
search that measures every method of a cell once can save on that grid (native_search.bound_row).
"""
from __future__ import annotations

import json
from pathlib import Path

from pgmpi_formats.native_search import Row, bound_row, campaign_row, cells_from_files, replay, table


def _completed_attempt(job_dir: Path) -> Path | None:
    done = [a for a in sorted(job_dir.glob("attempt-*"), key=lambda p: int(p.name.split("-")[1]))
            if (a / "status").is_file() and (a / "status").read_text().startswith("COMPLETED")]
    return done[-1] if done else None


def holdout_rows(adir: Path, reports: list[Path], keys: list[str]) -> list[Row]:
    """The loss floor of the noise: exhaustive search on one sweep, its choices judged on the other sweeps'
    table (what any search's choice, measured at another time, loses by chance).  Needs >= 2 sweeps."""
    if len(reports) < 2:
        return []
    rows = []
    for k, rep in enumerate(reports):
        own, _ = cells_from_files([adir / f for f in json.loads(rep.read_text())["files"]])
        rest, _ = cells_from_files([adir / f for r in reports if r != rep for f in json.loads(r.read_text())["files"]])
        for key in keys:
            losses = [rest[c].loss(own[c].best(c[1]), c[1]) for c in own if c[0] == key and c in rest]
            rows.append(Row(key, f"exh. sweep {k}", "others", 0, 0.0, losses))
    return rows


def report(state_dir, exhaustive: str, reduced: list[str], lookahead: int = 2, prune: float = 0.5,
           neighbours=("none", "segment", "prune")) -> str:
    root = Path(state_dir) / "campaigns"
    if not (root / exhaustive).is_dir():
        raise FileNotFoundError(f"{root / exhaustive}: no such campaign in this agent state")
    out = []
    for job_dir in sorted(p for p in (root / exhaustive).iterdir() if p.is_dir()):
        adir = _completed_attempt(job_dir)
        if adir is None:
            out.append(f"## {job_dir.name}: no completed attempt")
            continue
        reports = sorted(adir.glob("search-*.json"))
        files = [adir / f for r in reports for f in json.loads(r.read_text())["files"]]
        cells, _ = cells_from_files(files)
        keys = list(dict.fromkeys(k for k, _ in sorted(cells)))
        secs = [json.loads(r.read_text()).get("launch_seconds", 0.0) for r in reports]
        out.append(f"## {job_dir.name}: exhaustive {exhaustive}: {len(reports)} sweep(s), {len(cells)} cells, "
                   f"measuring {sum(secs) / max(len(secs), 1):.1f} s per sweep (pgmpi-bench launches)")
        rows: list[Row] = []
        for key in keys:
            rows.append(replay(cells, key, "exhaustive")[0])
            rows.append(bound_row(cells, key))
            for kind in ("mgd", "smgd"):
                for nb in neighbours:
                    r = replay(cells, key, kind, lookahead=lookahead, prune=prune, neighbour=nb)[0]
                    r.kind = f"{kind}/{nb}" if nb != "none" else kind
                    rows.append(r)
            for name in reduced:
                f = root / name / f"search-{job_dir.name}-0.json"
                if f.is_file():
                    rep = json.loads(f.read_text())
                    if key in rep["paths"]:
                        r = campaign_row(cells, key, rep["search"][key], rep["paths"][key])
                        nb = rep.get("neighbour", {}).get(key, "none")
                        r.kind += f"/{nb}" if nb != "none" else ""
                        r.source = name[:14]
                        rows.append(r)
        rows += holdout_rows(adir, reports, keys)
        out.append(table(rows))
        for name in reduced:
            f = root / name / f"search-{job_dir.name}-0.json"
            if f.is_file():
                rep = json.loads(f.read_text())
                out.append(f"campaign {name}: {rep['mpiruns']} mpiruns, measuring {rep['launch_seconds']:.1f} s "
                           f"(pgmpi-bench launches) against {sum(secs) / max(len(secs), 1):.1f} s per exhaustive sweep")
        out.append("")
    return "\n".join(out)
