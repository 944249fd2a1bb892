"""The ``discord-webhook`` adapter against respx: Execute Webhook's request (``?wait=true``,
no nonce, a thread by ``thread_id``), its files, verify() and the webhook URL setting.

Shapes from discord/discord-api-docs (https://discord.com/developers/docs/), named at each route.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from adapters.discord import DiscordWebhook
from adapters.discord.webhook import webhook_endpoint
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import PublishContext, Published, VerifyContext
from core.plugins.channel_settings import check_settings, is_secret
from tests.unit.test_discord_bot import attachment, media_file, multipart
from tests.unit.test_discord_conformance import API, CHANNEL, GUILD, MESSAGE, WEBHOOK_ID, WEBHOOK_TOKEN

KEY = "k" * 25
URL = f"https://discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}"
EXECUTE = f"{API}/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}"
SETTINGS = {"webhook_url": URL, "guild_id": GUILD}
THREAD = "1180000000000000000"
#: A message a webhook made: its ``webhook_id`` and an author that "corresponds to the
#: webhook's id, username, and avatar" (developers/resources/message.mdx, "Message Structure" [1]).
WEBHOOK_MESSAGE = MESSAGE | {
    "webhook_id": WEBHOOK_ID,
    "author": {"id": WEBHOOK_ID, "username": "test webhook", "avatar": None, "discriminator": "0000", "bot": True},
}
#: developers/resources/webhook.mdx, "Example Incoming Webhook", without ``user`` and ``token``:
#: Get Webhook with Token "returns no user in the webhook object".
WEBHOOK_OBJECT: dict[str, Any] = {
    "name": "test webhook",
    "type": 1,
    "channel_id": "199737254929760256",
    "avatar": None,
    "guild_id": GUILD,
    "id": WEBHOOK_ID,
    "application_id": None,
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def discord() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def execute(discord: respx.MockRouter, **params: str) -> respx.Route:
    # POST /webhooks/{webhook.id}/{webhook.token}: developers/resources/webhook.mdx, "Execute Webhook";
    # with wait=true it "returns the created message body".
    return discord.post(EXECUTE, params={"wait": "true", **params}).respond(200, json=WEBHOOK_MESSAGE)


def context(client: httpx.Client, settings: dict[str, str] = SETTINGS, **extra: Any) -> PublishContext:
    return PublishContext(settings=settings, client=client, key=KEY, text=extra.pop("text", "hello"), **extra)


# -- declarations -------------------------------------------------------------------------


def test_the_webhook_cannot_deduplicate_reply_or_read_back() -> None:
    adapter = DiscordWebhook()
    assert (adapter.name, adapter.strategy, adapter.key_ttl) == ("discord-webhook", Strategy.NONE, None)
    assert adapter.limits.threads is False
    assert (adapter.limits.max_chars, adapter.limits.max_media, adapter.limits.max_alt_chars) == (2000, 10, 1024)
    assert not adapter.can_find
    assert adapter.can_verify
    assert adapter.uploads_first is False


# -- what is sent -------------------------------------------------------------------------


def test_a_message_is_executed_with_wait_and_without_a_key_or_a_token_header(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    route = execute(discord)

    published = DiscordWebhook().publish(context(client))

    request = route.calls.last.request
    assert request.method == "POST"
    assert request.url.params["wait"] == "true"
    assert "thread_id" not in request.url.params
    # Execute Webhook needs no Authorization: the token is in the URL.
    assert "Authorization" not in request.headers
    assert request.headers["User-Agent"].startswith("DiscordBot (")
    assert json.loads(request.content) == {"content": "hello"}
    assert KEY not in request.content.decode()
    assert published == Published(MESSAGE["id"], f"https://discord.com/channels/{GUILD}/{CHANNEL}/{MESSAGE['id']}")


def test_a_thread_setting_posts_into_that_thread(discord: respx.MockRouter, client: httpx.Client) -> None:
    # thread_id: "Send a message to the specified thread within a webhook's channel" (webhook.mdx).
    route = discord.post(EXECUTE, params={"wait": "true", "thread_id": THREAD}).respond(
        200, json=WEBHOOK_MESSAGE | {"channel_id": THREAD}
    )

    published = DiscordWebhook().publish(context(client, SETTINGS | {"thread_id": THREAD}))

    assert route.calls.last.request.url.params["thread_id"] == THREAD
    assert published.url == f"https://discord.com/channels/{GUILD}/{THREAD}/{MESSAGE['id']}"


def test_files_go_with_the_message_in_order_with_their_alt_text(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    # files[n] and payload_json with attachments[].description: webhook.mdx, "Execute Webhook";
    # developers/reference.mdx, "Uploading Files".
    route = execute(discord)
    first = media_file("a.gif", "image/gif", b"GIF89a one", alt="first")
    second = media_file("b.webp", "image/webp", b"RIFF two", alt="second")

    DiscordWebhook().publish(context(client, media=(attachment(first), attachment(second))))

    payload_json, one, two = multipart(route.calls.last.request)
    assert json.loads(payload_json.data) == {
        "content": "hello",
        "attachments": [
            {"id": 0, "filename": "a.gif", "description": "first"},
            {"id": 1, "filename": "b.webp", "description": "second"},
        ],
    }
    assert [(p.name, p.filename, p.data) for p in (one, two)] == [
        ("files[0]", "a.gif", b"GIF89a one"),
        ("files[1]", "b.webp", b"RIFF two"),
    ]


def test_a_reply_is_refused_before_sending_rather_than_posted_on_its_own(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    route = execute(discord)

    with pytest.raises(Rejected) as refused:
        DiscordWebhook().publish(context(client, part_index=1, reply_to="1111", root="1111"))

    assert refused.value.reason is Reason.CONTENT_REJECTED
    assert not route.called


def test_a_no_content_answer_is_ambiguous(discord: respx.MockRouter, client: httpx.Client) -> None:
    # Without wait=true Discord answers 204 and says nothing of the message (webhook.mdx).
    discord.post(EXECUTE, params={"wait": "true"}).respond(204)

    with pytest.raises(Ambiguous):
        DiscordWebhook().publish(context(client))


# -- the webhook URL ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        URL,
        f"{URL}/",
        f"https://discord.com/api/v10/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://discord.com/api/v9/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://canary.discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://ptb.discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://discordapp.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"  {URL}  ",
    ],
)
def test_a_webhook_url_as_discord_shows_it_is_executed_on_api_v10(given: str) -> None:
    # An unversioned path goes to the deprecated default version (developers/reference.mdx,
    # "API Versioning").
    assert webhook_endpoint(given) == EXECUTE
    check_settings(DiscordWebhook, {"webhook_url": given, "guild_id": GUILD})


@pytest.mark.parametrize(
    ("given", "refused"),
    [
        (f"http://discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", "is not a Discord webhook URL"),
        (f"https://example.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", "is not a Discord webhook URL"),
        (f"https://discord.com.evil.test/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", "is not a Discord webhook URL"),
        (f"https://discord.com/api/webhooks/{WEBHOOK_ID}", "is not a Discord webhook URL"),
        (f"https://discord.com/api/webhooks/name/{WEBHOOK_TOKEN}", "is not a Discord webhook URL"),
        (f"https://discord.com:8443/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", "is not a Discord webhook URL"),
        (f"{URL}?thread_id={THREAD}", "give the URL without it, and the thread as --set thread_id=ID"),
        (f"{URL}?wait=true", "is not a Discord webhook URL"),
        ("https://discord.com/channels/1/2", "is not a Discord webhook URL"),
    ],
    ids=["http", "other-host", "lookalike-host", "no-token", "id-not-a-number", "port", "thread", "query", "a-link"],
)
def test_a_webhook_url_that_is_not_one_is_refused_without_repeating_it(given: str, refused: str) -> None:
    with pytest.raises(ConfigError, match=refused) as caught:
        check_settings(DiscordWebhook, {"webhook_url": given, "guild_id": GUILD})
    assert WEBHOOK_TOKEN not in str(caught.value)


def test_the_webhook_url_is_a_secret_and_the_thread_optional() -> None:
    assert [is_secret(DiscordWebhook, n) for n in ("webhook_url", "guild_id", "thread_id")] == [True, False, False]
    check_settings(DiscordWebhook, SETTINGS | {"thread_id": THREAD})
    with pytest.raises(ConfigError, match="needs guild_id"):
        check_settings(DiscordWebhook, {"webhook_url": URL})
    with pytest.raises(ConfigError, match="is not a Discord id"):
        check_settings(DiscordWebhook, SETTINGS | {"thread_id": "general"})


@pytest.mark.parametrize(
    "settings",
    [{"guild_id": GUILD}, {"webhook_url": "https://example.com/hook", "guild_id": GUILD}, {"webhook_url": URL}],
    ids=["no-url", "bad-url", "no-guild"],
)
def test_a_channel_made_before_the_checks_is_a_config_error_and_sends_nothing(
    discord: respx.MockRouter, client: httpx.Client, settings: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match="herald channel reconnect NAME --set"):
        DiscordWebhook().publish(context(client, settings))

    assert discord.calls.call_count == 0


# -- verify -------------------------------------------------------------------------------


def test_verify_names_the_webhook_and_where_it_posts(discord: respx.MockRouter, client: httpx.Client) -> None:
    # GET /webhooks/{webhook.id}/{webhook.token}, Get Webhook with Token: "does not require
    # authentication and returns no user" (developers/resources/webhook.mdx).
    route = discord.get(EXECUTE).respond(200, json=WEBHOOK_OBJECT)

    said = DiscordWebhook().verify(VerifyContext(settings=SETTINGS, client=client))

    assert said == f"the Discord webhook 'test webhook' of channel 199737254929760256 in server {GUILD}"
    assert "Authorization" not in route.calls.last.request.headers
    assert discord.calls.call_count == 1


def test_verify_catches_a_guild_id_that_is_not_the_webhooks(discord: respx.MockRouter, client: httpx.Client) -> None:
    discord.get(EXECUTE).respond(200, json=WEBHOOK_OBJECT)

    with pytest.raises(ConfigError, match=f"--set guild_id={GUILD}"):
        DiscordWebhook().verify(VerifyContext(settings=SETTINGS | {"guild_id": "42"}, client=client))


@pytest.mark.parametrize(
    ("status", "body"),
    [(401, {"message": "Invalid Webhook Token", "code": 50027}), (404, {"message": "Unknown Webhook", "code": 10015})],
    ids=["invalid-token", "deleted"],
)
def test_verify_of_a_refused_webhook_is_auth_expired(
    discord: respx.MockRouter, client: httpx.Client, status: int, body: dict[str, Any]
) -> None:
    discord.get(EXECUTE).respond(status, json=body)

    with pytest.raises(AuthExpired):
        DiscordWebhook().verify(VerifyContext(settings=SETTINGS, client=client))


def test_verify_of_an_answer_without_the_webhook_is_ambiguous(discord: respx.MockRouter, client: httpx.Client) -> None:
    discord.get(EXECUTE).respond(200, json={"name": "no id"})

    with pytest.raises(Ambiguous):
        DiscordWebhook().verify(VerifyContext(settings=SETTINGS, client=client))
