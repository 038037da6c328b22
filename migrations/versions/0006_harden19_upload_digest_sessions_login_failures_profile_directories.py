"""upload digest, session version, login failures, profile set directories

Revision ID: 0006_harden19
Revises: 0005_truth22
Create Date: 2026-11-23 22:10:00

"""
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
    from sqlalchemy.orm import Session
    from service.profiles.lifecycle import assign_directories
    assign_directories(Session(bind=op.get_bind()))


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
