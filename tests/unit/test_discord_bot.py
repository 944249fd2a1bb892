"""The ``discord`` (bot) adapter against respx: what it sends to Create Message, with the
nonce, replies and files, what it reads back, verify() and its channel settings.

Request and answer shapes come from discord/discord-api-docs (https://discord.com/developers/docs/),
named at each route.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from adapters.discord import DISCORD_ADAPTERS, DiscordBot, DiscordWebhook, herald_register_adapters
from adapters.discord.bot import NONCE_TTL
from adapters.discord.message import MAX_REQUEST_BYTES, filename
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import MB, Adapter, Attachment, MediaFile, PublishContext, Published, VerifyContext
from core.plugins.channel_settings import check_settings, is_secret
from tests.unit.test_discord_conformance import API, CHANNEL, GUILD, MESSAGE

KEY = "k" * 25
TOKEN = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"  # developers/reference.mdx
SETTINGS = {"token": TOKEN, "channel_id": CHANNEL, "guild_id": GUILD}
MESSAGES = f"{API}/channels/{CHANNEL}/messages"
LINK = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{MESSAGE['id']}"

#: developers/resources/user.mdx, "Example User" (the email fields left out: a bot has none).
USER = {
    "id": "80351110224678912",
    "username": "Nelly",
    "global_name": None,
    "discriminator": "1337",
    "avatar": "8342729096ea3675442027381ff50dfe",
    "flags": 64,
    "banner": "06c16474723fe537c283b8efa61a30c8",
    "accent_color": 16711680,
    "premium_type": 1,
    "public_flags": 64,
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def discord() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def context(client: httpx.Client, *, text: str = "hello", **extra: Any) -> PublishContext:
    settings = extra.pop("settings", SETTINGS)
    return PublishContext(settings=settings, client=client, key=KEY, text=text, **extra)


def media_file(name: str, mime: str, data: bytes, alt: str | None = None) -> MediaFile:
    return MediaFile(
        digest="0" * 64,
        mime=mime,
        size=len(data),
        filename=name,
        alt=alt,
        width=None,
        height=None,
        duration=None,
        read=lambda: data,
    )


def attachment(file: MediaFile) -> Attachment:
    return Attachment(platform_id="", alt=file.alt, mime=file.mime, file=file)


@dataclass(frozen=True)
class Part:
    """One part of a multipart/form-data body."""

    name: str
    filename: str | None
    content_type: str
    data: bytes


def multipart(request: httpx.Request) -> list[Part]:
    """The parts of a multipart/form-data request, in order."""
    head = f"Content-Type: {request.headers['Content-Type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.content)
    assert message.is_multipart()
    parts = []
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        parts.append(
            Part(
                name=str(part.get_param("name", header="content-disposition")),
                filename=part.get_filename(),
                content_type=part.get_content_type(),
                data=payload,
            )
        )
    return parts


# -- declarations -------------------------------------------------------------------------


def test_the_bot_deduplicates_by_nonce_for_two_minutes_and_cannot_read_back() -> None:
    adapter = DiscordBot()
    assert (adapter.name, adapter.strategy, adapter.key_ttl) == ("discord", Strategy.NATIVE_KEY, 120.0)
    assert NONCE_TTL == 120.0
    assert not adapter.can_find
    assert adapter.can_verify
    assert adapter.uploads_first is False


def test_the_bot_declares_discords_limits() -> None:
    limits = DiscordBot.limits
    assert (limits.max_chars, limits.max_media, limits.threads, limits.edit) == (2000, 10, True, False)
    assert (limits.max_image_bytes, limits.max_video_bytes, limits.max_video_seconds) == (10 * MB, 10 * MB, None)
    assert (limits.alt_text, limits.max_alt_chars) == (True, 1024)
    assert limits.media_types == {
        "image/png",
        "image/gif",
        "image/jpeg",
        "image/webp",
        "image/avif",
        "video/mp4",
        "video/quicktime",
        "video/webm",
    }


def test_the_plugin_registers_the_bot_and_the_webhook() -> None:
    registered: list[type[Adapter]] = []

    herald_register_adapters(registered.append)

    assert registered == [DiscordBot, DiscordWebhook] == list(DISCORD_ADAPTERS)


# -- what is sent -------------------------------------------------------------------------


def test_a_message_goes_to_the_channel_with_the_bot_token_and_the_key_as_enforced_nonce(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    # POST /channels/{channel.id}/messages: developers/resources/message.mdx, "Create Message".
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)

    DiscordBot().publish(context(client))

    request = route.calls.last.request
    assert request.method == "POST"
    # "Authorization: Bot TOKEN" (developers/reference.mdx, "Authentication"), and a
    # "DiscordBot ($url, $versionNumber)" User-Agent (developers/reference.mdx, "User Agent").
    assert request.headers["Authorization"] == f"Bot {TOKEN}"
    assert request.headers["User-Agent"].startswith("DiscordBot (")
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.content) == {"content": "hello", "nonce": KEY, "enforce_nonce": True}


def test_a_resend_carries_the_same_nonce_and_adopts_the_message_discord_returns(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    # enforce_nonce: "If another message was created by the same author with the same nonce,
    # that message will be returned and no new message will be created" (message.mdx).
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)

    first = DiscordBot().publish(context(client))
    again = DiscordBot().publish(context(client))

    assert first == again == Published(MESSAGE["id"], LINK)
    nonces = [json.loads(call.request.content)["nonce"] for call in route.calls]
    assert nonces == [KEY, KEY]


def test_a_thread_part_replies_to_the_part_before_it(discord: respx.MockRouter, client: httpx.Client) -> None:
    # "Replies are created by including a message_reference when sending a message. When
    # sending, only message_id is required" (developers/resources/message.mdx, "Replies").
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)

    DiscordBot().publish(context(client, part_index=2, reply_to="1111", root="1000"))

    body = json.loads(route.calls.last.request.content)
    assert body["message_reference"] == {"message_id": "1111", "fail_if_not_exists": True}
    assert "1000" not in route.calls.last.request.content.decode()  # the root is not the parent


def test_a_first_part_is_no_reply(discord: respx.MockRouter, client: httpx.Client) -> None:
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)

    DiscordBot().publish(context(client))

    assert "message_reference" not in json.loads(route.calls.last.request.content)


def test_files_go_with_the_message_in_order_with_their_alt_text(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    # multipart/form-data of payload_json and files[n], described by attachments[].id = n and
    # description (alt text): developers/reference.mdx, "Uploading Files"; message.mdx,
    # "Attachment Request Structure".
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)
    cat = media_file("cat.png", "image/png", b"\x89PNG cat", alt="A cat asleep on a keyboard")
    clip = media_file("clip.mp4", "video/mp4", b"\x00\x00\x00 ftyp clip")

    DiscordBot().publish(context(client, reply_to="1111", media=(attachment(cat), attachment(clip))))

    request = route.calls.last.request
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    payload_json, first, second = multipart(request)
    assert (payload_json.name, payload_json.content_type) == ("payload_json", "application/json")
    assert json.loads(payload_json.data) == {
        "content": "hello",
        "nonce": KEY,
        "enforce_nonce": True,
        "message_reference": {"message_id": "1111", "fail_if_not_exists": True},
        "attachments": [
            {"id": 0, "filename": "cat.png", "description": "A cat asleep on a keyboard"},
            {"id": 1, "filename": "clip.mp4"},
        ],
    }
    assert (first.name, first.filename, first.content_type, first.data) == (
        "files[0]",
        "cat.png",
        "image/png",
        b"\x89PNG cat",
    )
    assert (second.name, second.filename, second.content_type, second.data) == (
        "files[1]",
        "clip.mp4",
        "video/mp4",
        b"\x00\x00\x00 ftyp clip",
    )


def test_a_part_of_files_alone_sends_no_empty_content(discord: respx.MockRouter, client: httpx.Client) -> None:
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)
    cat = media_file("cat.png", "image/png", b"\x89PNG cat")

    DiscordBot().publish(context(client, text="", media=(attachment(cat),)))

    payload = json.loads(multipart(route.calls.last.request)[0].data)
    assert "content" not in payload
    assert payload["attachments"] == [{"id": 0, "filename": "cat.png"}]


@pytest.mark.parametrize(
    ("name", "mime", "sent"),
    [
        ("photo", "image/jpeg", "photo.jpg"),
        ("photo.JPEG", "image/jpeg", "photo.JPEG"),
        ("holiday/beach.webp", "image/webp", "beach.webp"),
        ("C:\\Users\\me\\clip.mov", "video/quicktime", "clip.mov"),
        ("clip.mp4", "video/webm", "clip.mp4.webm"),
        ("", "image/gif", "attachment3.gif"),
    ],
)
def test_a_file_is_named_without_folders_and_with_an_extension_fitting_its_type(
    name: str, mime: str, sent: str
) -> None:
    # Discord knows a file's kind by its extension (developers/reference.mdx, "File Type Filtering").
    assert filename(media_file(name, mime, b"x"), 3) == sent


def test_files_past_the_25_mib_of_one_message_are_refused_before_sending(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    # "The maximum request size when sending a message is 25 MiB" (message.mdx, "Limitations").
    route = discord.post(MESSAGES).respond(200, json=MESSAGE)
    big = [media_file(f"{n}.png", "image/png", b"\0" * (9 * MB)) for n in range(3)]
    assert sum(f.size for f in big) > MAX_REQUEST_BYTES

    with pytest.raises(Rejected) as refused:
        DiscordBot().publish(context(client, media=tuple(attachment(f) for f in big)))

    assert refused.value.reason is Reason.MEDIA_INVALID
    assert "25 MiB" in str(refused.value)
    assert not route.called


# -- what is read back --------------------------------------------------------------------


def test_the_message_id_and_its_link_are_what_is_published(discord: respx.MockRouter, client: httpx.Client) -> None:
    discord.post(MESSAGES).respond(200, json=MESSAGE)

    published = DiscordBot().publish(context(client))

    assert published == Published("334385199974967042", LINK)


def test_the_link_names_the_channel_discord_says_the_message_is_in(
    discord: respx.MockRouter, client: httpx.Client
) -> None:
    discord.post(MESSAGES).respond(200, json=MESSAGE | {"channel_id": "1234"})

    assert DiscordBot().publish(context(client)).url == f"https://discord.com/channels/{GUILD}/1234/{MESSAGE['id']}"


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json={k: v for k, v in MESSAGE.items() if k != "id"}),
        httpx.Response(200, json=MESSAGE | {"id": 334385199974967042}),
        httpx.Response(200, json=[MESSAGE]),
        httpx.Response(200, text="OK"),
        httpx.Response(204),
    ],
    ids=["no-id", "id-not-a-string", "a-list", "not-json", "no-content"],
)
def test_a_success_without_the_message_id_is_ambiguous(
    discord: respx.MockRouter, client: httpx.Client, answer: httpx.Response
) -> None:
    discord.post(MESSAGES).mock(return_value=answer)

    with pytest.raises(Ambiguous):
        DiscordBot().publish(context(client))


# -- verify -------------------------------------------------------------------------------


def test_verify_says_which_bot_the_token_belongs_to(discord: respx.MockRouter, client: httpx.Client) -> None:
    # GET /users/@me, "Returns the user object of the requester's account": developers/resources/user.mdx.
    route = discord.get(f"{API}/users/@me").respond(200, json=USER)

    said = DiscordBot().verify(VerifyContext(settings=SETTINGS, client=client))

    assert said == "the Discord bot Nelly#1337 (id 80351110224678912)"
    assert route.calls.last.request.headers["Authorization"] == f"Bot {TOKEN}"
    assert discord.calls.call_count == 1


def test_verify_leaves_out_a_zero_discriminator(discord: respx.MockRouter, client: httpx.Client) -> None:
    discord.get(f"{API}/users/@me").respond(200, json=USER | {"username": "heraldbot", "discriminator": "0"})

    said = DiscordBot().verify(VerifyContext(settings=SETTINGS, client=client))

    assert said == "the Discord bot heraldbot (id 80351110224678912)"


def test_verify_with_a_refused_token_is_auth_expired(discord: respx.MockRouter, client: httpx.Client) -> None:
    # developers/topics/opcodes-and-status-codes.mdx, "Example JSON Error Response".
    discord.get(f"{API}/users/@me").respond(401, json={"message": "Invalid authentication token", "code": 50014})

    with pytest.raises(AuthExpired, match="--set token="):
        DiscordBot().verify(VerifyContext(settings=SETTINGS, client=client))


def test_verify_of_an_answer_without_a_username_is_ambiguous(discord: respx.MockRouter, client: httpx.Client) -> None:
    discord.get(f"{API}/users/@me").respond(200, json={"id": "1"})

    with pytest.raises(Ambiguous):
        DiscordBot().verify(VerifyContext(settings=SETTINGS, client=client))


# -- settings -----------------------------------------------------------------------------


def test_good_settings_pass_and_only_the_token_is_secret() -> None:
    check_settings(DiscordBot, SETTINGS)
    assert [s.name for s in DiscordBot.settings or () if s.required] == ["token", "channel_id", "guild_id"]
    assert [is_secret(DiscordBot, n) for n in ("token", "channel_id", "guild_id")] == [True, False, False]


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"channel_id": CHANNEL, "guild_id": GUILD}, "needs token"),
        ({"token": TOKEN, "guild_id": GUILD}, "needs channel_id"),
        ({"token": TOKEN, "channel_id": CHANNEL}, "needs guild_id"),
        (SETTINGS | {"channel_id": "general"}, "is not a Discord id"),
        (SETTINGS | {"channel_id": f"https://discord.com/channels/{GUILD}/{CHANNEL}"}, "is a link, not an id"),
        (SETTINGS | {"guild_id": "1" * 25}, "is not a Discord id"),
        (SETTINGS | {"token": f"Bot {TOKEN}"}, "give the token alone"),
        (SETTINGS | {"token": "abc def"}, "has spaces"),
        (SETTINGS | {"channel": CHANNEL}, "did you mean channel_id"),
    ],
    ids=[
        "no-token",
        "no-channel",
        "no-guild",
        "a-name-for-an-id",
        "a-link-for-an-id",
        "past-64-bits",
        "bot-prefix",
        "spaces",
        "unknown-name",
    ],
)
def test_settings_that_cannot_work_are_refused(settings: dict[str, str], refused: str) -> None:
    with pytest.raises(ConfigError, match=refused) as caught:
        check_settings(DiscordBot, settings)
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    "settings",
    [
        {"channel_id": CHANNEL, "guild_id": GUILD},
        {"token": TOKEN, "guild_id": GUILD},
        {"token": TOKEN, "channel_id": "../../users/@me", "guild_id": GUILD},
        {"token": TOKEN, "channel_id": CHANNEL},
    ],
    ids=["no-token", "no-channel", "a-path-for-a-channel", "no-guild"],
)
def test_a_channel_made_before_the_checks_is_a_config_error_and_sends_nothing(
    discord: respx.MockRouter, client: httpx.Client, settings: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match="herald channel reconnect NAME --set"):
        DiscordBot().publish(context(client, settings=settings))

    assert discord.calls.call_count == 0
