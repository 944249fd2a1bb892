"""The publish job: ``publish_post(post_id)`` (§6).

One job per post. It claims the post (admission, keys and ``sending`` committed in the
claim; a slightly early start waits for the slot and claims again), then sends every
admitted delivery in parallel – one channel's failure never blocks another's – and
records each outcome under the claim's fence. A heartbeat renews the lease meanwhile.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timedelta
from typing import TypeVar

from core import ledger
from core.config import Settings, settings
from core.domain.backoff import retry_delay
from core.domain.errors import (
    Ambiguous,
    AuthExpired,
    FencedOut,
    NotFound,
    PublishError,
    RateLimited,
    Rejected,
)
from core.domain.states import DeliveryStatus, Reason, Strategy
from core.ledger import Claim, DeliveryPlan, PartPlan
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, PublishContext, Published
from core.plugins.transport import call_platform, http_client
from core.runtime.clock import Clock, DatabaseClock
from core.store import db
from threads.chain import reply_targets

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Threads that run platform calls, so each call can be abandoned at its hard timeout.
_calls = ThreadPoolExecutor(max_workers=64, thread_name_prefix="herald-call")
#: Threads that run one delivery each.
_deliveries = ThreadPoolExecutor(max_workers=32, thread_name_prefix="herald-delivery")

_clock: Clock | None = None


def use_clock(clock: Clock | None) -> None:
    """Inject the clock every deadline is read from (tests); None means the database's."""
    global _clock
    _clock = clock


def clock() -> Clock:
    return _clock or DatabaseClock(db.engine())


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def publish_post(post_id: int) -> str:
    """The rq job: publish every due delivery of one post. Returns what it did, in words."""
    cfg = settings()
    while True:
        claim = ledger.claim_due_post(post_id, worker_name(), clock().now(), cfg.lease_seconds, cfg.grace_seconds)
        if not isinstance(claim, ledger.Early):
            break
        early = (claim.slot - clock().now()).total_seconds()
        if early > cfg.early_tolerance:
            return "early: re-armed for the slot"  # the worker re-arms from the row (core.runtime.worker)
        # rq's scheduler keeps whole seconds and may start a job up to ~1 s early.
        time.sleep(max(early, 0.005))
    if claim is None:
        return "not claimed: done, gone, or claimed by another worker"
    outcome = _run_claim(claim, cfg)
    if claim.published.is_set():
        _settled.post_id = post_id
    return outcome


#: The post this thread's last job left ``published``, for :func:`settled`.
_settled = threading.local()


def settled(post_id: int) -> bool:
    """Whether this thread's job for ``post_id`` ended with the post ``published``.

    Such a post has nothing left to arm, so the worker skips its re-arm (a read and a
    Redis round trip per publish). Reading it forgets it.
    """
    done: int | None = getattr(_settled, "post_id", None)
    _settled.post_id = None
    return done == post_id


def _run_claim(claim: Claim, cfg: Settings) -> str:
    if not claim.plans:
        ledger.release(claim, clock().now(), cfg.lease_seconds)
        return "nothing due"
    # The lease is given back by the write that leaves no delivery 'sending' (the ledger
    # decides it from the rows). A delivery that ended in an unexpected error stays
    # 'sending', so the lease goes stale and the re-drive waits out the grace window
    # rather than spinning on the same error.
    with Heartbeat(claim, cfg) as heartbeat:
        # Channels in parallel; the first runs on this thread, saving a hand-off.
        first, *rest = claim.plans
        futures = [_deliveries.submit(_send_delivery, claim, plan, cfg, heartbeat) for plan in rest]
        outcomes = [_send_delivery(claim, first, cfg, heartbeat), *(f.result() for f in futures)]
    return ", ".join(outcomes)


class Heartbeat:
    """Renews the lease every third of its length while the claim's calls run.

    One thread per process (:class:`_Beats`) beats for every claim in flight: starting
    and joining a thread per job would cost more than the job's own writes.
    """

    def __init__(self, claim: Claim, cfg: Settings) -> None:
        self._claim = claim
        self._cfg = cfg
        self.every = cfg.lease_seconds / 3
        #: Held while a beat runs, so leaving waits for one in flight.
        self.busy = threading.Lock()
        #: Set when a renewal found the lease gone – superseded by a newer claim (the
        #: attempt must stop) or already given back by the claim's last write.
        self.fenced = threading.Event()

    def __enter__(self) -> Heartbeat:
        _beats.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _beats.discard(self)
        with self.busy:  # no renewal of this claim runs after it ends
            pass

    def beat(self) -> None:
        if not ledger.renew_lease(self._claim.post_id, self._claim.fence, clock().now(), self._cfg.lease_seconds):
            self.fenced.set()

    def beat_quietly(self) -> None:
        try:
            self.beat()
        except Exception:  # a failed renewal is retried at the next beat
            log.exception("post %s: lease renewal failed", self._claim.post_id)


class _Beats:
    """The process's heartbeat thread: each registered claim is renewed every ``every`` seconds."""

    def __init__(self) -> None:
        self._due: dict[Heartbeat, float] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, hb: Heartbeat) -> None:
        with self._changed:
            self._due[hb] = time.monotonic() + hb.every
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="herald-heartbeat", daemon=True)
                self._thread.start()
            self._changed.notify()

    def discard(self, hb: Heartbeat) -> None:
        with self._changed:
            self._due.pop(hb, None)

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [hb for hb, at in self._due.items() if at <= now]
                if not due:
                    wait = min(self._due.values(), default=now + 60.0) - now
                    self._changed.wait(wait)
                    continue
                for hb in due:
                    self._due[hb] = now + hb.every
                    hb.busy.acquire()
            for hb in due:
                try:
                    if hb in self._due:  # not ended meanwhile
                        hb.beat_quietly()
                finally:
                    hb.busy.release()


_beats = _Beats()


def _call(fn: Callable[[PublishContext], T], ctx: PublishContext, timeout: float) -> T:
    """One adapter call under the hard timeout, transport errors mapped once."""
    future = _calls.submit(call_platform, lambda: fn(ctx))
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise Ambiguous(f"no answer within the hard timeout of {timeout:g}s") from None


def _send_delivery(claim: Claim, plan: DeliveryPlan, cfg: Settings, hb: Heartbeat) -> str:
    try:
        return _DeliveryRun(claim, plan, cfg, hb).run()
    except FencedOut:
        hb.fenced.set()
        return f"delivery {plan.delivery_id}: fenced out"
    except Exception:
        # Leave the part as it is ('sending' if a call was made): the claim's lease goes
        # stale and the next claim resolves the doubt by the adapter's strategy.
        log.exception("post %s delivery %s: unexpected error", claim.post_id, plan.delivery_id)
        return f"delivery {plan.delivery_id}: error"


class _DeliveryRun:
    """Sends one delivery's parts in order, from its first unpublished one."""

    def __init__(self, claim: Claim, plan: DeliveryPlan, cfg: Settings, hb: Heartbeat):
        self.claim, self.plan, self.cfg, self.hb = claim, plan, cfg, hb
        #: Platform ids of the parts that have landed, for the reply chain.
        self.landed = {p.idx: p.platform_id for p in plan.parts if p.platform_id}

    def run(self) -> str:
        plan = self.plan
        try:
            adapter = plugins.adapter(plan.platform)
        except NotFound as exc:
            self._stop(plan.start, DeliveryStatus.HELD, Reason.CHANNEL_DISCONNECTED, str(exc), plan.in_doubt)
            return f"delivery {plan.delivery_id}: held (no adapter)"
        idx, in_doubt = plan.start, plan.in_doubt
        while True:
            if self.hb.fenced.is_set():
                raise FencedOut("heartbeat saw a newer claim")
            part = plan.parts[idx]
            ctx = self._context(part, idx)
            try:
                result, adopted = self._attempt(adapter, part, ctx, in_doubt)
            except _HoldInDoubt as hold:
                self._stop(idx, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, str(hold), True)
                return f"delivery {plan.delivery_id}: held ambiguous at part {idx}"
            except PublishError as exc:
                return self._failed(adapter, idx, in_doubt, exc)
            more = ledger.part_published(
                self.claim,
                plan.delivery_id,
                idx,
                result,
                clock().now(),
                self.cfg.lease_seconds,
                adopted=adopted,
            )
            if not more:
                return f"delivery {plan.delivery_id}: published"
            self.landed[idx] = result.platform_id
            idx, in_doubt = idx + 1, False

    def _context(self, part: PartPlan, idx: int) -> PublishContext:
        reply_to, root = reply_targets(self.landed, idx)
        return PublishContext(
            settings=self.plan.settings,
            key=part.key,
            text=part.text,
            part_index=idx,
            reply_to=reply_to,
            root=root,
            media=part.media,
            client=http_client(self.cfg.call_timeout),
            heartbeat=self.hb.beat,
        )

    def _attempt(self, adapter: Adapter, part: PartPlan, ctx: PublishContext, in_doubt: bool) -> tuple[Published, bool]:
        """Send the part, or first settle an earlier attempt in doubt by the adapter's strategy."""
        timeout = self.cfg.call_timeout
        if in_doubt:
            strategy = adapter.strategy
            if strategy is Strategy.NATIVE_KEY and not self._key_remembered(adapter, part):
                if not adapter.can_find:
                    raise _HoldInDoubt("the platform has forgotten the key; it cannot be searched")
                strategy = Strategy.READ_BACK
            if strategy is Strategy.READ_BACK:
                found = _call(adapter.find, ctx, timeout)
                if found is not None:
                    return found, True  # adopt: it landed; no second call
            elif strategy is Strategy.NONE and not _opted_into_resend(self.plan.settings):
                raise _HoldInDoubt("an earlier attempt may have landed and the platform cannot be asked")
        return _call(adapter.publish, ctx, timeout), False

    def _key_remembered(self, adapter: Adapter, part: PartPlan) -> bool:
        if adapter.key_ttl is None or part.attempt_started_at is None:
            return True
        return clock().now() - part.attempt_started_at < timedelta(seconds=adapter.key_ttl)

    def _failed(self, adapter: Adapter, idx: int, in_doubt: bool, exc: PublishError) -> str:
        plan, detail = self.plan, f"{type(exc).__name__}: {exc}"
        # A part in doubt stays in doubt: a resend that provably failed says nothing of
        # the earlier attempt.
        doubt = in_doubt or isinstance(exc, Ambiguous)
        if isinstance(exc, AuthExpired):
            self._stop(idx, DeliveryStatus.HELD, Reason.AUTH_EXPIRED, detail, doubt, disconnect=True)
            return f"delivery {plan.delivery_id}: held auth_expired"
        if isinstance(exc, Rejected):
            self._stop(idx, DeliveryStatus.FAILED, exc.reason, detail, doubt)
            return f"delivery {plan.delivery_id}: failed {exc.reason}"
        if doubt and adapter.strategy is Strategy.NONE and not _opted_into_resend(plan.settings):
            self._stop(idx, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, detail, True)
            return f"delivery {plan.delivery_id}: held ambiguous at part {idx}"
        retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
        ledger.delivery_parked(
            self.claim,
            plan.delivery_id,
            idx,
            in_doubt=doubt,
            next_attempt_at=self._next_attempt(retry_after),
            reason=Reason.RATE_LIMITED if isinstance(exc, RateLimited) else None,
            detail=detail,
            now=clock().now(),
            lease=self.cfg.lease_seconds,
        )
        return f"delivery {plan.delivery_id}: retry ({type(exc).__name__})"

    def _next_attempt(self, retry_after: float | None) -> datetime | None:
        if self.plan.attempts >= self.cfg.max_attempts:
            return None
        delay = retry_delay(
            self.plan.attempts, base=self.cfg.backoff_base, cap=self.cfg.backoff_max, retry_after=retry_after
        )
        return clock().now() + timedelta(seconds=delay)

    def _stop(
        self,
        idx: int,
        status: DeliveryStatus,
        reason: Reason,
        detail: str,
        in_doubt: bool,
        *,
        disconnect: bool = False,
    ) -> None:
        ledger.delivery_stopped(
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
        )


class _HoldInDoubt(Exception):
    """An attempt in doubt that the adapter's strategy cannot settle: a person decides."""


def _opted_into_resend(channel_settings: dict[str, object]) -> bool:
    return str(channel_settings.get("resend_in_doubt", "")).lower() in ("1", "true", "yes")
