"""Every answer family of Mastodon, mapped to herald's errors (adapters/mastodon/answers.py).

Statuses and bodies come from mastodon/documentation (https://docs.joinmastodon.org/):
content/en/methods/statuses.md, media.md, accounts.md, content/en/entities/Error.md and
content/en/api/rate-limits.md; the ``error`` strings not quoted there are those of
mastodon/mastodon config/locales/en.yml and app/controllers/api/base_controller.rb, named
at each case.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
import respx

from adapters.mastodon import Mastodon
from adapters.mastodon.answers import raise_for_answer, retry_after
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, MediaNotReady, NotSent, RateLimited, Rejected
from core.domain.states import Reason
from core.plugins.adapter import Attachment, PublishContext
from tests.unit.test_mastodon_conformance import SERVER_NOW, SETTINGS, STATUSES, rate_limited

KEY = "k" * 25


@pytest.fixture
def mastodon() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def post(router: respx.MockRouter, answer: dict[str, Any], **extra: Any) -> None:
    """Post a part against a Post a new status answering ``answer``."""
    router.post(STATUSES).respond(**answer)
    with httpx.Client(timeout=2.0) as client:
        Mastodon().publish(PublishContext(settings=SETTINGS, client=client, key=KEY, text="hello", **extra))


def answer(status: int, error: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"status_code": status, **({"json": {"error": error}} if error is not None else {}), **extra}


# -- refusals for good --------------------------------------------------------------------


def test_a_refused_token_is_auth_expired_naming_the_fix(mastodon: respx.MockRouter) -> None:
    # statuses.md, "401: Unauthorized – Invalid or missing Authorization header".
    with pytest.raises(AuthExpired) as caught:
        post(mastodon, answer(401, "The access token is invalid"))

    assert caught.value.status == 401
    assert "herald channel reconnect NAME --set token=" in str(caught.value)


def test_a_token_without_a_user_is_auth_expired(mastodon: respx.MockRouter) -> None:
    # Error.md, 422 "!current_user": "This method requires an authenticated user".
    with pytest.raises(AuthExpired):
        post(mastodon, answer(422, "This method requires an authenticated user"))


def test_a_token_missing_a_scope_is_permission_denied_naming_the_scopes(mastodon: respx.MockRouter) -> None:
    # accounts.md, "403: Forbidden – Token is missing a required scope".
    with pytest.raises(Rejected) as caught:
        post(mastodon, answer(403, "This action is outside the authorized scopes"))

    assert caught.value.reason is Reason.PERMISSION_DENIED
    assert "write:statuses write:media read:accounts" in str(caught.value)


@pytest.mark.parametrize(
    "error",
    [
        "Your login is currently disabled",
        "Your login is missing a confirmed e-mail address",
        "Your login is currently pending approval",
        "This action is not allowed",
    ],
)
def test_a_login_that_may_not_post_is_permission_denied(mastodon: respx.MockRouter, error: str) -> None:
    # Error.md, "403 - Forbidden": NotPermitted, disabled, unconfirmed, unapproved.
    with pytest.raises(Rejected) as caught:
        post(mastodon, answer(403, error))

    assert caught.value.reason is Reason.PERMISSION_DENIED


def test_a_reply_to_a_status_that_is_gone_is_thread_parent_missing(mastodon: respx.MockRouter) -> None:
    # Api::V1::StatusesController#set_thread: a missing or hidden in_reply_to_id is a 404 with
    # statuses.errors.in_reply_not_found; Error.md, "404 - Not found: RecordNotFound".
    with pytest.raises(Rejected) as caught:
        post(
            mastodon,
            answer(404, "The post you are trying to reply to does not appear to exist."),
            reply_to="103270115826040000",
        )

    assert caught.value.reason is Reason.THREAD_PARENT_MISSING


@pytest.mark.parametrize(
    ("reply_to", "body"),
    [(None, {"json": {"error": "Record not found"}}), ("1", {"text": "<html><h1>404 Not Found</h1></html>"})],
    ids=["no-reply", "not-mastodons-404"],
)
def test_a_404_that_names_no_status_says_base_url_is_wrong(
    mastodon: respx.MockRouter, reply_to: str | None, body: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        post(mastodon, {"status_code": 404, **body}, reply_to=reply_to)


@pytest.mark.parametrize(
    "error",
    [
        "Validation failed: Text can't be blank",  # statuses.md, 422
        "Validation failed: Text character limit of 500 exceeded",  # statuses.over_character_limit
    ],
)
def test_a_refused_text_is_content_rejected(mastodon: respx.MockRouter, error: str) -> None:
    with pytest.raises(Rejected) as caught:
        post(mastodon, answer(422, error))

    assert (caught.value.reason, caught.value.status) == (Reason.CONTENT_REJECTED, 422)


@pytest.mark.parametrize(
    "error",
    [
        # config/locales/en.yml, media_attachments.validations.
        "Cannot attach a video to a post that already contains images",
        "Cannot attach more than 4 files",
        "Media 22348641 not found or already attached to another post",
    ],
)
def test_refused_attachments_are_media_invalid(mastodon: respx.MockRouter, error: str) -> None:
    with pytest.raises(Rejected) as caught:
        post(mastodon, answer(422, error), media=(Attachment("22348641", None, "image/png"),))

    assert caught.value.reason is Reason.MEDIA_INVALID


def test_an_attachment_still_processing_is_media_not_ready_and_not_sent(mastodon: respx.MockRouter) -> None:
    # media_attachments.validations.not_ready (config/locales/en.yml).
    with pytest.raises(MediaNotReady) as caught:
        post(
            mastodon,
            answer(422, "Cannot attach files that have not finished processing. Try again in a moment!"),
            media=(Attachment("22348641", None, "video/mp4"),),
        )

    assert isinstance(caught.value, NotSent)


def test_a_missing_parameter_is_content_rejected(mastodon: respx.MockRouter) -> None:
    # Error.md, "400 - Bad request: ParameterMissing".
    with pytest.raises(Rejected) as caught:
        post(mastodon, answer(400, "param is missing or the value is empty: status"))

    assert caught.value.reason is Reason.CONTENT_REJECTED


def test_a_request_too_large_is_media_invalid(mastodon: respx.MockRouter) -> None:
    with pytest.raises(Rejected) as caught:
        post(mastodon, {"status_code": 413, "text": "<html>413 Request Entity Too Large</html>"})

    assert caught.value.reason is Reason.MEDIA_INVALID


def test_any_4xx_refuses_an_upload_as_media_invalid() -> None:
    with pytest.raises(Rejected) as caught:
        missing = httpx.Response(400, json={"error": "param is missing or the value is empty: file"})
        raise_for_answer(missing, upload=True)

    assert caught.value.reason is Reason.MEDIA_INVALID


# -- in doubt -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        answer(500, "Internal Server Error"),
        {"status_code": 502, "text": "<html>502 Bad Gateway</html>"},
        # Error.md, "503 - Remote service unavailable": nothing says what was stored.
        answer(503, "There was a temporary problem serving your request, please try again"),
        answer(503, "Remote data could not be fetched"),
        {"status_code": 504},
        {"status_code": 101},
    ],
    ids=["500", "502-html", "503-race", "503-remote", "504-empty", "101"],
)
def test_a_server_error_or_an_unknown_answer_is_ambiguous(mastodon: respx.MockRouter, reply: dict[str, Any]) -> None:
    with pytest.raises(Ambiguous):
        post(mastodon, reply)


def test_a_redirect_is_a_config_error_naming_where_it_goes(mastodon: respx.MockRouter) -> None:
    # The API does not redirect; a proxy in front of it does, and herald follows none.
    with pytest.raises(ConfigError) as caught:
        post(mastodon, {"status_code": 301, "headers": {"Location": "https://mastodon.social/api/v1/statuses"}})

    assert "https://mastodon.social/api/v1/statuses" in str(caught.value)
    assert "--set base_url=" in str(caught.value)


# -- rate limits --------------------------------------------------------------------------


def test_a_rate_limit_waits_from_the_answers_date_to_its_reset(mastodon: respx.MockRouter) -> None:
    # X-RateLimit-Reset: "Timestamp when your rate limit will reset" (rate-limits.md), an
    # ISO 8601 instant, not seconds.
    with pytest.raises(RateLimited) as caught:
        post(mastodon, rate_limited(123.25))

    assert caught.value.retry_after == 123.25
    assert caught.value.status == 429


def test_the_wait_is_counted_on_the_servers_clock_not_ours() -> None:
    # An answer from a server whose clock is a day ahead of any local one still waits 30 s.
    ahead = SERVER_NOW + timedelta(days=1)

    assert retry_after(httpx.Response(**rate_limited(30, now=ahead))) == 30


def test_a_reset_already_passed_waits_nothing() -> None:
    headers = {
        "Date": format_datetime(SERVER_NOW, usegmt=True),
        "X-RateLimit-Reset": (SERVER_NOW - timedelta(seconds=5)).isoformat(),
    }

    assert retry_after(httpx.Response(429, headers=headers)) == 0.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"X-RateLimit-Reset": "2026-12-01T15:05:00.000000Z"}, None),  # no Date to count from
        ({"Date": "Tue, 01 Dec 2026 15:00:00 GMT", "X-RateLimit-Reset": "soon"}, None),
        ({"Date": "yesterday", "X-RateLimit-Reset": "2026-12-01T15:05:00.000000Z"}, None),
        ({"X-RateLimit-Reset": "soon", "Retry-After": "12"}, 12.0),  # a proxy's own header
        ({}, None),
    ],
    ids=["no-date", "bad-reset", "bad-date", "retry-after", "nothing"],
)
def test_a_rate_limit_without_a_readable_reset_says_what_it_can(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(httpx.Response(429, headers=headers)) == seconds


def test_a_naive_reset_is_read_as_utc() -> None:
    headers = {"Date": "Tue, 01 Dec 2026 15:00:00 GMT", "X-RateLimit-Reset": "2026-12-01T15:00:09"}

    assert retry_after(httpx.Response(429, headers=headers)) == 9.0


def test_a_2xx_is_no_error() -> None:
    for status in (200, 202, 206):
        raise_for_answer(httpx.Response(status))
