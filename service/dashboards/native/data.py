"""The numbers of the native-algorithms page (plain Python, no Flask): per machine x library, collective and p,
from the stored runs, whose algorithms are named `native:<name>[:seg=<bytes>]` (pgmpi_formats.native).

    v = native_view(session, lib, campaign, key, p, layout)

- heatmap: algorithm x message size, time relative to the best algorithm of that size (the seed paper's
  figures; 1.0 = the best, blank = not measured);
- default: per size the library's own choice (`default`) against the best native algorithm;
- searches: service/analysis/native_search.py's methods replayed over the stored exhaustive data, per size and
  in total: experiments, measuring time (sum of the measured variants' times), loss of the choice against the
  exhaustive optimum of the same data; and the scan bound (native_search.bound_row): the fewest experiments a
  search that measures every method of a size once can make, and their least time.
A stored value that is missing, zero or not finite is left out (a cell is blank), never an error.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from pgmpi_formats.native import parse_label
from service.analysis import native_search as ns
from service.dashboards import data


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def native_view(s, lib, campaign, key: str, p: int, layout: str | None = None) -> dict[str, Any]:
    call = data.coll_mpi(key)
    med = data.medians(s, lib, campaign, p, call=call, layout=layout)
    times: dict[str, dict[int, float]] = {}
    for (_c, alg, m), vals in med.items():
        vals = [v for v in vals if _ok(v)]
        if vals and (alg == "default" or parse_label(alg) is not None):
            times.setdefault(alg, {})[m] = statistics.median(vals)
    natives = sorted(a for a in times if a != "default")
    out: dict[str, Any] = {"key": key, "call": call, "p": p, "layout": layout, "algorithms": [], "sizes": [],
                           "z": [], "times": [], "default": [], "searches": [], "per_size": [],
                           "validations": validations(s, lib)}
    if not natives:
        return out
    algs = ["default"] + natives if "default" in times else natives
    sizes = sorted({m for a in algs for m in times[a]})
    best = {m: min((times[a][m], a) for a in algs if m in times[a]) for m in sizes}
    out.update(algorithms=algs, sizes=sizes,
               times=[[times[a].get(m) for m in sizes] for a in algs],
               z=[[(times[a][m] / best[m][0]) if m in times[a] else None for m in sizes] for a in algs])
    for m in sizes:
        d = times.get("default", {}).get(m)
        nb = min(((times[a][m], a) for a in natives if m in times[a]), default=None)
        out["default"].append({"msize": m, "default_s": d, "best": nb[1] if nb else None,
                               "best_s": nb[0] if nb else None,
                               "default_over_best": (d / nb[0]) if (d and nb) else None})
    # the searches, replayed over the exhaustive data of each size (native variants only), as the campaign's
    # search report does (native_search.replay)
    cells = {}
    for m in sizes:
        cell_times: dict[str, dict[int | None, float]] = {}
        for a in natives:
            if m in times[a]:
                v = parse_label(a)
                cell_times.setdefault(v.name, {})[v.seg] = times[a][m]
        if cell_times:
            cells[(key, m)] = ns.Cell(cell_times)
    rows, paths = {}, {}
    for k in ns.SEARCHES:
        rows[k], paths[k] = ns.replay(cells, key, k)
    for (_k, m) in sorted(cells):
        row = {"msize": m}
        for k in ns.SEARCHES:
            pth = paths[k].get(m)
            if pth is not None and pth.choice is not None:
                row[k] = {"choice": _label(pth.choice), "experiments": len(pth.experiments), "time": pth.cost(),
                          "loss": cells[(key, m)].loss(pth.choice, m)}
        out["per_size"].append(row)
    ex = rows["exhaustive"]
    rows["scan bound"] = ns.bound_row(cells, key)      # the most mgd/smgd can save on this grid; no loss of its own
    for k in (*ns.SEARCHES, "scan bound"):
        r = rows[k]
        losses = [x for x in r.losses if x == x]
        out["searches"].append({
            "search": k, "experiments": r.experiments, "time": r.seconds,
            "fewer": (ex.experiments / r.experiments) if r.experiments else None,
            "time_saved": (1 - r.seconds / ex.seconds) if ex.seconds else None,
            "mean_loss": statistics.fmean(losses) if losses else None,
            "max_loss": max(losses) if losses else None})
    return out


def _label(choice: tuple[str, int | None]) -> str:
    name, seg = choice
    return f"native:{name}" + (f":seg={seg}" if seg is not None else "")


def validations(s, lib, limit: int = 20) -> list[dict[str, Any]]:
    """The newest validation jobs of this library's native decision files (service/api/native.py records
    them): what was validated, the verdict and its first reasons.  Stored values are shown as text only."""
    from sqlalchemy import select

    from service.store.models import NativeValidation
    machine = getattr(getattr(lib, "machine", None), "name", None)
    if machine is None:
        return []
    rows = s.scalars(select(NativeValidation).where(NativeValidation.machine == machine,
                                                    NativeValidation.library == lib.name,
                                                    NativeValidation.version == lib.version)
                     .order_by(NativeValidation.id.desc()).limit(limit))
    out = []
    for r in rows:
        problems = (r.verdict or {}).get("problems") if isinstance(r.verdict, dict) else None
        problems = [str(x)[:300] for x in problems] if isinstance(problems, list) else []
        cells = (r.verdict or {}).get("cells") if isinstance(r.verdict, dict) else None
        out.append({"effects": _effects(cells if isinstance(cells, list) else []),
                    "id": r.id, "file": str(r.file_name), "digest": str(r.digest or "")[:12], "state": str(r.state),
                    "nprocs": r.nprocs, "job": str(r.job or ""), "actor": str(r.actor or ""),
                    "created": r.created_at.strftime("%Y-%m-%d %H:%M") if r.created_at else "",
                    "problems": problems[:3], "more": max(0, len(problems) - 3)})
    return out


def _effects(cells: list) -> list[str]:
    """Per cell the file changes: '<collective> <size> B <label>: 1.21x (95 % CI 1.10-1.33x, 6 rounds)', the
    validation's effect default / tuned with its interval (analysis/native_validation.py). Stored values that
    are not numbers are left out."""
    num = lambda x: isinstance(x, (int, float)) and math.isfinite(x)
    out = []
    for c in cells:
        if not isinstance(c, dict) or c.get("label") in (None, "default") or not num(c.get("effect")):
            continue
        ci = (f"95 % CI {c['ci_low']:.2f}–{c['ci_high']:.2f}×, " if num(c.get("ci_low")) and num(c.get("ci_high"))
              else "no interval, ")
        out.append(f"{c.get('collective')} {c.get('msize')} B {c.get('label')}: {c['effect']:.2f}× ({ci}"
                   f"{c.get('ci_mpiruns')} rounds)")
    return out
