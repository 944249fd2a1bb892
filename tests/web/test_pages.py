"""The dashboard's page logic: login and its limits, CSRF, roles, accounts, secrets."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from core.config import Settings
from core.domain.roles import Role
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.runtime import job
from core.services.channels import add_channel
from core.services.finding import PostQuery, list_posts
from core.services.keys import create_key, login_link, revoke_key
from core.services.posts import create_post, show_post
from tests.integration.conftest import Sandbox
from tests.integration.test_precheck import placed_copy
from tests.web.conftest import SECRET, TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def later(hours: float = 48) -> datetime:
    return datetime.now(UTC) + timedelta(hours=hours)


@pytest.fixture
def failed_post(accounts: dict[str, str], sandbox_url: str, platform: Sandbox) -> int:
    """A post of account a whose delivery failed: the platform refused the permission."""
    platform.token("t-forbidden", "forbidden")
    add_channel("a2", "sandbox-none", {"base_url": sandbox_url, "token": "t-forbidden"}, account="a")
    post_id = create_post(channels=["a2"], parts=["refused"])
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert d.status is DeliveryStatus.FAILED
    return post_id


def test_pages_without_a_login_send_to_the_login_page(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    for path in ("/", "/compose", "/attention", "/channels", "/health", "/posts/1"):
        answer = client.get(path)
        assert (answer.status_code, answer.headers["location"]) == (303, "/login"), path


def test_session_cookie_is_http_only_and_same_site_lax(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    form = client.get("/login")
    answer = client.post("/login", data={"csrf": csrf_of(form.text), "key": create_key("a", Role.VIEWER).secret})
    cookie = answer.headers["set-cookie"].lower()
    assert "herald_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie


def test_a_form_without_its_csrf_token_is_refused(browser: Browser, failed_post: int) -> None:
    client = browser(Role.ADMIN)
    page = client.get(f"/posts/{failed_post}")
    assert page.status_code == 200
    for data in ({"channel": "a2"}, {"channel": "a2", "csrf": "not-the-token"}):
        refused = client.post(f"/posts/{failed_post}/retry", data=data)
        assert refused.status_code == 403, data
    assert show_post(failed_post).deliveries[0].status is DeliveryStatus.FAILED
    taken = client.post(f"/posts/{failed_post}/retry", data={"channel": "a2", "csrf": csrf_of(page.text)})
    assert taken.status_code == 303
    assert show_post(failed_post).deliveries[0].status is DeliveryStatus.PENDING
    # htmx sends the token as a header instead.
    assert client.post("/compose/count", data={"part": "x"}).status_code == 403
    counted = client.post("/compose/count", data={"part": "x"}, headers={"X-CSRF-Token": csrf_of(page.text)})
    assert counted.status_code == 200


def test_login_form_without_csrf_is_refused(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    answer = client.post("/login", data={"key": create_key("a", Role.ADMIN).secret})
    assert answer.status_code == 403
    assert client.get("/").status_code == 303


def test_buttons_follow_the_role_and_every_post_checks_again(browser: Browser, failed_post: int) -> None:
    pages = {role: browser(role).get(f"/posts/{failed_post}").text for role in Role}
    retry = "Retry a2"
    assert retry in pages[Role.SUPPORT] and retry in pages[Role.ADMIN]
    assert retry not in pages[Role.MANAGER] and retry not in pages[Role.VIEWER]
    compose = 'href="/compose"'
    assert compose in pages[Role.MANAGER] and compose not in pages[Role.SUPPORT] and compose not in pages[Role.VIEWER]
    # A viewer who sends the form anyway is refused, and nothing moves.
    viewer = browser(Role.VIEWER)
    token = csrf_of(viewer.get("/attention").text)
    refused = viewer.post(f"/posts/{failed_post}/retry", data={"channel": "a2", "csrf": token})
    assert refused.status_code == 403 and "cannot support" in refused.text
    assert viewer.get("/compose").status_code == 403
    support = browser(Role.SUPPORT)
    token = csrf_of(support.get("/attention").text)
    made = support.post("/compose", data={"csrf": token, "channel": "a1", "part": "no", "when": "now"})
    assert made.status_code == 403


def test_another_accounts_post_and_channel_are_not_found(browser: Browser, accounts: dict[str, str]) -> None:
    theirs = create_post(channels=["b1"], parts=["b's post"], at=later())
    client = browser(Role.ADMIN, "a")
    assert client.get(f"/posts/{theirs}").status_code == 404
    token = csrf_of(client.get("/").text)
    for path, data in (
        (f"/posts/{theirs}/cancel", {}),
        (f"/posts/{theirs}/reschedule", {"at": later(72).strftime("%Y-%m-%dT%H:%M")}),
        ("/channels/b1/remove", {}),
    ):
        assert client.post(path, data={"csrf": token, **data}).status_code == 404, path
    assert show_post(theirs).status is PostStatus.SCHEDULED
    made = client.post("/compose", data={"csrf": token, "channel": "b1", "part": "into b", "when": "now"})
    assert made.status_code == 404
    calendar = client.get("/?view=list").text
    assert "b&#39;s post" not in calendar and "b's post" not in calendar


def test_no_page_shows_a_channel_secret(browser: Browser, failed_post: int) -> None:
    client = browser(Role.ADMIN)
    mine = create_post(channels=["a1"], parts=["mine"], at=later())
    for path in (
        "/",
        "/?view=month",
        "/?view=list",
        "/compose",
        f"/posts/{mine}",
        f"/posts/{failed_post}",
        "/attention",
        "/channels",
        "/health",
    ):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert SECRET not in answer.text and "t-forbidden" not in answer.text, path
    assert "••••" in client.get("/channels").text


def test_a_revoked_key_logs_out_at_once(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    made = create_key("a", Role.MANAGER)
    form = client.get("/login")
    client.post("/login", data={"csrf": csrf_of(form.text), "key": made.secret})
    assert client.get("/").status_code == 200
    revoke_key(made.key.id)
    answer = client.get("/")
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")


def test_a_login_link_works_once(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    token = login_link(create_key("a", Role.SUPPORT).key.id)
    first = client.get(f"/login/{token}")
    assert (first.status_code, first.headers["location"]) == (303, "/")
    assert "a · support" in client.get("/").text
    again = browser(None).get(f"/login/{token}")
    assert again.status_code == 401 and "unknown, used or expired" in again.text


def test_login_attempts_are_limited_per_address(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    token = csrf_of(client.get("/login").text)
    said = [client.post("/login", data={"csrf": token, "key": "hk_bad_guess"}).status_code for _ in range(11)]
    assert said == [401] * 10 + [429]
    right = create_key("a", Role.ADMIN).secret
    assert client.post("/login", data={"csrf": token, "key": right}).status_code == 429


def test_the_failed_delivery_needs_attention_with_its_fix(browser: Browser, failed_post: int) -> None:
    page = browser(Role.SUPPORT).get("/attention").text
    assert f'data-post="{failed_post}"' in page
    assert Reason.PERMISSION_DENIED.value in page and Reason.PERMISSION_DENIED.explanation in page
    assert "Retry a2" in page


def test_a_copy_found_before_the_first_send_offers_adopt_and_publish_anyway(
    browser: Browser, accounts: dict[str, str], sandbox_url: str, platform: Sandbox
) -> None:
    add_channel("r1", "sandbox-readback", {"base_url": sandbox_url, "token": "t-ok"}, account="a")
    post_id = create_post(channels=["r1"], parts=["already out"])
    copy = placed_copy(sandbox_url, post_id, "already out")
    job.publish_post(post_id)

    support = browser(Role.SUPPORT)
    page = support.get(f"/posts/{post_id}").text
    assert Reason.DUPLICATE_SUSPECTED.value in page and copy["url"] in page
    assert "It is ours, adopt it" in page and "Publish anyway" in page
    assert "It is ours, adopt it" not in browser(Role.VIEWER).get(f"/posts/{post_id}").text
    form = {"csrf": csrf_of(page), "channel": "r1", "outcome": "send_again"}
    pressed = support.post(f"/posts/{post_id}/resolve", data=form)
    assert pressed.status_code == 303, pressed.text
    (d,) = show_post(post_id).deliveries
    assert d.status is DeliveryStatus.PENDING
    job.publish_post(post_id)
    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert len(platform.posts("readback")) == 2  # published anyway, beside the copy


def test_calendar_shows_the_week_in_the_viewers_zone(
    browser: Browser, accounts: dict[str, str], herald: Settings
) -> None:
    at = datetime(2030, 1, 7, 23, 30, tzinfo=UTC)  # a Monday, 23:30 UTC: Tuesday 08:30 in Tokyo
    post_id = create_post(channels=["a1"], parts=["late monday"], at=at)
    client = browser(Role.MANAGER)
    utc = client.get("/?day=2030-01-07").text
    assert f'data-post="{post_id}" data-time="23:30"' in utc
    tokyo = client.get("/?day=2030-01-07&tz=Asia/Tokyo").text
    assert f'data-post="{post_id}" data-time="08:30"' in tokyo
    # The zone is remembered.
    assert f'data-post="{post_id}" data-time="08:30"' in client.get("/?day=2030-01-08").text
    month = client.get("/?view=month&day=2030-01-15").text
    assert f'data-post="{post_id}"' in month
    assert client.get("/?tz=Mars/Olympus").status_code == 400


def test_reschedule_moves_a_scheduled_post_but_not_a_published_one_without_republish(
    browser: Browser, accounts: dict[str, str]
) -> None:
    post_id = create_post(channels=["a1"], parts=["move me"], at=datetime(2030, 1, 7, 9, 0, tzinfo=UTC))
    client = browser(Role.MANAGER)
    token = csrf_of(client.get("/?day=2030-01-07").text)
    moved = client.post(f"/posts/{post_id}/reschedule", data={"csrf": token, "at": "2030-01-09T14:00"})
    assert moved.status_code == 303
    assert show_post(post_id).scheduled_at == datetime(2030, 1, 9, 14, 0, tzinfo=UTC)
    now = create_post(channels=["a1"], parts=["out already"])
    job.publish_post(now)
    assert show_post(now).status is PostStatus.PUBLISHED
    refused = client.post(
        f"/posts/{now}/reschedule", data={"csrf": token, "at": "2030-01-09T15:00"}, headers={"HX-Request": "true"}
    )
    assert refused.status_code == 409 and "republish" in refused.text
    again = client.post(f"/posts/{now}/reschedule", data={"csrf": token, "at": "2030-01-09T15:00", "mode": "republish"})
    assert again.status_code == 303
    new_id = int(again.headers["location"].rsplit("/", 1)[1])
    assert new_id != now and show_post(new_id).scheduled_at == datetime(2030, 1, 9, 15, 0, tzinfo=UTC)


def test_composer_counts_each_part_as_the_channel_counts(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    token = csrf_of(client.get("/compose").text)
    family = "👨‍👩‍👧" * 3  # three graphemes, fifteen code points
    answer = client.post(
        "/compose/count", data={"channel": "a1", "part": [family, "x" * 600]}, headers={"X-CSRF-Token": token}
    )
    assert answer.status_code == 200
    rows = answer.text
    assert '<tr class="fits" data-channel="a1"><td>a1</td><td>1</td>' in rows
    assert '<tr class="over" data-channel="a1"><td>a1</td><td>2</td><td>600 / 500' in rows


def test_composer_creates_a_scheduled_post_and_refuses_a_past_slot(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    token = csrf_of(client.get("/compose").text)
    made = client.post(
        "/compose",
        data={
            "csrf": token,
            "channel": "a1",
            "part": ["first", "second"],
            "when": "at",
            "at": "2030-03-01T10:00",
            "zone": "Europe/Paris",
            "needs_approval": "on",
        },
    )
    assert made.status_code == 303, made.text
    post = show_post(int(made.headers["location"].rsplit("/", 1)[1]))
    assert post.texts == ("first", "second") and post.zone == "Europe/Paris"
    assert post.scheduled_at == datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
    assert post.approval.value == "pending"
    page = client.get(made.headers["location"]).text
    assert "Approve" in page
    past = client.post(
        "/compose",
        data={"csrf": token, "channel": "a1", "part": "late", "when": "at", "at": "2001-01-01T10:00"},
        headers={"referer": "http://dash.test/compose"},
    )
    assert (past.status_code, past.headers["location"]) == (303, "/compose")
    assert "past" in client.get("/compose").text


def test_a_form_text_with_a_nul_character_is_refused_not_a_server_error(
    browser: Browser, accounts: dict[str, str]
) -> None:
    client = browser(Role.MANAGER)
    token = csrf_of(client.get("/compose").text)
    sent = client.post(
        "/compose",
        data={"csrf": token, "channel": "a1", "part": "nul\x00here", "when": "now"},
        headers={"referer": "http://dash.test/compose"},
    )
    assert (sent.status_code, sent.headers["location"]) == (303, "/compose")
    assert "NUL character" in client.get("/compose").text
    assert list_posts(PostQuery()).rows == ()
