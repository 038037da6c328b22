"""layout17: the layout of runs (label, hosts, placement), violations and validation figures

Revision ID: 0007_layout17
Revises: 0006_harden19
Create Date: 2026-11-23 22:00:00

The label is pgmpi_formats.layouts.layout_label; existing runs get it from nodes x ppn where that is their
process count (their hosts and placement from the stored #@ headers), existing violations and figures ""
(unknown: the dashboards show them under every layout of their p).
"""
from alembic import op
import sqlalchemy as sa


revision = '0007_layout17'
down_revision = '0006_harden19'
branch_labels = None
depends_on = None


def upgrade():
    for table, cols in (("runs", ("layout", "hosts", "placement")), ("violations", ("layout",)),
                        ("validation_figures", ("layout",))):
        with op.batch_alter_table(table) as b:
            for col in cols:
                typ = sa.String(length=60) if col == "layout" else sa.Text()
                b.add_column(sa.Column(col, typ, nullable=False, server_default=""))
    runs = sa.table("runs", sa.column("layout", sa.String), sa.column("nodes", sa.Integer),
                    sa.column("ppn", sa.Integer), sa.column("nprocs", sa.Integer))
    op.execute(runs.update().where(runs.c.nodes * runs.c.ppn == runs.c.nprocs).values(
        layout=sa.cast(runs.c.nodes, sa.String) + "x" + sa.cast(runs.c.ppn, sa.String)))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE runs SET hosts = COALESCE(headers->>'hosts', ''), "
                   "placement = COALESCE(headers->>'placement', '')")
    else:
        op.execute("UPDATE runs SET hosts = COALESCE(json_extract(headers, '$.hosts'), ''), "
                   "placement = COALESCE(json_extract(headers, '$.placement'), '')")


def downgrade():
    for table, cols in (("validation_figures", ("layout",)), ("violations", ("layout",)),
                        ("runs", ("placement", "hosts", "layout"))):
        with op.batch_alter_table(table) as b:
            for col in cols:
                b.drop_column(col)
