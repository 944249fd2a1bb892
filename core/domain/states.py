"""The states of posts, deliveries and parts, and the closed list of reasons.

Transitions go through :func:`check_transition`, which every writer calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from core.domain.errors import Conflict


class PostStatus(StrEnum):
    #: Being written; never armed.
    DRAFT = "draft"
    #: Waiting for its slot.
    SCHEDULED = "scheduled"
    #: Claimed at least once; some delivery is still in flight or waiting to retry.
    PUBLISHING = "publishing"
    #: Every delivery published.
    PUBLISHED = "published"
    #: Some deliveries (or some parts of a thread) published, the rest ended otherwise.
    PARTIALLY_PUBLISHED = "partially_published"
    #: Every delivery ended without publishing.
    FAILED = "failed"
    #: A delivery waits for a person or for a hold to lift.
    HELD = "held"
    #: Withdrawn before anything was sent.
    CANCELLED = "cancelled"


class DeliveryStatus(StrEnum):
    #: Due at the post's slot (or at ``next_attempt_at`` when an embargo delays it).
    PENDING = "pending"
    #: Claimed by a worker; a part is being sent.
    SENDING = "sending"
    #: Confirmed by the platform (every part).
    PUBLISHED = "published"
    #: A transient error; tried again at ``next_attempt_at``.
    RETRY_WAIT = "retry_wait"
    #: Ended for good, with one reason.
    FAILED = "failed"
    #: Waiting for a person, or for the hold to lift, with one reason.
    HELD = "held"
    #: Withdrawn.
    CANCELLED = "cancelled"


class PartState(StrEnum):
    #: Never sent, or provably not received.
    UNSENT = "unsent"
    #: An attempt may have reached the platform: every recovery decision reads this.
    SENDING = "sending"
    #: The platform confirmed it, with its id.
    PUBLISHED = "published"


class UploadState(StrEnum):
    """An attachment uploaded to a platform, for one part on one channel."""

    #: The platform took the file and is still processing it: the part waits.
    PROCESSING = "processing"
    #: It can be attached: the part may be sent.
    READY = "ready"


class Strategy(StrEnum):
    #: The platform deduplicates on a key we send; resending with the same key is safe.
    NATIVE_KEY = "native_key"
    #: The platform can be searched for our key; find before resending.
    READ_BACK = "read_back"
    #: Neither: an attempt in doubt is held for a person.
    NONE = "none"


@dataclass(frozen=True)
class ReasonInfo:
    explanation: str
    action: str
    transient: bool = False


class Reason(StrEnum):
    """Why a delivery failed or is held: one closed list, shown to support staff verbatim."""

    AUTH_EXPIRED = "auth_expired"
    PERMISSION_DENIED = "permission_denied"
    CONTENT_REJECTED = "content_rejected"
    MEDIA_INVALID = "media_invalid"
    RATE_LIMITED = "rate_limited"
    PLATFORM_UNAVAILABLE = "platform_unavailable"
    AMBIGUOUS_OUTCOME = "ambiguous_outcome"
    DUPLICATE_SUSPECTED = "duplicate_suspected"
    THREAD_PARENT_MISSING = "thread_parent_missing"
    APPROVAL_PENDING = "approval_pending"
    EMERGENCY_STOP = "emergency_stop"
    ACCOUNT_UNPAID = "account_unpaid"
    ACCOUNT_SUSPENDED = "account_suspended"
    MEDIA_NOT_READY = "media_not_ready"
    CHANNEL_DISCONNECTED = "channel_disconnected"
    EMBARGOED = "embargoed"
    CHANNEL_MISCONFIGURED = "channel_misconfigured"
    ADAPTER_ERROR = "adapter_error"

    @property
    def info(self) -> ReasonInfo:
        return REASONS[self]

    @property
    def explanation(self) -> str:
        return REASONS[self].explanation

    @property
    def action(self) -> str:
        return REASONS[self].action


REASONS: dict[Reason, ReasonInfo] = {
    Reason.AUTH_EXPIRED: ReasonInfo(
        "The platform refused the channel's credentials.",
        "Reconnect the channel (`herald channel reconnect NAME --set token=...`); its held deliveries go out.",
    ),
    Reason.PERMISSION_DENIED: ReasonInfo(
        "The account may not post here (missing scope or role).",
        "Grant the permission on the platform, reconnect, then retry.",
    ),
    Reason.CONTENT_REJECTED: ReasonInfo(
        "The platform refused the text (too long, empty or against its rules).",
        "Edit the post to fit the platform's rules, then retry.",
    ),
    Reason.MEDIA_INVALID: ReasonInfo(
        "The platform refused an attachment (format, size or duration).",
        "Replace the attachment, then retry.",
    ),
    Reason.RATE_LIMITED: ReasonInfo(
        "The platform asked herald to slow down, or herald waits for room under the platform's rate.",
        "Nothing: herald sends it at the time the platform gave, or when its rate has room.",
        transient=True,
    ),
    Reason.PLATFORM_UNAVAILABLE: ReasonInfo(
        "The platform kept failing until herald's retries ran out.",
        "Check the platform's status page, then retry.",
    ),
    Reason.AMBIGUOUS_OUTCOME: ReasonInfo(
        "An attempt may have reached the platform and herald cannot check it.",
        "Look on the platform: `herald post resolve POST --channel NAME landed --url URL` if it is there, "
        "else `... send-again`.",
    ),
    Reason.DUPLICATE_SUSPECTED: ReasonInfo(
        "A copy of this post was on the platform before herald's first send: something else published it.",
        "Look at the copy (the detail gives its address): `herald post resolve POST --channel NAME adopt` "
        "if it is herald's, else `... send-again` to publish anyway (a second copy).",
    ),
    Reason.THREAD_PARENT_MISSING: ReasonInfo(
        "The part this one replies to is gone from the platform.",
        "Restore or republish the earlier part, then retry.",
    ),
    Reason.APPROVAL_PENDING: ReasonInfo(
        "The post waits for approval.",
        "Approve the post; it is published at its slot or at once if the slot passed.",
    ),
    Reason.EMERGENCY_STOP: ReasonInfo(
        "Publishing is stopped (everywhere or for this account).",
        "Lift the emergency stop; held posts are armed again.",
    ),
    Reason.ACCOUNT_UNPAID: ReasonInfo(
        "The account's subscription is unpaid.",
        "Settle the bill; held posts are armed again.",
    ),
    Reason.ACCOUNT_SUSPENDED: ReasonInfo(
        "The account is suspended.",
        "Lift the suspension; held posts are armed again.",
    ),
    Reason.MEDIA_NOT_READY: ReasonInfo(
        "An attachment is still being processed.",
        "Wait for processing to finish, or remove the attachment.",
    ),
    Reason.CHANNEL_DISCONNECTED: ReasonInfo(
        "The channel is disconnected.",
        "Reconnect the channel; held deliveries are armed again.",
    ),
    Reason.EMBARGOED: ReasonInfo(
        "The post may not go out before its embargo time.",
        "Nothing: herald publishes when the embargo lifts.",
        transient=True,
    ),
    Reason.CHANNEL_MISCONFIGURED: ReasonInfo(
        "The channel lacks a setting its platform needs, or names a platform herald has not enabled.",
        "Fix the channel's settings (`herald channel reconnect NAME --set key=value`); its deliveries go out.",
    ),
    Reason.ADAPTER_ERROR: ReasonInfo(
        "The platform adapter failed in a way it does not explain (a bug in the adapter).",
        "Report it to the adapter's author with the detail shown, then retry the delivery.",
    ),
}

#: Holds that admission raises and lifts by itself when their cause goes away.
ADMISSION_HOLDS = frozenset(
    {
        Reason.EMERGENCY_STOP,
        Reason.ACCOUNT_UNPAID,
        Reason.ACCOUNT_SUSPENDED,
        Reason.APPROVAL_PENDING,
        Reason.MEDIA_NOT_READY,
        Reason.CHANNEL_DISCONNECTED,
    }
)

#: Holds that `herald post retry` lifts: those whose action ends in "then retry". A failed
#: delivery is always retried; any other hold is lifted by the action its reason names
#: (resolve, approve, resume, reconnect, ...), and retry refuses it with that action.
RETRY_LIFTS = frozenset(
    {
        Reason.PERMISSION_DENIED,
        Reason.CONTENT_REJECTED,
        Reason.MEDIA_INVALID,
        Reason.PLATFORM_UNAVAILABLE,
        Reason.THREAD_PARENT_MISSING,
        Reason.ADAPTER_ERROR,
    }
)

#: Delivery states in which a job still has work to do.
ACTIVE_DELIVERY = frozenset({DeliveryStatus.PENDING, DeliveryStatus.SENDING, DeliveryStatus.RETRY_WAIT})

_D = DeliveryStatus
DELIVERY_TRANSITIONS: dict[DeliveryStatus, frozenset[DeliveryStatus]] = {
    _D.PENDING: frozenset({_D.SENDING, _D.HELD, _D.CANCELLED, _D.PENDING}),
    _D.SENDING: frozenset({_D.PUBLISHED, _D.RETRY_WAIT, _D.FAILED, _D.HELD, _D.SENDING}),
    _D.RETRY_WAIT: frozenset({_D.SENDING, _D.HELD, _D.CANCELLED, _D.FAILED, _D.PENDING, _D.RETRY_WAIT}),
    _D.HELD: frozenset({_D.PENDING, _D.CANCELLED, _D.PUBLISHED, _D.HELD}),
    # Back to pending by a retry; cancelled when its channel is taken off the post.
    _D.FAILED: frozenset({_D.PENDING, _D.CANCELLED}),
    _D.PUBLISHED: frozenset(),
    _D.CANCELLED: frozenset(),
}


def check_transition(current: DeliveryStatus, new: DeliveryStatus, reason: Reason | None = None) -> None:
    """Refuse a delivery transition the state machine does not allow.

    Raises:
        Conflict: the move is not allowed, or a held/failed state lacks its reason.
    """
    if new not in DELIVERY_TRANSITIONS[current]:
        raise Conflict(f"a delivery cannot go from {current} to {new}")
    if new in (DeliveryStatus.HELD, DeliveryStatus.FAILED) and reason is None:
        raise Conflict(f"a delivery that becomes {new} needs a reason")


class DeliveryState(NamedTuple):
    """What a post's status is summarised from: one delivery's status and how far it got."""

    status: DeliveryStatus
    #: How many of its parts the platform confirmed; above 0 on a delivery that did not
    #: end published, a thread stopped part-way (§10).
    published_parts: int = 0


def summarize(deliveries: Iterable[DeliveryState], *, claimed: bool) -> PostStatus:
    """The post's status as a summary of its deliveries.

    A delivery that ended without publishing every part but published some (a thread
    stopped at part 3 of 5) makes the post ``partially_published``, not ``failed``: part
    of it is on the platform. A held one keeps the post ``held``: a person must act.

    Args:
        deliveries: the status of every delivery of the post, with its published parts.
        claimed: whether any worker has claimed the post yet (its fence is above 0).
    """
    states = list(deliveries)
    seen = {d.status for d in states}
    if seen & ACTIVE_DELIVERY:
        return PostStatus.PUBLISHING if claimed else PostStatus.SCHEDULED
    if DeliveryStatus.HELD in seen:
        return PostStatus.HELD
    if seen == {DeliveryStatus.PUBLISHED}:
        return PostStatus.PUBLISHED
    if DeliveryStatus.PUBLISHED in seen or any(d.published_parts > 0 for d in states):
        return PostStatus.PARTIALLY_PUBLISHED
    if seen <= {DeliveryStatus.CANCELLED}:
        return PostStatus.CANCELLED
    return PostStatus.FAILED
