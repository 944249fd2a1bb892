"""The Telegram adapter against respx: what it sends to the Bot API, and how it reads each answer.

Requests and answers are shaped as https://core.telegram.org/bots/api gives them ("the
reference" below); error descriptions as Telegram's Bot API server words them
(https://github.com/tdlib/telegram-bot-api, ``telegram-bot-api/Client.cpp``) with TDLib's
(https://github.com/tdlib/td) passed through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import httpx
import pytest
import respx

from adapters.telegram import TelegramBot, herald_register_adapters
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import MB, Adapter, Attachment, Limits, MediaFile, PublishContext, VerifyContext
from core.plugins.channel_settings import check_settings, is_secret

#: A token shaped as #authorizing-your-bot shows one ("123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11").
TOKEN = "7000000001:AAE-test_SecretPartOfTheToken0000"
#: #making-requests: "https://api.telegram.org/bot<token>/METHOD_NAME".
API = f"https://api.telegram.org/bot{TOKEN}"
KEY = "k" * 25
#: #chat: a public channel (id per https://core.telegram.org/api/bots/ids: -(10^12 + channel id)).
CHANNEL = {"id": -1001234567890, "type": "channel", "title": "Herald news", "username": "heraldnews"}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def bot_api() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def context(
    client: httpx.Client,
    text: str = "hello",
    reply_to: str | None = None,
    media: tuple[Attachment, ...] = (),
    **settings: str,
) -> PublishContext:
    return PublishContext(
        settings={"bot_token": TOKEN, "chat_id": "@heraldnews", **settings},
        client=client,
        key=KEY,
        text=text,
        part_index=0 if reply_to is None else 1,
        reply_to=reply_to,
        root=reply_to,
        media=media,
    )


def sent(message_id: int = 42, chat: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """#sendmessage: "On success, the sent Message is returned" (#message: message_id, date, chat)."""
    message = {"message_id": message_id, "date": 1700000000, "chat": CHANNEL if chat is None else chat, **fields}
    return {"ok": True, "result": message}


def refused(code: int, description: str, **parameters: Any) -> dict[str, Any]:
    """#making-requests: ok false, the error in 'description', an Integer 'error_code', and for
    some errors 'parameters' of the type ResponseParameters."""
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return body


def photo(name: str = "cat.png", data: bytes = b"\x89PNG-bytes", width: int = 800, height: int = 600) -> Attachment:
    file = MediaFile(
        digest="d" * 64,
        mime="image/png",
        size=len(data),
        filename=name,
        alt="a cat",
        width=width,
        height=height,
        duration=None,
        read=lambda: data,
    )
    return Attachment("", file.alt, file.mime, file)


def video(name: str = "clip.mp4", data: bytes = b"mp4-bytes", duration: float | None = 12.4) -> Attachment:
    file = MediaFile(
        digest="e" * 64,
        mime="video/mp4",
        size=len(data),
        filename=name,
        alt=None,
        width=1280,
        height=720,
        duration=duration,
        read=lambda: data,
    )
    return Attachment("", None, file.mime, file)


def form_of(request: httpx.Request) -> dict[str, EmailMessage]:
    """The parts of a multipart/form-data request, by field name, in the order sent."""
    assert request.headers["Content-Type"].startswith("multipart/form-data")
    raw = b"Content-Type: " + request.headers["Content-Type"].encode() + b"\r\n\r\n" + request.read()
    message = BytesParser(policy=policy.HTTP).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return {str(part.get_param("name", header="content-disposition")): part for part in message.iter_parts()}


def value(part: EmailMessage) -> str:
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


# -- declarations -------------------------------------------------------------------------


def test_it_declares_strategy_none_files_with_the_post_and_the_bot_apis_limits() -> None:
    assert (TelegramBot.name, TelegramBot.strategy, TelegramBot.key_ttl) == ("telegram", Strategy.NONE, None)
    assert TelegramBot.uploads_first is False
    assert not TelegramBot().can_find
    assert TelegramBot.limits == Limits(
        max_chars=4096,
        max_chars_with_media=1024,
        threads=True,
        edit=False,
        max_media=10,
        media_types=frozenset({"image/jpeg", "image/png", "video/mp4"}),
        max_image_bytes=10 * MB,
        max_video_bytes=50 * MB,
        max_video_seconds=None,
        alt_text=False,
    )


def test_the_plugin_registers_the_telegram_adapter() -> None:
    registered: list[type[Adapter]] = []

    herald_register_adapters(registered.append)

    assert registered == [TelegramBot]


# -- channel settings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"bot_token": TOKEN, "chat_id": "@heraldnews"},
        {"bot_token": TOKEN, "chat_id": "-1001234567890"},
        {"bot_token": TOKEN, "chat_id": "987654321", "base_url": "http://127.0.0.1:8081"},
    ],
    ids=["channel-username", "numeric-channel", "local-bot-api-server"],
)
def test_settings_a_bot_can_post_with_are_accepted(settings: dict[str, str]) -> None:
    check_settings(TelegramBot, settings)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"chat_id": "@heraldnews"}, "bot_token"),
        ({"bot_token": TOKEN}, "chat_id"),
        ({"bot_token": "not-a-token", "chat_id": "@heraldnews"}, "bot_token"),
        ({"bot_token": f"{TOKEN}/getMe", "chat_id": "@heraldnews"}, "bot_token"),
        ({"bot_token": TOKEN, "chat_id": "heraldnews"}, "chat_id"),
        ({"bot_token": TOKEN, "chat_id": "@herald news"}, "chat_id"),
        ({"bot_token": TOKEN, "chat_id": "@heraldnews", "base_url": "api.telegram.org"}, "base_url"),
        ({"bot_token": TOKEN, "chat_id": "@heraldnews", "token": TOKEN}, "token"),
    ],
    ids=["no-token", "no-chat", "bad-token", "token-path", "chat-without-at", "chat-space", "bad-url", "unknown"],
)
def test_settings_that_cannot_work_are_refused_naming_the_setting(settings: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named) as refused_with:
        check_settings(TelegramBot, settings)
    assert TOKEN not in str(refused_with.value)  # a secret is never repeated


def test_the_bot_token_is_a_secret_and_the_chat_is_not() -> None:
    assert is_secret(TelegramBot, "bot_token")
    assert not is_secret(TelegramBot, "chat_id")


def test_a_channel_without_its_chat_is_misconfigured_before_any_request(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    ctx = PublishContext(settings={"bot_token": TOKEN}, client=client, key=KEY, text="hello")

    with pytest.raises(ConfigError, match=r"--set chat_id=@mychannel"):
        TelegramBot().publish(ctx)

    assert not bot_api.calls


# -- text and threads ---------------------------------------------------------------------


def test_text_is_sent_with_send_message_as_json_to_the_tokens_path(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #sendmessage: chat_id (Integer or String), text; the token in the path (#making-requests).
    route = bot_api.post(f"{API}/sendMessage").respond(200, json=sent(42))

    published = TelegramBot().publish(context(client, text="hello"))

    request = route.calls.last.request
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.content) == {"chat_id": "@heraldnews", "text": "hello"}
    assert KEY not in request.url.path and KEY.encode() not in request.content  # strategy none: no key
    assert (published.platform_id, published.url) == ("42", "https://t.me/heraldnews/42")


def test_a_numeric_chat_id_is_sent_as_the_integer_the_reference_documents(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #sendmessage chat_id: "Integer or String".
    route = bot_api.post(f"{API}/sendMessage").respond(200, json=sent(7))

    TelegramBot().publish(context(client, chat_id="-1001234567890"))

    assert json.loads(route.calls.last.request.content)["chat_id"] == -1001234567890


def test_a_reply_names_its_parent_in_reply_parameters_as_an_integer(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #replyparameters: message_id (Integer), "Identifier of the message that will be replied to".
    route = bot_api.post(f"{API}/sendMessage").respond(200, json=sent(43))

    published = TelegramBot().publish(context(client, text="part two", reply_to="42"))

    body = json.loads(route.calls.last.request.content)
    assert body == {"chat_id": "@heraldnews", "text": "part two", "reply_parameters": {"message_id": 42}}
    assert "allow_sending_without_reply" not in body["reply_parameters"]  # a lost parent must fail, not orphan
    assert published.platform_id == "43"


def test_a_parent_id_that_is_no_message_id_is_a_missing_parent_before_any_request(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    with pytest.raises(Rejected) as caught:
        TelegramBot().publish(context(client, reply_to="https://t.me/heraldnews/42"))

    assert caught.value.reason is Reason.THREAD_PARENT_MISSING
    assert not bot_api.calls


def test_a_local_bot_api_server_is_called_at_its_base_url(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # #using-a-local-bot-api-server: "send the requests to your own server instead of https://api.telegram.org".
    route = bot_api.post(f"http://127.0.0.1:8081/bot{TOKEN}/sendMessage").respond(200, json=sent(5))

    TelegramBot().publish(context(client, base_url="http://127.0.0.1:8081/"))

    assert route.called


# -- where a message is -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chat", "chat_id", "url"),
    [
        (CHANNEL, "-1001234567890", "https://t.me/heraldnews/42"),
        (
            {"id": -1001234567890, "type": "supergroup", "title": "Team"},
            "-1001234567890",
            "https://t.me/c/1234567890/42",
        ),
        ({"id": 987654321, "type": "private", "first_name": "Ann", "username": "ann"}, "987654321", ""),
        ({"id": -4012345678, "type": "group", "title": "Family"}, "-4012345678", ""),
    ],
    ids=["public-channel", "private-supergroup", "private-chat", "basic-group"],
)
def test_the_url_is_the_messages_t_me_link_where_telegram_has_one(
    bot_api: respx.MockRouter, client: httpx.Client, chat: dict[str, Any], chat_id: str, url: str
) -> None:
    # https://core.telegram.org/api/links#message-links: t.me/<username>/<id>, t.me/c/<channel>/<id>;
    # https://core.telegram.org/api/bots/ids#supergroup-channel-ids: channel id = -id - 10^12.
    bot_api.post(f"{API}/sendMessage").respond(200, json=sent(42, chat=chat))

    published = TelegramBot().publish(context(client, chat_id=chat_id))

    assert (published.platform_id, published.url) == ("42", url)


# -- media --------------------------------------------------------------------------------


def test_one_photo_goes_with_send_photo_in_the_same_request_with_the_text_as_caption(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #sendphoto: photo (InputFile, "upload a new photo using multipart/form-data"), caption;
    # #sending-files: "Post the file using multipart/form-data"; reply_parameters JSON-serialized.
    route = bot_api.post(f"{API}/sendPhoto").respond(200, json=sent(44, photo=[{"file_id": "f", "width": 800}]))

    published = TelegramBot().publish(context(client, text="look", reply_to="43", media=(photo(),)))

    form = form_of(route.calls.last.request)
    assert list(form) == ["chat_id", "reply_parameters", "caption", "photo"]
    assert value(form["chat_id"]) == "@heraldnews"
    assert json.loads(value(form["reply_parameters"])) == {"message_id": 43}
    assert value(form["caption"]) == "look"
    assert form["photo"].get_filename() == "cat.png"
    assert form["photo"].get_content_type() == "image/png"
    assert form["photo"].get_payload(decode=True) == b"\x89PNG-bytes"
    assert published.platform_id == "44"


def test_one_video_goes_with_send_video_and_its_probed_size_and_length(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #sendvideo: video (InputFile), duration, width, height (Integers), caption.
    route = bot_api.post(f"{API}/sendVideo").respond(200, json=sent(45))

    TelegramBot().publish(context(client, text="watch", media=(video(),)))

    form = form_of(route.calls.last.request)
    assert {name: value(part) for name, part in form.items() if name != "video"} == {
        "chat_id": "@heraldnews",
        "caption": "watch",
        "width": "1280",
        "height": "720",
        "duration": "12",
    }
    assert (form["video"].get_filename(), form["video"].get_payload(decode=True)) == ("clip.mp4", b"mp4-bytes")


def test_an_empty_text_beside_a_photo_sends_no_caption(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # #sendphoto caption: optional, "0-1024 characters".
    route = bot_api.post(f"{API}/sendPhoto").respond(200, json=sent(46))

    TelegramBot().publish(context(client, text="", media=(photo(),)))

    assert "caption" not in form_of(route.calls.last.request)


def test_an_album_goes_with_send_media_group_in_order_with_the_caption_on_the_first_item(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #sendmediagroup: media, "A JSON-serialized array describing messages to be sent, must
    # include 2-10 items"; #inputmediaphoto/#inputmediavideo: type, media "attach://<file_attach_name>",
    # caption; "On success, an array of Message objects that were sent is returned".
    album = [
        {"message_id": 50, "date": 1700000000, "chat": CHANNEL, "media_group_id": "g1", "caption": "trip"},
        {"message_id": 51, "date": 1700000000, "chat": CHANNEL, "media_group_id": "g1"},
        {"message_id": 52, "date": 1700000000, "chat": CHANNEL, "media_group_id": "g1"},
    ]
    route = bot_api.post(f"{API}/sendMediaGroup").respond(200, json={"ok": True, "result": album})
    media = (photo("a.png", b"A"), video("b.mp4", b"B", duration=3.0), photo("c.png", b"C"))

    published = TelegramBot().publish(context(client, text="trip", reply_to="49", media=media))

    form = form_of(route.calls.last.request)
    assert json.loads(value(form["media"])) == [
        {"type": "photo", "media": "attach://file0", "caption": "trip"},
        {"type": "video", "media": "attach://file1", "width": 1280, "height": 720, "duration": 3},
        {"type": "photo", "media": "attach://file2"},
    ]
    assert json.loads(value(form["reply_parameters"])) == {"message_id": 49}
    files = [(name, part.get_filename(), part.get_payload(decode=True)) for name, part in form.items()]
    assert files[-3:] == [("file0", "a.png", b"A"), ("file1", "b.mp4", b"B"), ("file2", "c.png", b"C")]
    assert "alt" not in value(form["media"])  # Telegram has no alt text
    assert (published.platform_id, published.url) == ("50", "https://t.me/heraldnews/50")


@pytest.mark.parametrize(("width", "height"), [(9000, 1500), (4200, 200)], ids=["sides-over-10000", "ratio-over-20"])
def test_a_photo_telegram_refuses_by_its_sides_is_media_invalid_before_any_request(
    bot_api: respx.MockRouter, client: httpx.Client, width: int, height: int
) -> None:
    # #sendphoto: "The photo's width and height must not exceed 10000 in total. Width and height
    # ratio must be at most 20."
    with pytest.raises(Rejected) as caught:
        TelegramBot().publish(context(client, media=(photo(width=width, height=height),)))

    assert caught.value.reason is Reason.MEDIA_INVALID
    assert "cat.png" in str(caught.value)
    assert not bot_api.calls


# -- answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "reason"),
    [
        # Client.cpp: fail_query_with_error(..., "MESSAGE_NOT_FOUND", "message to be replied not found").
        ("Bad Request: message to be replied not found", Reason.THREAD_PARENT_MISSING),
        # TDLib MessageContent.cpp: "Message is too long", "Message caption is too long".
        ("Bad Request: message is too long", Reason.CONTENT_REJECTED),
        ("Bad Request: message caption is too long", Reason.CONTENT_REJECTED),
        # TDLib MessageEntity.cpp: "Text must be non-empty".
        ("Bad Request: text must be non-empty", Reason.CONTENT_REJECTED),
        # TDLib MessageContent.cpp: "Not enough rights to send text messages to the chat";
        # DialogManager.cpp: "Have no write access to the chat"; MTProto CHAT_WRITE_FORBIDDEN
        # (https://core.telegram.org/method/messages.sendMedia#possible-errors), made a 400 by Client.cpp.
        ("Bad Request: not enough rights to send text messages to the chat", Reason.PERMISSION_DENIED),
        ("Bad Request: have no write access to the chat", Reason.PERMISSION_DENIED),
        ("Bad Request: CHAT_WRITE_FORBIDDEN", Reason.PERMISSION_DENIED),
        # messages.sendMedia possible errors: IMAGE_PROCESS_FAILED, PHOTO_INVALID_DIMENSIONS.
        ("Bad Request: IMAGE_PROCESS_FAILED", Reason.MEDIA_INVALID),
        ("Bad Request: PHOTO_INVALID_DIMENSIONS", Reason.MEDIA_INVALID),
        # Client.cpp: "Bad Request: file is too big".
        ("Bad Request: file is too big", Reason.MEDIA_INVALID),
        # Client.cpp: MEDIA_GROUPED_INVALID worded "Can't use the media of the specified type in the album".
        ("Bad Request: Can't use the media of the specified type in the album", Reason.MEDIA_INVALID),
        # any other refusal
        ("Bad Request: TOPIC_CLOSED", Reason.CONTENT_REJECTED),
    ],
)
def test_a_400_is_rejected_with_the_reason_its_description_names(
    bot_api: respx.MockRouter, client: httpx.Client, description: str, reason: Reason
) -> None:
    bot_api.post(f"{API}/sendMessage").respond(400, json=refused(400, description))

    with pytest.raises(Rejected) as caught:
        TelegramBot().publish(context(client))

    assert (caught.value.reason, caught.value.status) == (reason, 400)
    assert description in str(caught.value)


@pytest.mark.parametrize(
    "description",
    [
        # Client.cpp, check_chat_access.
        "Forbidden: bot was blocked by the user",
        "Forbidden: bot was kicked from the channel chat",
        "Forbidden: bot is not a member of the channel chat",
        "Forbidden: user is deactivated",
    ],
)
def test_a_403_is_permission_denied(bot_api: respx.MockRouter, client: httpx.Client, description: str) -> None:
    bot_api.post(f"{API}/sendMessage").respond(403, json=refused(403, description))

    with pytest.raises(Rejected) as caught:
        TelegramBot().publish(context(client))

    assert caught.value.reason is Reason.PERMISSION_DENIED


def test_a_revoked_token_is_auth_expired_and_never_repeated(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # ClientManager.cpp: 401 "Unauthorized: invalid token specified"; Client.cpp: "Unauthorized".
    bot_api.post(f"{API}/sendMessage").respond(401, json=refused(401, "Unauthorized"))

    with pytest.raises(AuthExpired) as caught:
        TelegramBot().publish(context(client))

    assert "@BotFather" in str(caught.value)
    assert TOKEN not in str(caught.value) and TOKEN.split(":")[1] not in str(caught.value)


def test_an_unknown_chat_is_misconfigured_naming_the_chat_id(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # Client.cpp: "Bad Request: chat not found".
    bot_api.post(f"{API}/sendMessage").respond(400, json=refused(400, "Bad Request: chat not found"))

    with pytest.raises(ConfigError, match=r"--set chat_id="):
        TelegramBot().publish(context(client))


def test_a_group_upgraded_to_a_supergroup_names_its_new_chat_id(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    # #responseparameters: migrate_to_chat_id, "The group has been migrated to a supergroup with
    # the specified identifier"; Client.cpp words the 400 "group chat was upgraded to a supergroup chat".
    bot_api.post(f"{API}/sendMessage").respond(
        400,
        json=refused(
            400, "Bad Request: group chat was upgraded to a supergroup chat", migrate_to_chat_id=-1009876543210
        ),
    )

    with pytest.raises(ConfigError, match=r"--set chat_id=-1009876543210"):
        TelegramBot().publish(context(client, chat_id="-4012345678"))


@pytest.mark.parametrize("status", [404, 421])
def test_no_bot_at_the_address_is_misconfigured(bot_api: respx.MockRouter, client: httpx.Client, status: int) -> None:
    # HttpConnection.cpp: 404 "Not Found" for a path that is not /bot<token>/...; ClientManager.cpp:
    # 421 "Misdirected Request: unallowed token specified".
    bot_api.post(f"{API}/sendMessage").respond(status, json=refused(status, "Not Found"))

    with pytest.raises(ConfigError, match="base_url"):
        TelegramBot().publish(context(client))


def test_a_request_too_large_for_the_server_is_media_invalid(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # RFC 9110 §15.5.14 413 Content Too Large, from the server in front of the Bot API; no Bot API body.
    bot_api.post(f"{API}/sendPhoto").respond(413, text="<html>413 Request Entity Too Large</html>")

    with pytest.raises(Rejected) as caught:
        TelegramBot().publish(context(client, media=(photo(),)))

    assert caught.value.reason is Reason.MEDIA_INVALID


def test_flood_control_waits_the_retry_after_of_its_parameters(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # #responseparameters: retry_after; Query.cpp: 429 "Too Many Requests: retry after N" with
    # parameters.retry_after N, and HttpConnection.cpp a Retry-After header.
    bot_api.post(f"{API}/sendMessage").respond(
        429, json=refused(429, "Too Many Requests: retry after 35", retry_after=35), headers={"Retry-After": "35"}
    )

    with pytest.raises(RateLimited) as caught:
        TelegramBot().publish(context(client))

    assert caught.value.retry_after == 35


def test_flood_control_without_parameters_waits_the_retry_after_header(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    bot_api.post(f"{API}/sendMessage").respond(
        429, json=refused(429, "Too Many Requests: retry after 3"), headers={"Retry-After": "3"}
    )

    with pytest.raises(RateLimited) as caught:
        TelegramBot().publish(context(client))

    assert caught.value.retry_after == 3


def test_flood_control_saying_no_time_leaves_the_wait_to_herald(
    bot_api: respx.MockRouter, client: httpx.Client
) -> None:
    bot_api.post(f"{API}/sendMessage").respond(429, json=refused(429, "Too Many Requests"))

    with pytest.raises(RateLimited) as caught:
        TelegramBot().publish(context(client))

    assert caught.value.retry_after is None


@pytest.mark.parametrize(
    "response",
    [
        # Client.cpp: 500 "Internal Server Error: ..."
        httpx.Response(500, json=refused(500, "Internal Server Error: Request aborted")),
        # a proxy in front of the Bot API, without its body
        httpx.Response(502, text="<html>502 Bad Gateway</html>"),
        httpx.Response(504, text=""),
    ],
    ids=["500", "502", "504"],
)
def test_a_server_error_is_ambiguous(bot_api: respx.MockRouter, client: httpx.Client, response: httpx.Response) -> None:
    bot_api.post(f"{API}/sendMessage").mock(return_value=response)

    with pytest.raises(Ambiguous):
        TelegramBot().publish(context(client))


@pytest.mark.parametrize(
    ("body", "outcome"),
    [
        (refused(429, "Too Many Requests: retry after 4", retry_after=4), RateLimited),
        (refused(403, "Forbidden: bot was kicked from the channel chat"), Rejected),
        (refused(401, "Unauthorized"), AuthExpired),
        ({"ok": False, "description": "no code"}, Ambiguous),
    ],
    ids=["429", "403", "401", "no-error-code"],
)
def test_a_200_saying_ok_false_is_read_by_its_error_code(
    bot_api: respx.MockRouter, client: httpx.Client, body: dict[str, Any], outcome: type[Exception]
) -> None:
    # #making-requests: "In case of an unsuccessful request, 'ok' equals false ... An Integer 'error_code'".
    bot_api.post(f"{API}/sendMessage").respond(200, json=body)

    with pytest.raises(outcome):
        TelegramBot().publish(context(client))


@pytest.mark.parametrize(
    "body",
    [
        {"ok": True, "result": {"date": 1700000000, "chat": CHANNEL, "text": "hello"}},
        {"ok": True, "result": {"message_id": "42", "date": 1700000000, "chat": CHANNEL}},
        {"ok": True},
        {"ok": True, "result": []},
        {"result": {"message_id": 42}},
    ],
    ids=["no-message-id", "string-id", "no-result", "empty-album", "no-ok"],
)
def test_a_200_without_a_message_id_is_ambiguous(
    bot_api: respx.MockRouter, client: httpx.Client, body: dict[str, Any]
) -> None:
    bot_api.post(f"{API}/sendMessage").respond(200, json=body)

    with pytest.raises(Ambiguous):
        TelegramBot().publish(context(client))


def test_a_200_that_is_not_json_is_ambiguous(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    bot_api.post(f"{API}/sendMessage").respond(200, text="<html>ok</html>")

    with pytest.raises(Ambiguous):
        TelegramBot().publish(context(client))


def test_a_video_message_scheduled_without_an_id_is_ambiguous(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # #message message_id: "the server might automatically schedule a message instead of sending it
    # immediately. In such cases, this field will be 0 and the relevant message will be unusable".
    bot_api.post(f"{API}/sendVideo").respond(200, json=sent(0))

    with pytest.raises(Ambiguous, match="look in the chat"):
        TelegramBot().publish(context(client, media=(video(),)))


# -- verify -------------------------------------------------------------------------------


def test_verify_asks_get_me_and_answers_the_bots_username(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    # #getme: "Returns basic information about the bot in form of a User object" (#user: id,
    # is_bot, first_name, username).
    route = bot_api.get(f"{API}/getMe").respond(
        200,
        json={
            "ok": True,
            "result": {"id": 123456, "is_bot": True, "first_name": "Herald", "username": "herald_news_bot"},
        },
    )

    who = TelegramBot().verify(VerifyContext(settings={"bot_token": TOKEN, "chat_id": "@heraldnews"}, client=client))

    assert who == "@herald_news_bot"
    assert route.call_count == 1  # one read-only call


def test_verify_with_a_refused_token_is_auth_expired(bot_api: respx.MockRouter, client: httpx.Client) -> None:
    bot_api.get(f"{API}/getMe").respond(401, json=refused(401, "Unauthorized"))

    with pytest.raises(AuthExpired):
        TelegramBot().verify(VerifyContext(settings={"bot_token": TOKEN, "chat_id": "@heraldnews"}, client=client))
