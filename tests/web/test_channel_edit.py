"""The channels page's edit form: the adapter's declared settings, secrets masked and kept
when left blank, a bad setting refused in one sentence, as the API's channel edit allows."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from sqlalchemy import select

from core.domain.roles import Role
from core.store import db
from core.store.models import Channel
from tests.web.conftest import SECRET, TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def settings_of(name: str) -> dict[str, str]:
    """The channel's settings as stored (the secrets decrypted)."""
    with db.reading() as s:
        return dict(s.execute(select(Channel).where(Channel.name == name)).scalar_one().settings)


def edit_form(page: str, channel: str) -> str:
    found = re.search(rf'<form method="post" action="/channels/{channel}/edit".*?</form>', page, re.S)
    assert found, f"no edit form for {channel}"
    return found.group(0)


def flash(client: TestClient) -> str:
    page = client.get("/channels").text
    found = re.search(r'<p class="flash (?:ok|error)" role="\w+">(.*?)</p>', page, re.S)
    assert found, "no message on the page"
    return found.group(1)


def test_the_edit_form_offers_the_declared_settings_and_never_a_secret(
    browser: Browser, accounts: dict[str, str], sandbox_url: str
) -> None:
    page = browser(Role.ADMIN).get("/channels").text
    form = edit_form(page, "a1")
    assert f'name="setting.base_url" value="{sandbox_url}"' in form
    assert "base_url (required)" in form
    # The token: a password field with its mask, never its value.
    token = re.search(r'<input type="password" name="setting.token" value=""[^>]*>', form)
    assert token and "••••" in token.group(0) and "leave blank to keep it" in token.group(0)
    assert 'name="setting.resend_in_doubt"' in form  # herald's own setting, on every channel
    assert SECRET not in page and SECRET[-8:] not in page
    # Only an admin edits channels; the others see no form.
    for role in (Role.MANAGER, Role.SUPPORT, Role.VIEWER):
        assert "/channels/a1/edit" not in browser(role).get("/channels").text, role


def test_a_secret_left_blank_stays_and_a_new_one_replaces_it(
    browser: Browser, accounts: dict[str, str], sandbox_url: str
) -> None:
    client = browser(Role.ADMIN)
    token = csrf_of(client.get("/channels").text)
    moved = "http://127.0.0.1:9/elsewhere"
    answer = client.post("/channels/a1/edit", data={"csrf": token, "setting.base_url": moved, "setting.token": "  "})
    assert (answer.status_code, answer.headers["location"]) == (303, "/channels")
    assert settings_of("a1") == {"base_url": moved, "token": SECRET}
    assert flash(client) == "channel a1 edited: base_url changed"

    client.post(
        "/channels/a1/edit", data={"csrf": token, "setting.base_url": moved, "setting.token": "t-new-secret-98765"}
    )
    assert settings_of("a1") == {"base_url": moved, "token": "t-new-secret-98765"}
    page = client.get("/channels").text
    assert "t-new-secret-98765" not in page and "channel a1 edited: token changed" in page


def test_an_emptied_setting_is_taken_away_unless_the_channel_needs_it(
    browser: Browser, accounts: dict[str, str], sandbox_url: str
) -> None:
    client = browser(Role.ADMIN)
    token = csrf_of(client.get("/channels").text)
    client.post("/channels/a1/edit", data={"csrf": token, "setting.resend_in_doubt": "true"})
    assert settings_of("a1")["resend_in_doubt"] == "true"
    client.post("/channels/a1/edit", data={"csrf": token, "setting.resend_in_doubt": ""})
    assert "resend_in_doubt" not in settings_of("a1")
    assert flash(client) == "channel a1 edited: resend_in_doubt taken away"
    client.post("/channels/a1/edit", data={"csrf": token, "setting.base_url": ""})
    assert settings_of("a1")["base_url"] == sandbox_url
    assert "needs base_url" in flash(client)


def test_a_bad_setting_is_refused_in_one_sentence_and_nothing_changes(
    browser: Browser, accounts: dict[str, str], sandbox_url: str
) -> None:
    client = browser(Role.ADMIN)
    token = csrf_of(client.get("/channels").text)
    refused = client.post(
        "/channels/a1/edit",
        data={"csrf": token, "setting.base_url": "not a url", "setting.token": "t-would-be-new"},
        headers={"referer": "http://dash.test/channels"},
    )
    assert (refused.status_code, refused.headers["location"]) == (303, "/channels")
    said = flash(client)
    assert "base_url=&#39;not a url&#39; is not an http(s) URL" in said and "\n" not in said
    assert settings_of("a1") == {"base_url": sandbox_url, "token": SECRET}
    client.post("/channels/a1/edit", data={"csrf": token, "setting.resend_in_doubt": "perhaps"})
    assert "is not true or false" in flash(client)
    client.post("/channels/a1/edit", data={"csrf": token, "setting.base_url": sandbox_url, "setting.token": ""})
    assert flash(client).startswith("nothing changed on channel a1")


def test_the_edit_is_refused_without_its_csrf_token_to_other_roles_and_accounts(
    browser: Browser, accounts: dict[str, str], sandbox_url: str
) -> None:
    client = browser(Role.ADMIN)
    for data in ({"setting.token": "t-forged"}, {"setting.token": "t-forged", "csrf": "not-the-token"}):
        assert client.post("/channels/a1/edit", data=data).status_code == 403
    manager = browser(Role.MANAGER)
    token = csrf_of(manager.get("/channels").text)
    refused = manager.post("/channels/a1/edit", data={"csrf": token, "setting.token": "t-forged"})
    assert refused.status_code == 403 and "cannot channels" in refused.text
    admin_token = csrf_of(client.get("/channels").text)
    assert client.post("/channels/b1/edit", data={"csrf": admin_token, "setting.token": "t-forged"}).status_code == 404
    assert settings_of("a1")["token"] == SECRET and settings_of("b1")["token"] == "t-ok"
