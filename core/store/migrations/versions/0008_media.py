"""media: files kept for attachments, the posts that refer to them, their uploads per part

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import core.store.db

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "media",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("mime", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("alt", sa.Text(), nullable=True),
        sa.Column("created_at", core.store.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("removed_at", core.store.db.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("digest"),
    )
    op.create_table(
        "post_media",
        sa.Column("post_id", sa.Integer(), nullable=False),
        sa.Column("media_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["media_id"], ["media.id"]),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"]),
        sa.PrimaryKeyConstraint("post_id", "media_id"),
    )
    op.create_index("ix_post_media_media_id", "post_media", ["media_id"], unique=False)
    op.create_table(
        "media_uploads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("part_idx", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("media_id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.String(length=200), nullable=False),
        sa.Column(
            "state",
            sa.Enum("processing", "ready", native_enum=False, create_constraint=False, length=24),
            nullable=False,
        ),
        sa.Column("uploaded_at", core.store.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ready_at", core.store.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["delivery_id"], ["deliveries.id"]),
        sa.ForeignKeyConstraint(["media_id"], ["media.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("delivery_id", "part_idx", "position", name="uq_media_uploads_part_position"),
    )


def downgrade() -> None:
    op.drop_table("media_uploads")
    op.drop_index("ix_post_media_media_id", table_name="post_media")
    op.drop_table("post_media")
    op.drop_table("media")
