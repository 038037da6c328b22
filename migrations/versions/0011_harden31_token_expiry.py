"""harden31: token expiry (api_tokens.expires_at)

Revision ID: 0011_harden31
Revises: 0010_measure34
Create Date: 2026-11-25 23:30:00

A token's lifetime is chosen when it is created (`pgmpi token create --expires-days N`, default 365) and
shown by `pgmpi token list`.  Tokens created before this revision get one year from the upgrade: none stops
working at the upgrade, and every one expires.
"""
from datetime import datetime, timedelta, timezone

from alembic import op
import sqlalchemy as sa


revision = '0011_harden31'
down_revision = '0010_measure34'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))
    tokens = sa.table('api_tokens', sa.column('expires_at', sa.DateTime(timezone=True)))
    op.execute(tokens.update().where(tokens.c.expires_at.is_(None))
               .values(expires_at=datetime.now(timezone.utc) + timedelta(days=365)))


def downgrade():
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
