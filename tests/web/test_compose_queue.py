"""The composer's "Add to queue": the post takes the channel's next free posting slot."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from core.domain.posting_slots import parse_slots
from core.domain.roles import Role
from core.services.finding import PostQuery, list_posts
from core.services.posting_slots import change_posting_slots
from core.services.posts import show_post
from tests.web.conftest import TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def test_add_to_queue_takes_the_next_free_slot_and_is_refused_without_slots(
    browser: Browser, accounts: dict[str, str]
) -> None:
    client = browser(Role.MANAGER)
    page = client.get("/compose").text
    assert '<input type="radio" name="when" value="queue">' in page
    token = csrf_of(page)
    form = {"csrf": token, "channel": "a1", "part": "queued", "when": "queue", "zone": "Europe/Paris"}

    bare = client.post("/compose", data=form, headers={"referer": "http://dash.test/compose"})
    assert (bare.status_code, bare.headers["location"]) == (303, "/compose")
    assert "channel a1 has no posting slots to queue to" in client.get("/compose").text
    assert list_posts(PostQuery()).rows == ()

    change_posting_slots("a1", add=parse_slots("daily 00:00"))  # UTC midnight
    made = [client.post("/compose", data=form) for _ in range(2)]

    assert [m.status_code for m in made] == [303, 303], [m.text for m in made]
    first, second = (show_post(int(m.headers["location"].rsplit("/", 1)[1])) for m in made)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert first.scheduled_at == tomorrow and second.scheduled_at == tomorrow + timedelta(days=1)
    assert first.zone == "Europe/Paris"
