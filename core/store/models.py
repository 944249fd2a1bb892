"""The tables. Truth lives here; the queue only carries post ids (§2).

Every write to posts, deliveries, parts, publications and attempts goes through
``core.ledger``; other modules read these models but do not change them.
"""

from __future__ import annotations

import enum
from datetime import datetime, time
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Enum, Float, ForeignKey, Index, Integer, String, Text, Time, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from core.domain.recurrence import SlotOutcome
from core.domain.roles import Role
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason, UploadState
from core.store.db import UTCDateTime
from core.store.sealing import Sealed


def _enum(kind: type[enum.Enum]) -> Enum:
    # Stored as plain strings so adding a member needs no database type change.
    return Enum(
        kind,
        native_enum=False,
        create_constraint=False,
        length=24,
        values_callable=lambda members: [m.value for m in members],
    )


#: Longest name of an account or a channel.
NAME_LENGTH = 120


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime()}


class AccountStatus(enum.StrEnum):
    #: In good standing.
    ACTIVE = "active"
    #: The bill is unpaid: publishing is held.
    UNPAID = "unpaid"
    #: Suspended: publishing is held.
    SUSPENDED = "suspended"


class Approval(enum.StrEnum):
    #: No approval workflow for this post.
    NOT_REQUIRED = "not_required"
    #: Waiting for a reviewer: admission holds it.
    PENDING = "pending"
    #: A reviewer approved it.
    APPROVED = "approved"


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    status: Mapped[AccountStatus] = mapped_column(_enum(AccountStatus), default=AccountStatus.ACTIVE)
    emergency_stop: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]


class ApiKey(Base):
    """An API key: shown once when made, stored as the SHA-256 of its secret part.

    The key's ``prefix`` (its public part, in the key itself) finds the row; the secret is
    compared by hash in constant time. A key sees only its account, and acts as its role.
    """

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    #: The key's public part (``hk_PREFIX_SECRET``): says which key, proves nothing.
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    role: Mapped[Role] = mapped_column(_enum(Role))
    #: What the key is for, in the words of whoever made it.
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]


class LoginLink(Base):
    """A one-time dashboard login link for a key (``make run`` prints one): used once, or
    expired, it opens nothing."""

    __tablename__ = "login_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id"), index=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class Switch(Base):
    """Global switches (the global emergency stop)."""

    __tablename__ = "switches"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    on: Mapped[bool] = mapped_column(default=False)
    changed_at: Mapped[datetime]


class Channel(Base):
    __tablename__ = "channels"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    platform: Mapped[str] = mapped_column(String(64))
    #: Sealed at rest (``core.store.sealing``): the database never holds a token in clear.
    settings: Mapped[dict[str, Any]] = mapped_column(Sealed, default=dict)
    connected: Mapped[bool] = mapped_column(default=True)
    #: The channel's own limits as its platform told them when it was added or reconnected
    #: (``Adapter.channel_limits``: a Mastodon instance's configuration); None: the adapter's.
    limits: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    #: Set by `herald channel remove` on a channel whose posts keep its history; such a
    #: channel is renamed to free its name, and nothing is sent to it again.
    removed_at: Mapped[datetime | None]


class PostingSlot(Base):
    """One of a channel's weekly posting slots (§12, ``core.domain.posting_slots``): a
    weekday and a local time, with the IANA zone it is in.

    Kept as the local time and the zone's name, never as a UTC instant or a UTC minute of
    the week: those would move the slot an hour at each change of the clocks. All the slots
    of a channel are in one zone.
    """

    __tablename__ = "posting_slots"
    # Its first column serves the lookups of a channel's slots.
    __table_args__ = (UniqueConstraint("channel_id", "weekday", "local_time", name="uq_posting_slots_channel_slot"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    #: 0 for Monday … 6 for Sunday.
    weekday: Mapped[int] = mapped_column(Integer)
    local_time: Mapped[time] = mapped_column(Time)
    zone: Mapped[str] = mapped_column(String(64))


class Post(Base):
    __tablename__ = "posts"
    __table_args__ = (
        Index("ix_posts_status_scheduled_at", "status", "scheduled_at"),
        Index("ix_posts_lease_expires_at", "lease_expires_at"),
        # `post list` pages in (slot, id) order: a page seeks to its cursor and reads on,
        # whatever the table's size; per account too (it also serves the account's lookups).
        Index("ix_posts_scheduled_at_id", "scheduled_at", "id"),
        Index("ix_posts_account_id_scheduled_at_id", "account_id", "scheduled_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    status: Mapped[PostStatus] = mapped_column(_enum(PostStatus))
    #: The slot, as a UTC instant.
    scheduled_at: Mapped[datetime]
    #: The IANA zone the slot was given in; everything is shown back in it.
    zone: Mapped[str] = mapped_column(String(64), default="UTC")
    revision: Mapped[int] = mapped_column(default=1)
    #: The authoring copy: a list of {"text": ..., "media": [...]}.
    parts: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    #: Per-channel text, for the channels that do not take the authoring copy: channel id
    #: (as a string) → the text of each of its parts. None when every channel takes ``parts``.
    channel_texts: Mapped[dict[str, list[str]] | None] = mapped_column(JSON)
    #: Embargo: a hard floor the platform must not see the post before.
    not_before: Mapped[datetime | None]
    approval: Mapped[Approval] = mapped_column(_enum(Approval), default=Approval.NOT_REQUIRED)
    #: Incremented by every claim; every later write of that attempt carries it (§5).
    fence: Mapped[int] = mapped_column(default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    #: When ``herald import`` recorded the post: another system published it, and herald
    #: keeps only the record. Set, nothing arms, claims, moves, retries or edits the post
    #: (the claim's compare-and-set and arming read it), whatever its status says.
    imported_at: Mapped[datetime | None]

    deliveries: Mapped[list[Delivery]] = relationship(back_populates="post", order_by="Delivery.id")


class Delivery(Base):
    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("post_id", "channel_id", name="uq_deliveries_post_channel"),
        Index("ix_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
        # The reconciler's read-back sweep looks at recent confirmations only.
        Index("ix_deliveries_confirmed_at", "confirmed_at"),
        # `post list --needs-attention` asks of each post whether a delivery is held or failed.
        Index("ix_deliveries_post_id_status", "post_id", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    status: Mapped[DeliveryStatus] = mapped_column(_enum(DeliveryStatus))
    reason: Mapped[Reason | None] = mapped_column(_enum(Reason))
    detail: Mapped[str | None] = mapped_column(Text)
    #: When a retry (or an embargoed first send) is due.
    next_attempt_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(default=0)
    #: The attempts made before the current attempt budget began: a person's retry (or a
    #: reconnect, or a send-again) starts a fresh one, so backoff and ``max_attempts`` count
    #: ``attempts - budget_start``, while ``attempts`` keeps counting every attempt.
    budget_start: Mapped[int] = mapped_column(default=0, server_default="0")
    #: The attempt (its number in ``attempts``) that sends despite a part in doubt, a person
    #: having accepted that a second copy may appear (``herald post resolve ... send-again``);
    #: every other attempt settles the doubt by the adapter's strategy.
    resend_attempt: Mapped[int | None]
    #: §14's instants: the claim, the platform's confirmation, the first read-back sighting.
    claimed_at: Mapped[datetime | None]
    confirmed_at: Mapped[datetime | None]
    first_seen_at: Mapped[datetime | None]

    post: Mapped[Post] = relationship(back_populates="deliveries")
    channel: Mapped[Channel] = relationship()
    parts: Mapped[list[DeliveryPart]] = relationship(order_by="DeliveryPart.idx")


class DeliveryPart(Base):
    __tablename__ = "delivery_parts"
    __table_args__ = (UniqueConstraint("delivery_id", "idx", name="uq_delivery_parts_delivery_idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id"))
    idx: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    media: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    state: Mapped[PartState] = mapped_column(_enum(PartState), default=PartState.UNSENT)
    #: The natural key (core.domain.keys), written with ``sending`` before the first call.
    key: Mapped[str | None] = mapped_column(String(32))
    attempt_started_at: Mapped[datetime | None]
    platform_id: Mapped[str | None] = mapped_column(String(200))
    url: Mapped[str | None] = mapped_column(String(500))
    published_at: Mapped[datetime | None]


class Publication(Base):
    """One row per confirmed (post, channel, slot, revision): the unique index is the promise."""

    __tablename__ = "publications"
    __table_args__ = (UniqueConstraint("post_id", "channel_id", "slot", "revision", name="uq_publications_once"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    slot: Mapped[datetime]
    revision: Mapped[int]
    platform_id: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[datetime]


class IdempotencyKey(Base):
    """A create made with an idempotency key: the request, and the post it made.

    The unique index over (account, key) is the promise: two creates with one key,
    however concurrent, make one post.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("account_id", "key", name="uq_idempotency_keys_account_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    key: Mapped[str] = mapped_column(String(200))
    #: What was asked for, in the canonical form a repeat is compared with.
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: Set in the transaction that took the key, so nobody else ever sees it empty.
    post_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"))
    created_at: Mapped[datetime]


class Attempt(Base):
    """The attempts log: one row per platform call (or decision not to call)."""

    __tablename__ = "attempts"
    __table_args__ = (
        Index("ix_attempts_post_id", "post_id"),
        # The read-back sweep re-reads every delivery with an attempt in its settle window.
        Index("ix_attempts_started_at", "started_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id"))
    part_idx: Mapped[int]
    fence: Mapped[int]
    worker: Mapped[str] = mapped_column(String(200))
    #: What was done: send, resend, find, adopt, hold.
    action: Mapped[str] = mapped_column(String(24))
    started_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    outcome: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)


class SupportAction(Base):
    """What a person did to a delivery (retry, reconnect, resolve), for the timeline (§18).

    The attempts log holds what workers did; this holds what people did, so neither is
    read as the other (the read-back sweep reads attempts, for one).
    """

    __tablename__ = "support_actions"
    __table_args__ = (Index("ix_support_actions_post_id", "post_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id"))
    #: retry, reconnect, landed, send_again, adopt; imported (``herald import`` recorded it).
    action: Mapped[str] = mapped_column(String(24))
    #: The part it concerned (a resolve), None for the whole delivery.
    part_idx: Mapped[int | None]
    #: What it did, in words (the URL a person gave; "resend accepted by a person").
    detail: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime]


class AlarmKind(enum.StrEnum):
    #: A slot passed by more than the allowed delay with no publication and no hold.
    MISSED_SLOT = "missed_slot"
    #: More than one copy of a post on a channel for one slot.
    DUPLICATE = "duplicate"
    #: A recurring schedule's slot came with nothing in its queue.
    EMPTY_QUEUE = "empty_queue"


class Alarm(Base):
    """An alarm, raised once while its condition holds and resolved when it clears (§14)."""

    __tablename__ = "alarms"
    __table_args__ = (Index("ix_alarms_post_id", "post_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[AlarmKind] = mapped_column(_enum(AlarmKind))
    #: The post it is about; None for a schedule's alarm (an empty queue has no post).
    post_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"))
    #: The recurring schedule it is about (``empty_queue``), else None.
    schedule_id: Mapped[int | None] = mapped_column(ForeignKey("release_schedules.id"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    slot: Mapped[datetime]
    detail: Mapped[str] = mapped_column(Text)
    #: ``kind:post:channel`` (``kind:schedule-ID:channel``) while open, NULL once resolved:
    #: the unique index lets one alarm be open per condition, however many times two
    #: reconcilers raise it.
    open_key: Mapped[str | None] = mapped_column(String(80), unique=True)
    opened_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]


class ReleaseSchedule(Base):
    """A channel's recurring release slots (§12): an RRULE in an IANA zone, fed by a queue
    of ready posts (drafts until released). A channel may have several."""

    __tablename__ = "release_schedules"
    __table_args__ = (
        # The reconciler's one query for schedules with a slot due (removed ones hold NULL).
        Index("ix_release_schedules_next_slot_at", "next_slot_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    #: The RRULE line (``core.domain.recurrence``), computed in ``zone``.
    rrule: Mapped[str] = mapped_column(Text)
    zone: Mapped[str] = mapped_column(String(64))
    #: The rule's DTSTART: when the schedule was added.
    starts_at: Mapped[datetime]
    #: Missed slots older than this many seconds are skipped, not released.
    catch_up_seconds: Mapped[float] = mapped_column(Float)
    #: The latest slot a release took (released, empty or skipped); the schedule's start
    #: until the first. Moved only by a compare-and-set on the value read.
    last_release_slot: Mapped[datetime]
    #: The first slot after ``last_release_slot``; None once the rule has ended or the
    #: schedule was removed.
    next_slot_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    removed_at: Mapped[datetime | None]


class QueuedPost(Base):
    """A post waiting in a schedule's queue, in order (``id``); the post is a draft until
    released, and its row here goes when it is."""

    __tablename__ = "release_queue"
    __table_args__ = (Index("ix_release_queue_schedule_id_id", "schedule_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("release_schedules.id"))
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), unique=True)
    queued_at: Mapped[datetime]


class ReleaseSlot(Base):
    """What became of a schedule's slot: released (with its post), skipped, or empty.

    The unique index over (schedule, slot) records each slot once, whoever releases it.
    """

    __tablename__ = "release_slots"
    __table_args__ = (UniqueConstraint("schedule_id", "slot", name="uq_release_slots_schedule_slot"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("release_schedules.id"))
    slot: Mapped[datetime]
    outcome: Mapped[SlotOutcome] = mapped_column(_enum(SlotOutcome))
    #: The post released for the slot.
    post_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"))
    #: When the released post was scheduled to go out: the slot, or the release's now if
    #: the slot had passed (the post's timeline has the platform's confirmation).
    released_at: Mapped[datetime | None]
    #: A skipped run's last slot, and how many slots it holds (1 for every other outcome).
    through: Mapped[datetime | None]
    slots: Mapped[int] = mapped_column(default=1)
    recorded_at: Mapped[datetime]


class Tick(Base):
    """When each periodic loop last ran (the reconciler's is the health panel's first line)."""

    __tablename__ = "ticks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    at: Mapped[datetime]
    duration_ms: Mapped[float]
    armed: Mapped[int] = mapped_column(default=0)


class Media(Base):
    """A file herald keeps for attachments: content-addressed, probed once when added (§16).

    A row belongs to one account, which alone sees it and attaches it: the same bytes
    added by one account again are its same row (``account_id``, ``digest`` is unique),
    added by another account they are that account's own row over the same stored file.
    A part refers to a row by id, with its own alt text. A removed row keeps its facts
    for the history of published posts; its file goes once no account's row keeps it.
    """

    __tablename__ = "media"
    __table_args__ = (
        UniqueConstraint("account_id", "digest", name="uq_media_account_digest"),
        # Whether another account's row still keeps a file's bytes, when one is removed.
        Index("ix_media_digest", "digest"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    #: SHA-256 of the bytes, hex: where the storage keeps them.
    digest: Mapped[str] = mapped_column(String(64))
    #: Read from the bytes, never from the file name.
    mime: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    width: Mapped[int | None]
    height: Mapped[int | None]
    #: Seconds, for a video whose length ``ffprobe`` could tell; None otherwise.
    duration: Mapped[float | None] = mapped_column(Float)
    #: The name it was first added under (for people and messages).
    filename: Mapped[str] = mapped_column(String(255))
    #: The alt text a part gets when its own is not given (``herald media add --alt``).
    alt: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    removed_at: Mapped[datetime | None]

    account: Mapped[Account] = relationship(lazy="joined")


class PostMedia(Base):
    """Which posts refer to which media: a file is removed only when no unfinished post does."""

    __tablename__ = "post_media"
    __table_args__ = (Index("ix_post_media_media_id", "media_id"),)

    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), primary_key=True)
    media_id: Mapped[int] = mapped_column(ForeignKey("media.id"), primary_key=True)


class MediaUpload(Base):
    """An attachment uploaded to a platform for one part of one delivery: its platform id.

    Written (under the attempt's fence) as soon as the platform answers the upload, so a
    retry or a re-drive attaches the same upload instead of sending the file again.
    """

    __tablename__ = "media_uploads"
    __table_args__ = (UniqueConstraint("delivery_id", "part_idx", "position", name="uq_media_uploads_part_position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id"))
    part_idx: Mapped[int] = mapped_column(Integer)
    #: The attachment's place on the part, 0 for the first.
    position: Mapped[int] = mapped_column(Integer)
    media_id: Mapped[int] = mapped_column(ForeignKey("media.id"))
    platform_id: Mapped[str] = mapped_column(String(200))
    state: Mapped[UploadState] = mapped_column(_enum(UploadState))
    uploaded_at: Mapped[datetime]
    ready_at: Mapped[datetime | None]
