"""The webhook adapter passes the conformance kit every adapter passes.

The receiver's answers are the ones the adapter's own documentation asks receivers for
(adapters/webhook/__init__.py, "What herald expects back").
"""

from __future__ import annotations

from typing import ClassVar

import respx

from adapters.webhook import WebhookAdapter
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import AdapterContract

URL = "https://receiver.test/hooks/herald"


class TestWebhookConforms(AdapterContract):
    adapter_class: ClassVar[type[Adapter]] = WebhookAdapter
    settings: ClassVar[dict[str, str]] = {"url": URL, "secret": "0123456789abcdef0123456789abcdef"}
    # "400 or 422 ... may name the reason: content_rejected (the default), media_invalid,
    # thread_parent_missing or permission_denied"; "403: permission_denied".
    refusals: ClassVar[tuple[Reason, ...]] = (
        Reason.CONTENT_REJECTED,
        Reason.PERMISSION_DENIED,
        Reason.MEDIA_INVALID,
        Reason.THREAD_PARENT_MISSING,
    )
    confirms_without_id = (
        "adapters/webhook/__init__.py, 'What herald expects back': a 2xx with an empty body, or a JSON object "
        "without id, makes the key the post's id"
    )
    # adapters/webhook/__init__.py, "What the receiver is sent": reply_to and root.
    replies_name_the_root = True

    def respond_published(self, router: respx.MockRouter) -> None:
        # adapters/webhook/__init__.py "What herald expects back": 2xx {"id": "...", "url": "..."}
        router.post(URL).respond(201, json={"id": "h-1", "url": "https://receiver.test/posts/h-1"})

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # adapters/webhook/__init__.py: 401 when the signature or timestamp did not verify
        router.post(URL).respond(401, json={"error": "bad_signature"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        # RFC 9110 §10.2.3 (https://httpwg.org/specs/rfc9110.html#field.retry-after): delay-seconds
        router.post(URL).respond(429, headers={"Retry-After": str(retry_after)})

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        # adapters/webhook/__init__.py: 403 refuses the post here; 400 or 422 with {"error": ..., "detail": ...}
        # refuses it for good, for the reason ``error`` names
        if reason is Reason.PERMISSION_DENIED:
            router.post(URL).respond(403, json={"error": "forbidden"})
        else:
            router.post(URL).respond(422, json={"error": reason.value, "detail": "refused"})

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # adapters/webhook/__init__.py: 5xx, the post may exist
        router.post(URL).respond(500, text="Internal Server Error")
