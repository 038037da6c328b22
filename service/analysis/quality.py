"""Quality score per (machine, library, version, p, layout).

    quality(analysis) -> list[dict]   (one entry per machine/library/version/p/layout)

Definition (README.md, "Quality score"): for every pattern check cell (collective, message size) of the key,
let r = median(fastest mock-up that violates the guideline, counted cautiously, i.e. without barrier warning)
/ median(default), and r = 1 when no mock-up violates. The score is 100 x the geometric mean of r over all
cells: 100 means no measured collective can be beaten by an equivalent composition; 50 means that, on (geometric)
average, the library's collectives run at half the speed they could have. Alongside: the number of checks
and brave / cautious violations per guideline class, and the share of passed checks.
"""
from __future__ import annotations

import math

from .guidelines import KINDS, Analysis


def quality(a: Analysis) -> list[dict]:
    keys: dict[tuple, list[int]] = {}
    for c, cf in enumerate(a.configs):
        keys.setdefault((cf.machine, cf.library, cf.version, cf.nprocs, cf.layout), []).append(c)
    out = []
    for (machine, lib, ver, p, layout), cfgs in keys.items():
        cs = set(cfgs)
        vs = [v for v in a.verdicts if v.cfg in cs]
        best: dict[tuple, float] = {}
        for v in vs:
            if v.kind != "pattern":
                continue
            k = (v.cfg, v.collective, v.msize)
            r = 1.0
            if v.violated and not v.barrier_warning and v.default_median > 0:
                r = min(1.0, v.other_median / v.default_median)
            best[k] = min(best.get(k, 1.0), r)
        score = 100.0 * math.exp(sum(math.log(r) for r in best.values()) / len(best)) if best else None
        counts = {}
        for kind in KINDS:
            kv = [v for v in vs if v.kind == kind]
            counts[kind] = {"checks": len(kv), "brave": sum(v.violated for v in kv),
                            "cautious": sum(v.violated and not v.barrier_warning for v in kv)}
        checks = sum(c["checks"] for c in counts.values())
        passed = checks - sum(c["brave"] for c in counts.values())
        out.append({"machine": machine, "library": lib, "version": ver, "nprocs": p, "layout": layout,
                    "score": None if score is None else round(score, 2), "cells": len(best),
                    "passed_share": (passed / checks) if checks else None, "counts": counts})
    return out
