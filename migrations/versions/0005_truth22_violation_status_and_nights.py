"""violation status (verified / unconfirmed / contradicted) and replication across nights

Revision ID: 0005_truth22
Revises: 0004
Create Date: 2026-11-23 22:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0005_truth22'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('violations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status', sa.String(length=16), server_default='verified', nullable=False))
        batch_op.add_column(sa.Column('status_why', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('nights_confirmed', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('nights_contradicted', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('violations', schema=None) as batch_op:
        batch_op.drop_column('nights_contradicted')
        batch_op.drop_column('nights_confirmed')
        batch_op.drop_column('status_why')
        batch_op.drop_column('status')
