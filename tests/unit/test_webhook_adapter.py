"""The webhook adapter against respx: what it sends and signs, and how it reads each answer.

The receiver's side is the contract the adapter documents (adapters/webhook/__init__.py);
the status codes the IETF Idempotency-Key draft gives a receiver
(https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-idempotency-key-header, "Error
Handling") and Retry-After (RFC 9110 §10.2.3) are the standards it follows.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import respx

from adapters.webhook import WebhookAdapter, herald_register_adapters
from adapters.webhook.adapter import KEY_TTL
from adapters.webhook.signing import signature, signature_matches
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import (
    IMAGE_TYPES,
    MB,
    Adapter,
    Attachment,
    Limits,
    MediaFile,
    PublishContext,
    Published,
    VerifyContext,
)
from core.plugins.channel_settings import check_settings

URL = "https://receiver.test/hooks/herald"
SECRET = "0123456789abcdef0123456789abcdef"
KEY = "k" * 25
NOW = 1_700_000_000.25
TIMESTAMP = "1700000000"
CREATED = {"id": "h-7", "url": "https://receiver.test/posts/h-7"}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def receiver() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def adapter() -> WebhookAdapter:
    return WebhookAdapter(clock=lambda: NOW)


def context(client: httpx.Client, **overrides: Any) -> PublishContext:
    ctx = PublishContext(settings={"url": URL, "secret": SECRET}, client=client, key=KEY, text="hello")
    return replace(ctx, **overrides)


def media_file(data: bytes, mime: str, filename: str, alt: str | None) -> MediaFile:
    return MediaFile(
        digest=hashlib.sha256(data).hexdigest(),
        mime=mime,
        size=len(data),
        filename=filename,
        alt=alt,
        width=None,
        height=None,
        duration=None,
        read=lambda: data,
    )


def hmac_hex(secret: str, message: bytes) -> str:
    """The receiver's own computation, written out here rather than taken from the adapter."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def answer(receiver: respx.MockRouter, response: httpx.Response) -> respx.Route:
    # adapters/webhook/__init__.py "What the receiver is sent": one POST to url per part
    return receiver.post(URL).mock(return_value=response)


# -- declarations -------------------------------------------------------------------------


def test_declares_native_key_for_a_day_files_with_the_post_and_its_limits() -> None:
    assert (WebhookAdapter.name, WebhookAdapter.strategy, WebhookAdapter.key_ttl) == (
        "webhook",
        Strategy.NATIVE_KEY,
        24 * 3600,
    )
    assert KEY_TTL == 24 * 3600
    assert WebhookAdapter.uploads_first is False
    assert WebhookAdapter.limits == Limits(
        max_chars=65_536,
        threads=True,
        max_media=4,
        media_types=IMAGE_TYPES | {"video/mp4"},
        max_image_bytes=8 * MB,
        max_video_bytes=40 * MB,
        alt_text=True,
        max_alt_chars=1500,
    )
    assert WebhookAdapter().can_verify and not WebhookAdapter().can_find


def test_the_plugin_registers_the_webhook_adapter() -> None:
    registered: list[type[Adapter]] = []

    herald_register_adapters(registered.append)

    assert registered == [WebhookAdapter]


# -- the signature ------------------------------------------------------------------------


def test_the_signature_is_sha256_hex_of_timestamp_dot_body_as_openssl_computes_it() -> None:
    # `printf '%s' '1700000000.Hello, World!' | openssl dgst -sha256 -hmac "It's a Secret to Everybody"`;
    # without the timestamp the same secret and body give GitHub's documented 757107ea...
    # (docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries), which openssl also gives.
    assert signature("It's a Secret to Everybody", "1700000000", b"Hello, World!") == (
        "sha256=76c83fd0acdf22faed320674fe8e04d528cfe8a17905e720a9611e40677c03b7"
    )


def test_the_reference_check_refuses_another_body_secret_or_an_old_timestamp() -> None:
    good = signature(SECRET, TIMESTAMP, b"{}")

    assert signature_matches(SECRET, TIMESTAMP, b"{}", good, now=NOW)
    assert not signature_matches(SECRET, TIMESTAMP, b"{ }", good, now=NOW)
    assert not signature_matches("another secret, as long", TIMESTAMP, b"{}", good, now=NOW)
    assert not signature_matches(SECRET, TIMESTAMP, b"{}", good, now=NOW + 301)
    assert not signature_matches(SECRET, " 1700000000", b"{}", good, now=NOW)


# -- what is sent -------------------------------------------------------------------------


def test_publish_posts_signed_json_with_the_key_quoted_in_idempotency_key(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))

    adapter().publish(context(client))

    request = route.calls.last.request
    assert request.method == "POST" and str(request.url) == URL
    assert request.headers["Content-Type"] == "application/json"
    # The draft's syntax section: an RFC 8941 String, quoted.
    assert request.headers["Idempotency-Key"] == f'"{KEY}"'
    assert request.headers["X-Herald-Timestamp"] == TIMESTAMP
    expected = "sha256=" + hmac_hex(SECRET, TIMESTAMP.encode() + b"." + request.content)
    assert request.headers["X-Herald-Signature"] == expected
    assert signature_matches(SECRET, TIMESTAMP, request.content, request.headers["X-Herald-Signature"], now=NOW)


def test_the_body_has_the_documented_fields_in_order(receiver: respx.MockRouter, client: httpx.Client) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))

    adapter().publish(context(client, text="héllo ✓"))

    body = json.loads(route.calls.last.request.content)
    assert list(body) == ["key", "text", "part_index", "reply_to", "root", "media"]
    assert body == {"key": KEY, "text": "héllo ✓", "part_index": 0, "reply_to": None, "root": None, "media": []}
    assert "héllo ✓".encode() in route.calls.last.request.content  # UTF-8, not \\u escapes


def test_a_later_part_sends_the_ids_it_replies_to(receiver: respx.MockRouter, client: httpx.Client) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))

    adapter().publish(context(client, part_index=2, reply_to="h-6", root="h-5"))

    body = json.loads(route.calls.last.request.content)
    assert (body["part_index"], body["reply_to"], body["root"]) == (2, "h-6", "h-5")


def test_a_retry_sends_the_same_body_under_a_fresh_timestamp(receiver: respx.MockRouter, client: httpx.Client) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))
    picture = media_file(b"\x89PNG-bytes", "image/png", "a.png", "alt")
    ctx = context(client, media=(Attachment("", "alt", "image/png", picture),))

    WebhookAdapter(clock=lambda: NOW).publish(ctx)
    WebhookAdapter(clock=lambda: NOW + 90).publish(ctx)

    first, second = (call.request for call in route.calls)
    assert first.content == second.content
    assert first.headers["X-Herald-Timestamp"] != second.headers["X-Herald-Timestamp"]
    assert first.headers["X-Herald-Signature"] != second.headers["X-Herald-Signature"]


def test_attachments_go_inline_in_order_with_alt_size_and_sha256(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))
    picture, clip = b"\x89PNG\r\n\x1a\npicture", b"\x00\x00\x00\x18ftypmp42clip"
    media = (
        Attachment("", "A rising line", "image/png", media_file(picture, "image/png", "chart.png", "A rising line")),
        Attachment("", None, "video/mp4", media_file(clip, "video/mp4", "clip.mp4", None)),
    )

    adapter().publish(context(client, media=media))

    sent = json.loads(route.calls.last.request.content)["media"]
    assert [list(m) for m in sent] == [["mime", "filename", "alt", "size", "sha256", "data_base64"]] * 2
    assert [(m["mime"], m["filename"], m["alt"], m["size"]) for m in sent] == [
        ("image/png", "chart.png", "A rising line", len(picture)),
        ("video/mp4", "clip.mp4", None, len(clip)),
    ]
    assert [base64.b64decode(m["data_base64"]) for m in sent] == [picture, clip]
    assert [m["sha256"] for m in sent] == [hashlib.sha256(picture).hexdigest(), hashlib.sha256(clip).hexdigest()]


def test_an_attachment_without_its_file_is_a_bug_not_a_post(client: httpx.Client) -> None:
    ctx = context(client, media=(Attachment("up-1", None, "image/png"),))

    with pytest.raises(TypeError, match="without its file"):
        adapter().publish(ctx)


def test_the_channel_names_the_signature_header(receiver: respx.MockRouter, client: httpx.Client) -> None:
    route = answer(receiver, httpx.Response(201, json=CREATED))
    settings = {"url": URL, "secret": SECRET, "signature_header": "X-Hub-Signature-256"}

    adapter().publish(context(client, settings=settings))

    headers = route.calls.last.request.headers
    assert headers["X-Hub-Signature-256"].startswith("sha256=")
    assert "X-Herald-Signature" not in headers


@pytest.mark.parametrize("missing", ["url", "secret"])
def test_a_channel_without_url_or_secret_is_a_config_error_naming_it(client: httpx.Client, missing: str) -> None:
    settings = {"url": URL, "secret": SECRET}
    del settings[missing]

    with pytest.raises(ConfigError, match=f"--set {missing}="):
        adapter().publish(context(client, settings=settings))


# -- how each answer is read --------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201, 202])
def test_a_2xx_naming_id_and_url_is_published(receiver: respx.MockRouter, client: httpx.Client, status: int) -> None:
    answer(receiver, httpx.Response(status, json=CREATED))

    assert adapter().publish(context(client)) == Published("h-7", "https://receiver.test/posts/h-7")


@pytest.mark.parametrize(
    "response",
    [httpx.Response(204), httpx.Response(200), httpx.Response(200, json={}), httpx.Response(202, json={"ok": True})],
    ids=["204", "200-empty", "200-empty-object", "202-without-id"],
)
def test_a_2xx_without_an_id_makes_the_key_the_id_with_no_url(
    receiver: respx.MockRouter, client: httpx.Client, response: httpx.Response
) -> None:
    answer(receiver, response)

    assert adapter().publish(context(client)) == Published(KEY, "")


def test_a_2xx_with_an_id_and_no_url_has_an_empty_url(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(200, json={"id": "h-8"}))

    assert adapter().publish(context(client)) == Published("h-8", "")


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>Welcome to nginx!</html>"),
        httpx.Response(200, json=["h-7"]),
        httpx.Response(201, json={"id": 7}),
        httpx.Response(201, json={"id": ""}),
        httpx.Response(201, json={"id": "x" * 201}),
        httpx.Response(201, json={"id": "h-7", "url": 7}),
        httpx.Response(201, json={"id": "h-7", "url": "https://receiver.test/" + "p" * 500}),
    ],
    ids=["html", "list", "int-id", "empty-id", "long-id", "int-url", "long-url"],
)
def test_a_2xx_whose_body_cannot_be_read_is_ambiguous(
    receiver: respx.MockRouter, client: httpx.Client, response: httpx.Response
) -> None:
    answer(receiver, response)

    with pytest.raises(Ambiguous):
        adapter().publish(context(client))


def test_a_409_naming_the_first_posts_id_is_that_post(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(409, json=CREATED))

    assert adapter().publish(context(client)) == Published("h-7", "https://receiver.test/posts/h-7")


def test_a_409_for_a_request_still_in_flight_is_ambiguous(receiver: respx.MockRouter, client: httpx.Client) -> None:
    # The draft's "Error Handling" example for a retry while the first request is processed.
    problem = {
        "type": "https://developer.example.com/idempotency",
        "title": "A request is outstanding for this Idempotency-Key",
        "detail": "A request with the same Idempotency-Key for the same operation is being processed "
        "or is outstanding.",
    }
    answer(receiver, httpx.Response(409, json=problem, headers={"Content-Type": "application/problem+json"}))

    with pytest.raises(Ambiguous, match="outstanding") as caught:
        adapter().publish(context(client))
    assert caught.value.status == 409


def test_401_is_auth_expired(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(401, json={"error": "bad_signature"}))

    with pytest.raises(AuthExpired, match="401 bad_signature"):
        adapter().publish(context(client))


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (httpx.Response(403), Reason.PERMISSION_DENIED),
        (httpx.Response(400, json={"error": "invalid_json"}), Reason.CONTENT_REJECTED),
        (httpx.Response(422, json={"error": "content_rejected", "detail": "too long"}), Reason.CONTENT_REJECTED),
        (httpx.Response(422, json={"error": "thread_parent_missing"}), Reason.THREAD_PARENT_MISSING),
        (httpx.Response(422, json={"error": "media_invalid"}), Reason.MEDIA_INVALID),
        (httpx.Response(422, json={"error": "auth_expired"}), Reason.CONTENT_REJECTED),
        # The draft's answer to a key reused with another payload.
        (httpx.Response(422, json={"title": "Idempotency-Key is already used"}), Reason.CONTENT_REJECTED),
        (httpx.Response(418, text="I'm a teapot"), Reason.CONTENT_REJECTED),
        (httpx.Response(413), Reason.CONTENT_REJECTED),
    ],
    ids=["403", "400", "422", "422-thread", "422-media", "422-not-a-receiver-reason", "422-key-reused", "418", "413"],
)
def test_refusals_are_rejected_with_their_reason(
    receiver: respx.MockRouter, client: httpx.Client, response: httpx.Response, reason: Reason
) -> None:
    answer(receiver, response)

    with pytest.raises(Rejected) as caught:
        adapter().publish(context(client))
    assert (caught.value.reason, caught.value.status) == (reason, response.status_code)


def test_a_refusal_quotes_what_the_receiver_said(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(422, json={"error": "content_rejected", "detail": "too long"}))

    with pytest.raises(Rejected, match="422 content_rejected too long"):
        adapter().publish(context(client))


def test_413_on_a_part_with_attachments_is_media_invalid(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(413))
    picture = media_file(b"png", "image/png", "a.png", None)

    with pytest.raises(Rejected) as caught:
        adapter().publish(context(client, media=(Attachment("", None, "image/png", picture),)))
    assert caught.value.reason is Reason.MEDIA_INVALID


@pytest.mark.parametrize("status", [404, 405, 410])
def test_no_receiver_at_the_url_is_a_config_error_naming_the_fix(
    receiver: respx.MockRouter, client: httpx.Client, status: int
) -> None:
    answer(receiver, httpx.Response(status))

    with pytest.raises(ConfigError, match=r"herald channel reconnect NAME --set url="):
        adapter().publish(context(client))


def test_a_redirect_is_a_config_error_naming_where_it_points(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(308, headers={"Location": "https://receiver.test/v2/hooks"}))

    with pytest.raises(ConfigError, match=r"--set url=https://receiver.test/v2/hooks"):
        adapter().publish(context(client))


def test_429_in_seconds_is_rate_limited_for_that_long(receiver: respx.MockRouter, client: httpx.Client) -> None:
    answer(receiver, httpx.Response(429, headers={"Retry-After": "120"}))

    with pytest.raises(RateLimited) as caught:
        adapter().publish(context(client))
    assert caught.value.retry_after == 120


def test_429_with_an_http_date_counts_from_the_answers_own_date(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    # RFC 9110 §10.2.3's example date; the receiver's Date 90 s earlier; our clock years later.
    headers = {"Retry-After": "Fri, 31 Dec 1999 23:59:59 GMT", "Date": "Fri, 31 Dec 1999 23:58:29 GMT"}
    answer(receiver, httpx.Response(429, headers=headers))

    with pytest.raises(RateLimited) as caught:
        adapter().publish(context(client))
    assert caught.value.retry_after == 90


def test_429_with_an_http_date_and_no_date_header_counts_from_the_clock(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    # NOW is 2023-11-14 22:13:20.25 UTC.
    answer(receiver, httpx.Response(429, headers={"Retry-After": "Tue, 14 Nov 2023 22:15:00 GMT"}))

    with pytest.raises(RateLimited) as caught:
        adapter().publish(context(client))
    assert caught.value.retry_after == 99.75


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [({}, None), ({"Retry-After": "soon"}, None), ({"Retry-After": "Fri, 31 Dec 1999 23:59:59 GMT"}, 0.0)],
    ids=["none", "garbage", "date-passed"],
)
def test_429_without_a_usable_retry_after_leaves_the_wait_to_herald(
    receiver: respx.MockRouter, client: httpx.Client, headers: dict[str, str], retry_after: float | None
) -> None:
    answer(receiver, httpx.Response(429, headers=headers))

    with pytest.raises(RateLimited) as caught:
        adapter().publish(context(client))
    assert caught.value.retry_after == retry_after


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
def test_timeouts_and_server_errors_are_ambiguous(
    receiver: respx.MockRouter, client: httpx.Client, status: int
) -> None:
    answer(receiver, httpx.Response(status))

    with pytest.raises(Ambiguous) as caught:
        adapter().publish(context(client))
    assert caught.value.status == status


# -- verify -------------------------------------------------------------------------------


def signed_answer(secret: str, body: bytes, status: int = 200) -> Callable[[httpx.Request], httpx.Response]:
    """A receiver answering the verification GET, signing its answer with ``secret``."""

    def respond(request: httpx.Request) -> httpx.Response:
        timestamp = request.headers["X-Herald-Timestamp"]
        signed = "sha256=" + hmac_hex(secret, timestamp.encode() + b"." + body)
        return httpx.Response(status, content=body, headers={"X-Herald-Signature": signed})

    return respond


def verify_context(client: httpx.Client) -> VerifyContext:
    return VerifyContext(settings={"url": URL, "secret": SECRET}, client=client)


def test_verify_sends_a_signed_get_and_names_the_receiver_that_signs_its_answer(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    # adapters/webhook/__init__.py "Proving the secret": GET url, X-Herald-Verify: 1
    route = receiver.get(URL).mock(side_effect=signed_answer(SECRET, b'{"name": "ops desk"}'))

    who = adapter().verify(verify_context(client))

    assert who == "the receiver at receiver.test (ops desk) holds the secret"
    request = route.calls.last.request
    assert request.content == b""
    assert (request.headers["X-Herald-Verify"], request.headers["X-Herald-Timestamp"]) == ("1", TIMESTAMP)
    assert request.headers["X-Herald-Signature"] == "sha256=" + hmac_hex(SECRET, TIMESTAMP.encode() + b".")
    assert "Idempotency-Key" not in request.headers


def test_verify_of_a_signed_empty_answer_names_only_the_host(receiver: respx.MockRouter, client: httpx.Client) -> None:
    receiver.get(URL).mock(side_effect=signed_answer(SECRET, b"", status=204))

    assert adapter().verify(verify_context(client)) == "the receiver at receiver.test holds the secret"


def test_verify_of_an_answer_signed_with_another_secret_is_auth_expired(
    receiver: respx.MockRouter, client: httpx.Client
) -> None:
    receiver.get(URL).mock(side_effect=signed_answer("some other secret of length", b"{}"))

    with pytest.raises(AuthExpired, match="another secret"):
        adapter().verify(verify_context(client))


def test_verify_of_an_unsigned_2xx_proves_nothing_and_says_so(receiver: respx.MockRouter, client: httpx.Client) -> None:
    receiver.get(URL).respond(200, text="<html>It works!</html>")

    with pytest.raises(ConfigError, match="without signing its answer"):
        adapter().verify(verify_context(client))


@pytest.mark.parametrize("status", [401, 403])
def test_verify_refused_is_auth_expired(receiver: respx.MockRouter, client: httpx.Client, status: int) -> None:
    receiver.get(URL).respond(status)

    with pytest.raises(AuthExpired):
        adapter().verify(verify_context(client))


@pytest.mark.parametrize("status", [404, 405, 501])
def test_verify_on_a_receiver_without_the_get_says_it_cannot_be_checked(
    receiver: respx.MockRouter, client: httpx.Client, status: int
) -> None:
    receiver.get(URL).respond(status)

    with pytest.raises(ConfigError, match="does not take herald's signed GET"):
        adapter().verify(verify_context(client))


def test_verify_on_a_failing_receiver_is_ambiguous(receiver: respx.MockRouter, client: httpx.Client) -> None:
    receiver.get(URL).respond(500)

    with pytest.raises(Ambiguous):
        adapter().verify(verify_context(client))


# -- channel settings ---------------------------------------------------------------------


def test_a_channel_with_url_and_secret_is_accepted() -> None:
    check_settings(WebhookAdapter, {"url": URL, "secret": SECRET})
    check_settings(WebhookAdapter, {"url": "http://127.0.0.1:9000/", "secret": SECRET, "signature_header": "X-Sig"})


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({"secret": SECRET}, "needs url"),
        ({"url": URL}, "needs secret"),
        ({"url": "ftp://receiver.test/", "secret": SECRET}, "is not an http"),
        ({"url": URL, "secret": "short"}, "shorter than 16 characters"),
        ({"url": URL, "secret": SECRET, "signature_header": "X Sig"}, "not an HTTP header name"),
        ({"url": URL, "secret": SECRET, "signature_header": "X-Sig:"}, "not an HTTP header name"),
        ({"url": URL, "secret": SECRET, "signature_header": "idempotency-key"}, "herald sets itself"),
        ({"url": URL, "secret": SECRET, "signature_header": "X-Herald-Timestamp"}, "herald sets itself"),
        ({"url": URL, "secret": SECRET, "signature": "X-Sig"}, "did you mean signature_header"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_fix(settings: dict[str, str], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        check_settings(WebhookAdapter, settings)


def test_a_refused_secret_is_never_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        check_settings(WebhookAdapter, {"url": URL, "secret": "hunter2"})
    assert "hunter2" not in str(caught.value)
