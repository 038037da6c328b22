"""mends: a version replaced by a later publication is superseded, not published

Revision ID: 0015_mends_superseded
Revises: 0014_nativesizes35
Create Date: 2026-11-26 08:30:00

profile_versions.state gains "superseded": publish_candidate (service/workflows/publish.py) marks the version
it replaces superseded in the commit that swaps ``current``, so at most one version of a set is "published"
(the current one) and `pgmpi profile fsck` no longer reports every earlier version.  The column is a plain
string: no schema change.  Rows written before: in each set with several published versions, the one the
set's last publish or rollback in the audit log made current stays published (else the newest published_at),
the others become superseded.  A disagreement with the profile root itself is fsck's to report.  Down: every
superseded version is published again (the old reading).
"""
import json

from alembic import op
import sqlalchemy as sa


revision = '0015_mends_superseded'
down_revision = '0014_nativesizes35'
branch_labels = None
depends_on = None

versions = sa.table("profile_versions", sa.column("id", sa.Integer), sa.column("profile_set_id", sa.Integer),
                    sa.column("state", sa.String), sa.column("published_path", sa.String),
                    sa.column("published_at", sa.DateTime(timezone=True)))
audit = sa.table("audit_log", sa.column("id", sa.Integer), sa.column("action", sa.String),
                 sa.column("entity", sa.String), sa.column("details", sa.JSON))


def _details(d) -> dict:
    if isinstance(d, str):          # a JSON column read as text by some drivers
        try:
            d = json.loads(d)
        except ValueError:
            return {}
    return d if isinstance(d, dict) else {}


def upgrade():
    conn = op.get_bind()
    published: dict[int, list] = {}
    for row in conn.execute(sa.select(versions.c.id, versions.c.profile_set_id, versions.c.published_path,
                                      versions.c.published_at).where(versions.c.state == "published")):
        published.setdefault(row.profile_set_id, []).append(row)
    several = {k: rows for k, rows in published.items() if len(rows) > 1}
    if not several:
        return
    last: dict[int, int] = {}       # set id -> the file-system version its last publish / rollback made current
    for row in conn.execute(sa.select(audit.c.details).where(
            audit.c.entity == "profile", audit.c.action.in_(("publish", "publish-forced", "rollback")))
            .order_by(audit.c.id)):
        d = _details(row.details)
        if isinstance(d.get("set"), int) and isinstance(d.get("fs_version"), int):
            last[d["set"]] = d["fs_version"]
    for set_id, rows in several.items():
        cur = [r for r in rows if set_id in last and (r.published_path or "").endswith(f"/versions/{last[set_id]}")]
        keep = cur[0] if cur else max(rows, key=lambda r: (r.published_at is not None, r.published_at or 0, r.id))
        conn.execute(versions.update().where(versions.c.id.in_([r.id for r in rows if r.id != keep.id]))
                     .values(state="superseded"))


def downgrade():
    op.get_bind().execute(versions.update().where(versions.c.state == "superseded").values(state="published"))
