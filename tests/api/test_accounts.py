"""What a key sees of other accounts beyond posts and channels (§15): their kept files are
not found – to show, to attach, to remove – and the health panel counts only the key's own
account's deliveries, alarms and stop, while herald's own state stays whole. The CLI, an
operator's tool, still sees every account."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from core.domain.roles import Role
from core.domain.states import DeliveryStatus, Reason
from core.runtime.clock import DatabaseClock
from core.services.controls import set_emergency_stop
from core.services.health import health
from core.services.media import show_media
from core.services.posts import submit_post
from core.store import db
from core.store.blobs import blobs
from core.store.models import Delivery, Media, Post
from tests.api.conftest import TestClient, World
from tests.integration.media_files import png
from tests.web.conftest import csrf_of

pytestmark = pytest.mark.integration


def _not_found(answer: Any, what: str) -> None:
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"]["code"] == "not_found"
    assert answer.json()["error"]["message"] == what


def _posts() -> int:
    with db.reading() as s:
        return int(s.execute(select(func.count()).select_from(Post)).scalar_one())


# -- media ----------------------------------------------------------------------------------------------


def test_the_same_picture_kept_by_two_accounts_is_two_rows_one_stored_file(world: World) -> None:
    own, other = show_media(world.own.media), show_media(world.other.media)
    assert own.id != other.id
    assert (own.account, other.account) == ("alpha", "beta")
    with db.reading() as s:
        digests = set(s.execute(select(Media.digest)).scalars())
    assert len(digests) == 1


def test_a_key_cannot_show_attach_or_remove_another_accounts_media(
    world: World, client: TestClient, tmp_path: Path
) -> None:
    manager = world.auth(Role.MANAGER)
    theirs = world.other.media

    _not_found(client.get(f"/api/v1/media/{theirs}", headers=manager), f"no media {theirs}")
    mine = client.get(f"/api/v1/media/{world.own.media}", headers=manager)
    assert mine.status_code == 200 and mine.json()["account"] == "alpha", mine.text

    before = _posts()
    attach = {"channels": ["a1"], "parts": ["look"], "delay": "1h", "media": [{"media_id": theirs}]}
    refused = client.post("/api/v1/posts", headers=manager, json=attach)
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found", refused.text
    assert f"no media {theirs}" in refused.json()["error"]["message"]
    assert _posts() == before
    url = f"/api/v1/posts/{world.own.post}"
    edit = {"revision": 1, "media": [{"media_id": theirs}]}
    assert client.patch(url, headers=manager, json=edit).status_code == 404
    assert client.get(url, headers=manager).json()["media"] == [[]]

    _not_found(client.delete(f"/api/v1/media/{theirs}", headers=manager), f"no media {theirs}")
    assert not show_media(theirs).removed

    # The key's own file attaches; the same picture uploaded again is its own row, not beta's.
    made = client.post("/api/v1/posts", headers=manager, json={**attach, "media": [{"media_id": world.own.media}]})
    assert made.status_code == 201, made.text
    shown = client.get(f"/api/v1/posts/{made.json()['post_id']}", headers=manager).json()
    assert [a["media_id"] for a in shown["media"][0]] == [world.own.media]
    picture = png(tmp_path / "again.png").read_bytes()
    again = client.post("/api/v1/media", headers=manager, files={"file": ("again.png", picture, "image/png")})
    assert again.status_code == 201, again.text
    assert (again.json()["media"]["id"], again.json()["existed"]) == (world.own.media, True)


def test_removing_one_accounts_file_keeps_the_bytes_another_account_keeps(world: World, client: TestClient) -> None:
    manager = world.auth(Role.MANAGER)
    with db.reading() as s:
        digest = s.execute(select(Media.digest).where(Media.id == world.own.media)).scalar_one()
    removed = client.delete(f"/api/v1/media/{world.own.media}", headers=manager)
    assert removed.status_code == 200 and removed.json()["removed"] is True, removed.text
    assert blobs().read(digest)  # beta's row still keeps them
    assert not show_media(world.other.media).removed


# -- health and alarms ----------------------------------------------------------------------------------


def _hold(post_id: int) -> None:
    with db.transaction() as s:  # as a worker leaves it when the platform refused the token
        s.execute(
            update(Delivery)
            .where(Delivery.post_id == post_id)
            .values(status=DeliveryStatus.HELD, reason=Reason.AUTH_EXPIRED)
        )


def test_health_counts_only_the_keys_account_and_all_of_herald_itself(world: World, client: TestClient) -> None:
    viewer = world.auth(Role.VIEWER)
    _hold(world.other.post)
    set_emergency_stop(True, "beta")
    # And an attempt of beta's in doubt: sending, with no worker's lease on its post.
    at = DatabaseClock(db.engine()).now() + timedelta(days=1)
    stuck = submit_post(channels=["b1"], parts=["in doubt"], at=at).post_id
    with db.transaction() as s:
        s.execute(update(Delivery).where(Delivery.post_id == stuck).values(status=DeliveryStatus.SENDING))

    panel = client.get("/api/v1/health", headers=viewer)
    assert panel.status_code == 200, panel.text
    seen = panel.json()
    assert seen["account"] == "alpha"
    counts = ("held", "failed", "in_doubt", "needs_person", "held_reasons")
    assert {name: seen[name] for name in counts} == dict.fromkeys(counts[:-1], 0) | {"held_reasons": {}}
    assert seen["stopped_accounts"] == [] and seen["emergency_stop"] is False
    assert seen["open_alarms"] == 1  # its own; beta's is not counted
    assert seen["queued"] is not None  # the queue is herald's, shown whole
    assert "beta" not in panel.text
    alarms = client.get("/api/v1/alarms", headers=viewer).json()
    assert [a["post_id"] for a in alarms] == [world.own.post]

    _hold(world.own.post)
    set_emergency_stop(True, "alpha")
    set_emergency_stop(True)  # the global stop is everyone's
    seen = client.get("/api/v1/health", headers=viewer).json()
    assert (seen["held"], seen["held_reasons"]) == (1, {Reason.AUTH_EXPIRED.value: 1})
    assert seen["stopped_accounts"] == ["alpha"] and seen["emergency_stop"] is True

    # The operator's panel (`herald health` reads it without an account, as /metrics does)
    # counts every account.
    everything = health()
    assert everything.account is None
    assert (everything.held, everything.in_doubt, everything.open_alarms) == (2, 1, 2)
    assert everything.stopped_accounts == ("alpha", "beta")


def test_the_dashboards_health_panel_shows_only_the_logins_account(world: World, client: TestClient) -> None:
    _hold(world.other.post)
    set_emergency_stop(True, "beta")
    form = client.get("/login")
    logged_in = client.post(
        "/login", data={"csrf": csrf_of(form.text), "key": world.keys[Role.VIEWER]}, follow_redirects=False
    )
    assert logged_in.status_code == 303, logged_in.text
    page = client.get("/health?fragment=true")
    assert page.status_code == 200, page.text
    assert "beta" not in page.text
    assert "0 (0 held, 0 failed, 0 in doubt)" in page.text
    assert "off for alpha" in page.text
    assert f"#{world.own.post}" in page.text and f"#{world.other.post}" not in page.text
