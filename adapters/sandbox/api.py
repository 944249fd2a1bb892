"""The sandbox's own platform API: one path prefix per dedupe strategy.

``/api/native``, ``/api/readback`` and ``/api/none`` each take posts (``POST /posts``, a
JSON body ``{"text", "reply_to", "root", "key", "media"}``) and uploads of media to attach
to them (``POST /media``, ``media.py``), and say whom a token is (``GET /me``). The native
strategy deduplicates by the ``Idempotency-Key`` header; readback can be searched by key
(``GET /posts?key=``); none can do neither.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.sandbox.exchange import Answer, Exchange
from adapters.sandbox.faults import STRATEGIES, Fault
from adapters.sandbox.store import Refusal


class SandboxAnswers:
    """How the sandbox's own API words the faults' answers."""

    def rate_limited(self, retry_after: int) -> Answer:
        return Answer(429, {"error": "rate_limited"}, {"Retry-After": str(retry_after)})

    def unavailable(self) -> Answer:
        return Answer(503, {"error": "unavailable", "detail": "nothing was stored"})

    def internal_error(self) -> Answer:
        return Answer(500, {"error": "internal_error"})


WORDING = SandboxAnswers()


def answer_api(exchange: Exchange) -> None:
    """Answer a request under ``/api``.

    Raises:
        Refusal: the answer is a refusal (no route, bad body, bad token...).
    """
    method, parts = exchange.method, exchange.parts[1:]
    if len(parts) not in (2, 3) or parts[0] not in STRATEGIES or parts[1] not in ("posts", "media", "me"):
        raise Refusal(404, "not_found", f"no route {method} {exchange.path}")
    strategy, route = parts[0], (method, *parts[1:])
    if route == ("GET", "me"):
        # Who the token is: what `herald channel test` asks, changing nothing.
        token = exchange.bearer()
        exchange.store.check_token(token)
        exchange.send_json(200, {"strategy": strategy, "token_ends": token[-4:]})
    elif route == ("GET", "posts"):
        _search(exchange, strategy)
    elif route == ("POST", "posts"):
        _create_post(exchange, strategy)
    elif route == ("POST", "media"):
        _upload_media(exchange, strategy)
    elif route[:2] == ("GET", "media") and len(route) == 3:
        media = exchange.store.media(parts[2])
        if media is None or media.strategy != strategy:
            raise Refusal(404, "not_found", f"no media {parts[2]!r}")
        exchange.send_json(200, media.public_json(exchange.base_url()))
    elif len(parts) == 2:
        raise Refusal(405, "method_not_allowed", f"{method} is not allowed here")
    else:
        raise Refusal(404, "not_found", f"no route {method} {exchange.path}")


def json_body(raw: bytes) -> Any:
    """Raises: Refusal: 400, the body is not JSON."""
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise Refusal(400, "bad_request", f"the body is not valid JSON: {exc}") from exc


def _search(exchange: Exchange, strategy: str) -> None:
    if strategy == "none":
        raise Refusal(404, "not_found", "this platform cannot be searched")
    key = exchange.query.get("key")
    if not key:
        raise Refusal(400, "bad_request", "give the key to search for: ?key=<key>")
    config = exchange.faults.config
    lag = config.search_lag if strategy in config.strategies else 0.0
    found = exchange.store.search(strategy, key, lag)
    base_url = exchange.base_url()
    exchange.send_json(200, {"posts": [post.public_json(base_url) for post in found]})


def _create_post(exchange: Exchange, strategy: str) -> None:
    faults = exchange.faults
    config = faults.config
    fault = faults.choose(strategy, "posts").fault
    if exchange.refused_before_accept(fault, config, WORDING):
        return
    token = exchange.bearer()
    exchange.store.check_token(token)
    if exchange.over_rate(token, WORDING):
        return
    body = json_body(exchange.raw)
    if not isinstance(body, dict):
        raise Refusal(400, "bad_request", "the body must be a JSON object")
    forget_after = config.forget_keys_after if strategy in config.strategies else None
    post, created = exchange.store.accept(
        strategy, body, token, exchange.headers.get("Idempotency-Key") or None, forget_after
    )
    answer = post.public_json(exchange.base_url())
    shown = {name: answer[name] for name in ("id", "url", "created_at")}
    exchange.answer_accepted(fault, config, post.id, Answer(201 if created else 200, shown), WORDING)


def _upload_media(exchange: Exchange, strategy: str) -> None:
    """Take one file (the raw body, typed by ``Content-Type``) to attach to a post later."""
    faults = exchange.faults
    config = faults.config
    decision = faults.choose(strategy, "media")
    if exchange.refused_before_accept(decision.fault, config, WORDING):
        return
    token = exchange.bearer()
    exchange.store.check_token(token)
    if decision.fault is Fault.REFUSE_MEDIA:
        raise Refusal(422, "media_invalid", "the platform refused the file")
    processing = config.media_processing_seconds if strategy in config.strategies else 0.0
    media = exchange.store.accept_media(
        strategy, exchange.raw, exchange.content_type(), token, processing, decision.processing_fails
    )
    body = media.public_json(exchange.base_url())
    exchange.answer_accepted(decision.fault, config, media.id, Answer(201, body), WORDING)
