"""A post's page edits its text: parts and each channel's own parts, against the revision
the page showed; correct or republish once it has published; nothing while in doubt."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from core.domain.roles import Role
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.editing import PostEdit, edit_post
from core.services.posts import create_post, show_post
from tests.integration.conftest import Sandbox
from tests.web.conftest import TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def later(hours: float = 48) -> datetime:
    return datetime.now(UTC) + timedelta(hours=hours)


def message(client: TestClient, post_id: int) -> str:
    page = client.get(f"/posts/{post_id}").text
    found = re.search(r'<p class="flash (?:ok|error)" role="\w+">(.*?)</p>', page, re.S)
    assert found, "no message on the page"
    return found.group(1)


def edit_form(page: str) -> str:
    found = re.search(r'<form method="post" action="/posts/\d+/edit".*?</form>', page, re.S)
    assert found, "the page has no edit form"
    return found.group(0)


def test_the_page_edits_the_parts_and_a_channels_own_thread(browser: Browser, accounts: dict[str, str]) -> None:
    post_id = create_post(channels=["a1"], parts=["first", "second"], at=later())
    client = browser(Role.MANAGER)
    page = client.get(f"/posts/{post_id}").text
    form = edit_form(page)
    assert 'name="revision" value="1"' in form
    assert '<textarea name="part" rows="3" aria-label="Part 2" data-label="Part">second</textarea>' in form
    assert 'name="mode"' not in form  # nothing has published: nothing to choose
    token = csrf_of(page)
    saved = client.post(
        f"/posts/{post_id}/edit",
        data={"csrf": token, "revision": "1", "part": ["first, edited", "second", ""], "text.a1": ["own 1", "own 2"]},
        headers={"referer": f"http://dash.test/posts/{post_id}"},
    )
    assert (saved.status_code, saved.headers["location"]) == (303, f"/posts/{post_id}")
    post = show_post(post_id)
    assert post.texts == ("first, edited", "second") and post.revision == 2
    assert post.channel_texts == {"a1": ("own 1", "own 2")}
    assert [p.text for p in post.deliveries[0].parts] == ["own 1", "own 2"]
    page = client.get(f"/posts/{post_id}").text
    assert f"post {post_id} saved (revision 2)" in page
    assert 'aria-label="a1\'s own text 2" data-label="a1\'s own text">own 2</textarea>' in page
    # The channel's boxes emptied: back on the post's text.
    client.post(
        f"/posts/{post_id}/edit",
        data={"csrf": token, "revision": "2", "part": ["first, edited", "second"], "text.a1": ""},
    )
    post = show_post(post_id)
    assert post.channel_texts == {} and post.revision == 3
    assert [p.text for p in post.deliveries[0].parts] == [None, None]  # the post's own texts
    client.post(
        f"/posts/{post_id}/edit",
        data={"csrf": token, "revision": "3", "part": ["first, edited", "second"], "text.a1": ""},
    )
    assert message(client, post_id).startswith(f"nothing changed in post {post_id}")
    assert show_post(post_id).revision == 3


def test_an_edit_against_a_stale_revision_saves_nothing_and_says_so(browser: Browser, accounts: dict[str, str]) -> None:
    post_id = create_post(channels=["a1"], parts=["as opened"], at=later())
    client = browser(Role.MANAGER)
    token = csrf_of(client.get(f"/posts/{post_id}").text)
    edit_post(post_id, PostEdit(parts=("edited elsewhere",)))  # someone else, meanwhile
    refused = client.post(
        f"/posts/{post_id}/edit",
        data={"csrf": token, "revision": "1", "part": "mine"},
        headers={"referer": f"http://dash.test/posts/{post_id}"},
    )
    assert (refused.status_code, refused.headers["location"]) == (303, f"/posts/{post_id}")
    said = message(client, post_id)
    assert said.startswith(f"post {post_id} was edited elsewhere since this page showed it (revision 1): nothing")
    assert show_post(post_id).texts == ("edited elsewhere",)
    # htmx (the API's 409): the same sentence, with the status.
    hx = client.post(
        f"/posts/{post_id}/edit",
        data={"revision": "1", "part": "mine"},
        headers={"HX-Request": "true", "X-CSRF-Token": token},
    )
    assert hx.status_code == 409 and "edited elsewhere" in hx.text


def test_a_published_post_asks_correct_or_republish(browser: Browser, accounts: dict[str, str]) -> None:
    post_id = create_post(channels=["a1"], parts=["out already"])
    job.publish_post(post_id)
    assert show_post(post_id).status is PostStatus.PUBLISHED
    client = browser(Role.MANAGER)
    page = client.get(f"/posts/{post_id}").text
    form = edit_form(page)
    assert 'name="mode" value="correct"' in form and 'name="mode" value="republish"' in form
    token = csrf_of(page)
    data = {"csrf": token, "revision": "1", "part": "fixed typo"}
    unchosen = client.post(
        f"/posts/{post_id}/edit", data=data, headers={"referer": f"http://dash.test/posts/{post_id}"}
    )
    assert unchosen.status_code == 303
    assert message(client, post_id).startswith(f"post {post_id} has published on a1: choose &#39;correct&#39;")
    assert show_post(post_id).texts == ("out already",)

    corrected = client.post(f"/posts/{post_id}/edit", data={**data, "mode": "correct"})
    assert corrected.headers["location"] == f"/posts/{post_id}"
    assert show_post(post_id).texts == ("fixed typo",)
    assert "on a1, the platform copy was not edited: sandbox-native cannot edit" in message(client, post_id)

    again = client.post(
        f"/posts/{post_id}/edit", data={**data, "revision": "2", "part": "once more", "mode": "republish"}
    )
    new_id = int(again.headers["location"].rsplit("/", 1)[1])
    assert new_id != post_id and show_post(new_id).texts == ("once more",)
    assert show_post(post_id).texts == ("fixed typo",)
    assert f"post {post_id} republished as post {new_id}" in message(client, new_id)


def test_a_post_in_doubt_cannot_be_edited_until_resolved(
    browser: Browser, accounts: dict[str, str], sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    add_channel("a3", "sandbox-none", {"base_url": sandbox_url, "token": "t-ok"}, account="a")
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])
    post_id = create_post(channels=["a3"], parts=["in doubt"])
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason) == (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME)
    client = browser(Role.ADMIN)
    page = client.get(f"/posts/{post_id}").text
    assert f'action="/posts/{post_id}/edit"' not in page
    sentence = (
        f"post {post_id} has an attempt in doubt on a3 (it may be on the platform) "
        "and cannot be edited until it is resolved"
    )
    assert sentence in page
    sent = client.post(
        f"/posts/{post_id}/edit",
        data={"csrf": csrf_of(page), "revision": "1", "part": "changed"},
        headers={"referer": f"http://dash.test/posts/{post_id}"},
    )
    assert sent.status_code == 303 and sentence in message(client, post_id)
    assert show_post(post_id).texts == ("in doubt",) and show_post(post_id).revision == 1


def test_the_edit_is_refused_without_csrf_or_the_role(browser: Browser, accounts: dict[str, str]) -> None:
    post_id = create_post(channels=["a1"], parts=["keep me"], at=later())
    client = browser(Role.MANAGER)
    for data in ({"revision": "1", "part": "forged"}, {"revision": "1", "part": "forged", "csrf": "not-the-token"}):
        assert client.post(f"/posts/{post_id}/edit", data=data).status_code == 403
    support = browser(Role.SUPPORT)
    page = support.get(f"/posts/{post_id}").text
    assert f'action="/posts/{post_id}/edit"' not in page
    refused = support.post(f"/posts/{post_id}/edit", data={"csrf": csrf_of(page), "revision": "1", "part": "forged"})
    assert refused.status_code == 403 and "cannot schedule" in refused.text
    other = browser(Role.ADMIN, "b")
    token = csrf_of(other.get("/").text)
    assert other.post(f"/posts/{post_id}/edit", data={"csrf": token, "revision": "1", "part": "x"}).status_code == 404
    assert show_post(post_id).texts == ("keep me",) and show_post(post_id).revision == 1
