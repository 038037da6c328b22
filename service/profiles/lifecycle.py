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

from pgmpi_formats import collectives
from pgmpi_formats.checker import mpi_flavor
from pgmpi_formats.prf import ProfileFormatError, parse_prf, redirected_ranges
from service.auth import audit
from service.store.db import db
from service.store.models import Machine, MpiLibrary, ProfileSet, ProfileVersion, ValidationFigure
from service.profiles import publish as pub


# ----------------------------------------------------------------- validate

def validation_verdict(v: ProfileVersion, figures, tolerance: float) -> dict:
    """Is the candidate not slower anywhere it redirects?  Every (collective, p, size) inside a
    redirected range of its profiles must have a figure with tuned <= default x (1 + tolerance);
    a redirected range without any measured size counts as missing, i.e. not validated."""
    slower, missing, checked = [], [], 0
    for fname, text in sorted((v.files or {}).items()):
        try:
            prf = parse_prf(text, fname)
        except ProfileFormatError as exc:
            missing.append({"file": fname, "error": str(exc)})
            continue
        coll = collectives.by_mpi_name(prf["mpi_name"])
        if coll is None:
            missing.append({"file": fname, "error": f"unknown collective {prf['mpi_name']!r}"})
            continue
        key = coll.key
        for lo, hi, _alg in redirected_ranges(prf):
            inside = [f for f in figures if f.collective == key and f.nprocs == prf["nprocs"]
                      and lo <= f.msize <= hi]
            if not inside:
                missing.append({"collective": key, "nprocs": prf["nprocs"], "range": [lo, hi]})
            for f in inside:
                checked += 1
                if f.tuned_time > f.default_time * (1 + tolerance):
                    slower.append({"collective": key, "nprocs": f.nprocs, "msize": f.msize,
                                   "default_time": f.default_time, "tuned_time": f.tuned_time})
    return {"ok": not slower and not missing and checked > 0, "checked": checked, "slower": slower,
            "missing": missing, "tolerance": tolerance}


def record_validation(v: ProfileVersion, figures, tolerance: float, actor: str, job: str, campaign: str | None,
                      upload_ids: list[str]) -> dict:
    """Store the agent's figures for a candidate, judge it, move it to validated (or back to candidate),
    audit and commit.  figures: objects with collective, msize, nprocs, default_time, tuned_time, speedup,
    n_default, n_tuned.  Returns the verdict."""
    for old in list(v.figures):
        db.session.delete(old)
    rows = [ValidationFigure(version=v, collective=f.collective, msize=f.msize, nprocs=f.nprocs,
                             default_time=f.default_time, tuned_time=f.tuned_time,
                             speedup=f.speedup if f.speedup is not None else f.default_time / f.tuned_time,
                             details={"n_default": f.n_default, "n_tuned": f.n_tuned, "job": job,
                                      "campaign": campaign})
            for f in figures]
    db.session.add_all(rows)
    verdict = validation_verdict(v, rows, tolerance)
    if verdict["ok"]:
        v.state, v.validated_at = "validated", datetime.now(timezone.utc)
    else:
        v.state, v.validated_at = "candidate", None
    v.notes = ("validation: " + ("passed" if verdict["ok"] else
               f"failed ({len(verdict['slower'])} slower, {len(verdict['missing'])} missing)")
               + f"; job {job}")[:2000]
    audit(actor, "validate", "profile", str(v.id),
          {"ok": verdict["ok"], "figures": len(rows), "slower": verdict["slower"][:20],
           "missing": verdict["missing"][:20], "job": job, "upload_ids": upload_ids[:100]})
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
