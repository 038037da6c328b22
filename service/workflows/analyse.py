"""Analyse (POST /api/v1/analyses, `pgmpi analyze` against the database): pick the stored runs of a machine x
library (x campaign), rebuild them as a pgmpi_formats.results.ResultSet (service/store/analyses.py), run the
analysis' one entry point (service/analysis/api.py) and the datatype guidelines (service/analysis/datatypes.py),
convert their results to rows and store them: the analysis, its violations and verdicts, candidate profiles
(service/store/analyses.store_result) in the profile set's own directory (service/workflows/publish.py).
The caller commits."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

import numpy as np
from sqlalchemy import select

from pgmpi_formats.checker import CheckerError
from service.analysis import api as analysis_api, datatypes
from service.analysis.memory import MemoryModel
from service.analysis.stats import TESTS
from service.store.analyses import load_resultset, nights, store_result
from service.store.db import db
from service.store.models import Analysis, Campaign, Machine, MpiLibrary, ProfileSet, Run
from service.workflows.publish import set_directory


class AnalysisInputError(ValueError):
    """Refused with `status`: 404 / 422 for the request, 503 when the service cannot analyse (its checker)."""

    def __init__(self, message: str, field: Optional[str] = None, status: int = 422):
        super().__init__(message)
        self.field, self.status = field, status


def select_runs(machine: Machine, data) -> tuple[MpiLibrary, Optional[Campaign], list[Run]]:
    q = select(MpiLibrary).where(MpiLibrary.machine_id == machine.id, MpiLibrary.name == data.library)
    if data.version:
        q = q.where(MpiLibrary.version == data.version)
    libs = db.session.scalars(q.order_by(MpiLibrary.id.desc())).all()
    if not libs:
        raise AnalysisInputError(f"machine {machine.name!r} has no MPI library {data.library!r}"
                                 + (f" version {data.version!r}" if data.version else ""), field="library", status=404)
    lib = libs[0]
    campaign = None
    rq = select(Run).where(Run.library_id == lib.id)
    if data.campaign:
        campaign = db.session.scalar(select(Campaign).where(Campaign.name == data.campaign))
        if campaign is None or campaign.machine_id != machine.id:
            raise AnalysisInputError(f"unknown campaign {data.campaign!r} on {machine.name!r}", field="campaign",
                                     status=404)
        rq = rq.where(Run.campaign_id == campaign.id)
    # Validation launches (tuned mode with a candidate; Run.validation) are evidence about a candidate, not
    # about the library: never analysed as campaign data.
    runs = db.session.scalars(rq.where(Run.validation.is_(None)).order_by(Run.id)).all()
    if not runs:
        raise AnalysisInputError("no stored runs for this machine, library and campaign", field="library")
    return lib, campaign, runs


def run_analysis(machine: Machine, data, actor: str) -> Analysis:
    lib, campaign, runs = select_runs(machine, data)
    if data.test not in TESTS:
        raise AnalysisInputError(f"unknown test {data.test!r}; valid: {', '.join(TESTS)}", field="test")
    try:
        memory = MemoryModel.auto().probe()     # the profiles' memory figures are the library's: said up front
    except CheckerError as e:
        raise AnalysisInputError(f"the service cannot analyse: {e}", status=503) from None
    rs = load_resultset(runs)
    try:
        out = analysis_api.run(rs, alpha=data.alpha, test=data.test, fdr=data.fdr, memory=memory,
                               gain=getattr(data, "min_gain", 0.10), campaign=campaign.name if campaign else None,
                               confirmations=getattr(data, "confirmations", 1),
                               confirmed_before=nights(lib, campaign)[0] if campaign else {})
        data.fdr = out["fdr"]    # None (the default) resolved: on for a campaign's analysis
        dt = datatypes.analyse(rs, alpha=data.alpha, test=data.test if data.test in datatypes.PAIRED_TESTS
                               else datatypes.DEFAULT_TEST, fdr=bool(out["fdr"]),
                               min_effect=getattr(data, "min_gain", 0.10), campaign=campaign.name if campaign else None,
                               created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    except ValueError as e:
        raise AnalysisInputError(str(e)) from None
    except CheckerError as e:       # a listing at another p or size failed
        raise AnalysisInputError(f"the service cannot analyse: {e}", status=503) from None
    result = convert(out)
    if dt is not None:
        merge_datatypes(result, dt)
    a = store_result(machine, lib, campaign, data, actor, result)
    ps = db.session.scalar(select(ProfileSet).where(ProfileSet.machine_id == machine.id,
                                                    ProfileSet.library_id == lib.id))
    if ps is not None and not ps.directory:
        set_directory(ps)       # a new set: its directory under the profile root, assigned once
    return a


def merge_datatypes(result: dict, dt: dict) -> None:
    """The datatype guidelines' verdicts, control arm and repair profiles (service/analysis/datatypes.py
    analyse) into the rows store_result writes; a repair profile whose file name a collective profile of the
    same analysis took is left out (the collective campaign's measurement of that call decides)."""
    vs = dt["verdicts"]
    result["datatypes"] = [v.as_dict() for v in vs]
    taken = set(result.get("profiles") or {})
    added = {k: v for k, v in dt["profiles"].items() if k not in taken}
    result.setdefault("profiles", {}).update(added)
    tested = [v for v in vs if v.verdict != "n/a" and v.guideline in ("GL1", "GL2/3", "GL4")]
    result["summary"]["datatypes"] = {
        "tested": len(tested), "violated": sum(v.verdict == "violated" for v in tested),
        "control": dt["control"].to_dict(), "profiles": sorted(added),
        "left_out": sorted(set(dt["profiles"]) - set(added)), "refused": dt["refused"][:200]}


def _key(collective: str, nprocs: int, msize: int, mockup: str) -> str:
    return f"{collective} {nprocs} {msize} {mockup}"


def convert(out: dict) -> dict:
    """service.analysis.api.run's result -> the rows store_result writes."""
    configs = out.get("configs", [])

    def nprocs_of(cfg) -> int:
        return configs[cfg]["nprocs"] if cfg is not None and cfg < len(configs) else 0

    trusted = (out.get("control") or {}).get("trustworthy", True)
    # found by fewer campaigns than the candidate rule requires: unconfirmed (service/analysis/profiles.py)
    below_k = {_key(r["collective"], r["nprocs"], r["msize"], r["mockup"]): r["why"]
               for r in out.get("refused") or [] if r.get("rule") == "replication"}
    viols, passed = [], []
    for v in out.get("verdicts", []):
        if v.get("control"):
            continue    # the control arm's flags are false alarms by construction: summary["control"]
        cfg = configs[v["cfg"]] if v.get("cfg") is not None and v["cfg"] < len(configs) else {}
        nprocs = cfg.get("nprocs", 0)
        if not v.get("violated"):
            if v["kind"] == "pattern":   # tested and not found: contradicts this violation on other nights
                passed.append(_key(v["collective"], nprocs, v["msize"], v["algorithm"]))
            continue
        status, why = "verified", None
        if not trusted:
            status, why = "unconfirmed", "the campaign's control arm is untrustworthy"
        elif v["kind"] == "pattern" and _key(v["collective"], nprocs, v["msize"], v["algorithm"]) in below_k:
            status, why = "unconfirmed", below_k[_key(v["collective"], nprocs, v["msize"], v["algorithm"])]
        viols.append({"kind": v["kind"], "collective": v["collective"], "mockup": v["algorithm"],
                      "msize": v["msize"], "ref_msize": v.get("ref_msize"), "nprocs": cfg.get("nprocs", 0),
                      "layout": cfg.get("layout", ""),
                      "default_time": v["default_median"], "mockup_time": v["other_median"],
                      "slowdown": v["slowdown"], "p_value": v.get("p_adjusted") if v.get("p_adjusted") is not None
                      else v.get("p_value"), "barrier_warning": v.get("barrier_warning"),
                      "status": status, "status_why": why, "effect": _opt(v.get("effect")),
                      "ci_low": _opt(v.get("ci_low")), "ci_high": _opt(v.get("ci_high")),
                      "ci_mpiruns": v.get("ci_mpiruns")})
    # results-check failures per (library, collective, size, p, algorithm): the library defects the pages show
    defects = [d | {"nprocs": nprocs_of(d.get("cfg"))} for d in out.get("defects") or []]
    summary = {"counts": out.get("counts"), "quality": out.get("quality"), "configs": configs,
               "gain": out.get("gain"), "control": out.get("control"), "defects": defects,
               "confirmations": out.get("confirmations"), "refused": (out.get("refused") or [])[:500],
               "passed": passed, "reporting": out.get("reporting"),
               "guideline_summary": out.get("guideline_summary")}
    return {"checked": len(out.get("verdicts", [])), "violations": viols, "summary": summary,
            "profiles": {p["filename"]: p["text"] for p in out.get("profiles", []) if p.get("text")},
            # each a candidate version of its own, validated at its unmeasured count (service/analysis/spans.py)
            "spans": {s["filename"]: s["text"] for s in out.get("spans") or [] if s.get("text")}}


def _opt(x) -> Optional[float]:
    """A finite float or None (no stored value may break a page)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None
