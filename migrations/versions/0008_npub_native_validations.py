"""npub: the service's records of native decision-file validations

Revision ID: 0008_npub
Revises: 0007_layout17
Create Date: 2026-11-24 01:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008_npub'
down_revision = '0007_layout17'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "native_validations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("machine", sa.String(length=200), nullable=False),
        sa.Column("library", sa.String(length=100), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("file_name", sa.String(length=20), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("nprocs", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("verdict", sa.JSON(), nullable=False),
        sa.Column("job", sa.String(length=200), nullable=False),
        sa.Column("actor", sa.String(length=160), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_native_validations_digest", "native_validations", ["digest"])


def downgrade():
    op.drop_index("ix_native_validations_digest", table_name="native_validations")
    op.drop_table("native_validations")
