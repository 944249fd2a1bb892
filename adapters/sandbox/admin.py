"""The sandbox's admin API under ``/sandbox``: the tests' oracle and their fault switch.

``GET /sandbox/posts`` lists every accepted post in order, whichever API took it (its
``strategy`` says which: ``native``, ``readback``, ``none``, ``mastodon``, ``bluesky``),
``GET /sandbox/media`` every upload, ``GET /sandbox/held`` every answer held back and when
the client hung up on it. ``PUT /sandbox/faults`` sets the faults (``faults.py``),
``PUT /sandbox/rate`` the rate limit (``limiter.py``; ``GET`` tells what it refused),
``PUT /sandbox/tokens/{token}`` a token's state, ``DELETE /sandbox/posts`` forgets it all.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict

from adapters.sandbox.api import json_body
from adapters.sandbox.exchange import Exchange, HeldAnswer
from adapters.sandbox.faults import APIS, FaultConfig, FaultError
from adapters.sandbox.limiter import RateConfig
from adapters.sandbox.store import TOKEN_STATES, Refusal


def answer_admin(exchange: Exchange, held: list[HeldAnswer], held_lock: threading.Lock) -> None:
    """Answer a request under ``/sandbox``; ``held`` is the server's list of held-back answers.

    Raises:
        Refusal: no such route, or a body it cannot take.
    """
    store, faults = exchange.store, exchange.faults
    method, parts, query = exchange.method, exchange.parts[1:], exchange.query
    route = (method, *parts[:1])
    if route == ("GET", "health") and len(parts) == 1:
        # The pid tells `herald run` that the sandbox answering is the one it started.
        exchange.send_json(200, {"ok": True, "pid": os.getpid(), "state": str(store.state or "")})
    elif route == ("GET", "posts") and len(parts) == 1:
        strategy = query.get("strategy")
        if strategy is not None and strategy not in APIS:
            raise Refusal(400, "bad_request", f"unknown strategy {strategy!r}; use one of {list(APIS)}")
        exchange.send_json(200, {"posts": [post.admin_json() for post in store.posts(strategy)]})
    elif route == ("GET", "media") and len(parts) == 1:
        exchange.send_json(200, {"media": [media.admin_json() for media in store.uploads()]})
    elif route == ("DELETE", "posts") and len(parts) == 1:
        store.reset()
        faults.configure(FaultConfig())
        exchange.rate.configure(RateConfig())
        with held_lock:
            held.clear()
        exchange.send_json(200, {"ok": True})
    elif route == ("GET", "held") and len(parts) == 1:
        with held_lock:
            answers = [asdict(answer) for answer in held]
        exchange.send_json(200, {"held": answers})
    elif route == ("GET", "faults") and len(parts) == 1:
        exchange.send_json(200, faults.config.to_json())
    elif route == ("PUT", "faults") and len(parts) == 1:
        try:
            config = FaultConfig.from_json(json_body(exchange.raw))
        except FaultError as exc:
            raise Refusal(400, "bad_request", str(exc)) from exc
        faults.configure(config)
        exchange.send_json(200, config.to_json())
    elif route == ("GET", "rate") and len(parts) == 1:
        exchange.send_json(200, exchange.rate.to_json())
    elif route == ("PUT", "rate") and len(parts) == 1:
        try:
            rate = RateConfig.from_json(json_body(exchange.raw))
        except FaultError as exc:
            raise Refusal(400, "bad_request", str(exc)) from exc
        exchange.rate.configure(rate)
        exchange.send_json(200, exchange.rate.to_json())
    elif route == ("PUT", "tokens") and len(parts) == 2:
        body = json_body(exchange.raw)
        state = body.get("state") if isinstance(body, dict) else None
        if state not in TOKEN_STATES:
            raise Refusal(400, "bad_request", f'send {{"state": one of {list(TOKEN_STATES)}}}')
        store.set_token(parts[1], state)
        exchange.send_json(200, {"token": parts[1], "state": state})
    else:
        raise Refusal(404, "not_found", f"no route {method} /sandbox/{'/'.join(parts)}")
