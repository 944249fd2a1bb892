"""The API's promises beyond the role matrix: keys that no longer work, secrets, the
idempotent create, stale edits, the one error shape, and every reason explained."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from adapters.sandbox.server import SandboxServer
from core.domain.roles import Role
from core.domain.states import DeliveryStatus, Reason
from core.runtime import job
from core.runtime.clock import DatabaseClock, ManualClock
from core.services.channels import add_channel
from core.services.keys import authenticate, create_key, revoke_key
from core.services.posts import submit_post
from core.store import db
from core.store.models import Delivery, Post
from tests.api.conftest import SECRET_TOKEN, TestClient, World
from tests.integration.test_precheck import placed_copy

pytestmark = pytest.mark.integration


def _error(answer: Any, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "fix"}
    assert body["error"]["code"] == code
    assert body["error"]["message"] and body["error"]["fix"]


def _posts() -> int:
    with db.reading() as s:
        return int(s.execute(select(func.count()).select_from(Post)).scalar_one())


def test_an_expired_or_revoked_key_is_refused(world: World, client: TestClient) -> None:
    assert client.get("/api/v1/health", headers=world.auth(Role.VIEWER)).status_code == 200
    past = ManualClock(DatabaseClock(db.engine()).now() - timedelta(hours=1))
    expired = create_key("alpha", Role.ADMIN, expires_in=timedelta(minutes=1), clock=past).secret
    _error(client.get("/api/v1/health", headers={"Authorization": f"Bearer {expired}"}), 401, "unauthenticated")
    revoke_key(authenticate(world.keys[Role.VIEWER]).key_id)
    _error(client.get("/api/v1/health", headers=world.auth(Role.VIEWER)), 401, "unauthenticated")
    _error(client.get("/api/v1/health"), 401, "unauthenticated")
    _error(client.get("/api/v1/health", headers={"Authorization": "Bearer hk_nope_nope"}), 401, "unauthenticated")


def test_no_answer_carries_a_channel_secret(world: World, client: TestClient) -> None:
    admin = world.auth(Role.ADMIN)
    answers = [
        client.get("/api/v1/channels", headers=admin),
        client.get("/api/v1/channels/a1", headers=admin),
        client.patch("/api/v1/channels/a1", headers=admin, json={"settings": {"token": SECRET_TOKEN}}),
        client.post("/api/v1/channels/a1/reconnect", headers=admin, json={"settings": {"token": SECRET_TOKEN}}),
        client.post(
            "/api/v1/channels",
            headers=admin,
            json={
                "name": "a2",
                "platform": "sandbox-native",
                "settings": {"base_url": "http://x", "token": SECRET_TOKEN},
            },
        ),
    ]
    listed = answers[0].json()
    assert [c["name"] for c in listed] == ["a1"]  # beta's b1 is not listed
    assert listed[0]["settings"]["token"] != SECRET_TOKEN
    for answer in answers:
        assert answer.status_code < 300, answer.text
        assert SECRET_TOKEN not in answer.text


def test_a_repeated_create_makes_one_post(world: World, client: TestClient) -> None:
    admin = {**world.auth(Role.MANAGER), "Idempotency-Key": "k-1"}
    # An instant, not a delay: "1h from now" is another slot a moment later.
    at = (DatabaseClock(db.engine()).now() + timedelta(hours=1)).isoformat()
    body = {"channels": ["a1"], "parts": ["once"], "at": at}
    before = _posts()
    first = client.post("/api/v1/posts", headers=admin, json=body)
    again = client.post("/api/v1/posts", headers=admin, json={**body, "channels": ["a1", "a1"]})
    assert first.status_code == again.status_code == 201, again.text
    assert again.json() == {**first.json(), "existed": True}
    assert _posts() == before + 1
    _error(client.post("/api/v1/posts", headers=admin, json={**body, "parts": ["other"]}), 422, "idempotency_mismatch")
    assert _posts() == before + 1


def test_two_creates_at_once_with_one_key_make_one_post(world: World, client: TestClient) -> None:
    headers = {**world.auth(Role.MANAGER), "Idempotency-Key": "k-race"}
    body = {"channels": ["a1"], "parts": ["race"], "delay": "1h"}
    before = _posts()
    barrier = threading.Barrier(2)
    answers: list[Any] = []

    def create() -> None:
        barrier.wait()
        answers.append(client.post("/api/v1/posts", headers=headers, json=body))

    threads = [threading.Thread(target=create) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a.status_code in (201, 409) for a in answers), [a.text for a in answers]
    made = {a.json()["post_id"] for a in answers if a.status_code == 201}
    assert len(made) == 1
    assert _posts() == before + 1


def test_an_edit_against_an_old_revision_is_stale(world: World, client: TestClient) -> None:
    manager = world.auth(Role.MANAGER)
    url = f"/api/v1/posts/{world.own.post}"
    revision = client.get(url, headers=manager).json()["revision"]
    edited = client.patch(url, headers=manager, json={"revision": revision, "parts": ["edited"]})
    assert edited.status_code == 200, edited.text
    assert edited.json()["revision"] == revision + 1
    _error(client.patch(url, headers=manager, json={"revision": revision, "parts": ["again"]}), 409, "stale_revision")
    assert client.get(url, headers=manager).json()["texts"] == ["edited"]


def test_every_error_has_the_one_shape(world: World, client: TestClient) -> None:
    admin = world.auth(Role.ADMIN)
    _error(client.get("/api/v1/nowhere", headers=admin), 404, "not_found")
    _error(client.delete("/api/v1/health", headers=admin), 405, "method_not_allowed")
    _error(client.post("/api/v1/posts", headers=admin, json={"channels": []}), 422, "invalid_request")
    _error(client.get("/api/v1/posts/not-a-number", headers=admin), 422, "invalid_request")
    _error(
        client.post(
            "/api/v1/posts", headers=admin, json={"channels": ["a1"], "parts": ["x"], "at": "2001-01-01T00:00Z"}
        ),
        400,
        "refused",
    )
    _error(client.post(f"/api/v1/posts/{world.own.post}/approve", headers=admin), 409, "conflict")
    _error(client.post("/api/v1/account/stop", headers=world.auth(Role.VIEWER)), 403, "forbidden")


def test_a_nul_character_anywhere_is_an_invalid_request_not_a_server_error(world: World, client: TestClient) -> None:
    # schemathesis found it: PostgreSQL's text cannot hold NUL, and a channel named "\x00"
    # reached the database as a 500.
    admin = world.auth(Role.ADMIN)
    asked = [
        client.post("/api/v1/posts", headers=admin, json={"channels": ["\x00"], "parts": ["x"]}),
        client.post("/api/v1/posts", headers=admin, json={"channels": ["a1"], "parts": ["a\x00b"]}),
        client.get("/api/v1/posts", headers=admin, params={"search": "a\x00"}),
        client.get("/api/v1/channels/a%00", headers=admin),
        client.post(
            "/api/v1/media", headers=admin, files={"file": ("x.png", b"\x89PNG\r\n", "image/png")}, data={"alt": "\x00"}
        ),
    ]
    for answer in asked:
        _error(answer, 422, "invalid_request")
        assert "NUL" in answer.json()["error"]["message"]


def test_every_reason_is_explained_and_a_delivery_carries_its_own(world: World, client: TestClient) -> None:
    viewer = world.auth(Role.VIEWER)
    listed = client.get("/api/v1/reasons", headers=viewer).json()
    assert [r["reason"] for r in listed] == [r.value for r in Reason]
    assert all(r["explanation"] and r["action"] for r in listed)
    with db.transaction() as s:  # as a worker leaves it when the platform refused the token
        s.execute(
            update(Delivery)
            .where(Delivery.post_id == world.own.post)
            .values(status=DeliveryStatus.HELD, reason=Reason.AUTH_EXPIRED)
        )
    delivery = client.get(f"/api/v1/posts/{world.own.post}", headers=viewer).json()["deliveries"][0]
    explained = {r["reason"]: r for r in listed}[Reason.AUTH_EXPIRED.value]
    assert delivery["reason"] == Reason.AUTH_EXPIRED.value
    assert (delivery["explanation"], delivery["action"]) == (explained["explanation"], explained["action"])


def test_the_account_stop_holds_only_the_keys_account(world: World, client: TestClient) -> None:
    admin = world.auth(Role.ADMIN)
    stopped = client.post("/api/v1/account/stop", headers=admin).json()
    assert stopped == {"name": "alpha", "status": "active", "emergency_stop": True, "global_stop": False}
    assert client.post("/api/v1/account/resume", headers=admin).json()["emergency_stop"] is False


def test_docs_and_openapi_are_served(client: TestClient) -> None:
    assert client.get("/openapi.json").json()["paths"]["/api/v1/posts"]["post"]["responses"]["201"]
    assert "swagger" in client.get("/docs").text.lower()


def test_a_copy_found_before_the_first_send_is_shown_and_adopted_through_the_api(
    world: World, client: TestClient, sandbox: SandboxServer
) -> None:
    add_channel("r1", "sandbox-readback", {"base_url": sandbox.url, "token": "t-ok"}, "alpha")
    post_id = submit_post(channels=["r1"], parts=["already out"]).post_id
    copy = placed_copy(sandbox.url, post_id, "already out")
    job.publish_post(post_id)

    delivery = client.get(f"/api/v1/posts/{post_id}", headers=world.auth(Role.VIEWER)).json()["deliveries"][0]
    assert (delivery["status"], delivery["reason"]) == ("held", "duplicate_suspected")
    assert delivery["explanation"] == Reason.DUPLICATE_SUSPECTED.explanation and copy["url"] in delivery["detail"]
    support = world.auth(Role.SUPPORT)
    _error(
        client.post(
            f"/api/v1/posts/{post_id}/resolve", json={"channel": "r1", "outcome": "adopt", "url": "x"}, headers=support
        ),
        400,
        "refused",
    )
    done = client.post(f"/api/v1/posts/{post_id}/resolve", json={"channel": "r1", "outcome": "adopt"}, headers=support)
    assert done.status_code == 200, done.text
    answer = done.json()
    assert (answer["outcome"], answer["url"], answer["platform_id"]) == ("adopt", copy["url"], copy["id"])
    assert (answer["delivery_status"], answer["post_status"]) == ("published", "published")
