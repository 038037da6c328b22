"""Publish / roll back a profile set stored in the database: the file-system work of service.publish
plus the database side (version states, audit log).  Used by the profile page and `pgmpi profile`.
Runs inside an app context and commits: the profile root and the database change together or not at all
(if the database refuses the commit after the swap of ``current``, ``current`` is swapped back and the
caller gets a PublishError)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from service import publish as pub
from service.auth import audit
from service.db import db
from service.models import ProfileSet, ProfileVersion


def flavor(name: str) -> str | None:
    n = name.lower()
    return "openmpi" if "open" in n else "mpich" if "mpich" in n else None


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
                      mpi=flavor(ps.library.name))
    v.state = "published"
    v.published_at = datetime.now(timezone.utc)
    v.published_path = str(res.target / "versions" / str(res.version))
    v.actor = actor
    audit(actor, "publish-forced" if res.forced else "publish", "profile", str(v.id),
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "forced": res.forced,
           "reason": reason, "validated": validated, "path": v.published_path})
    _commit_or_undo(res, root, names, actor, "publish")
    return res


def rollback_set(ps: ProfileSet, root: Path, actor: str, reason: str = "") -> pub.PublishResult:
    names = (ps.machine.name, ps.library.name, ps.library.version)
    res = pub.rollback(root, *names, actor=actor, reason=reason)
    old_path = str(res.target / "versions" / str(res.previous))
    for v in ps.versions:
        if v.published_path == old_path:
            v.state = "rolled-back"
            v.rolled_back_at = datetime.now(timezone.utc)
    audit(actor, "rollback", "profile", f"set:{ps.id}",
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "reason": reason})
    _commit_or_undo(res, root, names, actor, "rollback")
    return res


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
