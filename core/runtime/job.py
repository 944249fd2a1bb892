"""The publish job: ``publish_post(post_id)`` (§6).

One job per post. It claims the post (admission, keys and ``sending`` committed in the
claim; a slightly early start waits for the slot and claims again), then sends every
admitted delivery in parallel – one channel's failure never blocks another's – and
records each outcome under the claim's fence. A heartbeat renews the lease meanwhile.

A part with attachments uploads them first (§16), each platform id recorded under the
fence as soon as it is known, and waits for the platform to finish processing them: it is
never sent without them (``media_not_ready`` when processing outlasts the wait). A part on
a channel that keeps to a rate first takes its turn from the shared pacer; when it is not
its turn the delivery waits for it, unsent and uncounted (``core.runtime.pacing``).

Every way a delivery can end is an outcome with a reason (§6 step 8): the adapter's
classified errors, a channel it cannot work with (``channel_misconfigured``), a broken
reply chain (``thread_parent_missing``) and an adapter's own bug (``adapter_error``) alike.
The job returns a typed :class:`JobOutcome`; the worker reads it (``core.runtime.worker``).
"""

from __future__ import annotations

import functools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import Engine

from core import config
from core.config import Settings
from core.domain.backoff import retry_delay
from core.domain.errors import (
    AdapterError,
    Ambiguous,
    AuthExpired,
    ConfigError,
    FencedOut,
    HeraldError,
    MediaNotReady,
    NotFound,
    NotSent,
    PublishError,
    RateLimited,
    Rejected,
)
from core.domain.precheck import copy_found
from core.domain.states import DeliveryStatus, PostStatus, Reason, Strategy
from core.ledger import (
    Claim,
    DeliveryPlan,
    Early,
    PartPlan,
    claim_due_post,
    delivery_paced,
    delivery_parked,
    delivery_stopped,
    part_published,
    release,
    renew_lease,
)
from core.ledger.media import never_posted, part_uploads
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, PublishContext, Published
from core.plugins.channel_settings import precheck_on
from core.plugins.transport import http_client
from core.runtime.attaching import Attaching, uploads_done
from core.runtime.calls import call_adapter
from core.runtime.clock import Clock, DatabaseClock
from core.runtime.lease import Heartbeat, claim_token
from core.runtime.pacing import Turn, turn
from core.store import db
from threads.chain import ChainBroken, reply_targets

log = logging.getLogger(__name__)

#: Threads that run one delivery each.
_deliveries = ThreadPoolExecutor(max_workers=32, thread_name_prefix="herald-delivery")

_clock: Clock | None = None


def use_clock(clock: Clock | None) -> None:
    """Inject the clock every deadline is read from (tests); None means the database's."""
    global _clock
    _clock = clock


def clock() -> Clock:
    return _clock or _database_clock(db.engine())


@functools.cache
def _database_clock(engine: Engine) -> DatabaseClock:
    return DatabaseClock(engine)


class JobResult(StrEnum):
    #: The slot is further ahead than a job may wait: the worker re-arms it from the row.
    EARLY = "early"
    #: Done, gone, or held by a live claim of another worker.
    NOT_CLAIMED = "not_claimed"
    #: Claimed, and no delivery was due (held by admission, or waiting).
    NOTHING_DUE = "nothing_due"
    #: Claimed, and its due deliveries were sent.
    SENT = "sent"


@dataclass(frozen=True)
class DeliveryOutcome:
    """How one delivery of the claim ended this time."""

    delivery_id: int
    #: The delivery's state after the job; None when the job could not record it (fenced
    #: out by a newer claim, or the database failed: the claim's lease then goes stale).
    status: DeliveryStatus | None
    reason: Reason | None = None
    #: The part it stopped at (0 for the first), when it did not publish.
    part: int | None = None


@dataclass(frozen=True)
class JobOutcome:
    """What one run of the job did: the worker decides from it whether to re-arm."""

    post_id: int
    result: JobResult
    deliveries: tuple[DeliveryOutcome, ...] = ()
    #: Whether a write of the job committed the post as ``published``: no action leads
    #: out of that state, so there is nothing left to arm.
    settled: bool = False

    def __str__(self) -> str:
        said = ", ".join(
            f"delivery {d.delivery_id}: {d.status or 'not recorded'}{f' {d.reason}' if d.reason else ''}"
            for d in self.deliveries
        )
        return f"post {self.post_id}: {self.result}{f' ({said})' if said else ''}"


def publish_post(post_id: int) -> JobOutcome:
    """The rq job: publish every due delivery of one post."""
    cfg = config.settings()
    claim = claim_due_post(post_id, claim_token(), clock().now(), cfg.lease_seconds, cfg.grace_seconds)
    if isinstance(claim, Early):
        early = (claim.slot - clock().now()).total_seconds()
        if early > cfg.early_tolerance:
            return JobOutcome(post_id, JobResult.EARLY)
        # rq's scheduler keeps whole seconds and may start a job up to ~1 s early: wait
        # out the rest once. Still early after that (a clock that disagrees with this
        # machine's), the worker re-arms it from the row.
        time.sleep(max(early, 0.005))
        claim = claim_due_post(post_id, claim_token(), clock().now(), cfg.lease_seconds, cfg.grace_seconds)
        if isinstance(claim, Early):
            return JobOutcome(post_id, JobResult.EARLY)
    if claim is None:
        return JobOutcome(post_id, JobResult.NOT_CLAIMED)
    if not claim.plans:
        release(claim, clock().now(), cfg.lease_seconds)
        return JobOutcome(post_id, JobResult.NOTHING_DUE)
    # The lease is given back by the write that leaves no delivery 'sending' (the ledger
    # decides it from the rows).
    with heartbeat_for(claim, cfg) as heartbeat:
        # Channels in parallel; the first runs on this thread, saving a hand-off.
        first, *rest = claim.plans
        futures = [_deliveries.submit(_send_delivery, claim, plan, cfg, heartbeat) for plan in rest]
        ended = [_send_delivery(claim, first, cfg, heartbeat), *(f.result() for f in futures)]
    settled = any(status is PostStatus.PUBLISHED for _, status in ended)
    return JobOutcome(post_id, JobResult.SENT, tuple(outcome for outcome, _ in ended), settled)


def heartbeat_for(claim: Claim, cfg: Settings) -> Heartbeat:
    """The heartbeat that renews ``claim``'s lease while its calls run."""

    def renew() -> bool:
        return renew_lease(claim.post_id, claim.fence, clock().now(), cfg.lease_seconds)

    return Heartbeat(renew, cfg.lease_seconds / 3, f"post {claim.post_id}")


#: A delivery's outcome, and the post's status when its write was the last of the claim.
_Ended = tuple[DeliveryOutcome, PostStatus | None]


def _send_delivery(claim: Claim, plan: DeliveryPlan, cfg: Settings, hb: Heartbeat) -> _Ended:
    try:
        return _DeliveryRun(claim, plan, cfg, hb).run()
    except FencedOut:
        hb.fenced.set()
        return DeliveryOutcome(plan.delivery_id, None), None
    except Exception:
        # Herald's own writes failed (the database is down): nothing more can be recorded.
        # The part stays as the claim left it, the lease goes stale, and the next claim
        # settles it by the adapter's strategy.
        log.exception("post %s delivery %s: its outcome could not be recorded", claim.post_id, plan.delivery_id)
        return DeliveryOutcome(plan.delivery_id, None), None


@dataclass(frozen=True)
class _Sent:
    published: Published
    #: Found by a read-back and adopted, not sent by this attempt.
    adopted: bool


@dataclass(frozen=True)
class _HoldInDoubt:
    """An attempt in doubt that the adapter's strategy cannot settle: a person decides."""

    why: str


class _DeliveryRun:
    """Sends one delivery's parts in order, from its first unpublished one."""

    def __init__(self, claim: Claim, plan: DeliveryPlan, cfg: Settings, hb: Heartbeat):
        self.claim, self.plan, self.cfg, self.hb = claim, plan, cfg, hb
        #: What the platform confirmed of the parts that have landed, for the reply chain.
        self.landed = {p.idx: Published(p.platform_id, p.url or "") for p in plan.parts if p.platform_id is not None}

    def run(self) -> _Ended:
        plan = self.plan
        try:
            adapter = plugins.adapter(plan.platform)
        except NotFound as exc:
            return self._stop(plan.start, DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED, str(exc), plan.in_doubt)
        idx, in_doubt = plan.start, plan.in_doubt
        while True:
            if self.hb.fenced.is_set():
                raise FencedOut("heartbeat saw a newer claim")
            part = plan.parts[idx]
            try:
                ctx = self._context(part, idx)
            except ChainBroken as exc:
                return self._stop(idx, DeliveryStatus.FAILED, Reason.THREAD_PARENT_MISSING, str(exc), in_doubt)
            uploads = part_uploads(plan.delivery_id, part.idx) if part.media and adapter.uploads_first else {}
            if in_doubt and not uploads_done(adapter, part, uploads):
                # A part is posted only once its uploads are: this one never was.
                never_posted(self.claim, plan.delivery_id, part.idx, clock().now(), self.cfg.lease_seconds)
                in_doubt = False
            try:
                paced = turn(adapter, plan, part.idx, self.claim.fence, clock())
            except ConfigError as exc:  # the channel's own rate setting is no rate
                return self._stop(idx, DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED, str(exc), in_doubt)
            if paced is not None:
                return self._paced(idx, in_doubt, paced)
            # After any wait for the turn: a call in doubt is never raced before its deadline.
            started = clock().now()
            if self._checks_first(adapter, idx, in_doubt):
                stopped = self._check_first(adapter, idx, ctx, started)
                if stopped is not None:
                    return stopped
            try:
                if part.media:
                    ctx = Attaching(self.claim, plan, self.cfg, self.hb, clock).attach(adapter, part, ctx, uploads)
                sent = self._attempt(adapter, part, ctx, in_doubt)
            except ConfigError as exc:
                return self._stop(idx, DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED, str(exc), in_doubt)
            except PublishError as exc:
                return self._failed(adapter, idx, in_doubt, exc, started)
            except FencedOut:
                raise  # a newer claim holds the post: record nothing (``_send_delivery``)
            except HeraldError as exc:  # another of herald's errors, raised inside the adapter
                return self._failed(adapter, idx, in_doubt, AdapterError(f"{exc!r}", sent=True), started)
            if isinstance(sent, _HoldInDoubt):
                return self._stop(idx, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, sent.why, True)
            self.landed[idx] = sent.published
            status = part_published(
                self.claim,
                plan.delivery_id,
                idx,
                sent.published,
                clock().now(),
                self.cfg.lease_seconds,
                adopted=sent.adopted,
                first=self.landed[plan.parts[0].idx],
            )
            if status is not None:
                return DeliveryOutcome(plan.delivery_id, DeliveryStatus.PUBLISHED), status
            idx, in_doubt = idx + 1, False

    def _paced(self, idx: int, in_doubt: bool, paced: Turn) -> _Ended:
        """Not the part's turn under its channel's rate: the delivery waits for it, unsent."""
        delivery_paced(
            self.claim,
            self.plan.delivery_id,
            idx,
            in_doubt=in_doubt,
            until=paced.at,
            detail=paced.detail,
            now=clock().now(),
            lease=self.cfg.lease_seconds,
        )
        return DeliveryOutcome(self.plan.delivery_id, DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED, idx), None

    def _context(self, part: PartPlan, idx: int) -> PublishContext:
        reply_to, root = reply_targets({i: p.platform_id for i, p in self.landed.items()}, idx)
        return PublishContext(
            settings=self.plan.settings,
            key=part.key,
            text=part.text,
            part_index=idx,
            reply_to=reply_to,
            root=root,
            client=http_client(self.cfg.call_timeout),
            heartbeat=self.hb.beat,
        )

    def _attempt(self, adapter: Adapter, part: PartPlan, ctx: PublishContext, in_doubt: bool) -> _Sent | _HoldInDoubt:
        """Send the part, or first settle an earlier attempt in doubt by the adapter's strategy."""
        timeout = self.cfg.call_timeout
        if in_doubt:
            strategy = adapter.strategy
            # A person accepted that a second copy may appear (``post resolve ... send-again``):
            # where the strategy would hold the part for a person, this one attempt sends.
            resend = self.plan.resend_accepted
            if strategy is Strategy.NATIVE_KEY and not self._key_remembered(adapter, part):
                if adapter.can_find:
                    strategy = Strategy.READ_BACK
                elif not resend:
                    return _HoldInDoubt("the platform has forgotten the key; it cannot be searched")
            if strategy is Strategy.READ_BACK:
                found = call_adapter(adapter.find, ctx, timeout)
                if found is not None:
                    return _Sent(found, adopted=True)  # it landed: no second call
            elif strategy is Strategy.NONE and not (resend or _opted_into_resend(self.plan.settings)):
                return _HoldInDoubt("an earlier attempt may have landed and the platform cannot be asked")
        return _Sent(call_adapter(adapter.publish, ctx, timeout), adopted=False)

    def _checks_first(self, adapter: Adapter, idx: int, in_doubt: bool) -> bool:
        """Whether the pre-publish check comes before the send of part ``idx``
        (``core.domain.precheck``): a ``read_back`` channel that has it on, a part no
        attempt of herald's has sent, and no person's "publish anyway" for it (which lets
        through the part it was said of, not the thread's later ones). Other strategies
        pay nothing."""
        plan = self.plan
        return (
            adapter.strategy is Strategy.READ_BACK
            and not (in_doubt or plan.parts[idx].tried or (plan.resend_accepted and idx == plan.start))
            and adapter.can_find
            and precheck_on(adapter, plan.settings)
        )

    def _check_first(self, adapter: Adapter, idx: int, ctx: PublishContext, started: datetime) -> _Ended | None:
        """Look for the part on the platform before its first send, under the call's deadline.

        A copy there was published by something else: the delivery is held
        ``duplicate_suspected`` with the copy's address, for a person to adopt it or publish
        anyway – never skipped, never overwritten. A search that fails sent nothing: it is
        parked for a retry like any call that did not reach the platform (rate limits
        honoured), never followed by a blind send; refused credentials hold it as a send's
        would. Each leaves the part untried, so the next attempt looks again.

        Returns:
            None when the platform has no copy: send it.
        """
        try:
            found = call_adapter(adapter.find, ctx, self.cfg.call_timeout)
        except AuthExpired as exc:
            said = f"the search before the first send: {type(exc).__name__}: {exc}"
            return self._stop(idx, DeliveryStatus.HELD, Reason.AUTH_EXPIRED, said, False, disconnect=True, untried=True)
        except ConfigError as exc:
            return self._stop(idx, DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED, str(exc), False, untried=True)
        except FencedOut:
            raise
        except HeraldError as exc:
            return self._failed(adapter, idx, False, _search_failed(exc), started, untried=True)
        if found is None:
            return None
        detail = copy_found(found.url, found.platform_id)
        return self._stop(idx, DeliveryStatus.HELD, Reason.DUPLICATE_SUSPECTED, detail, False, untried=True)

    def _key_remembered(self, adapter: Adapter, part: PartPlan) -> bool:
        if adapter.key_ttl is None or part.attempt_started_at is None:
            return True
        return clock().now() - part.attempt_started_at < timedelta(seconds=adapter.key_ttl)

    def _failed(
        self, adapter: Adapter, idx: int, in_doubt: bool, exc: PublishError, started: datetime, *, untried: bool = False
    ) -> _Ended:
        plan, detail = self.plan, f"{type(exc).__name__}: {exc}"
        # Whether this call may have landed; a part in doubt stays in doubt, as a resend
        # that provably failed says nothing of the earlier attempt.
        landed = isinstance(exc, Ambiguous) or (isinstance(exc, AdapterError) and exc.sent)
        doubt = in_doubt or landed
        if isinstance(exc, AuthExpired):
            return self._stop(idx, DeliveryStatus.HELD, Reason.AUTH_EXPIRED, detail, doubt, disconnect=True)
        if isinstance(exc, Rejected):
            return self._stop(idx, DeliveryStatus.FAILED, exc.reason, detail, doubt)
        if doubt and adapter.strategy is Strategy.NONE and not _opted_into_resend(plan.settings):
            return self._stop(idx, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, detail, True)
        retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
        # §6 step 7: a call that may still land is never raced by the next attempt (a
        # read-back, or a resend), which waits until its deadline has surely passed.
        floor = started + timedelta(seconds=self.cfg.call_timeout) if landed else None
        next_attempt_at = self._next_attempt(retry_after, floor)
        if isinstance(exc, RateLimited):
            reason: Reason | None = Reason.RATE_LIMITED
        elif isinstance(exc, MediaNotReady):
            reason = Reason.MEDIA_NOT_READY
        elif isinstance(exc, AdapterError):
            reason = Reason.ADAPTER_ERROR
        else:
            reason = None
        status, why = delivery_parked(
            self.claim,
            plan.delivery_id,
            idx,
            in_doubt=doubt,
            next_attempt_at=next_attempt_at,
            reason=reason,
            detail=detail,
            now=clock().now(),
            lease=self.cfg.lease_seconds,
            exhausted=_exhausted(exc),
            untried=untried,
        )
        return DeliveryOutcome(plan.delivery_id, status, why, idx), None

    def _next_attempt(self, retry_after: float | None, floor: datetime | None) -> datetime | None:
        # The budget a person's retry renewed: attempts before it do not count.
        used = self.plan.attempts - self.plan.budget_start
        if used >= self.cfg.max_attempts:
            return None
        delay = retry_delay(used, base=self.cfg.backoff_base, cap=self.cfg.backoff_max, retry_after=retry_after)
        at = clock().now() + timedelta(seconds=delay)
        return at if floor is None else max(at, floor)

    def _stop(
        self,
        idx: int,
        status: DeliveryStatus,
        reason: Reason,
        detail: str,
        in_doubt: bool,
        *,
        disconnect: bool = False,
        untried: bool = False,
    ) -> _Ended:
        delivery_stopped(
            self.claim,
            self.plan.delivery_id,
            idx,
            status=status,
            reason=reason,
            detail=detail,
            in_doubt=in_doubt,
            now=clock().now(),
            lease=self.cfg.lease_seconds,
            disconnect=disconnect,
            untried=untried,
        )
        return DeliveryOutcome(self.plan.delivery_id, status, reason, idx), None


def _exhausted(exc: PublishError) -> Reason:
    """The reason a delivery fails with when its attempts run out on ``exc``."""
    if isinstance(exc, AdapterError):
        return Reason.ADAPTER_ERROR
    if isinstance(exc, MediaNotReady):
        return Reason.MEDIA_NOT_READY
    return Reason.PLATFORM_UNAVAILABLE


def _search_failed(exc: HeraldError) -> PublishError:
    """A failed pre-publish search as the outcome of a call that sent nothing: whatever the
    search answered (a 5xx, a timeout), no post was made, so the part is never left in doubt
    (which a ``read_back`` retry would settle by adopting the copy of unknown origin)."""
    said = f"the search before the first send failed, so nothing was sent: {type(exc).__name__}: {exc}"
    if isinstance(exc, RateLimited):
        return RateLimited(said, retry_after=exc.retry_after, status=exc.status)
    if isinstance(exc, AdapterError):
        return AdapterError(said, sent=False)
    return NotSent(said, status=exc.status if isinstance(exc, PublishError) else None)


def _opted_into_resend(channel_settings: dict[str, object]) -> bool:
    return str(channel_settings.get("resend_in_doubt", "")).lower() in ("1", "true", "yes")
