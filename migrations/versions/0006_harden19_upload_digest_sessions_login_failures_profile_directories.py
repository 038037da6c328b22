"""upload digest, session version, login failures, profile set directories

Revision ID: 0006_harden19
Revises: 0005_truth22
Create Date: 2026-11-23 22:10:00

"""
import hashlib
import re

from alembic import op
import sqlalchemy as sa


revision = '0006_harden19'
down_revision = '0005_truth22'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.add_column(sa.Column('digest', sa.String(length=64), nullable=True))
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), server_default='0', nullable=False))
    op.create_table('login_failures',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('username', sa.String(length=80), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_login_failures'))
    )
    with op.batch_alter_table('login_failures', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_login_failures_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_login_failures_username'), ['username'], unique=False)
        batch_op.create_index(batch_op.f('ix_login_failures_address'), ['address'], unique=False)
    with op.batch_alter_table('profile_sets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('directory', sa.String(length=255), nullable=True))
        batch_op.create_unique_constraint('uq_profile_sets_machine_directory', ['machine_id', 'directory'])
    # the sets stored so far keep the directory they were published into (<name>-<version>); when two share
    # one, the older keeps it and the newer gets the module-qualified name it should have had
    _assign_directories(op.get_bind())


# the name rule of service/profiles/publish.py (safe_component, library_dirname) when this revision was
# written, copied so that the migration keeps its meaning whatever the live code becomes
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def _component(name):
    """None for a name that makes no directory (empty, longer than 100 characters)."""
    if not isinstance(name, str) or not name.strip():
        return None
    s = _SAFE.sub("_", name.strip())
    if s.startswith("."):
        s = "_" + s[1:]
    return s if len(s) <= 100 else None


def _dirname(name: str, version: str):
    a, b = _component(name), _component(version)
    return f"{a}-{b}" if a and b else None


def _assign_directories(bind) -> None:
    """Give every stored set without one its directory (oldest set first keeps the plain <name>-<version>;
    a second set of that name gets <name>-<version>+<10 hex of sha256(module)>, then +lib<id>)."""
    rows = bind.execute(sa.text(
        "SELECT ps.id, ps.machine_id, l.name, l.version, l.module, ps.library_id FROM profile_sets ps "
        "JOIN mpi_libraries l ON l.id = ps.library_id WHERE ps.directory IS NULL ORDER BY ps.id")).all()
    taken = {(m, d) for m, d in bind.execute(sa.text(
        "SELECT machine_id, directory FROM profile_sets WHERE directory IS NOT NULL"))}
    for sid, mid, name, version, module, lib_id in rows:
        base = _dirname(name, version) or f"lib{lib_id}"
        d = base
        if (mid, d) in taken:
            d = f"{base}+{hashlib.sha256((module or '').encode()).hexdigest()[:10]}"
        if (mid, d) in taken:
            d = f"{base}+lib{lib_id}"
        taken.add((mid, d))
        bind.execute(sa.text("UPDATE profile_sets SET directory = :d WHERE id = :i"), {"d": d, "i": sid})


def downgrade():
    with op.batch_alter_table('profile_sets', schema=None) as batch_op:
        batch_op.drop_constraint('uq_profile_sets_machine_directory', type_='unique')
        batch_op.drop_column('directory')
    with op.batch_alter_table('login_failures', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_login_failures_address'))
        batch_op.drop_index(batch_op.f('ix_login_failures_username'))
        batch_op.drop_index(batch_op.f('ix_login_failures_at'))
    op.drop_table('login_failures')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('session_version')
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.drop_column('digest')
