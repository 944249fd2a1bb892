"""posts.imported_at: a post another system published, recorded by `herald import`

Revision ID: 0014
Revises: 0011
Create Date: 2026-12-06 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import core.store.db

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("posts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("imported_at", core.store.db.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("posts", schema=None) as batch_op:
        batch_op.drop_column("imported_at")
