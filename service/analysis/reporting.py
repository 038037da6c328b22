"""What every published figure states with it (Hoefler & Belli, SC15, rules of honest reporting).

    rep = reporting(result_set, cells, defects)   # -> {cfg index: dict} (JSON-ready)
    rep[c]["sync"], ["clock"], ["statistic"], ["repetitions"], ["mpiruns"], ["exclusions"], ["interval"]

Per config (stats.Config): the process synchronisation the runs' headers name (`#@sync`, ReproMPI's
`#@procsync`; several when the runs disagree), the clock, the summary statistic of a figure (the median of the
measurements of one mpirun, the per-mpirun ratio of two cells of the same mpirun, the geometric mean of those
ratios over mpiruns with its interval), the repetitions (measurements per mpirun and cell: the fewest and most,
the runs' `#@nrep_policy` and, in words, where the counts came from: a fixed count, per-mpirun prediction, the
campaign's pilot mpirun or an earlier night's campaign, scheduler/nrep_history.py) and what was left out of
the verdicts (cells whose mock-up failed the results check, the control arm, comparisons measured in fewer
than two common mpiruns).
"""
from __future__ import annotations

import re

import numpy as np

from .stats import CI_LEVEL, CI_METHOD

STATISTIC = ("per mpirun: median of the measurements of a cell (run-time = max over ranks); ratio of two cells "
             "= ratio of their medians in the same mpirun; over mpiruns: geometric mean of those ratios")


# tonight's copy of an earlier campaign's counts (scheduler/nrep_history.py): .../nrep/<campaign>/<job key>.txt
_EARLIER = re.compile(r"/nrep/([^/]+)/[^/]+\.txt$")


def nrep_source(policies: set[str]) -> str:
    """Where the repetitions of the runs came from, in words, from their `#@nrep_policy` values
    (pgmpi-bench: fixed:<n>, predict:..., time-rule..., from:<files>)."""
    kinds = []
    for pol in sorted(p for p in policies if p):
        kind, _, arg = pol.partition(":")
        if kind == "fixed":
            kinds.append(f"fixed count {arg}")
        elif kind == "from":
            nights = sorted({m.group(1) for f in arg.split(",") if (m := _EARLIER.search(f))})
            kinds.append(f"counts of the earlier campaign {', '.join(nights)}" if nights
                         else f"counts of the pilot mpirun ({arg})")
        else:
            kinds.append(f"predicted ({pol})")
    kinds = list(dict.fromkeys(kinds))
    if any(k.startswith("counts of the pilot") for k in kinds):      # the pilot itself predicted
        kinds = [k for k in kinds if not k.startswith("predicted")] or kinds
        kinds = [k.replace("counts of the pilot", "campaign-wide: predicted by the pilot") for k in kinds]
    return "; ".join(kinds) or "unknown"


def _one(values: set[str]) -> str:
    vals = sorted(v for v in values if v)
    return ",".join(vals) if vals else "unknown"


def reporting(rs, cells, defects: dict | None = None) -> dict[int, dict]:
    out: dict[int, dict] = {}
    per_run = {}
    if rs is not None and hasattr(rs, "runs"):
        for ri, run in enumerate(rs.runs):
            h = run.header
            per_run[ri] = (run.sync, h.get("clock") or "",
                           h.get("nrep_policy") or "", h.get("nrep") or "")
    per_cell = cells.nmeas / np.maximum(cells.nruns, 1)
    for c, runs in enumerate(cells.config_runs):
        sel = cells.cfg == c
        per_mpirun = per_cell[sel]
        heads = [per_run[r] for r in runs if r in per_run]
        nd = sum(1 for k in (defects or {}) if k[0] == c)
        one_run = int(np.count_nonzero(cells.nruns[sel] < 2))
        out[c] = {
            "sync": _one({h[0] for h in heads}),
            "clock": _one({h[1] for h in heads}),
            "statistic": STATISTIC,
            "interval": {"level": CI_LEVEL, "method": CI_METHOD, "unit": "mpirun"},
            "mpiruns": len(runs),
            "repetitions": {"per_mpirun_min": int(per_mpirun.min()) if per_mpirun.size else 0,
                            "per_mpirun_max": int(round(per_mpirun.max())) if per_mpirun.size else 0,
                            "nrep_policy": _one({h[2] for h in heads}), "nrep": _one({h[3] for h in heads}),
                            "source": nrep_source({h[2] for h in heads})},
            "exclusions": {"results_check_failures": nd, "cells_in_one_mpirun": one_run,
                           "control_arm": "measured, counted apart (never a violation or a redirection)",
                           "measurements": "none dropped (medians per mpirun)"},
        }
    return out


def line(rep: dict) -> str:
    """One line for terminal output and page footers."""
    r = rep["repetitions"]
    nrep = (f"{r['per_mpirun_min']}" if r["per_mpirun_min"] == r["per_mpirun_max"]
            else f"{r['per_mpirun_min']}-{r['per_mpirun_max']}")
    ex = rep["exclusions"]
    return (f"sync {rep['sync']}, clock {rep['clock']}, {rep['mpiruns']} mpiruns x {nrep} measurements per cell "
            f"({r.get('source') or r['nrep_policy']}); median per mpirun, {100 * rep['interval']['level']:.0f} % CI over mpiruns; "
            f"excluded: {ex['results_check_failures']} results-check failures, {ex['cells_in_one_mpirun']} cells "
            f"in one mpirun")
