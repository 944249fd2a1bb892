"""Every route × every role × the key's own account and another's (§15).

The routes are enumerated from the app itself: a route added without an entry in
:data:`ROUTES` fails here. A role the route's action does not allow is answered 403; an
allowed role asking for another account's post, channel or alarm is answered 404 (as if
it did not exist); on its own account's rows the call goes through to the service.

Media and keys are scoped like posts: another account's file or key is not found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.api.app import create_app
from core.domain.roles import Action, Role, allows
from tests.api.conftest import SECRET_TOKEN, Side, TestClient, World
from tests.integration.media_files import png

pytestmark = pytest.mark.integration

Body = Callable[[World, Side], dict[str, Any]]


def _none(world: World, side: Side) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Case:
    action: Action
    #: The request names rows of ``side`` (path or body): another account's answer 404.
    scoped: bool
    #: The keyword arguments of ``TestClient.request`` besides the method and the URL.
    request: Body = field(default=_none)


def _json(make: Callable[[World, Side], Any]) -> Body:
    return lambda world, side: {"json": make(world, side)}


ROUTES: dict[tuple[str, str], Case] = {
    ("POST", "/api/v1/posts"): Case(
        Action.SCHEDULE, True, _json(lambda w, s: {"channels": [s.channel], "parts": ["hi"], "delay": "1h"})
    ),
    ("GET", "/api/v1/posts"): Case(Action.READ, True, lambda w, s: {"params": {"channel": s.channel}}),
    ("GET", "/api/v1/posts/{post_id}"): Case(Action.READ, True),
    ("PATCH", "/api/v1/posts/{post_id}"): Case(
        Action.SCHEDULE, True, _json(lambda w, s: {"revision": 1, "parts": ["edited"]})
    ),
    ("POST", "/api/v1/posts/{post_id}/schedule"): Case(Action.SCHEDULE, True, _json(lambda w, s: {})),
    ("POST", "/api/v1/posts/{post_id}/reschedule"): Case(Action.SCHEDULE, True, _json(lambda w, s: {"delay": "2h"})),
    ("POST", "/api/v1/posts/{post_id}/cancel"): Case(Action.SCHEDULE, True),
    ("POST", "/api/v1/posts/{post_id}/approve"): Case(Action.SCHEDULE, True),
    ("POST", "/api/v1/posts/{post_id}/retry"): Case(Action.SUPPORT, True, _json(lambda w, s: {})),
    ("POST", "/api/v1/posts/{post_id}/resolve"): Case(
        Action.SUPPORT, True, _json(lambda w, s: {"channel": s.channel, "outcome": "send_again"})
    ),
    ("GET", "/api/v1/posts/{post_id}/timeline"): Case(Action.READ, True),
    ("GET", "/api/v1/channels"): Case(Action.READ, False),
    ("POST", "/api/v1/channels"): Case(
        Action.CHANNELS,
        False,
        _json(lambda w, s: {"name": "new1", "platform": "sandbox-native", "settings": {"base_url": "http://x"}}),
    ),
    ("GET", "/api/v1/channels/{name}"): Case(Action.READ, True),
    ("PATCH", "/api/v1/channels/{name}"): Case(
        Action.CHANNELS, True, _json(lambda w, s: {"settings": {"token": SECRET_TOKEN}})
    ),
    ("DELETE", "/api/v1/channels/{name}"): Case(Action.CHANNELS, True),
    ("POST", "/api/v1/channels/{name}/test"): Case(Action.SUPPORT, True),
    ("POST", "/api/v1/channels/{name}/reconnect"): Case(Action.SUPPORT, True, _json(lambda w, s: {})),
    ("GET", "/api/v1/channels/{name}/slots"): Case(Action.READ, True),
    ("PUT", "/api/v1/channels/{name}/slots"): Case(
        Action.SCHEDULE,
        True,
        _json(lambda w, s: {"zone": "Europe/Berlin", "slots": [{"days": "mon-fri", "times": ["09:00"]}]}),
    ),
    ("POST", "/api/v1/media"): Case(Action.SCHEDULE, False, lambda w, s: {"files": {}}),
    ("GET", "/api/v1/media/{media_id}"): Case(Action.READ, True),
    ("GET", "/api/v1/health"): Case(Action.READ, False),
    ("GET", "/api/v1/reasons"): Case(Action.READ, False),
    ("GET", "/api/v1/alarms"): Case(Action.READ, False),
    ("POST", "/api/v1/alarms/{alarm_id}/resolve"): Case(Action.SUPPORT, True),
    ("GET", "/api/v1/account"): Case(Action.READ, False),
    ("POST", "/api/v1/account/stop"): Case(Action.ADMINISTER, False),
    ("POST", "/api/v1/account/resume"): Case(Action.ADMINISTER, False),
    # -- removing media; the account's API keys
    ("DELETE", "/api/v1/media/{media_id}"): Case(Action.SCHEDULE, True),
    ("GET", "/api/v1/keys"): Case(Action.ADMINISTER, False),
    ("POST", "/api/v1/keys"): Case(Action.ADMINISTER, False, _json(lambda w, s: {"role": "viewer", "name": "made"})),
    ("DELETE", "/api/v1/keys/{key_id}"): Case(Action.ADMINISTER, True),
}


def api_routes() -> list[tuple[str, str]]:
    """Every (method, path) of the API, from the app's own OpenAPI document (every route
    is in it: none is hidden from the schema)."""
    paths = create_app().openapi()["paths"]
    return sorted((method.upper(), path) for path, methods in paths.items() for method in methods)


def test_every_entry_is_a_route() -> None:
    assert sorted(ROUTES) == api_routes()


@pytest.fixture(scope="module")
def picture(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return png(tmp_path_factory.mktemp("media") / "p.png").read_bytes()


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize(("method", "path"), api_routes())
def test_role_and_account(method: str, path: str, role: Role, world: World, client: TestClient, picture: bytes) -> None:
    case = ROUTES[(method, path)]  # a KeyError: give the new route its entry
    allowed = allows(role, case.action)

    def call(side: Side) -> Any:
        url = path.format(
            post_id=side.post, name=side.channel, alarm_id=side.alarm, media_id=side.media, key_id=side.key
        )
        kwargs = case.request(world, side)
        if "files" in kwargs:
            kwargs = {"files": {"file": ("p.png", picture, "image/png")}}
        return client.request(method, url, headers=world.auth(role), **kwargs)

    # Another account's rows first: neither a 403 nor a 404 changes anything.
    if case.scoped:
        answer = call(world.other)
        assert answer.status_code == (404 if allowed else 403), answer.text
        assert answer.json()["error"]["code"] == ("not_found" if allowed else "forbidden")
    answer = call(world.own)
    if not allowed:
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["code"] == "forbidden"
    else:
        assert answer.status_code not in (401, 403, 404), answer.text
        assert answer.status_code < 500, answer.text
    assert SECRET_TOKEN not in answer.text
