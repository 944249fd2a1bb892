"""The sandbox adapters against respx: what they send, and how they read each answer;
their media against a real sandbox platform on loopback."""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import respx
from PIL import Image

from adapters.sandbox import herald_register_adapters
from adapters.sandbox.adapters import SandboxAdapter, SandboxNative, SandboxNone, SandboxReadback
from adapters.sandbox.server import SandboxServer
from core.domain.errors import (
    Ambiguous,
    AuthExpired,
    ConfigError,
    MediaNotReady,
    NotSent,
    PublishError,
    RateLimited,
    Rejected,
)
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
    UploadContext,
    Uploaded,
)
from core.plugins.transport import call_platform

BASE = "http://sandbox.test"
ADAPTERS: list[type[SandboxAdapter]] = [SandboxNative, SandboxReadback, SandboxNone]
PATHS = {SandboxNative: "native", SandboxReadback: "readback", SandboxNone: "none"}
CREATED = {"id": "x-1", "url": f"{BASE}/p/x-1", "created_at": "2024-01-01T00:00:00+00:00"}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def platform() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def context(client: httpx.Client, **settings: str) -> PublishContext:
    return PublishContext(
        settings={"base_url": BASE, **settings},
        key="k3y",
        text="hello",
        part_index=1,
        reply_to="x-0",
        root="x-0",
        client=client,
    )


def answer_posts(platform: respx.MockRouter, adapter: type[SandboxAdapter], response: httpx.Response) -> None:
    platform.post(f"/api/{PATHS[adapter]}/posts").mock(return_value=response)


# -- declarations -------------------------------------------------------------------------


def test_adapters_declare_name_strategy_ttl_and_limits() -> None:
    assert [(a.name, a.strategy, a.version) for a in ADAPTERS] == [
        ("sandbox-native", Strategy.NATIVE_KEY, "1"),
        ("sandbox-readback", Strategy.READ_BACK, "1"),
        ("sandbox-none", Strategy.NONE, "1"),
    ]
    assert SandboxNative.key_ttl == 24 * 3600
    media = IMAGE_TYPES | {"video/mp4"}
    assert all(
        a.limits
        == Limits(
            max_chars=500,
            threads=True,
            max_media=4,
            media_types=media,
            max_image_bytes=8 * MB,
            max_video_bytes=40 * MB,
            max_video_seconds=140.0,
            alt_text=True,
            max_alt_chars=1500,
        )
        for a in ADAPTERS
    )


def test_only_readback_can_find() -> None:
    assert [a().can_find for a in ADAPTERS] == [False, True, False]


def test_plugin_registers_the_three_adapters() -> None:
    registered: list[type[Adapter]] = []

    herald_register_adapters(registered.append)

    assert registered == ADAPTERS


# -- what is sent -------------------------------------------------------------------------


def test_native_sends_idempotency_key_header_and_no_key_in_body(
    platform: respx.MockRouter, client: httpx.Client
) -> None:
    route = platform.post("/api/native/posts").mock(return_value=httpx.Response(201, json=CREATED))

    SandboxNative().publish(context(client))

    request = route.calls.last.request
    assert request.headers["Idempotency-Key"] == "k3y"
    assert json.loads(request.content) == {"text": "hello", "reply_to": "x-0", "root": "x-0", "key": None, "media": []}


def test_readback_sends_key_in_body_and_no_idempotency_header(platform: respx.MockRouter, client: httpx.Client) -> None:
    route = platform.post("/api/readback/posts").mock(return_value=httpx.Response(201, json=CREATED))

    SandboxReadback().publish(context(client))

    request = route.calls.last.request
    assert "Idempotency-Key" not in request.headers
    assert json.loads(request.content)["key"] == "k3y"


def test_none_sends_neither_key_nor_idempotency_header(platform: respx.MockRouter, client: httpx.Client) -> None:
    route = platform.post("/api/none/posts").mock(return_value=httpx.Response(201, json=CREATED))

    SandboxNone().publish(context(client))

    request = route.calls.last.request
    assert "Idempotency-Key" not in request.headers
    assert json.loads(request.content)["key"] is None


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_token_defaults_to_sandbox_and_comes_from_settings(
    platform: respx.MockRouter, client: httpx.Client, adapter: type[SandboxAdapter]
) -> None:
    answer_posts(platform, adapter, httpx.Response(201, json=CREATED))

    adapter().publish(context(client))
    adapter().publish(context(client, token="s3cret"))

    calls = platform.calls
    assert calls[0].request.headers["Authorization"] == "Bearer sandbox"
    assert calls[1].request.headers["Authorization"] == "Bearer s3cret"


def test_base_url_trailing_slash_is_ignored(platform: respx.MockRouter, client: httpx.Client) -> None:
    route = platform.post("/api/none/posts").mock(return_value=httpx.Response(201, json=CREATED))

    SandboxNone().publish(context(client, base_url=f"{BASE}/"))

    assert route.called


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_missing_base_url_is_a_config_error_naming_the_setting(
    client: httpx.Client, adapter: type[SandboxAdapter]
) -> None:
    ctx = PublishContext(settings={}, key="k", text="t", client=client)

    with pytest.raises(ConfigError, match="base_url"):
        adapter().publish(ctx)


# -- how each answer is read --------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("status", [200, 201])
def test_success_returns_the_platform_id_and_url(
    platform: respx.MockRouter, client: httpx.Client, adapter: type[SandboxAdapter], status: int
) -> None:
    answer_posts(platform, adapter, httpx.Response(status, json=CREATED))

    assert adapter().publish(context(client)) == Published("x-1", f"{BASE}/p/x-1")


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_success_without_an_id_is_ambiguous(
    platform: respx.MockRouter, client: httpx.Client, adapter: type[SandboxAdapter]
) -> None:
    answer_posts(platform, adapter, httpx.Response(201, json={"ok": True}))

    with pytest.raises(Ambiguous):
        adapter().publish(context(client))


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_401_is_auth_expired(platform: respx.MockRouter, client: httpx.Client, adapter: type[SandboxAdapter]) -> None:
    answer_posts(platform, adapter, httpx.Response(401, json={"error": "auth_expired"}))

    with pytest.raises(AuthExpired) as caught:
        adapter().publish(context(client))
    assert caught.value.status == 401


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (403, {"error": "permission_denied"}, Reason.PERMISSION_DENIED),
        (422, {"error": "thread_parent_missing"}, Reason.THREAD_PARENT_MISSING),
        (422, {"error": "content_rejected", "detail": "too long"}, Reason.CONTENT_REJECTED),
        (422, {"error": "media_invalid", "detail": "the platform refused the file"}, Reason.MEDIA_INVALID),
        (422, {"error": "spam_detected"}, Reason.CONTENT_REJECTED),
        (422, "not json", Reason.CONTENT_REJECTED),
        (400, {"error": "bad_request"}, Reason.CONTENT_REJECTED),
        (404, {"error": "not_found"}, Reason.CONTENT_REJECTED),
    ],
)
def test_refusals_are_rejected_with_their_reason(
    platform: respx.MockRouter,
    client: httpx.Client,
    adapter: type[SandboxAdapter],
    status: int,
    body: object,
    reason: Reason,
) -> None:
    response = httpx.Response(status, json=body) if isinstance(body, dict) else httpx.Response(status, text=str(body))
    answer_posts(platform, adapter, response)

    with pytest.raises(Rejected) as caught:
        adapter().publish(context(client))
    assert (caught.value.reason, caught.value.status) == (reason, status)


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(("header", "retry_after"), [("7", 7.0), ("1.5", 1.5), ("soon", None), (None, None)])
def test_429_is_rate_limited_with_retry_after_seconds(
    platform: respx.MockRouter,
    client: httpx.Client,
    adapter: type[SandboxAdapter],
    header: str | None,
    retry_after: float | None,
) -> None:
    headers = {"Retry-After": header} if header is not None else {}
    answer_posts(platform, adapter, httpx.Response(429, json={"error": "rate_limited"}, headers=headers))

    with pytest.raises(RateLimited) as caught:
        adapter().publish(context(client))
    assert caught.value.retry_after == retry_after


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(("status", "error"), [(503, NotSent), (500, Ambiguous), (502, Ambiguous), (504, Ambiguous)])
def test_5xx_is_not_sent_only_for_503_which_stores_nothing(
    platform: respx.MockRouter,
    client: httpx.Client,
    adapter: type[SandboxAdapter],
    status: int,
    error: type[PublishError],
) -> None:
    answer_posts(platform, adapter, httpx.Response(status, json={"error": "x"}))

    with pytest.raises(error) as caught:
        adapter().publish(context(client))
    assert type(caught.value) is error
    assert caught.value.status == status


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_transport_errors_are_left_to_call_platform(
    platform: respx.MockRouter, client: httpx.Client, adapter: type[SandboxAdapter]
) -> None:
    platform.post(f"/api/{PATHS[adapter]}/posts").mock(side_effect=httpx.ReadTimeout("slow"))

    with pytest.raises(httpx.ReadTimeout):
        adapter().publish(context(client))
    with pytest.raises(Ambiguous):
        call_platform(lambda: adapter().publish(context(client)))


# -- find (read-back) ---------------------------------------------------------------------


def hit(post_id: str) -> dict[str, object]:
    return {"id": post_id, "url": f"{BASE}/p/{post_id}", "key": "k3y", "text": "hello"}


def test_find_searches_by_key_and_returns_the_first_match(platform: respx.MockRouter, client: httpx.Client) -> None:
    route = platform.get("/api/readback/posts").mock(
        return_value=httpx.Response(200, json={"posts": [hit("readback-1"), hit("readback-2")]})
    )

    found = SandboxReadback().find(context(client))

    assert found == Published("readback-1", f"{BASE}/p/readback-1")
    assert route.calls.last.request.url.params["key"] == "k3y"


def test_find_all_returns_every_copy(platform: respx.MockRouter, client: httpx.Client) -> None:
    platform.get("/api/readback/posts").mock(
        return_value=httpx.Response(200, json={"posts": [hit("readback-1"), hit("readback-2")]})
    )

    assert [p.platform_id for p in SandboxReadback().find_all(context(client))] == ["readback-1", "readback-2"]


def test_find_without_match_is_none(platform: respx.MockRouter, client: httpx.Client) -> None:
    platform.get("/api/readback/posts").mock(return_value=httpx.Response(200, json={"posts": []}))

    assert SandboxReadback().find(context(client)) is None


def test_find_maps_errors_like_publish(platform: respx.MockRouter, client: httpx.Client) -> None:
    platform.get("/api/readback/posts").mock(return_value=httpx.Response(401, json={"error": "auth_expired"}))

    with pytest.raises(AuthExpired):
        SandboxReadback().find(context(client))


# -- media ------------------------------------------------------------------------------


def png(color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(buffer, "PNG")
    return buffer.getvalue()


def media_file(data: bytes, mime: str = "image/png", filename: str = "cat.png") -> MediaFile:
    return MediaFile(
        digest=hashlib.sha256(data).hexdigest(),
        mime=mime,
        size=len(data),
        filename=filename,
        alt=None,
        width=4,
        height=4,
        duration=None,
        read=lambda: data,
    )


def upload_context(client: httpx.Client, base_url: str, file: MediaFile, **settings: str) -> UploadContext:
    return UploadContext(settings={"base_url": base_url, **settings}, client=client, file=file, key="k3y:1")


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not true within {timeout:g}s"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer() as running:
        yield running


@pytest.fixture
def live(sandbox: SandboxServer, client: httpx.Client) -> str:
    """The real platform's address, emptied and without faults."""
    client.delete(f"{sandbox.url}/sandbox/posts").raise_for_status()
    return sandbox.url


def set_faults(client: httpx.Client, base_url: str, **faults: object) -> None:
    client.put(f"{base_url}/sandbox/faults", json=faults).raise_for_status()


def uploads(client: httpx.Client, base_url: str) -> list[dict[str, object]]:
    listed: list[dict[str, object]] = client.get(f"{base_url}/sandbox/media").json()["media"]
    return listed


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_upload_sends_the_file_typed_and_with_the_token_and_returns_a_ready_upload(
    client: httpx.Client, live: str, adapter: type[SandboxAdapter]
) -> None:
    data = png()

    uploaded = adapter().upload(upload_context(client, live, media_file(data), token="s3cret"))

    (stored,) = uploads(client, live)
    assert uploaded == Uploaded(platform_id=str(stored["id"]), ready=True)
    assert (stored["strategy"], stored["mime"], stored["token"]) == (PATHS[adapter], "image/png", "s3cret")
    assert stored["sha256"] == hashlib.sha256(data).hexdigest()
    assert adapter().media_ready(upload_context(client, live, media_file(data)), uploaded.platform_id) is True


def test_an_upload_still_processing_is_not_ready_until_media_ready_says_it_is(client: httpx.Client, live: str) -> None:
    set_faults(client, live, media_processing_seconds=0.3)
    ctx = upload_context(client, live, media_file(png()))

    uploaded = SandboxNative().upload(ctx)

    assert uploaded.ready is False
    assert SandboxNative().media_ready(ctx, uploaded.platform_id) is False
    eventually(lambda: SandboxNative().media_ready(ctx, uploaded.platform_id))


def test_an_upload_whose_processing_failed_at_once_is_rejected_naming_the_file(client: httpx.Client, live: str) -> None:
    set_faults(client, live, media_processing_fails=1.0)

    with pytest.raises(Rejected, match=r"could not process cat\.png") as caught:
        SandboxNone().upload(upload_context(client, live, media_file(png())))
    assert caught.value.reason is Reason.MEDIA_INVALID


def test_media_ready_of_an_upload_whose_processing_failed_is_rejected_naming_the_file(
    client: httpx.Client, live: str
) -> None:
    set_faults(client, live, media_processing_seconds=0.2, media_processing_fails=1.0)
    ctx = upload_context(client, live, media_file(png(), filename="holiday.png"))
    uploaded = SandboxNone().upload(ctx)

    def failed() -> bool:
        try:
            SandboxNone().media_ready(ctx, uploaded.platform_id)
        except Rejected as exc:
            assert exc.reason is Reason.MEDIA_INVALID and "could not process holiday.png" in str(exc)
            return True
        return False

    eventually(failed)


def test_a_file_the_platform_refuses_is_rejected_as_media_invalid(client: httpx.Client, live: str) -> None:
    with pytest.raises(Rejected) as caught:
        SandboxNone().upload(upload_context(client, live, media_file(png(), mime="image/jpeg")))

    assert (caught.value.reason, caught.value.status) == (Reason.MEDIA_INVALID, 422)
    assert uploads(client, live) == []


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_publish_carries_the_attachments_in_order_with_their_alt_text(
    client: httpx.Client, live: str, adapter: type[SandboxAdapter]
) -> None:
    first = adapter().upload(upload_context(client, live, media_file(png("red"))))
    second = adapter().upload(upload_context(client, live, media_file(png("blue"))))
    ctx = PublishContext(
        settings={"base_url": live},
        key="k3y",
        text="two pictures",
        client=client,
        media=(
            Attachment(platform_id=second.platform_id, alt="blue", mime="image/png"),
            Attachment(platform_id=first.platform_id, alt=None, mime="image/png"),
        ),
    )

    published = adapter().publish(ctx)

    (stored,) = client.get(f"{live}/sandbox/posts").json()["posts"]
    assert stored["id"] == published.platform_id
    assert stored["media"] == [
        {"id": second.platform_id, "alt": "blue", "mime": "image/png"},
        {"id": first.platform_id, "alt": None, "mime": "image/png"},
    ]


def test_publish_attaching_media_still_processing_is_media_not_ready_and_posts_nothing(
    client: httpx.Client, live: str
) -> None:
    set_faults(client, live, media_processing_seconds=3600)
    uploaded = SandboxReadback().upload(upload_context(client, live, media_file(png())))
    ctx = PublishContext(
        settings={"base_url": live},
        key="k3y",
        text="wait for it",
        client=client,
        media=(Attachment(platform_id=uploaded.platform_id, alt=None, mime="image/png"),),
    )

    with pytest.raises(MediaNotReady) as caught:
        SandboxReadback().publish(ctx)

    assert isinstance(caught.value, NotSent) and caught.value.status == 422
    assert client.get(f"{live}/sandbox/posts").json()["posts"] == []


def test_422_media_not_ready_is_media_not_ready_not_rejected(platform: respx.MockRouter, client: httpx.Client) -> None:
    answer_posts(platform, SandboxNone, httpx.Response(422, json={"error": "media_not_ready"}))

    with pytest.raises(MediaNotReady) as caught:
        SandboxNone().publish(context(client))
    assert caught.value.status == 422


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(201, json={"state": "ready"}),
        httpx.Response(201, json={"id": 7, "state": "ready"}),
        httpx.Response(201, json=["media-1"]),
        httpx.Response(201, text="created"),
    ],
)
def test_an_upload_confirmed_without_an_id_is_ambiguous(
    platform: respx.MockRouter, client: httpx.Client, response: httpx.Response
) -> None:
    platform.post("/api/none/media").mock(return_value=response)

    with pytest.raises(Ambiguous):
        SandboxNone().upload(upload_context(client, BASE, media_file(png())))


def test_upload_maps_refusals_like_publish(platform: respx.MockRouter, client: httpx.Client) -> None:
    platform.post("/api/native/media").mock(return_value=httpx.Response(429, headers={"Retry-After": "3"}))

    with pytest.raises(RateLimited) as caught:
        SandboxNative().upload(upload_context(client, BASE, media_file(png())))
    assert caught.value.retry_after == 3.0
    assert "Idempotency-Key" not in platform.calls.last.request.headers


def test_media_ready_with_a_state_it_does_not_know_is_ambiguous(
    platform: respx.MockRouter, client: httpx.Client
) -> None:
    platform.get("/api/none/media/media-1").mock(
        return_value=httpx.Response(200, json={"id": "media-1", "state": "transcoding"})
    )

    with pytest.raises(Ambiguous, match="transcoding"):
        SandboxNone().media_ready(upload_context(client, BASE, media_file(png())), "media-1")
