"""support actions: what people did to a delivery, a fresh attempt budget, an accepted resend

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import core.store.db

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "support_actions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("post_id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=24), nullable=False),
        sa.Column("part_idx", sa.Integer(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("at", core.store.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["delivery_id"], ["deliveries.id"]),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("support_actions", schema=None) as batch_op:
        batch_op.create_index("ix_support_actions_post_id", ["post_id"], unique=False)
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("budget_start", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("resend_attempt", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("resend_attempt")
        batch_op.drop_column("budget_start")
    with op.batch_alter_table("support_actions", schema=None) as batch_op:
        batch_op.drop_index("ix_support_actions_post_id")
    op.drop_table("support_actions")
