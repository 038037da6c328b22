"""Validate: the agent's measurements of a candidate (profile version) or of a native decision file -> a
verdict (service/analysis/validation.py, service/analysis/native_validation.py), stored with its figures; the
candidate's state and files follow it (failed ranges dropped) and the violations its ranges measured slower
become contradicted (service/store/analyses.apply_validation).  The records these functions keep are what
publishing checks (recorded_validation, recorded_native_validation; service/workflows/publish.py).

Each function runs inside an app context and commits.
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from sqlalchemy import select

from pgmpi_formats.checker import mpi_flavor
from pgmpi_formats import impi_adjust, mpich_json, native_validation as nv
from service.analysis import native_validation, spans, validation
from service.analysis.stats import ratios_ci
from service.auth import audit
from service.profiles import publish as pub
from service.store.analyses import apply_validation
from service.store.db import db
from service.store.models import (Analysis, Machine, MpiLibrary, NativeValidation, ProfileSet, ProfileVersion,
                                  ValidationFigure)

# ----------------------------------------------------------------- validate

def span_version(v: ProfileVersion):
    """The span a version holds (a version of its own, service/analysis/spans.py), or None."""
    files = v.files or {}
    return spans.span_of(*next(iter(files.items()))) if len(files) == 1 else None


def validation_verdict(v: ProfileVersion, figures, tolerance: float | None = None,
                       all_or_nothing: bool = False) -> dict:
    """service.analysis.validation.judge on the candidate's files, with the null ratio spread its campaign's
    control arm measured (service/analysis/README.md, "Validation"); a configured tolerance is a floor."""
    analysis = db.session.get(Analysis, v.analysis_id) if v.analysis_id else None
    summ = (analysis.summary or {}) if analysis is not None else {}
    control = summ.get("control") or {}
    spread = control.get("null_spread")
    if spread is None:      # a datatype campaign: its control arm is typed_control (service/analysis/datatypes.py)
        spread = ((summ.get("datatypes") or {}).get("control") or {}).get("null_spread")
    if tolerance is not None:
        spread = max(spread or 0.0, tolerance)
    span = span_version(v)
    if span is not None:    # only a validation at its unmeasured count confirms a span (spans.confirm)
        measured = {c.get("nprocs") for c in summ.get("configs") or [] if isinstance(c, dict)}
        return spans.confirm(span, figures, measured_counts=measured - {None}, null_spread=spread)
    return validation.judge(v.files or {}, figures, null_spread=spread, all_or_nothing=all_or_nothing)


def record_validation(v: ProfileVersion, figures, tolerance: float | None, actor: str, job: str,
                      campaign: str | None, upload_ids: list[str], all_or_nothing: bool = False) -> dict:
    """Store the agent's figures for a candidate, judge them per redirected range (failed ranges dropped,
    the rest kept, or all or nothing), set the version's state and files (apply_verdict), audit and
    commit.  figures: objects with collective, msize, nprocs, default_time, tuned_time, speedup, n_default,
    n_tuned, run_ratios, paired.  Returns the verdict."""
    verdict = validation_verdict(v, figures, tolerance, all_or_nothing)
    if verdict["state"] == "inconclusive" and v.state == "validated":
        # no verdict (service/analysis/README.md, "Validation"): a validated version keeps its state, files and
        # figures; the inconclusive run is recorded in the audit log and the notes
        v.notes = (f"{v.notes}; later run {job}: {validation.summary_line(verdict)}")[:2000]
        audit(actor, "validate", "profile", str(v.id),
              {"ok": False, "state": "inconclusive", "figures": len(figures), "control": verdict["control"][:20],
               "tolerance": verdict["tolerance"], "job": job, "kept_state": v.state, "upload_ids": upload_ids[:100]})
        db.session.commit()
        verdict["contradicted"] = 0
        return verdict
    for old in list(v.figures):
        db.session.delete(old)
    rows = [ValidationFigure(version=v, collective=f.collective, msize=f.msize, nprocs=f.nprocs,
                             layout=getattr(f, "layout", "") or "",
                             default_time=f.default_time, tuned_time=f.tuned_time,
                             speedup=f.speedup if f.speedup is not None else f.default_time / f.tuned_time,
                             details={"n_default": f.n_default, "n_tuned": f.n_tuned, "job": job,
                                      "campaign": campaign, "run_ratios": getattr(f, "run_ratios", None),
                                      "paired": getattr(f, "paired", False), "verdict": verdict["state"],
                                      **ratios_ci(getattr(f, "run_ratios", None)).to_dict(),
                                      **({"case": f.case, "description": f.description}
                                         if getattr(f, "case", "") else {})})
            for f in figures]
    db.session.add_all(rows)
    validation.apply_verdict(v, verdict, job)
    # one truth on every page: the violations whose range this validation measured slower are contradicted
    verdict["contradicted"] = apply_validation(v.analysis_id, verdict, f"candidate #{v.number}")
    v.validated_at = datetime.now(timezone.utc) if verdict["ok"] else None
    audit(actor, "validate", "profile", str(v.id),
          {"ok": verdict["ok"], "state": verdict["state"], "figures": len(rows), "slower": verdict["slower"][:20],
           "missing": verdict["missing"][:20], "dropped": verdict["dropped"][:20], "kept": verdict["kept"][:20],
           "control": verdict["control"][:20], "tolerance": verdict["tolerance"], "job": job,
           "contradicted": verdict.get("contradicted", 0),
           "upload_ids": upload_ids[:100]})
    db.session.commit()
    return verdict


def recorded_validation(machine: str, library: str, version: str, files) -> dict | None:
    """The service's record that these files passed validation: a version of this machine x library x version
    with validated_at set (record_validation judged the agent's figures) whose files are exactly these."""
    want = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in files.items()}
    q = (select(ProfileVersion).join(ProfileSet, ProfileVersion.profile_set_id == ProfileSet.id)
         .join(Machine, ProfileSet.machine_id == Machine.id).join(MpiLibrary, ProfileSet.library_id == MpiLibrary.id)
         .where(Machine.name == machine, MpiLibrary.name == library, MpiLibrary.version == version,
                ProfileVersion.validated_at.is_not(None)).order_by(ProfileVersion.id.desc()))
    for v in db.session.scalars(q):
        if dict(v.files or {}) == want:
            return {"profile_version": v.id, "validated_at": v.validated_at.isoformat(), "figures": len(v.figures)}
    return None


def native_digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else bytes(text)).hexdigest()


def recorded_native_validation(machine: str, library: str, version: str, files) -> dict | None:
    """The service's passing validation records of the native decision files among `files` (this machine x
    library x version, exactly these texts): {name: record} when every native file has one, {} when there
    is none to check, None when one lacks a record."""
    out = {}
    for name, text in files.items():
        if name not in pub.NATIVE_FILES:
            continue
        rec = db.session.scalars(select(NativeValidation).where(
            NativeValidation.digest == native_digest(text), NativeValidation.file_name == name,
            NativeValidation.machine == machine, NativeValidation.library == library,
            NativeValidation.version == version, NativeValidation.state == "passed")
            .order_by(NativeValidation.id.desc())).first()
        if rec is None:
            return None
        out[name] = {"native_validation": rec.id, "digest": rec.digest, "at": rec.created_at.isoformat(),
                     "job": rec.job}
    return out


def record_native_validation(machine: str, library: str, version: str, name: str, text: str, nprocs: int,
                             figs: dict, job: str, actor: str, tolerance: float | None = None,
                             decided_at=None) -> dict:
    """Judge a native file's validation job (service/analysis/native_validation.py) on the cells the service
    reads from the file itself, each measured at the sizes its decision measured (`decided_at`, the native
    candidate's own: never the agent's word; None: the picked sizes), store the record, audit and commit.
    A file the readers refuse raises PublishError (no record: it never gets near a job or a publication)."""
    want = pub.NATIVE_FILES.get(name)
    if want is None:
        raise pub.PublishError(f"{name!r} is no native decision file; valid: {', '.join(pub.NATIVE_FILES)}")
    pub.check_native_file(name, text, mpi_flavor(library), version)
    if want == "openmpi":
        cells = nv.cells_of_rules(text, pub._installed("openmpi", version), nprocs, name)
    elif want == "intelmpi":
        cells = nv.cells_of_impi(impi_adjust.parse(text, name, pub._installed("intelmpi", version)), nprocs)
    else:
        cells = nv.cells_of_json(mpich_json.loads(text, name), pub._installed("mpich", version).base, nprocs)
    cells = nv.at_decided(cells, decided_at)
    verdict = native_validation.judge(cells, figs, want, 0.10 if tolerance is None else tolerance)
    rec = NativeValidation(machine=machine, library=library, version=version, file_name=name,
                           digest=native_digest(text), nprocs=nprocs, state=verdict["state"], verdict=verdict,
                           job=job[:200], actor=actor)
    db.session.add(rec)
    db.session.flush()
    audit(actor, "validate-native", "native", str(rec.id),
          {"state": verdict["state"], "file": name, "digest": rec.digest, "problems": verdict["problems"][:20],
           "job": job})
    db.session.commit()
    verdict["id"] = rec.id
    return verdict
