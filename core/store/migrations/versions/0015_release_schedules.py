"""release schedules: recurring slots, their queue and each slot's outcome; schedule alarms

Revision ID: 0015
Revises: 0011
Create Date: 2026-12-05 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from core.store.db import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "release_schedules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("channel_id", sa.Integer(), nullable=False),
        sa.Column("rrule", sa.Text(), nullable=False),
        sa.Column("zone", sa.String(length=64), nullable=False),
        sa.Column("starts_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("catch_up_seconds", sa.Float(), nullable=False),
        sa.Column("last_release_slot", UTCDateTime(timezone=True), nullable=False),
        sa.Column("next_slot_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("removed_at", UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["channel_id"], ["channels.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_release_schedules_channel_id", "release_schedules", ["channel_id"])
    op.create_index("ix_release_schedules_next_slot_at", "release_schedules", ["next_slot_at"])
    op.create_table(
        "release_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("post_id", sa.Integer(), nullable=False),
        sa.Column("queued_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"]),
        sa.ForeignKeyConstraint(["schedule_id"], ["release_schedules.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("post_id"),
    )
    op.create_index("ix_release_queue_schedule_id_id", "release_queue", ["schedule_id", "id"])
    op.create_table(
        "release_slots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("slot", UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "outcome",
            sa.Enum("released", "skipped", "empty", native_enum=False, create_constraint=False, length=24),
            nullable=False,
        ),
        sa.Column("post_id", sa.Integer(), nullable=True),
        sa.Column("released_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("through", UTCDateTime(timezone=True), nullable=True),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("recorded_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"]),
        sa.ForeignKeyConstraint(["schedule_id"], ["release_schedules.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "slot", name="uq_release_slots_schedule_slot"),
    )
    # An empty queue's alarm is about a schedule, not a post.
    with op.batch_alter_table("alarms", schema=None) as batch_op:
        batch_op.alter_column("post_id", existing_type=sa.Integer(), nullable=True)
        batch_op.add_column(sa.Column("schedule_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key("fk_alarms_schedule_id", "release_schedules", ["schedule_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("alarms", schema=None) as batch_op:
        batch_op.drop_constraint("fk_alarms_schedule_id", type_="foreignkey")
        batch_op.drop_column("schedule_id")
    op.execute("DELETE FROM alarms WHERE post_id IS NULL")
    with op.batch_alter_table("alarms", schema=None) as batch_op:
        batch_op.alter_column("post_id", existing_type=sa.Integer(), nullable=False)
    op.drop_table("release_slots")
    op.drop_index("ix_release_queue_schedule_id_id", table_name="release_queue")
    op.drop_table("release_queue")
    op.drop_index("ix_release_schedules_next_slot_at", table_name="release_schedules")
    op.drop_index("ix_release_schedules_channel_id", table_name="release_schedules")
    op.drop_table("release_schedules")
