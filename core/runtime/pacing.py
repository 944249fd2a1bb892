"""Paced sends: a part goes out only when every rate its channel keeps to has room (issue 16).

After an outage every overdue post is due at once. Sent as they come, they would be one
burst that the platform answers with a wall of 429s, each costing an attempt and a growing
backoff. So before a part's send the job asks the **pacer** for a turn under each rate the
channel keeps to (``Adapter.channel_rates``): the adapter's declared ones, and the
channel's own ``rate`` setting.

The pacer is one Lua script on herald's Redis, so every worker process shares it, at one
round trip per send, and only for channels that keep to a rate. For each rate it keeps a
**log**, the instants it let a send through in the last window (a sorted set, at most
``count`` long), and a **line**, the last instant it told a waiter to come back at:

* the log holds fewer than ``count`` sends in the window: the send goes at once, and its
  instant joins the log. A post on time on an idle channel never waits;
* the log is full: the send waits until the oldest entry leaves the window, and after
  the waiter before it (the line, plus one ``window / count``), so a backlog is spread out
  at the sustained rate rather than told, all of it, to come back at the same instant.

A waiter is not promised its instant: when it comes back it asks again like any send,
and one that finds the window full (another took the room first, or the sends before it
ran late) waits again at the end of the line. Only a send the log lets through goes out,
so however late jobs run, no window ever holds more than ``count`` of herald's sends.

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
from dataclasses import dataclass
from datetime import UTC, datetime

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import RedisError

from core.ledger import DeliveryPlan
from core.plugins.adapter import Adapter
from core.plugins.rates import Rate, RateScope
from core.runtime.queue import connection

log = logging.getLogger(__name__)

#: Seconds added to every rate's window. A send's instant is taken just before its call,
#: and the platform counts the call when it arrives, a few milliseconds later and not by
#: the same few each time: the margin keeps two sends ``window`` apart by herald's count
#: at least ``per_seconds`` apart by the platform's.
MARGIN = 0.05

#: KEYS: per rate, its log (a sorted set of the sends' instants) and its line (the last
#: instant a waiter was given). ARGV: now (seconds since the epoch), a member naming this
#: send, then per rate its count and its window in seconds. Returns nil when the send may
#: go (its instant added to every log), else the instant to come back at.
_TAKE = """
local now = tonumber(ARGV[1])
local back = nil
local full = {}
for i = 1, #KEYS / 2 do
  local log, count, window = KEYS[2 * i - 1], tonumber(ARGV[2 * i + 1]), tonumber(ARGV[2 * i + 2])
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window)
  redis.call('ZREMRANGEBYRANK', log, 0, -(count + 1))
  if redis.call('ZCARD', log) >= count then
    local at = tonumber(redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')[2]) + window
    local line = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
    at = math.max(at, line + window / count)
    if back == nil or at > back then back = at end
    full[#full + 1] = i
  end
end
if back == nil then
  for i = 1, #KEYS / 2 do
    redis.call('ZADD', KEYS[2 * i - 1], now, ARGV[2])
    redis.call('PEXPIRE', KEYS[2 * i - 1], math.ceil(tonumber(ARGV[2 * i + 2]) * 1000))
  end
  return nil
end
for _, i in ipairs(full) do
  local ttl = math.ceil((back - now + tonumber(ARGV[2 * i + 2])) * 1000)
  redis.call('SET', KEYS[2 * i], string.format('%.6f', back), 'PX', ttl)
end
return string.format('%.6f', back)
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

    def take(self, keys: list[str], rates: tuple[Rate, ...], member: str, now: datetime) -> datetime | None:
        """Take a turn under every one of ``rates`` (``keys[i]`` names rate i's budget).

        Returns:
            None: the send may go now, and has been counted. Else the instant it may ask again.

        Raises:
            RedisError: the pacer could not be asked.
        """
        names = [name for key in keys for name in (f"{key}:log", f"{key}:line")]
        args: list[str | float] = [repr(now.timestamp()), member]
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


def turn(adapter: Adapter, plan: DeliveryPlan, part_idx: int, fence: int, now: datetime) -> Turn | None:
    """Ask for this part's turn under its channel's rates, just before its send.

    Returns:
        None: send it now (a channel that keeps to no rate never asks Redis). Else the
        turn it waits for: the instant is rounded up to a whole second, as rq's scheduler
        keeps whole seconds and would otherwise start the job before its turn.

    Raises:
        ConfigError: the channel's ``rate`` setting is not a rate.
    """
    rates = adapter.channel_rates(plan.settings)
    if not rates:
        return None
    keys = [budget_key(adapter, plan, rate) for rate in rates]
    try:
        at = _pacer(connection()).take(keys, rates, f"{plan.delivery_id}:{part_idx}:{fence}", now)
    except RedisError as exc:
        log.warning("delivery %s: the pacer could not be asked (%s); sending without it", plan.delivery_id, exc)
        return None
    if at is None:
        return None
    return Turn(datetime.fromtimestamp(math.ceil(at.timestamp()), UTC), rates)
