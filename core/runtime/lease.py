"""The lease on a post (§5): who holds it, when it is stale, and the heartbeat that renews it.

A worker claims a post with one compare-and-set in the ledger (``core.ledger.claim``),
which takes the lease only when it is free, held by this very claim (an answer lost on
the way back), or expired for longer than the grace window, and increments the fence.
The rule for "stale" is here, once: the claim, arming and the reconciler all read it.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

log = logging.getLogger(__name__)

_claims = itertools.count(1)


def claim_token() -> str:
    """A name for one claim: host, process and a number no other claim of this process has.

    It is the lease's owner and every attempt's ``worker``. Being unique per claim, a claim
    whose commit landed but whose answer was lost can recognise its own lease and its own
    ``sending`` parts when it asks again (``core.ledger.claim``).
    """
    return f"{socket.gethostname()}:{os.getpid()}:{next(_claims)}"


def stale_at(expires_at: datetime, grace: float) -> datetime:
    """When a lease that expires at ``expires_at`` may be taken over by another claim."""
    return expires_at + timedelta(seconds=grace)


def stale_before(now: datetime, grace: float) -> datetime:
    """Leases that expired before this instant are stale at ``now``."""
    return now - timedelta(seconds=grace)


def is_stale(expires_at: datetime | None, now: datetime, grace: float) -> bool:
    """Whether a lease expiring at ``expires_at`` (None: no lease) is stale at ``now``."""
    return expires_at is not None and expires_at < stale_before(now, grace)


class Heartbeat:
    """Renews one claim's lease every third of its length while the claim's calls run.

    One thread per process (:class:`_Beats`) beats for every claim in flight: starting
    and joining a thread per job would cost more than the job's own writes.

    Args:
        renew: renews the lease; returns False when it is gone (superseded by a newer
            claim, or already given back by the claim's last write).
        every: seconds between renewals.
        name: what a failed renewal is logged as.
    """

    def __init__(self, renew: Callable[[], bool], every: float, name: str) -> None:
        self._renew = renew
        self.every = every
        self.name = name
        #: Held while a beat runs, so leaving waits for one in flight.
        self.busy = threading.Lock()
        #: Set when a renewal found the lease gone: the attempt must stop.
        self.fenced = threading.Event()

    def __enter__(self) -> Heartbeat:
        _beats.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _beats.discard(self)
        with self.busy:  # no renewal of this claim runs after it ends
            pass

    def beat(self) -> None:
        if not self._renew():
            self.fenced.set()

    def beat_quietly(self) -> None:
        try:
            self.beat()
        except Exception:  # a failed renewal is retried at the next beat
            log.exception("%s: lease renewal failed", self.name)


class _Beats:
    """The process's heartbeat thread: each registered claim is renewed every ``every`` seconds."""

    def __init__(self) -> None:
        self._due: dict[Heartbeat, float] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        #: When the thread wakes up next by itself (monotonic).
        self._wakes_at = 0.0

    def add(self, hb: Heartbeat) -> None:
        with self._changed:
            due = self._due[hb] = time.monotonic() + hb.every
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="herald-heartbeat", daemon=True)
                self._thread.start()
            # Wake the thread only when it would otherwise sleep past this claim's first
            # beat: a job a few milliseconds long need not cost a thread switch.
            if due < self._wakes_at:
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
                    self._wakes_at = min(self._due.values(), default=now + 60.0)
                    self._changed.wait(self._wakes_at - now)
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
