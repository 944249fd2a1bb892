"""The built-in sandbox adapters pass the same conformance kit third-party adapters use.

The answers are the sandbox platform's own (adapters/sandbox/server.py and store.py); the
kit's checks of deliberately wrong adapters are in tests/unit/test_conformance_kit.py.
"""

from __future__ import annotations

from itertools import count
from typing import ClassVar

import httpx
import respx

from adapters.sandbox.adapters import SandboxNative, SandboxNone, SandboxReadback
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import KEY, AdapterContract

BASE = "http://sandbox.test"

#: store.py's refusals: 422 with the reason as ``error`` (403 for a token that may not post).
REFUSAL_DETAILS: dict[Reason, tuple[int, str]] = {
    Reason.CONTENT_REJECTED: (422, "text is 501 characters, at most 500"),
    Reason.PERMISSION_DENIED: (403, "the token may not post"),
    Reason.MEDIA_INVALID: (422, "media 'media-1' could not be processed"),
    Reason.THREAD_PARENT_MISSING: (422, "no post '4242424242424242001' to reply to"),
}


class SandboxAnswers(AdapterContract):
    """How the sandbox platform answers, per its admin-free API (adapters/sandbox/server.py)."""

    settings: ClassVar[dict[str, str]] = {"base_url": BASE, "token": "sandbox-conformance-token"}
    refusals: ClassVar[tuple[Reason, ...]] = tuple(REFUSAL_DETAILS)
    # server.py, _refused_before_accept: the 503 fault answers "nothing was stored".
    not_stored: ClassVar[dict[int, str]] = {503: "adapters/sandbox/server.py answers 503 only when it stored nothing"}
    replies_name_the_root = True
    path: ClassVar[str]

    def posts(self, router: respx.MockRouter) -> respx.Route:
        return router.post(f"{BASE}/api/{self.path}/posts")

    def uploads(self, router: respx.MockRouter) -> None:
        """server.py, _upload_media: 201 with the upload's id, its state and where it is served
        (media.py, public_json), an id of its own for each."""
        ids = count(1)

        def accepted(request: httpx.Request) -> httpx.Response:
            media_id = f"media-{next(ids)}"
            return httpx.Response(201, json={"id": media_id, "state": "ready", "url": f"{BASE}/media/{media_id}"})

        router.post(f"{BASE}/api/{self.path}/media").mock(side_effect=accepted)

    def respond_published(self, router: respx.MockRouter) -> respx.Route:
        return self.posts(router).respond(201, json={"id": f"{self.path}-1", "url": f"{BASE}/p/{self.path}-1"})

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route:
        self.uploads(router)
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(401, json={"error": "auth_expired", "detail": "the token was revoked"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        self.posts(router).respond(429, json={"error": "rate_limited"}, headers={"Retry-After": str(retry_after)})

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        if reason is Reason.MEDIA_INVALID:
            self.uploads(router)  # store.py refuses the post naming an upload it failed to process
        status, detail = REFUSAL_DETAILS[reason]
        self.posts(router).respond(status, json={"error": reason.value, "detail": detail})

    def respond_server_error(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(500, json={"error": "internal_error"})

    def respond_search(self, router: respx.MockRouter, found: bool) -> None:
        hit = {"id": f"{self.path}-1", "url": f"{BASE}/p/{self.path}-1", "key": KEY}
        router.get(f"{BASE}/api/{self.path}/posts", params={"key": KEY}).respond(
            200, json={"posts": [hit] if found else []}
        )


class TestSandboxNativeConforms(SandboxAnswers):
    adapter_class: ClassVar[type[Adapter]] = SandboxNative
    path = "native"


class TestSandboxReadbackConforms(SandboxAnswers):
    adapter_class: ClassVar[type[Adapter]] = SandboxReadback
    path = "readback"


class TestSandboxNoneConforms(SandboxAnswers):
    adapter_class: ClassVar[type[Adapter]] = SandboxNone
    path = "none"
