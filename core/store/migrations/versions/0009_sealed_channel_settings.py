"""channels.settings sealed at rest: one Fernet token per channel instead of JSON in clear

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 12:00:00.000000
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from core.store import sealing

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.alter_column("settings", existing_type=sa.JSON(), type_=sa.Text(), postgresql_using="settings::text")
    conn = op.get_bind()
    channels = sa.table("channels", sa.column("id", sa.Integer()), sa.column("settings", sa.Text()))
    for row in conn.execute(sa.select(channels.c.id, channels.c.settings)).all():
        values = json.loads(row.settings) if row.settings else {}
        conn.execute(channels.update().where(channels.c.id == row.id).values(settings=sealing.seal(values)))


def downgrade() -> None:
    conn = op.get_bind()
    channels = sa.table("channels", sa.column("id", sa.Integer()), sa.column("settings", sa.Text()))
    for row in conn.execute(sa.select(channels.c.id, channels.c.settings)).all():
        conn.execute(
            channels.update().where(channels.c.id == row.id).values(settings=json.dumps(sealing.unseal(row.settings)))
        )
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.alter_column("settings", existing_type=sa.Text(), type_=sa.JSON(), postgresql_using="settings::json")
