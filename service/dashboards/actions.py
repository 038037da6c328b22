"""Publish / roll back a profile set stored in the database: the file-system work of service.publish
plus the database side (version states, audit log).  Used by the profile page and `pgmpi profile`.
Runs inside an app context; the caller commits."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from service import publish as pub
from service.auth import audit
from service.models import ProfileSet, ProfileVersion


def flavor(name: str) -> str | None:
    n = name.lower()
    return "openmpi" if "open" in n else "mpich" if "mpich" in n else None


def publish_candidate(v: ProfileVersion, root: Path, actor: str, force: bool = False,
                      reason: str = "") -> pub.PublishResult:
    ps: ProfileSet = v.profile_set
    validated = v.validated_at is not None or v.state == "validated"
    res = pub.publish(root, ps.machine.name, ps.library.name, ps.library.version, v.files or {},
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
    return res


def rollback_set(ps: ProfileSet, root: Path, actor: str, reason: str = "") -> pub.PublishResult:
    res = pub.rollback(root, ps.machine.name, ps.library.name, ps.library.version, actor=actor, reason=reason)
    old_path = str(res.target / "versions" / str(res.previous))
    for v in ps.versions:
        if v.published_path == old_path:
            v.state = "rolled-back"
            v.rolled_back_at = datetime.now(timezone.utc)
    audit(actor, "rollback", "profile", f"set:{ps.id}",
          {"set": ps.id, "fs_version": res.version, "previous": res.previous, "reason": reason})
    return res
