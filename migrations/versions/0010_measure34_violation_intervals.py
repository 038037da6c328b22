"""measure34: the effect of a violation with its 95 % interval over mpiruns

Revision ID: 0010_measure34
Revises: 0009_dtsvc
Create Date: 2026-11-25 23:00:00

effect: geometric mean over mpiruns of the per-mpirun ratio; ci_low / ci_high: its 95 % t interval on the logs
(service/analysis/stats.py, ratio_ci); ci_mpiruns: the mpiruns it rests on. Existing rows: NULL (not measured
that way; the pages show no interval for them).
"""
from alembic import op
import sqlalchemy as sa


revision = '0010_measure34'
down_revision = '0009_dtsvc'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("violations") as b:
        b.add_column(sa.Column("effect", sa.Float(), nullable=True))
        b.add_column(sa.Column("ci_low", sa.Float(), nullable=True))
        b.add_column(sa.Column("ci_high", sa.Float(), nullable=True))
        b.add_column(sa.Column("ci_mpiruns", sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table("violations") as b:
        for col in ("ci_mpiruns", "ci_high", "ci_low", "effect"):
            b.drop_column(col)
