"""Posting slots and add-to-queue through the API: set and read a channel's slots, create
with ``"queue": true``, and the refusals in the one error shape."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from core.domain.roles import Role
from core.services.posts import show_post
from tests.api.conftest import TestClient, World

pytestmark = pytest.mark.integration


def _error(answer: Any, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code
    message: str = answer.json()["error"]["message"]
    return message


def test_a_manager_sets_the_slots_and_a_viewer_reads_them(world: World, client: TestClient) -> None:
    body = {"zone": "Europe/Berlin", "slots": [{"days": "mon-fri", "times": ["09:00", "13:00"]}]}
    put = client.put("/api/v1/channels/a1/slots", headers=world.auth(Role.MANAGER), json=body)
    assert put.status_code == 200, put.text
    read = client.get("/api/v1/channels/a1/slots", headers=world.auth(Role.VIEWER)).json()
    assert read == put.json()
    assert (read["channel"], read["zone"], read["rules"]) == ("a1", "Europe/Berlin", ["mon-fri 09:00,13:00"])
    assert read["slots"][:2] == [{"day": "mon", "time": "09:00"}, {"day": "mon", "time": "13:00"}]
    assert len(read["next_free"]) == 5
    # A PUT replaces the set; its zone left out keeps the channel's.
    again = client.put(
        "/api/v1/channels/a1/slots",
        headers=world.auth(Role.MANAGER),
        json={"slots": [{"days": "sat", "times": ["10:00"]}]},
    ).json()
    assert (again["zone"], again["rules"]) == ("Europe/Berlin", ["sat 10:00"])
    cleared = client.put("/api/v1/channels/a1/slots", headers=world.auth(Role.MANAGER), json={"slots": []}).json()
    assert (cleared["zone"], cleared["slots"], cleared["next_free"]) == (None, [], [])


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"days": "funday", "times": ["09:00"]}, "'funday' in 'funday 09:00' is not a day"),
        ({"days": "mon", "times": ["25:00"]}, "'25:00' in 'mon 25:00' is not a time of day"),
    ],
)
def test_bad_slots_are_refused(world: World, client: TestClient, rule: dict[str, Any], message: str) -> None:
    answer = client.put("/api/v1/channels/a1/slots", headers=world.auth(Role.MANAGER), json={"slots": [rule]})
    assert _error(answer, 400, "refused").startswith(message)
    unknown = {"zone": "Mars/Base", "slots": [{"days": "mon", "times": ["09:00"]}]}
    answer = client.put("/api/v1/channels/a1/slots", headers=world.auth(Role.MANAGER), json=unknown)
    assert _error(answer, 400, "refused").startswith("unknown time zone 'Mars/Base'")


def test_queued_creates_take_successive_free_slots(world: World, client: TestClient) -> None:
    manager = world.auth(Role.MANAGER)
    client.put("/api/v1/channels/a1/slots", headers=manager, json={"slots": [{"days": "daily", "times": ["07:00"]}]})
    made = [
        client.post("/api/v1/posts", headers=manager, json={"channels": ["a1"], "parts": [f"q{i}"], "queue": True})
        for i in range(2)
    ]
    assert [m.status_code for m in made] == [201, 201], [m.text for m in made]
    first, second = (show_post(m.json()["post_id"]) for m in made)
    assert first.zone == "UTC" and (first.scheduled_at.hour, first.scheduled_at.minute) == (7, 0)
    assert (second.scheduled_at - first.scheduled_at).days == 1
    assert first.scheduled_at > datetime.now(UTC)

    shown = client.post(
        "/api/v1/posts",
        headers=manager,
        json={"channels": ["a1"], "parts": ["in Tokyo"], "queue": True, "zone": "Asia/Tokyo"},
    ).json()
    third = show_post(shown["post_id"])
    assert third.scheduled_at.tzinfo == ZoneInfo("Asia/Tokyo")
    assert (third.scheduled_at - second.scheduled_at).days == 1


def test_a_repeated_queued_create_answers_the_first_post(world: World, client: TestClient) -> None:
    headers = {**world.auth(Role.MANAGER), "Idempotency-Key": "q-1"}
    client.put("/api/v1/channels/a1/slots", headers=headers, json={"slots": [{"days": "daily", "times": ["07:00"]}]})
    body = {"channels": ["a1"], "parts": ["once"], "queue": True}
    first, again = (client.post("/api/v1/posts", headers=headers, json=body).json() for _ in range(2))
    assert again == {"post_id": first["post_id"], "existed": True}
    other = client.post("/api/v1/posts", headers=headers, json={**body, "queue": False})
    assert "queue differ" in _error(other, 422, "idempotency_mismatch")


@pytest.mark.parametrize("given", [{"at": "2031-01-01T09:00:00Z"}, {"delay": "1h"}, {"now": True}, {"draft": True}])
def test_queue_beside_a_slot_or_a_draft_is_an_invalid_request(
    world: World, client: TestClient, given: dict[str, Any]
) -> None:
    body = {"channels": ["a1"], "parts": ["x"], "queue": True, **given}
    answer = client.post("/api/v1/posts", headers=world.auth(Role.MANAGER), json=body)
    assert f"send it without {next(iter(given))}" in _error(answer, 422, "invalid_request")


def test_queue_without_slots_is_refused_naming_the_channel(world: World, client: TestClient) -> None:
    answer = client.post(
        "/api/v1/posts", headers=world.auth(Role.MANAGER), json={"channels": ["a1"], "parts": ["x"], "queue": True}
    )
    assert _error(answer, 400, "refused").startswith("channel a1 has no posting slots to queue to")
