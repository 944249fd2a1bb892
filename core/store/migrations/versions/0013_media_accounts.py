"""media.account_id: a kept file belongs to one account, which alone sees and attaches it

Revision ID: 0013
Revises: 0011
Create Date: 2026-12-05 10:00:00.000000

Existing rows get an account by one rule, in order:

1. the account of the oldest post that carries the file (``post_media``);
2. else (a file no post carries) the oldest account (the lowest id);
3. else (no account at all yet) an account named ``default``, made here, as
   `herald channel add` and `herald media add` make it.

A file that posts of several accounts carry goes to the oldest post's account; the other
accounts' posts keep it (they still publish and show it), but no other account can attach
it anew: it uploads the file again, which makes that account's own row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from core.store.db import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_accounts = sa.table(
    "accounts",
    sa.column("id", sa.Integer()),
    sa.column("name", sa.String()),
    sa.column("status", sa.String()),
    sa.column("emergency_stop", sa.Boolean()),
    sa.column("created_at", UTCDateTime(timezone=True)),
)
_media = sa.table("media", sa.column("id", sa.Integer()), sa.column("account_id", sa.Integer()))
_posts = sa.table("posts", sa.column("id", sa.Integer()), sa.column("account_id", sa.Integer()))
_post_media = sa.table("post_media", sa.column("post_id", sa.Integer()), sa.column("media_id", sa.Integer()))


def _backfill(conn: sa.Connection) -> None:
    oldest_post_account = (
        sa.select(_posts.c.account_id)
        .select_from(_post_media.join(_posts, _posts.c.id == _post_media.c.post_id))
        .where(_post_media.c.media_id == _media.c.id)
        .order_by(_posts.c.id)
        .limit(1)
        .scalar_subquery()
    )
    conn.execute(_media.update().values(account_id=oldest_post_account))
    if conn.execute(sa.select(sa.func.count()).select_from(_media).where(_media.c.account_id.is_(None))).scalar():
        oldest = conn.execute(sa.select(sa.func.min(_accounts.c.id))).scalar()
        if oldest is None:
            oldest = conn.execute(
                _accounts.insert()
                .values(name="default", status="active", emergency_stop=False, created_at=sa.func.current_timestamp())
                .returning(_accounts.c.id)
            ).scalar_one()
        conn.execute(_media.update().where(_media.c.account_id.is_(None)).values(account_id=oldest))


def upgrade() -> None:
    with op.batch_alter_table("media", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.Integer(), nullable=True))
    _backfill(op.get_bind())
    # The unique constraint 0008 made on digest has no name of its own: PostgreSQL called
    # it media_digest_key; SQLite's is named here by convention, to drop it.
    with op.batch_alter_table(
        "media", schema=None, naming_convention={"uq": "%(table_name)s_%(column_0_name)s_key"}
    ) as batch_op:
        batch_op.alter_column("account_id", existing_type=sa.Integer(), nullable=False)
        batch_op.drop_constraint("media_digest_key", type_="unique")
        batch_op.create_foreign_key("fk_media_account_id_accounts", "accounts", ["account_id"], ["id"])
        batch_op.create_unique_constraint("uq_media_account_digest", ["account_id", "digest"])
        batch_op.create_index("ix_media_digest", ["digest"], unique=False)


def downgrade() -> None:
    # Refused by the database while several accounts keep the same bytes (the old unique
    # digest): remove the extra rows first.
    with op.batch_alter_table("media", schema=None) as batch_op:
        batch_op.drop_index("ix_media_digest")
        batch_op.drop_constraint("uq_media_account_digest", type_="unique")
        batch_op.drop_constraint("fk_media_account_id_accounts", type_="foreignkey")
        batch_op.drop_column("account_id")
        batch_op.create_unique_constraint("media_digest_key", ["digest"])
