"""index posts by slot and id (and per account), and deliveries by post and status, for `post list`

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 12:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_posts_scheduled_at_id", "posts", ["scheduled_at", "id"], unique=False)
    op.create_index("ix_posts_account_id_scheduled_at_id", "posts", ["account_id", "scheduled_at", "id"], unique=False)
    # The new index leads with account_id, so it serves every lookup the old one did.
    op.drop_index("ix_posts_account_id", table_name="posts")
    op.create_index("ix_deliveries_post_id_status", "deliveries", ["post_id", "status"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_deliveries_post_id_status", table_name="deliveries")
    op.create_index("ix_posts_account_id", "posts", ["account_id"], unique=False)
    op.drop_index("ix_posts_account_id_scheduled_at_id", table_name="posts")
    op.drop_index("ix_posts_scheduled_at_id", table_name="posts")
