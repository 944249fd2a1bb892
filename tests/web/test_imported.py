"""An imported post on the dashboard (§13): shown as imported, with nothing that sends it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.domain.roles import Role
from core.services.imports import import_posts
from core.services.posts import show_post
from tests.integration.conftest import Sandbox
from tests.web.conftest import TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def test_an_imported_post_is_shown_imported_and_the_calendar_cannot_move_it(
    browser: Browser, accounts: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    archive = tmp_path / "archive.csv"
    archive.write_text(
        "status,channel,text,at,url\npublished,a1,From the archive,2024-03-01T09:00:00Z,https://social.example/1\n"
    )
    (row,) = import_posts(archive).posts
    client = browser(Role.MANAGER)

    page = client.get(f"/posts/{row.post_id}")

    assert page.status_code == 200
    assert "Imported" in page.text and "never sends it" in page.text
    assert f'action="/posts/{row.post_id}/cancel"' not in page.text
    moved = client.post(
        f"/posts/{row.post_id}/reschedule",
        data={"csrf": csrf_of(page.text), "at": "2030-01-09T15:00"},
        headers={"HX-Request": "true"},
    )
    assert moved.status_code == 409 and "republish it as a new post" in moved.text
    assert show_post(row.post_id).scheduled_at.year == 2024
    assert platform.posts() == []
