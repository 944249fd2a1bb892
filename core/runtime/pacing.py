"""Paced sends: a part goes out only when every rate its channel keeps to has room (issue 16).

After an outage every overdue post is due at once. Sent as they come, they would be one
burst that the platform answers with a wall of 429s, each costing an attempt and a growing
backoff. So before a part's send the job asks the **pacer** for a turn under each rate the
channel keeps to (``Adapter.channel_rates``): the adapter's declared ones, and the
channel's own ``rate`` setting.

The pacer is one Lua script on herald's Redis, so every worker process shares it, at one
round trip per send, and only for channels that keep to a rate. For each rate it keeps a
**log**, the instants it let a send through in the last window (a sorted set, at most
``count`` long), and a **line**, the last turn it gave a waiter; and for each channel the
**turns** it gave its waiters (delivery and part → instant):

* the log holds fewer than ``count`` sends in the window and nobody waits: the send goes
  at once, and its instant joins the log. A post on time on an idle channel never waits;
* else it is given a turn: when the oldest entry leaves the window, and one ``window /
  count`` after the line, so a backlog is spread out at the sustained rate rather than
  told, all of it, to come back at the same instant; a newcomer queues behind the waiters
  even when the window has room, as that room is kept for them;
* a waiter that comes back at its turn goes when the window has room. Only a send the log
  lets through goes out, so however late jobs run, no window ever holds more than
  ``count`` of herald's sends. One that finds no room yet (the sends before it ran late)
  keeps its place if the room is a short wait away, and queues again if it is not.

A turn less than :data:`SHORT_WAIT` away is slept out in the job: rq's scheduler keeps
whole seconds, and for a window of a second or two the room often comes a moment after
the tick that woke the job. A longer one parks the delivery, its turn rounded up to a
whole second. Every window is taken :data:`MARGIN` longer than the platform's, for the
time a call takes to arrive, which is not the same for every call.

A delivery told to wait is parked like a Wait (``core.ledger.delivery_paced``): no attempt
counted, no attempt row, no backoff, its job re-armed for that instant through
``core.runtime.arming.arm`` by the worker.

The pacer is transport, not truth: when Redis cannot answer, the part is sent (fail open,
with a log line). The platform's own 429 and its ``Retry-After`` still hold herald to its
rate then, as they did before there was a pacer; a pacer that failed closed would instead
stop every paced channel because a cache is down.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import RedisError

from core.ledger import DeliveryPlan
from core.plugins.adapter import Adapter
from core.plugins.rates import Rate, RateScope
from core.runtime.clock import Clock
from core.runtime.queue import connection

log = logging.getLogger(__name__)

#: Seconds added to every rate's window. A send's instant is taken just before its call,
#: and the platform counts the call when it arrives, a few milliseconds later and not by
#: the same few each time: the margin keeps two sends ``window`` apart by herald's count
#: at least ``per_seconds`` apart by the platform's.
MARGIN = 0.05

#: A wait this short is slept out in the job, and the turn asked for again, rather than
#: parked: rq's scheduler keeps whole seconds, so a part whose room comes a moment later
#: would otherwise wait a second more (or several) for it.
SHORT_WAIT = 0.3

#: How many times one send asks for its turn, short waits slept out between.
ASKS = 3

#: How long a waiter keeps its place at the head of the line once its turn has come.
TURN_KEPT = 3600.0

#: KEYS: per rate its log (a sorted set of the instants sends went through) and its line
#: (the last turn given to a waiter); then the turns given to this channel's waiters (a
#: sorted set: waiter → turn). ARGV: now (seconds since the epoch), a member naming this
#: send in the logs, one naming its waiter (the delivery's part) in the turns, the short
#: wait, how long a turn is kept, then per rate its count and its window in seconds.
#:
#: The send's instant: when every window has room (``free``), and, unless it is a waiter
#: whose turn has come and the room is a short wait away, after the line too (one
#: ``window / count`` after each line still ahead). Now or before: it goes, counted in
#: every log. Else that instant is its turn, and each line moves on to it if it is later.
#: Returns nil when the send may go, else its turn.
_TAKE = """
local now, short, kept = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5])
local rates = (#KEYS - 1) / 2
local turns = KEYS[#KEYS]
local given = redis.call('ZSCORE', turns, ARGV[3])
local returning = given and tonumber(given) <= now
local free, behind, longest = now, now, 0
for i = 1, rates do
  local log, line = KEYS[2 * i - 1], KEYS[2 * i]
  local count, window = tonumber(ARGV[2 * i + 4]), tonumber(ARGV[2 * i + 5])
  longest = math.max(longest, window)
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window)
  redis.call('ZREMRANGEBYRANK', log, 0, -(count + 1))
  if redis.call('ZCARD', log) >= count then
    free = math.max(free, tonumber(redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')[2]) + window)
  end
  local last = tonumber(redis.call('GET', line) or '0')
  if last > now then behind = math.max(behind, last + window / count) end
end
local at = free
local first = returning and free - now <= short
if not first then at = math.max(free, behind) end
if at <= now then
  for i = 1, rates do
    redis.call('ZADD', KEYS[2 * i - 1], now, ARGV[2])
    redis.call('PEXPIRE', KEYS[2 * i - 1], math.ceil(tonumber(ARGV[2 * i + 5]) * 1000))
  end
  redis.call('ZREM', turns, ARGV[3])
  return nil
end
for i = 1, rates do
  local window = tonumber(ARGV[2 * i + 5])
  local last = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
  if at > last then
    redis.call('SET', KEYS[2 * i], string.format('%.6f', at), 'PX', math.ceil((at - now + window) * 1000))
  end
end
redis.call('ZREMRANGEBYSCORE', turns, '-inf', now - kept)
redis.call('ZADD', turns, at, ARGV[3])
redis.call('PEXPIRE', turns, math.ceil((at - now + longest + kept) * 1000))
return string.format('%.6f', at)
"""


@dataclass(frozen=True)
class Turn:
    """A send that must wait: when it may ask again, and the rate that made it wait."""

    at: datetime
    rates: tuple[Rate, ...]

    @property
    def detail(self) -> str:
        """What support staff read beside ``rate_limited``."""
        kept = ", ".join(str(rate) for rate in self.rates)
        return f"paced: herald keeps to the platform's rate ({kept}); next turn at {self.at.isoformat()}"


class Pacer:
    """The shared pacer on one Redis: :meth:`take` a turn under some rates."""

    def __init__(self, redis: Redis) -> None:
        self._take: Script = redis.register_script(_TAKE)

    def take(
        self, keys: list[str], rates: tuple[Rate, ...], turns: str, send: str, waiter: str, now: datetime
    ) -> datetime | None:
        """Take a turn under every one of ``rates`` (``keys[i]`` names rate i's budget).

        Args:
            turns: the key of the turns given to the channel's waiters.
            send: names this send in the logs (unique to it).
            waiter: names what waits (the delivery's part), the same when it asks again.

        Returns:
            None: the send may go now, and has been counted. Else its turn: the instant it
            may ask again, when it will be first in line.

        Raises:
            RedisError: the pacer could not be asked.
        """
        names = [name for key in keys for name in (f"{key}:log", f"{key}:line")]
        names.append(turns)
        args: list[str | float] = [repr(now.timestamp()), send, waiter, SHORT_WAIT, TURN_KEPT]
        for rate in rates:
            args += [rate.count, rate.per_seconds + MARGIN]
        answer = self._take(keys=names, args=args)
        if answer is None:
            return None
        return datetime.fromtimestamp(float(answer), UTC)


@functools.cache
def _pacer(redis: Redis) -> Pacer:
    return Pacer(redis)


def budget_key(adapter: Adapter, plan: DeliveryPlan, rate: Rate) -> str:
    """The Redis key of the budget ``rate`` counts this delivery's sends against."""
    whose = f"channel:{plan.channel_id}" if rate.scope is RateScope.CHANNEL else f"platform:{adapter.name}"
    return f"herald:pace:{whose}:{rate.count}/{rate.per_seconds:g}"


def turn(adapter: Adapter, plan: DeliveryPlan, part_idx: int, fence: int, clock: Clock) -> Turn | None:
    """Ask for this part's turn under its channel's rates, just before its send.

    A turn less than :data:`SHORT_WAIT` away is slept out here and asked for again (a few
    times at most), so the job sends the part itself.

    Returns:
        None: send it now (a channel that keeps to no rate never asks Redis). Else the
        turn it waits for, parked: the instant is rounded up to a whole second, as rq's
        scheduler keeps whole seconds and would otherwise start the job before its turn.

    Raises:
        ConfigError: the channel's ``rate`` setting is not a rate.
    """
    rates = adapter.channel_rates(plan.settings)
    if not rates:
        return None
    keys = [budget_key(adapter, plan, rate) for rate in rates]
    turns = f"herald:pace:turns:channel:{plan.channel_id}"
    send, waiter = f"{plan.delivery_id}:{part_idx}:{fence}", f"{plan.delivery_id}:{part_idx}"
    pacer, asked = _pacer(connection()), 0
    while True:
        now = clock.now()
        try:
            at = pacer.take(keys, rates, turns, send, waiter, now)
        except RedisError as exc:
            log.warning("delivery %s: the pacer could not be asked (%s); sending without it", plan.delivery_id, exc)
            return None
        if at is None:
            return None
        wait, asked = (at - now).total_seconds(), asked + 1
        if wait > SHORT_WAIT or asked == ASKS:
            return Turn(datetime.fromtimestamp(math.ceil(at.timestamp()), UTC), rates)
        time.sleep(wait)
