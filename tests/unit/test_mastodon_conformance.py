"""The Mastodon adapter passes the conformance kit every adapter passes.

Every answer below is shaped as Mastodon's API documentation shows it (mastodon/documentation,
published at https://docs.joinmastodon.org/); the file each comes from is named at its
route. The other Mastodon tests take their shapes from here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from itertools import count
from typing import Any, ClassVar

import httpx
import respx

from adapters.mastodon import Mastodon
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import AdapterContract

BASE_URL = "https://mastodon.social"
STATUSES = f"{BASE_URL}/api/v1/statuses"
MEDIA_V2 = f"{BASE_URL}/api/v2/media"
#: content/en/entities/Token.md, "Example".
TOKEN = "ZA-Yj3aBD8U8Cm7lKUp-lm9O9BmDgdhHzDeqsY8tlL0"
SETTINGS = {"base_url": BASE_URL, "token": TOKEN}

#: content/en/entities/Status.md, "Example" (the account trimmed to its first fields).
STATUS: dict[str, Any] = {
    "id": "103270115826048975",
    "created_at": "2019-12-08T03:48:33.901Z",
    "in_reply_to_id": None,
    "in_reply_to_account_id": None,
    "sensitive": False,
    "spoiler_text": "",
    "visibility": "public",
    "language": "en",
    "uri": "https://mastodon.social/users/Gargron/statuses/103270115826048975",
    "url": "https://mastodon.social/@Gargron/103270115826048975",
    "replies_count": 5,
    "reblogs_count": 6,
    "favourites_count": 11,
    "favourited": False,
    "reblogged": False,
    "muted": False,
    "bookmarked": False,
    "content": "<p>&quot;I lost my inheritance with one wrong digit on my sort code&quot;</p>",
    "reblog": None,
    "application": {"name": "Web", "website": None},
    "account": {
        "id": "1",
        "username": "Gargron",
        "acct": "Gargron",
        "display_name": "Eugen",
        "locked": False,
        "bot": False,
        "url": "https://mastodon.social/@Gargron",
    },
    "media_attachments": [],
    "mentions": [],
    "tags": [],
    "emojis": [],
    "card": None,
    "poll": None,
}

#: content/en/methods/media.md, "Upload media as an attachment (async)", "200: OK – MediaAttachment
#: was created successfully, and the full-size file was processed synchronously" (meta trimmed).
MEDIA_ATTACHMENT: dict[str, Any] = {
    "id": "22348641",
    "type": "image",
    "url": "https://files.mastodon.social/media_attachments/files/022/348/641/original/e96382f26c72a29c.jpeg",
    "preview_url": "https://files.mastodon.social/media_attachments/files/022/348/641/small/e96382f26c72a29c.jpeg",
    "remote_url": None,
    "text_url": "https://mastodon.social/media/4Zj6ewxzzzDi0g8JnZQ",
    "meta": {"original": {"width": 640, "height": 480, "size": "640x480", "aspect": 1.3333333333333333}},
    "description": "test uploaded via api",
    "blurhash": "UFBWY:8_0Jxv4mx]t8t64.%M-:IUWGWAt6M}",
}

#: Each refusal the kit asks for: the route refused, its status and its ``error``.
REFUSALS: dict[Reason, tuple[str, int, str]] = {
    # statuses.md, "422: Unprocessable entity".
    Reason.CONTENT_REJECTED: (STATUSES, 422, "Validation failed: Text can't be blank"),
    # content/en/entities/Error.md, "403 - Forbidden", current_user.disabled?: "Appears when the
    # OAuth token's authorized user has had their account disabled by a moderator".
    Reason.PERMISSION_DENIED: (STATUSES, 403, "Your login is currently disabled"),
    # Error.md, "404 - Not found", RecordNotFound: "Appears when an entity record does not exist"
    # – here the status in_reply_to_id names.
    Reason.THREAD_PARENT_MISSING: (STATUSES, 404, "Record not found"),
    # media.md, "422: Unprocessable entity – File or file type is unsupported or invalid": the
    # upload is refused, before any status.
    Reason.MEDIA_INVALID: (MEDIA_V2, 422, "Validation failed: File content type is invalid, File is invalid"),
}

#: Any instant: the tests never read the clock, they read what the answer says.
SERVER_NOW = datetime(2026, 12, 1, 15, 0, 0, tzinfo=UTC)


def rate_limited(retry_after: float, *, now: datetime = SERVER_NOW) -> dict[str, Any]:
    """A 429 as Mastodon answers one: the rate limit headers of content/en/api/rate-limits.md,
    ``X-RateLimit-Reset`` written as mastodon/mastodon writes it (``iso8601(6)``,
    config/initializers/rack_attack.rb), the body of content/en/entities/Error.md ("429 - Too
    many requests", ``errors.429`` of config/locales/en.yml), and the answer's own Date."""
    reset = now + timedelta(seconds=retry_after)
    return {
        "status_code": 429,
        "headers": {
            "Date": format_datetime(now, usegmt=True),
            "X-RateLimit-Limit": "300",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": reset.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
        "json": {"error": "Too many requests"},
    }


class TestMastodonConforms(AdapterContract):
    """The adapter against Post a new status (content/en/methods/statuses.md), its attachments
    uploaded first (content/en/methods/media.md)."""

    adapter_class: ClassVar[type[Adapter]] = Mastodon
    settings: ClassVar[dict[str, str]] = SETTINGS
    refusals: ClassVar[tuple[Reason, ...]] = tuple(REFUSALS)

    def statuses(self, router: respx.MockRouter) -> respx.Route:
        # POST /api/v1/statuses: content/en/methods/statuses.md, "Post a new status".
        return router.post(STATUSES)

    def uploads(self, router: respx.MockRouter) -> None:
        # POST /api/v2/media: each file becomes a MediaAttachment of its own, processed
        # synchronously (an image: "4.0.0 - Smaller media formats (image) will be processed
        # synchronously and return 200", media.md).
        ids = count(int(MEDIA_ATTACHMENT["id"]))

        def created(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=MEDIA_ATTACHMENT | {"id": str(next(ids))})

        router.post(MEDIA_V2).mock(side_effect=created)

    def respond_published(self, router: respx.MockRouter) -> respx.Route:
        # "200: OK – Status will be posted with chosen parameters" (statuses.md).
        return self.statuses(router).respond(200, json=STATUS)

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route:
        self.uploads(router)
        # The status then names them: "media_ids[]: Include Attachment IDs to be attached as media" (statuses.md).
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # "401: Unauthorized – Invalid or missing Authorization header" (statuses.md).
        self.statuses(router).respond(401, json={"error": "The access token is invalid"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        # content/en/api/rate-limits.md: "All endpoints and methods can be called 300 times within 5 minutes."
        self.statuses(router).respond(**rate_limited(retry_after))

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        url, status, error = REFUSALS[reason]
        router.post(url).respond(status, json={"error": error})

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # 503 RaceConditionError, "There was a temporary problem serving your request, please
        # try again" (content/en/entities/Error.md): nothing says what was stored.
        self.statuses(router).respond(
            503, json={"error": "There was a temporary problem serving your request, please try again"}
        )
