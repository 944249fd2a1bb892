"""Support (§18): every hold has a way out. Retry what failed or was held, and resolve an
attempt in doubt as landed (with the platform's URL) or sent again; a copy the pre-publish
check found (``duplicate_suspected``) is resolved the same way: adopted as herald's (landed
where it was found) or published anyway (sent again).

Each action is one call here, decided and written in one transaction (the writes are the
ledger's, ``core.ledger.support``), recorded for the timeline, and followed by arming: the
ordinary claim then asks admission again (§8) and sends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.config import settings
from core.domain.admission import Hold, admit
from core.domain.errors import Conflict, NotFound, UserError
from core.domain.precheck import found_in
from core.domain.states import RETRY_LIFTS, DeliveryStatus, PartState, PostStatus, Reason
from core.ledger import support as ledger
from core.ledger.statements import GLOBAL_STOP
from core.runtime.arming import arm
from core.runtime.clock import Clock, DatabaseClock
from core.store import db
from core.store.models import Account, Delivery, DeliveryPart, Post, Switch


@dataclass(frozen=True)
class Retried:
    """A delivery `post retry` put back to be sent, and what it was."""

    channel: str
    was: DeliveryStatus
    reason: Reason | None


@dataclass(frozen=True)
class NotRetried:
    """A failed or held delivery that retry left alone, and the action that fixes it."""

    channel: str
    status: DeliveryStatus
    reason: Reason | None
    fix: str


@dataclass(frozen=True)
class RetryResult:
    """What `herald post retry` did."""

    post_id: int
    retried: tuple[Retried, ...]
    #: Deliveries a different action lifts (resolve, approve, resume, reconnect...).
    refused: tuple[NotRetried, ...]
    #: When the post's job is armed for; None when the queue could not be reached (the
    #: reconciler arms it from the rows).
    armed_at: datetime | None


@dataclass(frozen=True)
class Landed:
    """The attempt in doubt is on the platform, at ``url``.

    ``platform_id`` defaults to the URL's last path segment (``https://host/p/123`` → ``123``),
    which is how the sandbox and most platforms name a post in its URL; give it where the
    platform's id is something else.
    """

    url: str
    platform_id: str | None = None


@dataclass(frozen=True)
class SendAgain:
    """The attempt in doubt is not on the platform: send it once more, accepting that a
    second copy may appear if it was there after all. For a copy the pre-publish check
    found: publish anyway, beside it."""


@dataclass(frozen=True)
class Adopt:
    """The copy the pre-publish check found is herald's: the part is recorded published
    there (its URL and platform id as the platform gave them), and a thread goes on from it."""


ResolveOutcome = Landed | SendAgain | Adopt


@dataclass(frozen=True)
class Resolution:
    """What `herald post resolve` did."""

    post_id: int
    channel: str
    outcome: Literal["landed", "send_again", "adopt"]
    #: The part that was in doubt, or that the copy found is of (0 for the first).
    part: int
    #: Where it landed (``landed`` and ``adopt``).
    url: str | None
    platform_id: str | None
    #: The delivery's status now: ``published``, or ``pending`` while it (or the rest of
    #: its thread) waits to be sent.
    delivery_status: DeliveryStatus
    post_status: PostStatus
    armed_at: datetime | None


@dataclass(frozen=True)
class ReasonView:
    """One reason a delivery waits or failed (§3): what it means and what fixes it, in the
    words `herald post show` prints."""

    reason: Reason
    explanation: str
    action: str
    #: herald tries again by itself (a rate limit, a platform's hiccup); nobody needs to act.
    transient: bool
    #: `herald post retry` lifts a hold for this reason.
    retry_lifts: bool


def reasons() -> list[ReasonView]:
    """Every reason, in the closed list's order."""
    return [ReasonView(r, r.explanation, r.action, r.info.transient, r in RETRY_LIFTS) for r in Reason]


def retry_post(post_id: int, channel: str | None = None, *, clock: Clock | None = None) -> RetryResult:
    """Re-drive the failed and held deliveries of a post (only ``channel``'s when given),
    each with a fresh attempt budget; never a published or cancelled one.

    A held delivery is retried only when its reason's fix is a retry (``RETRY_LIFTS``); one
    held for another reason (an attempt in doubt, approval, a stop, a disconnected channel)
    is left with the action that fixes it. So is one that admission would hold right away.

    Raises:
        NotFound: no such post, or it has no delivery on ``channel``.
        Conflict: the post was imported: another system published it, herald never sends it.
        UserError: nothing to retry (each delivery's state and fix named).
    """
    now = (clock or DatabaseClock(db.engine())).now()
    with db.transaction() as s:
        post = ledger.post_for_support(s, post_id)
        deliveries = _on_channel(post, channel)
        account = s.get_one(Account, post.account_id)
        stop = _global_stop(s)
        retried: list[Retried] = []
        refused: list[NotRetried] = []
        untouched: list[str] = []
        for d in deliveries:
            name = d.channel.name
            if d.status not in (DeliveryStatus.FAILED, DeliveryStatus.HELD):
                untouched.append(f"{name} is {d.status}{_why_not_retried(d)}")
                continue
            if d.status is DeliveryStatus.HELD and d.reason not in RETRY_LIFTS:
                assert d.reason is not None  # a held delivery always has its reason (§3)
                refused.append(NotRetried(name, d.status, d.reason, fix_for(d.reason, post, name, account, stop)))
                continue
            decision = admit(post, d.channel, account, global_stop=stop, now=now)
            if isinstance(decision, Hold):
                fix = fix_for(decision.reason, post, name, account, stop)
                refused.append(NotRetried(name, d.status, d.reason, f"{decision.reason}: {fix}, then retry"))
                continue
            retried.append(Retried(name, d.status, d.reason))
            ledger.redrive(s, d, ledger.RETRY, f"retried by a person (was {d.status} {d.reason})", now)
        if not retried:
            said = [f"{r.channel} is {r.status} {r.reason}: {r.fix}" for r in refused] + untouched
            raise UserError(f"post {post_id} has nothing to retry: " + "; ".join(said))
        ledger.summarise(s, post, now)
    return RetryResult(post_id, tuple(retried), tuple(refused), arm(post_id, clock))


def resolve_post(post_id: int, channel: str, outcome: ResolveOutcome, *, clock: Clock | None = None) -> Resolution:
    """Resolve a delivery held ``ambiguous_outcome``: it ``Landed`` (recorded published
    with the platform's URL and id, under the post's fence) or should be sent again
    (``SendAgain``: the next attempt sends the part once more, for exactly one attempt).

    A delivery held ``duplicate_suspected`` (the pre-publish check found a copy herald did
    not send) is resolved by ``Adopt`` (the copy is herald's: recorded as ``landed`` where
    it was found), ``Landed`` (at another address a person gives) or ``SendAgain``
    (publish anyway: the next attempt sends without the check, and a second copy appears).

    For a thread only the part in doubt is resolved; the rest of the thread goes out.

    Raises:
        NotFound: no such post, or it has no delivery on ``channel``.
        Conflict: the delivery is not in doubt (its state and fix named), ``adopt`` of a
            delivery not held ``duplicate_suspected``, or a worker holds the post right now
            (``landed`` and ``adopt`` wait for it).
        UserError: a URL that is not one, or a platform id that cannot be derived from it.
    """
    cfg = settings()
    now = (clock or DatabaseClock(db.engine())).now()
    where = _landed_at(outcome) if isinstance(outcome, Landed) else None
    with db.transaction() as s:
        post = ledger.post_for_support(s, post_id)
        (delivery,) = _on_channel(post, channel)
        part = _to_resolve(s, post, delivery)
        if isinstance(outcome, Adopt):
            url, platform_id = _adopted(post, delivery)
            post = ledger.fence_post(s, post_id, now, cfg.grace_seconds)
            adopted = f"adopted as herald's: the copy found before the first send, at {url} (platform id {platform_id})"
            ledger.landed(s, post, delivery, part, platform_id, url, now, action=ledger.ADOPT, detail=adopted)
            status = ledger.summarise(s, post, now, fenced=True)
            done = Resolution(post_id, channel, "adopt", part.idx, url, platform_id, delivery.status, status, None)
        elif where is not None:
            url, platform_id = where
            post = ledger.fence_post(s, post_id, now, cfg.grace_seconds)
            seen = f"landed at {url} (platform id {platform_id}), as a person saw on the platform"
            ledger.landed(s, post, delivery, part, platform_id, url, now, detail=seen)
            status = ledger.summarise(s, post, now, fenced=True)
            done = Resolution(post_id, channel, "landed", part.idx, url, platform_id, delivery.status, status, None)
        else:
            if delivery.reason is Reason.DUPLICATE_SUSPECTED:
                why = f"published anyway by a person, beside the copy found before the first send ({delivery.detail})"
            else:
                why = "resend accepted by a person: a second copy may appear"
            ledger.send_again(s, delivery, part, now, why)
            status = ledger.summarise(s, post, now)
            done = Resolution(post_id, channel, "send_again", part.idx, None, None, delivery.status, status, None)
    return replace(done, armed_at=arm(post_id, clock))


def fix_for(reason: Reason, post: Post, channel: str, account: Account, global_stop: bool) -> str:
    """The action that lifts a hold with ``reason``, as the command that does it."""
    if reason is Reason.AMBIGUOUS_OUTCOME:
        resolve = f"herald post resolve {post.id} --channel {channel}"
        return f"look on the platform: `{resolve} landed --url URL` if it is there, else `{resolve} send-again`"
    if reason is Reason.APPROVAL_PENDING:
        return f"approve it: `herald post approve {post.id}`"
    if reason is Reason.EMERGENCY_STOP:
        lift = "herald resume" if global_stop else f"herald resume --account {account.name}"
        return f"publishing is stopped; lift the stop with `{lift}`"
    if reason in (Reason.ACCOUNT_UNPAID, Reason.ACCOUNT_SUSPENDED):
        return f"settle the account, then `herald account status {account.name} active`"
    if reason in (Reason.AUTH_EXPIRED, Reason.CHANNEL_DISCONNECTED, Reason.CHANNEL_MISCONFIGURED):
        return f"reconnect the channel: `herald channel reconnect {channel} --set key=value` (that re-arms it)"
    if reason is Reason.DUPLICATE_SUSPECTED:
        resolve = f"herald post resolve {post.id} --channel {channel}"
        return (
            f"look at the copy the detail names: `{resolve} adopt` if it is herald's, "
            f"else `{resolve} send-again` to publish anyway (a second copy)"
        )
    return reason.action


def _on_channel(post: Post, channel: str | None) -> list[Delivery]:
    if channel is None:
        return list(post.deliveries)
    found = [d for d in post.deliveries if d.channel.name == channel]
    if not found:
        names = ", ".join(d.channel.name for d in post.deliveries)
        raise NotFound(f"post {post.id} has no delivery on channel {channel!r}; its channels: {names}")
    return found


def _why_not_retried(d: Delivery) -> str:
    if d.status is DeliveryStatus.PUBLISHED:
        return ": retry never sends a published delivery again"
    if d.status is DeliveryStatus.CANCELLED:
        return ""
    return ": herald is still publishing it (`herald post show` says when it tries next)"


def _global_stop(s: Session) -> bool:
    return bool(s.execute(select(Switch.on).where(Switch.name == GLOBAL_STOP)).scalar())


def _to_resolve(s: Session, post: Post, delivery: Delivery) -> DeliveryPart:
    """The part of ``delivery`` whose attempt is in doubt, or that the pre-publish check
    found a copy of, when it is held for a person to resolve it.

    Raises:
        Conflict: the delivery is not held ``ambiguous_outcome`` nor ``duplicate_suspected``;
            the message says what it is and what fixes that.
    """
    name = delivery.channel.name
    held = delivery.status is DeliveryStatus.HELD
    doubtful = next((p for p in delivery.parts if p.state is PartState.SENDING), None)
    if held and delivery.reason is Reason.AMBIGUOUS_OUTCOME and doubtful:
        return doubtful
    unpublished = next((p for p in delivery.parts if p.state is not PartState.PUBLISHED), None)
    if held and delivery.reason is Reason.DUPLICATE_SUSPECTED and unpublished:
        return unpublished
    state = f"{delivery.status}{f' {delivery.reason}' if delivery.reason else ''}"
    if delivery.status is DeliveryStatus.PUBLISHED:
        fix = "nothing is in doubt"
    elif delivery.status is DeliveryStatus.FAILED or (
        delivery.status is DeliveryStatus.HELD and delivery.reason in RETRY_LIFTS
    ):
        fix = f"retry it with `herald post retry {post.id} --channel {name}`"
    elif delivery.status is DeliveryStatus.HELD and delivery.reason is not None:
        account = s.get_one(Account, post.account_id)
        fix = fix_for(delivery.reason, post, name, account, _global_stop(s))
    elif delivery.status is DeliveryStatus.CANCELLED:
        fix = "it was cancelled"
    else:
        fix = "herald is still publishing it; an attempt in doubt it cannot settle is held for you to resolve"
    raise Conflict(
        f"post {post.id} on {name} is {state}, not an attempt in doubt (held ambiguous_outcome) nor a copy "
        f"found before its first send (held duplicate_suspected): there is nothing to resolve; {fix}"
    )


def _adopted(post: Post, delivery: Delivery) -> tuple[str, str]:
    """The URL and platform id of the copy the pre-publish check found, which a person adopts.

    Raises:
        Conflict: the delivery is held for another reason (an attempt in doubt is ``landed``).
        UserError: the hold does not name the copy (give its address with ``landed``).
    """
    name = delivery.channel.name
    if delivery.reason is not Reason.DUPLICATE_SUSPECTED:
        raise Conflict(
            f"post {post.id} on {name} is held {delivery.reason}: adopt takes the copy found before a first send "
            f"(held duplicate_suspected); if the attempt in doubt is on the platform, say "
            f"`herald post resolve {post.id} --channel {name} landed --url URL`"
        )
    found = found_in(delivery.detail)
    if found is None:
        raise UserError(
            f"post {post.id} on {name}: the hold does not name the copy found; give its address with "
            f"`herald post resolve {post.id} --channel {name} landed --url URL`"
        )
    return found


def _landed_at(outcome: Landed) -> tuple[str, str]:
    """The URL and platform id a person gave (the id from the URL when not given).

    Raises:
        UserError: not an http(s) URL, or no id to take from it.
    """
    url = platform_url(outcome.url)
    platform_id = (outcome.platform_id or "").strip()
    if not platform_id:
        platform_id = next((seg for seg in reversed(urlsplit(url).path.split("/")) if seg), "")
        if not platform_id:
            raise UserError(f"--url {url!r} names no post (its path is empty); give the post's id with --platform-id")
    return url, checked_platform_id(platform_id)


def platform_url(text: str, option: str = "--url") -> str:
    """``text`` as a post's address on a platform (a resolve's ``landed``, an import's row).

    Raises:
        UserError: not an http(s) URL with a host, or longer than herald keeps (500).
    """
    url = text.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 500:
        raise UserError(f"{option} {text!r}: give the post's address on the platform, e.g. https://host/p/123")
    return url


def checked_platform_id(text: str, option: str = "--platform-id") -> str:
    """``text`` as a platform's id of a post ('' when none is given).

    Raises:
        UserError: longer than herald keeps (200).
    """
    platform_id = text.strip()
    if len(platform_id) > 200:
        raise UserError(f"{option}: at most 200 characters")
    return platform_id
