"""channels.removed_at: a removed channel whose posts keep its history

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import core.store.db

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("removed_at", core.store.db.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.drop_column("removed_at")
