"""index attempts by start, for the read-back sweep's settle window

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 17:45:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_attempts_started_at", "attempts", ["started_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_attempts_started_at", table_name="attempts")
