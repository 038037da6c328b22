"""A profile set's life, in one place: candidate (stored by service.store.analyses), validate (the
agent's figures -> verdict), publish, roll back, history.  The API (service/api/profiles.py), the pages
(service/dashboards/routes.py) and `pgmpi profile` (service/profiles/cli.py) all call these functions.

Each runs inside an app context and commits: the profile root (the file-system work of
service/profiles/publish.py) and the database change together or not at all (if the database refuses the
commit after the swap of ``current``, ``current`` is swapped back and the caller gets a PublishError).
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select

from pgmpi_formats.checker import mpi_flavor
from service.auth import audit
from service.store.db import db
from service.store.models import Analysis, Machine, MpiLibrary, ProfileSet, ProfileVersion, ValidationFigure
from service.profiles import publish as pub


# ----------------------------------------------------------------- validate

def validation_verdict(v: ProfileVersion, figures, tolerance: float | None = None,
                       all_or_nothing: bool = False) -> dict:
    """service.analysis.validation.judge on the candidate's files, with the null ratio spread its campaign's
    control arm measured (service/analysis/README.md, "Validation"); a configured tolerance is a floor."""
    from service.analysis.validation import judge
    analysis = db.session.get(Analysis, v.analysis_id) if v.analysis_id else None
    control = ((analysis.summary or {}).get("control") or {}) if analysis is not None else {}
    spread = control.get("null_spread")
    if tolerance is not None:
        spread = max(spread or 0.0, tolerance)
    return judge(v.files or {}, figures, null_spread=spread, all_or_nothing=all_or_nothing)


def record_validation(v: ProfileVersion, figures, tolerance: float | None, actor: str, job: str,
                      campaign: str | None, upload_ids: list[str], all_or_nothing: bool = False) -> dict:
    """Store the agent's figures for a candidate, judge them per redirected range (failed ranges dropped,
    the rest kept, or all or nothing), set the version's state and files (apply_verdict), audit and
    commit.  figures: objects with collective, msize, nprocs, default_time, tuned_time, speedup, n_default,
    n_tuned, run_ratios, paired.  Returns the verdict."""
    from service.analysis.validation import apply_verdict
    for old in list(v.figures):
        db.session.delete(old)
    verdict = validation_verdict(v, figures, tolerance, all_or_nothing)
    rows = [ValidationFigure(version=v, collective=f.collective, msize=f.msize, nprocs=f.nprocs,
                             layout=getattr(f, "layout", "") or "",
                             default_time=f.default_time, tuned_time=f.tuned_time,
                             speedup=f.speedup if f.speedup is not None else f.default_time / f.tuned_time,
                             details={"n_default": f.n_default, "n_tuned": f.n_tuned, "job": job,
                                      "campaign": campaign, "run_ratios": getattr(f, "run_ratios", None),
                                      "paired": getattr(f, "paired", False), "verdict": verdict["state"]})
            for f in figures]
    db.session.add_all(rows)
    apply_verdict(v, verdict, job)
    v.validated_at = datetime.now(timezone.utc) if verdict["ok"] else None
    audit(actor, "validate", "profile", str(v.id),
          {"ok": verdict["ok"], "state": verdict["state"], "figures": len(rows), "slower": verdict["slower"][:20],
           "missing": verdict["missing"][:20], "dropped": verdict["dropped"][:20], "job": job,
           "upload_ids": upload_ids[:100]})
    db.session.commit()
    return verdict


# ----------------------------------------------------------------- publish, roll back, history


def publish_candidate(v: ProfileVersion, root: Path, actor: str, force: bool = False,
                      reason: str = "") -> pub.PublishResult:
    ps: ProfileSet = v.profile_set
    names = (ps.machine.name, ps.library.name, ps.library.version)
    validated = v.validated_at is not None or v.state == "validated"
    res = pub.publish(root, *names, v.files or {},
                      actor=actor, validated=validated, force=force, reason=reason,
                      candidate=f"profile_version:{v.id}",
                      validation={"figures": len(v.figures),
                                  "worst_speedup": min((f.speedup for f in v.figures), default=None)},
                      mpi=mpi_flavor(ps.library.name))
    v.state = "published"
    v.published_at = datetime.now(timezone.utc)
    v.published_path = str(res.target / "versions" / str(res.version))
    v.actor = actor
    audit(actor, "publish-forced" if res.forced else "publish", "profile", str(v.id),
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "forced": res.forced,
           "reason": reason, "validated": validated, "path": v.published_path})
    _commit_or_undo(res, root, names, actor, "publish")
    return res


def rollback_set(ps: ProfileSet, root: Path, actor: str, reason: str = "", to: int | None = None) -> pub.PublishResult:
    """Make version `to` (default: the previous one) current again; the version that was current is
    marked rolled-back."""
    names = (ps.machine.name, ps.library.name, ps.library.version)
    res = pub.rollback(root, *names, actor=actor, reason=reason, to=to)
    old_path = str(res.target / "versions" / str(res.previous))
    new_path = str(res.target / "versions" / str(res.version))
    for v in ps.versions:
        if v.published_path == old_path:
            v.state = "rolled-back"
            v.rolled_back_at = datetime.now(timezone.utc)
        elif v.published_path == new_path:
            v.state = "published"
    audit(actor, "rollback", "profile", f"set:{ps.id}",
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "reason": reason})
    _commit_or_undo(res, root, names, actor, "rollback")
    return res


def find_set(machine: str, library: str, version: str) -> ProfileSet | None:
    """The stored profile set of machine x MPI library x version, None when the database has none."""
    return db.session.scalars(select(ProfileSet).join(Machine, ProfileSet.machine_id == Machine.id)
                              .join(MpiLibrary, ProfileSet.library_id == MpiLibrary.id)
                              .where(Machine.name == machine, MpiLibrary.name == library,
                                     MpiLibrary.version == version)
                              .order_by(ProfileSet.id.desc())).first()


def history(root: Path, machine: str, library: str, version: str) -> dict:
    """The published versions and the history.jsonl of a profile set, as `pgmpi profile status` shows it."""
    return pub.status(root, machine, library, version)


def _commit_or_undo(res: pub.PublishResult, root: Path, names: tuple[str, str, str], actor: str, what: str) -> None:
    """Commit the database side of a swap already made on disk; when the database refuses, swap ``current``
    back to what it was (recorded in history.jsonl as an undo) so modules never load a profile the
    service does not know it published."""
    try:
        db.session.commit()
    except Exception as exc:
        db.session.rollback()
        back = res.previous or 0
        refused = f"the database refused to record the {what} ({type(exc).__name__}: {str(exc).splitlines()[0]})"
        try:
            pub.rollback(root, *names, actor=actor, to=back,
                         reason=f"undo {what} of version {res.version}: the database refused to record it")
        except pub.PublishError as undo_exc:
            raise pub.PublishError(f"{refused}, and setting the profile root back to version {back} failed "
                                   f"({undo_exc}): version {res.version} is current on disk only") from exc
        raise pub.PublishError(f"{refused}; the profile root is back at version {back}") from exc
