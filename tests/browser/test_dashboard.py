"""The five things a person does on the dashboard, in Chromium, against real processes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from core.domain.roles import Role
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.services.channels import add_channel
from core.services.posts import create_post, show_post
from tests.integration.conftest import Sandbox, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.browser]

Login = Callable[..., Page]


@pytest.fixture
def channel(sandbox_url: str, platform: Sandbox) -> str:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"}, account="a")
    return "a1"


def test_a_post_scheduled_in_the_composer_shows_on_the_calendar(login: Login, channel: str) -> None:
    page = login(Role.MANAGER)
    page.goto("/compose")
    page.get_by_role("checkbox", name="a1").check()
    page.get_by_label("Part 1").fill("hello from the composer")
    expect(page.locator("#counts tr[data-channel=a1]")).to_contain_text("23 / 500")
    slot = (datetime.now(UTC) + timedelta(days=1)).replace(hour=10, minute=15, second=0, microsecond=0)
    page.get_by_label("At", exact=True).check()
    page.get_by_label("Date and time").fill(slot.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Zone").fill("UTC")
    page.get_by_role("button", name="Schedule").click()
    expect(page.locator(".flash")).to_contain_text("created")
    post_id = int(page.url.rsplit("/", 1)[1])
    assert show_post(post_id).scheduled_at == slot
    page.goto(f"/?day={slot.date().isoformat()}")
    card = page.locator(f'.card[data-post="{post_id}"]')
    expect(card).to_contain_text("hello from the composer")
    expect(card).to_contain_text("10:15")
    expect(card.locator(".state")).to_contain_text("a1: pending")


def test_a_401_needs_attention_and_reconnect_from_the_post_page_publishes_it(
    login: Login, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("a2", "sandbox-none", {"base_url": sandbox_url, "token": "t-revoked"}, account="a")
    post_id = create_post(channels=["a2"], parts=["after a 401"])
    wait_until(lambda: show_post(post_id).deliveries[0].status is DeliveryStatus.HELD)
    assert show_post(post_id).deliveries[0].reason is Reason.AUTH_EXPIRED

    page = login(Role.SUPPORT)
    page.goto("/attention")
    row = page.locator(f'tr[data-post="{post_id}"][data-channel="a2"]')
    expect(row).to_contain_text("auth_expired")
    expect(row).to_contain_text(Reason.AUTH_EXPIRED.explanation)
    row.get_by_role("link", name=f"#{post_id}").click()

    delivery = page.locator('tr[data-channel="a2"]')
    expect(delivery.get_by_role("button", name="Reconnect a2")).to_be_visible()
    delivery.get_by_label("token").fill("t-renewed")
    delivery.get_by_role("button", name="Reconnect a2").click()
    expect(page.locator(".flash")).to_contain_text("channel a2 reconnected")
    wait_until(lambda: show_post(post_id).status is PostStatus.PUBLISHED)
    page.reload()
    expect(page.locator('tr[data-channel="a2"] .state')).to_contain_text("published")
    assert len(platform.posts("none")) == 1
    expect(page.locator('.timeline[data-channel="a2"] .actions')).to_contain_text("reconnect")


def test_dragging_a_post_to_another_day_moves_its_slot(login: Login, channel: str) -> None:
    monday = datetime.now(UTC).date() + timedelta(days=14 - datetime.now(UTC).weekday())
    at = datetime(monday.year, monday.month, monday.day, 9, 30, tzinfo=UTC)
    post_id = create_post(channels=["a1"], parts=["drag me"], at=at)
    page = login(Role.MANAGER)
    page.goto(f"/?day={monday.isoformat()}")
    wednesday = (monday + timedelta(days=2)).isoformat()
    page.locator(f'.card[data-post="{post_id}"]').drag_to(
        page.locator(f'.hour[data-day="{wednesday}"][data-hour="14"]')
    )
    expect(page.locator(f'.hour[data-day="{wednesday}"][data-hour="14"] .card[data-post="{post_id}"]')).to_be_visible()
    assert show_post(post_id).scheduled_at == at + timedelta(days=2, hours=5)


def test_a_support_login_sees_retry_but_not_the_schedule_button(
    login: Login, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-forbidden", "forbidden")
    add_channel("a3", "sandbox-none", {"base_url": sandbox_url, "token": "t-forbidden"}, account="a")
    post_id = create_post(channels=["a3"], parts=["refused"])
    wait_until(lambda: show_post(post_id).deliveries[0].status is DeliveryStatus.FAILED)

    page = login(Role.SUPPORT)
    page.goto(f"/posts/{post_id}")
    expect(page.get_by_role("button", name="Retry a3")).to_be_visible()
    expect(page.get_by_role("link", name="Compose")).to_have_count(0)
    page.goto("/compose")
    expect(page.get_by_role("button", name="Schedule")).to_have_count(0)
    expect(page.locator("body")).to_contain_text("cannot schedule")

    manager = login(Role.MANAGER)
    manager.goto(f"/posts/{post_id}")
    expect(manager.get_by_role("button", name="Retry a3")).to_have_count(0)
    manager.goto("/compose")
    expect(manager.get_by_role("button", name="Schedule")).to_be_visible()
