"""archsvc30: a validation launch's run says so in its own column

Revision ID: 0013_archsvc30
Revises: 0012_usage33
Create Date: 2026-11-25 23:40:00

runs.validation: the role of a validation launch's file (the agent's #@pgmpi_validation header: default,
tuned, ...), NULL for campaign data. The analyses and the pages select campaign data with it instead of
reading every run's headers. Existing rows are filled from their stored headers.
"""
from alembic import op
import sqlalchemy as sa


revision = '0013_archsvc30'
down_revision = '0012_usage33'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("runs") as b:
        b.add_column(sa.Column("validation", sa.String(length=16), nullable=True))
    bind = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("headers", sa.JSON),
                    sa.column("validation", sa.String))
    for rid, headers in bind.execute(sa.select(runs.c.id, runs.c.headers)).all():
        role = headers.get("pgmpi_validation") if isinstance(headers, dict) else None
        if role:
            bind.execute(runs.update().where(runs.c.id == rid).values(validation=str(role)[:16]))


def downgrade():
    with op.batch_alter_table("runs") as b:
        b.drop_column("validation")
