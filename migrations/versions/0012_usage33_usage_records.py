"""usage33: the users' collective time, one usage record per job (issue 33)

Revision ID: 0012_usage33
Revises: 0011_harden31
Create Date: 2026-11-25 23:55:00

usage_jobs: one row per uploaded record (digest unique: uploads are idempotent); usage_cells: its cells
(collective, size bucket, communicator size, world, algorithm that served, calls, rank-seconds, samples).
"""
from alembic import op
import sqlalchemy as sa


revision = '0012_usage33'
down_revision = '0011_harden31'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "usage_jobs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("library_id", sa.Integer(), sa.ForeignKey("mpi_libraries.id"), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ranks", sa.Integer(), nullable=False),
        sa.Column("layout", sa.String(60), nullable=False),
        sa.Column("wall_seconds", sa.Float(), nullable=False),
        sa.Column("rank_seconds", sa.Float(), nullable=False),
        sa.Column("sample_period", sa.Integer(), nullable=False),
        sa.Column("slurm_job_id", sa.String(60), nullable=True),
        sa.Column("user_name", sa.String(120), nullable=True),
        sa.Column("exe", sa.String(200), nullable=True),
    )
    op.create_index("ix_usage_jobs_library_id", "usage_jobs", ["library_id"])
    op.create_index("ix_usage_jobs_received_at", "usage_jobs", ["received_at"])
    op.create_table(
        "usage_cells",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("usage_jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("collective", sa.String(40), nullable=False),
        sa.Column("bytes_lo", sa.BigInteger(), nullable=False),
        sa.Column("p", sa.Integer(), nullable=False),
        sa.Column("world", sa.Boolean(), nullable=False),
        sa.Column("algorithm", sa.String(80), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("rank_seconds", sa.Float(), nullable=False),
        sa.Column("samples", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_usage_cells_job_id", "usage_cells", ["job_id"])
    op.create_index("ix_usage_cells_cell", "usage_cells", ["collective", "bytes_lo", "p"])


def downgrade():
    op.drop_index("ix_usage_cells_cell", table_name="usage_cells")
    op.drop_index("ix_usage_cells_job_id", table_name="usage_cells")
    op.drop_table("usage_cells")
    op.drop_index("ix_usage_jobs_received_at", table_name="usage_jobs")
    op.drop_index("ix_usage_jobs_library_id", table_name="usage_jobs")
    op.drop_table("usage_jobs")
