"""dtsvc: derived-datatype cases of runs and GL1-GL4 verdicts of analyses

Revision ID: 0009_dtsvc
Revises: 0008_npub
Create Date: 2026-11-24 01:00:00

Two new tables, nothing else changes: dt_cases (pgmpi-dtbench's #@pgmpi dtcase lines of a run, with the
count per description and size and the layout signature) and dt_verdicts (one row per guideline comparison
of an analysis).
"""
from alembic import op
import sqlalchemy as sa


revision = '0009_dtsvc'
down_revision = '0008_npub'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'dt_cases',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('test', sa.String(length=120), nullable=False),
        sa.Column('pattern', sa.String(length=20), nullable=False),
        sa.Column('dt_layout', sa.String(length=40), nullable=False),
        sa.Column('variant', sa.Integer(), nullable=False),
        sa.Column('block', sa.Integer(), nullable=False),
        sa.Column('basetype', sa.String(length=40), nullable=False),
        sa.Column('signature', sa.String(length=16), server_default='', nullable=False),
        sa.Column('counts', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'test', name='uq_dt_cases_run_test'))
    with op.batch_alter_table('dt_cases') as b:
        b.create_index(b.f('ix_dt_cases_run_id'), ['run_id'], unique=False)
    op.create_table(
        'dt_verdicts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('analysis_id', sa.Integer(), nullable=False),
        sa.Column('guideline', sa.String(length=16), nullable=False),
        sa.Column('pattern', sa.String(length=20), nullable=False),
        sa.Column('basetype', sa.String(length=40), nullable=False),
        sa.Column('dt_layout', sa.String(length=60), nullable=False),
        sa.Column('nprocs', sa.Integer(), nullable=False),
        sa.Column('layout', sa.String(length=60), server_default='', nullable=False),
        sa.Column('msize', sa.Integer(), nullable=False),
        sa.Column('slower', sa.String(length=40), nullable=False),
        sa.Column('faster', sa.String(length=40), nullable=False),
        sa.Column('ratio', sa.Float(), nullable=True),
        sa.Column('p_value', sa.Float(), nullable=True),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('verdict', sa.String(length=12), nullable=False),
        sa.Column('signature', sa.String(length=16), server_default='', nullable=False),
        sa.ForeignKeyConstraint(['analysis_id'], ['analyses.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('dt_verdicts') as b:
        b.create_index('ix_dt_verdicts_analysis_pattern', ['analysis_id', 'pattern'], unique=False)


def downgrade():
    with op.batch_alter_table('dt_verdicts') as b:
        b.drop_index('ix_dt_verdicts_analysis_pattern')
    op.drop_table('dt_verdicts')
    with op.batch_alter_table('dt_cases') as b:
        b.drop_index(b.f('ix_dt_cases_run_id'))
    op.drop_table('dt_cases')
