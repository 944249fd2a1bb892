"""The sandbox platform's fault injection: what may go wrong, and when it does.

A :class:`FaultConfig` is what ``PUT /sandbox/faults`` sets; a :class:`FaultPlan` holds
the config with its seeded RNG and decides, once per new post and once per upload, which
fault (if any) that request gets and whether an upload's processing will fail: the
sandbox's own ``POST /api/*/posts`` and ``POST /api/*/media``, Mastodon's
``POST /api/v1/statuses`` and ``POST /api/v2/media`` and Bluesky's ``createRecord``,
``putRecord`` and ``uploadBlob`` alike (``mastodon.py``, ``bluesky.py``). Every decision
draws the same number of random values, posts and uploads alike, so a run with a given
``seed`` replays exactly, whatever the outcome of each draw.

``strategies`` and ``targets`` say which POSTs the faults apply to (``strategies``: the
APIs, the sandbox's three and its two personalities; ``targets``: posts, uploads, or
both). ``after`` and ``times`` then aim them at the n-th of those: ``after=2, times=1``
lets the first two matching POSTs through untouched and gives the third one the faults –
part 3 of a thread, say. Latency, forgotten keys, search lag, media processing time and
Mastodon's key window are not counted: they apply throughout (to the listed strategies).
``bluesky_access_ttl`` is no fault but the platform's own setting, and applies whatever
``strategies`` says.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

from core.domain.errors import UserError

#: The path prefixes of the sandbox's own platform API (``/api/<strategy>``), one per dedupe strategy.
STRATEGIES = ("native", "readback", "none")
#: The real platforms whose APIs the sandbox also speaks, each under its own prefix
#: (``/mastodon``, ``/bluesky``); their posts carry the personality as their ``strategy``.
PERSONALITIES = ("mastodon", "bluesky")
#: Every API the sandbox answers: what a stored post's ``strategy`` and the faults' ``strategies`` name.
APIS = (*STRATEGIES, *PERSONALITIES)
#: The POSTs faults can aim at: new posts (``/api/*/posts``) and uploads (``/api/*/media``).
TARGETS = ("posts", "media")


class FaultError(UserError, ValueError):
    """A fault config that cannot work; the message says which field and why."""


class Fault(StrEnum):
    """What one POST request suffers; the first group happens before the post is stored."""

    #: Answer 429 with ``Retry-After``, store nothing.
    RATE_LIMIT = "rate_limit"
    #: Answer 503, store nothing.
    ERROR_BEFORE_ACCEPT = "error_before_accept"
    #: Uploads only: answer 422 ``media_invalid`` as if the file were bad, store nothing.
    REFUSE_MEDIA = "refuse_media"
    #: Store the post, then close the socket without any answer.
    DROP_AFTER_ACCEPT = "drop_after_accept"
    #: Store the post, then answer 500.
    ERROR_AFTER_ACCEPT = "error_after_accept"
    #: Store the post, then wait ``hold_seconds`` before answering normally.
    HOLD_AFTER_ACCEPT = "hold_after_accept"
    #: Store the post, then answer one byte of the body every ``trickle_interval`` seconds:
    #: each read gets a byte before a per-read timeout ends it.
    TRICKLE_AFTER_ACCEPT = "trickle_after_accept"


#: Faults in the order they are drawn; before-accept ones first, as a platform would refuse early.
FAULT_ORDER = (
    Fault.RATE_LIMIT,
    Fault.ERROR_BEFORE_ACCEPT,
    Fault.REFUSE_MEDIA,
    Fault.DROP_AFTER_ACCEPT,
    Fault.ERROR_AFTER_ACCEPT,
    Fault.HOLD_AFTER_ACCEPT,
    Fault.TRICKLE_AFTER_ACCEPT,
)


@dataclass(frozen=True)
class FaultConfig:
    """The effective fault settings; every field is optional in the PUT body."""

    drop_after_accept: float = 0.0
    hold_after_accept: float = 0.0
    hold_seconds: float = 5.0
    trickle_after_accept: float = 0.0
    trickle_interval: float = 0.2
    error_after_accept: float = 0.0
    error_before_accept: float = 0.0
    rate_limit: float = 0.0
    refuse_media: float = 0.0
    retry_after: int = 1
    latency: float = 0.0
    forget_keys_after: float | None = None
    #: Seconds an accepted post stays invisible to the key search (``GET /api/*/posts``),
    #: as a platform's search index lags behind its writes.
    search_lag: float = 0.0
    #: Seconds an upload stays ``processing`` before it is ``ready`` (or ``failed``), as a
    #: platform transcodes a video; fixed at upload, so a restart or a new config keeps it.
    media_processing_seconds: float = 0.0
    #: The chance that an upload's processing ends ``failed``, drawn once at upload.
    media_processing_fails: float = 0.0
    #: Seconds from creating a Mastodon status to remembering its ``Idempotency-Key``:
    #: Mastodon checks the key, creates and distributes the status, and only then stores
    #: the key, so a second request with the key meanwhile finds none and posts again.
    mastodon_status_seconds: float = 0.0
    #: Seconds a Bluesky access token lives (the PDS's own: 120 minutes); after that
    #: every call made with it answers 400 ``ExpiredToken`` until the client refreshes.
    bluesky_access_ttl: float = 7200.0
    #: The APIs the faults apply to: any of :data:`APIS`.
    strategies: tuple[str, ...] = APIS
    #: Which POSTs get the faults: ``posts``, ``media`` (uploads), or both.
    targets: tuple[str, ...] = TARGETS
    #: How many matching POSTs pass untouched before the faults apply.
    after: int = 0
    #: How many matching POSTs (after the first ``after``) may get a fault; None: all.
    times: int | None = None
    seed: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["strategies"] = list(self.strategies)
        data["targets"] = list(self.targets)
        return data

    @classmethod
    def from_json(cls, body: object) -> FaultConfig:
        """Build a config from a PUT body; missing fields take their defaults.

        Raises:
            FaultError: the body is not an object, names an unknown field, or a value is out of range.
        """
        if not isinstance(body, Mapping):
            raise FaultError("the fault config must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(body) - known)
        if unknown:
            raise FaultError(f"unknown fault field(s) {unknown}; known fields: {sorted(known)}")
        values: dict[str, Any] = {}
        for name in (*(f.value for f in FAULT_ORDER), "media_processing_fails"):
            if name in body:
                values[name] = _probability(name, body[name])
        for name in _DURATIONS:
            if name in body:
                values[name] = _seconds(name, body[name])
        if body.get("forget_keys_after") is not None:
            values["forget_keys_after"] = _seconds("forget_keys_after", body["forget_keys_after"])
        if "retry_after" in body:
            values["retry_after"] = _count("retry_after", body["retry_after"])
        if body.get("after") is not None:
            values["after"] = _count("after", body["after"])
        if body.get("times") is not None:
            values["times"] = _count("times", body["times"])
        if body.get("seed") is not None:
            if not _is_int(body["seed"]):
                raise FaultError(f"seed must be an integer, got {body['seed']!r}")
            values["seed"] = body["seed"]
        if body.get("strategies") is not None:
            values["strategies"] = _names("strategies", body["strategies"], APIS)
        if body.get("targets") is not None:
            values["targets"] = _names("targets", body["targets"], TARGETS)
        return cls(**values)


#: The fields that are durations in seconds.
_DURATIONS = (
    "hold_seconds",
    "trickle_interval",
    "latency",
    "search_lag",
    "media_processing_seconds",
    "mastodon_status_seconds",
    "bluesky_access_ttl",
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FaultError(f"{name} must be a number, got {value!r}")
    return float(value)


def _probability(name: str, value: object) -> float:
    number = _number(name, value)
    if not 0.0 <= number <= 1.0:
        raise FaultError(f"{name} is a probability and must be between 0 and 1, got {value!r}")
    return number


def _seconds(name: str, value: object) -> float:
    number = _number(name, value)
    if number < 0:
        raise FaultError(f"{name} is a duration in seconds and must not be negative, got {value!r}")
    return number


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FaultError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _names(name: str, value: object, known: tuple[str, ...]) -> tuple[str, ...]:
    """A list of names out of ``known`` (``strategies``, ``targets``), without repeats."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FaultError(f"{name} must be a list of names out of {list(known)}, got {value!r}")
    wrong = sorted(set(value) - set(known))
    if wrong:
        raise FaultError(f"unknown {name} {wrong}; known {name}: {list(known)}")
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True)
class Decision:
    """What one POST suffers: at most one fault, and for an upload whether its processing fails."""

    fault: Fault | None = None
    #: The upload's processing ends ``failed`` (``media_processing_fails``); unused for posts.
    processing_fails: bool = False


#: The decision for a POST the faults do not apply to.
UNTOUCHED = Decision()


class FaultPlan:
    """The current fault config, its RNG and how many requests to skip and to fault; thread-safe."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self.config = FaultConfig()
        self._rng = random.Random()
        self._remaining: int | None = None
        self._to_skip = 0
        self.configure(config or FaultConfig())

    def configure(self, config: FaultConfig) -> None:
        """Replace the config; reseeds the RNG and restarts the ``after`` and ``times`` counts."""
        with self._lock:
            self.config = config
            self._rng = random.Random(config.seed)
            self._remaining = config.times
            self._to_skip = config.after

    def choose(self, strategy: str, target: str) -> Decision:
        """What one POST request to ``strategy`` suffers; ``target`` is ``posts`` or ``media``.

        A request to a listed strategy and target first uses up one of ``after`` (and gets
        no fault), then one of ``times``. ``refuse_media`` is drawn for posts too, and never
        hits them, so that every decision draws the same values.
        """
        with self._lock:
            config = self.config
            if strategy not in config.strategies or target not in config.targets or self._remaining == 0:
                return UNTOUCHED
            if self._to_skip > 0:
                self._to_skip -= 1
                return UNTOUCHED
            if self._remaining is not None:
                self._remaining -= 1
            # Draw every value even after a hit, so the RNG advances the same way each request.
            draws = [(fault, self._rng.random()) for fault in FAULT_ORDER]
            processing_draw = self._rng.random()
        fails = processing_draw < config.media_processing_fails
        for fault, draw in draws:
            if fault is Fault.REFUSE_MEDIA and target != "media":
                continue  # drawn all the same, and never a post's fault
            if draw < getattr(config, fault.value):
                return Decision(fault, processing_fails=fails)
        return Decision(processing_fails=fails)
