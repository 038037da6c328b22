"""nativesizes35: a native candidate carries the cells its decision measured

Revision ID: 0014_nativesizes35
Revises: 0013_archsvc30
Create Date: 2026-11-26 05:00:00

profile_versions.decided_at: for a native candidate (service/workflows/native.py), the (collective, message
size, process count) cells its decision was made on, as [[key, size, nprocs], ...]; NULL for every other
version.  Native validation measures each rule of the file at these sizes
(pgmpi_formats.native_validation.at_decided), not at a size the decision never measured.  Existing candidates
keep NULL: they are validated at the picked sizes, as before.
"""
from alembic import op
import sqlalchemy as sa


revision = '0014_nativesizes35'
down_revision = '0013_archsvc30'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("profile_versions") as b:
        b.add_column(sa.Column("decided_at", sa.JSON(), nullable=True))


def downgrade():
    with op.batch_alter_table("profile_versions") as b:
        b.drop_column("decided_at")
