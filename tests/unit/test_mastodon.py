"""The ``mastodon`` adapter against respx: what it sends to Post a new status (the key,
replies, attachments), its uploads and their processing, verify(), an instance's own limits
and its channel settings.

Request and answer shapes come from mastodon/documentation (https://docs.joinmastodon.org/),
named at each route; the error mapping is in test_mastodon_answers.py.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from adapters.mastodon import Mastodon, herald_register_adapters
from adapters.mastodon.adapter import KEY_TTL
from adapters.mastodon.limits import DEFAULT_LIMITS
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import (
    Adapter,
    Attachment,
    Limits,
    MediaFile,
    PublishContext,
    Published,
    UploadContext,
    VerifyContext,
)
from core.plugins.channel_settings import check_settings, is_secret
from tests.unit.test_mastodon_conformance import BASE_URL, SETTINGS, STATUS, STATUSES, TOKEN

KEY = "k" * 25
MEDIA_V2 = f"{BASE_URL}/api/v2/media"
MEDIA_ID = "22348641"
MEDIA_V1 = f"{BASE_URL}/api/v1/media/{MEDIA_ID}"
VERIFY = f"{BASE_URL}/api/v1/accounts/verify_credentials"
INSTANCE = f"{BASE_URL}/api/v2/instance"

#: content/en/methods/media.md, "Upload media as an attachment (async)", 200: OK.
MEDIA: dict[str, Any] = {
    "id": MEDIA_ID,
    "type": "image",
    "url": "https://files.mastodon.social/media_attachments/files/022/348/641/original/e96382f26c72a29c.jpeg",
    "preview_url": "https://files.mastodon.social/media_attachments/files/022/348/641/small/e96382f26c72a29c.jpeg",
    "remote_url": None,
    "text_url": "https://mastodon.social/media/4Zj6ewxzzzDi0g8JnZQ",
    "meta": {
        "focus": {"x": -0.42, "y": 0.69},
        "original": {"width": 640, "height": 480, "size": "640x480", "aspect": 1.3333333333333333},
        "small": {"width": 461, "height": 346, "size": "461x346", "aspect": 1.3323699421965318},
    },
    "description": "test uploaded via api",
    "blurhash": "UFBWY:8_0Jxv4mx]t8t64.%M-:IUWGWAt6M}",
}
#: The same method's 202: Accepted: "the MediaAttachment's url will still be null".
MEDIA_PROCESSING: dict[str, Any] = MEDIA | {
    "url": None,
    "preview_url": "https://files.mastodon.social/media_attachments/files/022/348/641/small/cebc6d51be03e509.jpeg",
}

#: content/en/methods/accounts.md, "Verify account credentials", 200: OK (trimmed).
CREDENTIAL_ACCOUNT: dict[str, Any] = {
    "id": "14715",
    "username": "trwnh",
    "acct": "trwnh",
    "display_name": "infinite love ⴳ",
    "locked": False,
    "bot": False,
    "created_at": "2016-11-24T10:02:12.085Z",
    "url": "https://mastodon.social/@trwnh",
    "followers_count": 821,
    "following_count": 178,
    "statuses_count": 33120,
    "source": {"privacy": "public", "sensitive": False, "language": "", "fields": []},
    "emojis": [],
    "fields": [],
}

#: content/en/methods/instance.md, "View server information", 200: OK: its configuration.
INSTANCE_BODY: dict[str, Any] = {
    "domain": "mastodon.social",
    "title": "Mastodon",
    "version": "4.5.0-nightly.2025-07-11",
    "configuration": {
        "urls": {"streaming": "wss://streaming.mastodon.social"},
        "accounts": {"max_featured_tags": 10, "max_pinned_statuses": 5},
        "statuses": {"max_characters": 500, "max_media_attachments": 4, "characters_reserved_per_url": 23},
        "media_attachments": {
            "description_limit": 1500,
            "image_matrix_limit": 33177600,
            "image_size_limit": 16777216,
            "supported_mime_types": [
                "image/jpeg",
                "image/png",
                "image/gif",
                "image/heic",
                "image/heif",
                "image/webp",
                "image/avif",
                "video/webm",
                "video/mp4",
                "video/quicktime",
                "video/ogg",
                "audio/wave",
                "audio/wav",
                "audio/x-wav",
                "audio/x-pn-wave",
                "audio/vnd.wave",
                "audio/ogg",
                "audio/vorbis",
                "audio/mpeg",
                "audio/mp3",
                "audio/webm",
                "audio/flac",
                "audio/aac",
                "audio/m4a",
                "audio/x-m4a",
                "audio/mp4",
                "audio/3gpp",
                "video/x-ms-asf",
            ],
            "video_frame_rate_limit": 120,
            "video_matrix_limit": 8294400,
            "video_size_limit": 103809024,
        },
        "polls": {"max_options": 4, "max_characters_per_option": 50, "min_expiration": 300, "max_expiration": 2629746},
    },
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def mastodon() -> Iterator[respx.MockRouter]:
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


def uploaded(platform_id: str, mime: str = "image/jpeg", alt: str | None = None) -> Attachment:
    return Attachment(platform_id=platform_id, alt=alt, mime=mime)


def upload_context(client: httpx.Client, file: MediaFile) -> UploadContext:
    return UploadContext(settings=SETTINGS, client=client, file=file, key=f"{KEY}m0")


def verify_context(client: httpx.Client, settings: dict[str, str] = SETTINGS) -> VerifyContext:
    return VerifyContext(settings=settings, client=client)


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


def test_mastodon_deduplicates_by_idempotency_key_for_an_hour_and_cannot_read_back() -> None:
    adapter = Mastodon()
    assert (adapter.name, adapter.strategy, adapter.key_ttl) == ("mastodon", Strategy.NATIVE_KEY, 3600.0)
    assert KEY_TTL == 3600.0  # "Idempotency keys are stored for up to 1 hour" (statuses.md)
    assert not adapter.can_find
    assert adapter.can_verify
    assert adapter.uploads_first is True


def test_mastodon_declares_a_stock_instances_limits() -> None:
    limits = Mastodon.limits
    assert limits is DEFAULT_LIMITS
    assert (limits.max_chars, limits.text_unit, limits.threads, limits.edit) == (500, "graphemes", True, False)
    assert (limits.max_media, limits.max_image_bytes, limits.max_video_bytes) == (4, 16 * 2**20, 99 * 2**20)
    assert (limits.alt_text, limits.max_alt_chars, limits.max_video_seconds) == (True, 1500, None)
    assert {"image/jpeg", "image/png", "image/gif", "image/webp", "video/mp4", "video/webm"} <= limits.media_types
    assert all(t.startswith(("image/", "video/")) for t in limits.media_types)


def test_the_plugin_registers_the_adapter() -> None:
    registered: list[type[Adapter]] = []

    herald_register_adapters(registered.append)

    assert registered == [Mastodon]


# -- what is sent -------------------------------------------------------------------------


def test_a_status_goes_to_the_instance_with_the_token_and_the_key_as_idempotency_key(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # POST /api/v1/statuses, "Authorization: Bearer <user_token>", "Idempotency-Key": statuses.md.
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    published = Mastodon().publish(context(client))

    request = route.calls.last.request
    assert (request.method, str(request.url)) == ("POST", STATUSES)
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Idempotency-Key"] == KEY
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.content) == {"status": "hello", "visibility": "public"}
    assert published == Published(STATUS["id"], STATUS["url"])


def test_the_channels_visibility_goes_with_each_status(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # visibility: "public, unlisted, private, direct" (statuses.md).
    route = mastodon.post(STATUSES).respond(200, json=STATUS | {"visibility": "unlisted"})

    Mastodon().publish(context(client, settings=SETTINGS | {"visibility": "unlisted"}))

    assert json.loads(route.calls.last.request.content)["visibility"] == "unlisted"


def test_a_resend_carries_the_same_key_and_adopts_the_status_mastodon_returns(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # A repeat within the hour returns the first status (statuses.md, Idempotency-Key).
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    first = Mastodon().publish(context(client))
    again = Mastodon().publish(context(client))

    assert first == again
    assert [call.request.headers["Idempotency-Key"] for call in route.calls] == [KEY, KEY]


def test_a_thread_part_replies_to_the_part_before_it(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # in_reply_to_id: "ID of the status being replied to, if status is a reply" (statuses.md).
    route = mastodon.post(STATUSES).respond(200, json=STATUS | {"in_reply_to_id": "103270115826040000"})

    Mastodon().publish(context(client, part_index=2, reply_to="103270115826040000", root="103270115826000000"))

    body = json.loads(route.calls.last.request.content)
    assert body["in_reply_to_id"] == "103270115826040000"
    assert "103270115826000000" not in route.calls.last.request.content.decode()  # the root is not the parent


def test_a_first_part_is_no_reply(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    Mastodon().publish(context(client))

    assert "in_reply_to_id" not in json.loads(route.calls.last.request.content)


def test_uploaded_attachments_go_in_order_as_media_ids(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # media_ids[]: "Include Attachment IDs to be attached as media" (statuses.md).
    route = mastodon.post(STATUSES).respond(200, json=STATUS)
    media = (uploaded("22348641"), uploaded("22348642", "image/png"), uploaded("22348640"))

    Mastodon().publish(context(client, media=media, reply_to="1"))

    body = json.loads(route.calls.last.request.content)
    assert body == {
        "status": "hello",
        "visibility": "public",
        "in_reply_to_id": "1",
        "media_ids": ["22348641", "22348642", "22348640"],
    }


def test_attachments_may_go_without_text(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # status: "If media_ids is provided, this becomes optional" (statuses.md).
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    Mastodon().publish(context(client, text="", media=(uploaded(MEDIA_ID),)))

    assert json.loads(route.calls.last.request.content) == {
        "status": "",
        "visibility": "public",
        "media_ids": [MEDIA_ID],
    }


def test_a_video_beside_other_attachments_is_refused_before_any_request(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # "Only one video can be attached, per post" (content/en/user/posting.md).
    route = mastodon.post(STATUSES).respond(200, json=STATUS)
    media = (uploaded("1"), uploaded("2", "video/mp4"))

    with pytest.raises(Rejected) as caught:
        Mastodon().publish(context(client, media=media))

    assert caught.value.reason is Reason.MEDIA_INVALID
    assert "one video alone" in str(caught.value)
    assert not route.called


def test_one_video_alone_goes_out(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    Mastodon().publish(context(client, media=(uploaded("2", "video/mp4"),)))

    assert json.loads(route.calls.last.request.content)["media_ids"] == ["2"]


def test_an_attachment_without_an_upload_id_is_refused_before_any_request(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    with pytest.raises(Rejected) as caught:
        Mastodon().publish(context(client, media=(uploaded("1"), uploaded(""))))

    assert caught.value.reason is Reason.MEDIA_INVALID
    assert not route.called


def test_a_trailing_slash_on_base_url_makes_no_double_slash(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    route = mastodon.post(STATUSES).respond(200, json=STATUS)

    Mastodon().publish(context(client, settings=SETTINGS | {"base_url": f"{BASE_URL}/"}))

    assert route.called


# -- what the answer says -----------------------------------------------------------------


def test_a_status_without_a_url_links_to_its_uri(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # url: "A link to the status's HTML representation", nullable; uri: "URI of the status
    # used for federation" (content/en/entities/Status.md).
    mastodon.post(STATUSES).respond(200, json=STATUS | {"url": None})

    published = Mastodon().publish(context(client))

    assert published == Published(STATUS["id"], STATUS["uri"])


@pytest.mark.parametrize(
    "answer",
    [
        {"json": STATUS | {"id": None}},
        {"json": {key: value for key, value in STATUS.items() if key != "id"}},
        {"json": [STATUS]},
        {"text": "<html>ok</html>"},
    ],
    ids=["null-id", "no-id", "not-an-object", "not-json"],
)
def test_a_confirmation_without_the_statuss_id_is_ambiguous(
    mastodon: respx.MockRouter, client: httpx.Client, answer: dict[str, Any]
) -> None:
    mastodon.post(STATUSES).respond(200, **answer)

    with pytest.raises(Ambiguous):
        Mastodon().publish(context(client))


# -- uploads ------------------------------------------------------------------------------


def test_an_upload_sends_the_file_and_its_alt_text_as_description(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # POST /api/v2/media, multipart "file" (with a MIME type) and "description": media.md.
    route = mastodon.post(MEDIA_V2).respond(200, json=MEDIA)
    cat = media_file("cat.jpg", "image/jpeg", b"\xff\xd8\xff cat", alt="A cat asleep on a keyboard")

    result = Mastodon().upload(upload_context(client, cat))

    request = route.calls.last.request
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    parts = {part.name: part for part in multipart(request)}
    assert set(parts) == {"description", "file"}
    assert parts["description"].data.decode() == "A cat asleep on a keyboard"
    file = parts["file"]
    assert (file.filename, file.content_type, file.data) == ("cat.jpg", "image/jpeg", b"\xff\xd8\xff cat")
    assert (result.platform_id, result.ready) == (MEDIA_ID, True)


def test_an_upload_without_alt_text_sends_no_description(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    route = mastodon.post(MEDIA_V2).respond(200, json=MEDIA)

    Mastodon().upload(upload_context(client, media_file("cat.png", "image/png", b"\x89PNG")))

    assert [part.name for part in multipart(route.calls.last.request)] == ["file"]


def test_an_upload_still_processing_is_not_ready(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "202: Accepted – MediaAttachment was created successfully, but the full-size file is
    # still processing" (media.md).
    mastodon.post(MEDIA_V2).respond(202, json=MEDIA_PROCESSING)

    result = Mastodon().upload(upload_context(client, media_file("clip.mp4", "video/mp4", b"\x00\x00 ftyp")))

    assert (result.platform_id, result.ready) == (MEDIA_ID, False)


def test_a_refused_file_is_media_invalid(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "422: File or file type is unsupported or invalid" (media.md).
    refusal = {"error": "Validation failed: File content type is invalid, File is invalid"}
    mastodon.post(MEDIA_V2).respond(422, json=refusal)

    with pytest.raises(Rejected) as caught:
        Mastodon().upload(upload_context(client, media_file("x.png", "image/png", b"nope")))

    assert caught.value.reason is Reason.MEDIA_INVALID


def test_a_thumbnail_failure_may_have_made_the_upload(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "500: Could not generate a thumbnail for the attachment" (media.md); herald's attaching
    # step turns it into NotSent, since an upload is never the post.
    mastodon.post(MEDIA_V2).respond(500, json={"error": "Error processing thumbnail for uploaded media"})

    with pytest.raises(Ambiguous):
        Mastodon().upload(upload_context(client, media_file("x.png", "image/png", b"\x89PNG")))


def test_an_upload_confirmed_without_its_id_is_ambiguous(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    mastodon.post(MEDIA_V2).respond(202, json={"type": "video"})

    with pytest.raises(Ambiguous):
        Mastodon().upload(upload_context(client, media_file("clip.mp4", "video/mp4", b"\x00")))


@pytest.mark.parametrize(("status", "ready"), [(206, False), (200, True)])
def test_media_ready_asks_get_media_until_it_is_processed(
    mastodon: respx.MockRouter, client: httpx.Client, status: int, ready: bool
) -> None:
    # GET /api/v1/media/:id: "206: Partial content – The media attachment is still being
    # processed"; "200: OK – The media file was processed" (media.md).
    route = mastodon.get(MEDIA_V1).respond(status, json=MEDIA if status == 200 else None)

    assert Mastodon().media_ready(upload_context(client, media_file("clip.mp4", "video/mp4", b"")), MEDIA_ID) is ready
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (422, {"error": "Validation failed: File content type is invalid, File is invalid"}),
        (404, {"error": "Record not found"}),
    ],
    ids=["processing-failed", "upload-gone"],
)
def test_an_upload_that_failed_or_is_gone_is_media_invalid(
    mastodon: respx.MockRouter, client: httpx.Client, status: int, body: dict[str, str]
) -> None:
    # 422 "There was an error processing the media attachment"; 404 "MediaAttachment is not
    # owned by you or does not exist" (media.md, Get media attachment).
    mastodon.get(MEDIA_V1).respond(status, json=body)

    with pytest.raises(Rejected) as caught:
        Mastodon().media_ready(upload_context(client, media_file("clip.mp4", "video/mp4", b"")), MEDIA_ID)

    assert caught.value.reason is Reason.MEDIA_INVALID


def test_media_ready_puts_the_id_in_the_path_safely(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    route = mastodon.get(f"{BASE_URL}/api/v1/media/a%2Fb").respond(206)

    Mastodon().media_ready(upload_context(client, media_file("clip.mp4", "video/mp4", b"")), "a/b")

    assert route.called


# -- verify -------------------------------------------------------------------------------


def test_verify_names_the_account_with_its_instance(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # GET /api/v1/accounts/verify_credentials (accounts.md); acct is "Equal to username for
    # local users" (content/en/entities/Account.md).
    route = mastodon.get(VERIFY).respond(200, json=CREDENTIAL_ACCOUNT)

    assert Mastodon().verify(verify_context(client)) == "@trwnh@mastodon.social"
    request = route.calls.last.request
    assert (request.method, request.headers["Authorization"]) == ("GET", f"Bearer {TOKEN}")
    assert len(mastodon.calls) == 1


def test_verify_refused_is_auth_expired(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "401: Your credential verification will fail if the token is invalid or incorrect" (accounts.md).
    mastodon.get(VERIFY).respond(401, json={"error": "The access token is invalid"})

    with pytest.raises(AuthExpired):
        Mastodon().verify(verify_context(client))


def test_verify_with_an_apps_own_token_is_auth_expired(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "422: Token does not have an authorized user" (accounts.md).
    mastodon.get(VERIFY).respond(422, json={"error": "This method requires an authenticated user"})

    with pytest.raises(AuthExpired) as caught:
        Mastodon().verify(verify_context(client))

    assert "not an account" in str(caught.value)


def test_verify_of_a_disabled_login_is_permission_denied(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # "403: Your user account is currently disabled, missing a confirmed email address, or
    # pending approval" (accounts.md).
    mastodon.get(VERIFY).respond(403, json={"error": "Your login is currently disabled"})

    with pytest.raises(Rejected) as caught:
        Mastodon().verify(verify_context(client))

    assert caught.value.reason is Reason.PERMISSION_DENIED


def test_verify_at_an_address_that_is_not_mastodon_is_a_config_error(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    mastodon.get(VERIFY).respond(404, text="<html>Not Found</html>")

    with pytest.raises(ConfigError, match="base_url"):
        Mastodon().verify(verify_context(client))


def test_verify_without_the_accounts_acct_is_ambiguous(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    mastodon.get(VERIFY).respond(200, json={"id": "14715"})

    with pytest.raises(Ambiguous):
        Mastodon().verify(verify_context(client))


# -- an instance's own limits -------------------------------------------------------------


def test_an_instances_configuration_becomes_its_channels_limits(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # GET /api/v2/instance, configuration.statuses and .media_attachments (instance.md).
    route = mastodon.get(INSTANCE).respond(200, json=INSTANCE_BODY)

    limits = Mastodon().channel_limits(verify_context(client))

    assert route.calls.last.request.method == "GET"
    assert limits == DEFAULT_LIMITS  # the docs' example instance is the stock one
    assert limits is not None and not any(t.startswith("audio/") for t in limits.media_types)


def test_an_instance_with_its_own_limits_is_read_as_it_says(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    configuration = {
        "statuses": {"max_characters": 5000, "max_media_attachments": 8, "characters_reserved_per_url": 30},
        # No description_limit: "4.4.0 - added" (content/en/entities/Instance.md).
        "media_attachments": {
            "image_size_limit": 10485760,
            "video_size_limit": 41943040,
            "supported_mime_types": ["image/jpeg", "image/png", "video/mp4", "audio/mpeg"],
        },
    }
    mastodon.get(INSTANCE).respond(200, json=INSTANCE_BODY | {"configuration": configuration})

    limits = Mastodon().channel_limits(verify_context(client))

    assert limits == Limits(
        max_chars=5000,
        text_unit="graphemes",
        url_chars=30,
        threads=True,
        edit=False,
        max_media=8,
        media_types=frozenset({"image/jpeg", "image/png", "video/mp4"}),
        max_image_bytes=10485760,
        max_video_bytes=41943040,
        max_video_seconds=None,
        max_videos=1,
        video_alone=True,
        alt_text=True,
        max_alt_chars=1500,
    )


def test_values_of_another_shape_keep_the_defaults(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    configuration = {
        "statuses": {"max_characters": "500", "max_media_attachments": True},
        "media_attachments": {"image_size_limit": -1, "supported_mime_types": ["audio/mpeg"]},
    }
    mastodon.get(INSTANCE).respond(200, json={"configuration": configuration})

    assert Mastodon().channel_limits(verify_context(client)) == DEFAULT_LIMITS


def test_an_instance_answer_that_is_no_instance_is_ambiguous(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    mastodon.get(INSTANCE).respond(200, text="<html>Welcome to nginx!</html>")

    with pytest.raises(Ambiguous):
        Mastodon().channel_limits(verify_context(client))


def test_an_instance_without_the_v2_method_keeps_the_defaults(mastodon: respx.MockRouter, client: httpx.Client) -> None:
    # GET /api/v2/instance: "4.0.0 - added" (instance.md).
    mastodon.get(INSTANCE).respond(404, json={"error": "Record not found"})

    assert Mastodon().channel_limits(verify_context(client)) is None


def test_an_instance_refusing_the_token_for_its_limits_is_auth_expired(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    # 401 "This API requires an authenticated user": an instance in secure mode (Error.md).
    mastodon.get(INSTANCE).respond(401, json={"error": "This API requires an authenticated user"})

    with pytest.raises(AuthExpired):
        Mastodon().channel_limits(verify_context(client))


# -- channel settings ---------------------------------------------------------------------


def test_a_channel_needs_the_instance_and_a_token() -> None:
    check_settings(Mastodon, SETTINGS)
    check_settings(Mastodon, SETTINGS | {"visibility": "private"})
    with pytest.raises(ConfigError, match="token"):
        check_settings(Mastodon, {"base_url": BASE_URL})
    with pytest.raises(ConfigError, match="base_url"):
        check_settings(Mastodon, {"token": TOKEN})


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("base_url", "mastodon.social", "not an http(s) URL"),
        ("base_url", "https://mastodon.social/@trwnh", "has a path"),
        ("base_url", "https://mastodon.social/api/v1", "has a path"),
        ("token", f"Bearer {TOKEN}", "starts with 'Bearer '"),
        ("token", "two words", "has spaces"),
        ("visibility", "followers", "not a Mastodon visibility"),
        ("visibility", "Public", "not a Mastodon visibility"),
    ],
)
def test_settings_that_cannot_work_are_refused_when_the_channel_is_made(name: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        check_settings(Mastodon, SETTINGS | {name: value})


def test_the_token_is_a_secret_and_the_rest_are_not() -> None:
    assert is_secret(Mastodon, "token")
    assert not is_secret(Mastodon, "base_url")
    assert not is_secret(Mastodon, "visibility")


@pytest.mark.parametrize("missing", ["base_url", "token"])
def test_a_channel_made_without_a_required_setting_is_held_with_the_fix(
    mastodon: respx.MockRouter, client: httpx.Client, missing: str
) -> None:
    settings = {name: value for name, value in SETTINGS.items() if name != missing}

    with pytest.raises(ConfigError, match=f"--set {missing}="):
        Mastodon().publish(context(client, settings=settings))

    assert not mastodon.calls


def test_a_stored_visibility_mastodon_does_not_know_is_held_with_the_fix(
    mastodon: respx.MockRouter, client: httpx.Client
) -> None:
    with pytest.raises(ConfigError, match="visibility"):
        Mastodon().publish(context(client, settings=SETTINGS | {"visibility": "followers"}))

    assert not mastodon.calls
