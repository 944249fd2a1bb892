"""The composer's files in Chromium: each image beside its part, with its alt text, out on
the sandbox platform once per part."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from core.domain.roles import Role
from core.domain.states import PostStatus
from core.services.channels import add_channel
from core.services.posts import show_post
from tests.integration.conftest import Sandbox, wait_until
from tests.integration.media_files import jpeg, png

pytestmark = [pytest.mark.integration, pytest.mark.browser]

Login = Callable[..., Page]


def test_images_uploaded_with_alt_text_in_the_composer_are_published_with_it(
    login: Login, sandbox_url: str, platform: Sandbox, tmp_path: Path
) -> None:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"}, account="a")
    kite, field = png(tmp_path / "kite.png", (40, 30)), jpeg(tmp_path / "field.jpg", (40, 30), "green")
    page = login(Role.MANAGER)
    page.goto("/compose")
    page.get_by_role("checkbox", name="a1").check()
    page.get_by_label("Part 1").fill("a kite")
    first = page.locator('#parts .part[data-part="1"]')
    first.get_by_label("File").set_input_files(kite)
    first.get_by_label("Alt text").fill("A red kite in a white sky")
    # A second part, made in the page, with its own picture.
    page.get_by_role("button", name="Add a part (thread)").click()
    page.get_by_label("Part 2").fill("and the field it flew over")
    second = page.locator('#parts .part[data-part="2"]')
    second.get_by_label("File").set_input_files(field)
    second.get_by_label("Alt text").fill("A green field")
    expect(page.locator('#counts tr[data-channel="a1"]')).to_have_count(2)
    page.get_by_role("button", name="Schedule").click()  # "Now", the composer's default
    expect(page.locator(".flash")).to_contain_text("created")
    post_id = int(page.url.rsplit("/", 1)[1])

    wait_until(lambda: show_post(post_id).status is PostStatus.PUBLISHED)
    # One copy of each part on the platform, the second replying to the first.
    copies = sorted(platform.posts("native"), key=lambda p: p["reply_to"] is not None)
    assert [(p["text"], [(m["alt"], m["mime"]) for m in p["media"]]) for p in copies] == [
        ("a kite", [("A red kite in a white sky", "image/png")]),
        ("and the field it flew over", [("A green field", "image/jpeg")]),
    ]
    assert copies[1]["reply_to"] == copies[0]["id"]
    page.reload()
    expect(page.locator("ol.parts")).to_contain_text("kite.png – alt: A red kite in a white sky")
    expect(page.locator('tr[data-channel="a1"] .state')).to_contain_text("published")
