"""The built-in sandbox adapters pass the same conformance kit third-party adapters use."""

from __future__ import annotations

from typing import ClassVar

import httpx
import pytest
import respx

from adapters.sandbox.adapters import SandboxNative, SandboxNone, SandboxReadback
from core.domain.errors import NotSent
from core.plugins.adapter import Adapter, PublishContext, Published
from core.plugins.conformance import KEY, AdapterContract

BASE = "http://sandbox.test"


class SandboxAnswers(AdapterContract):
    """How the sandbox platform answers, per its admin-free API (adapters/sandbox/server.py)."""

    settings: ClassVar[dict[str, str]] = {"base_url": BASE, "token": "t"}
    path: ClassVar[str]

    def posts(self, router: respx.MockRouter) -> respx.Route:
        return router.post(f"{BASE}/api/{self.path}/posts")

    def respond_published(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(201, json={"id": f"{self.path}-1", "url": f"{BASE}/p/{self.path}-1"})

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(401, json={"error": "auth_expired"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        self.posts(router).respond(429, json={"error": "rate_limited"}, headers={"Retry-After": str(retry_after)})

    def respond_rejected(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(422, json={"error": "content_rejected", "detail": "too long"})

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


class CarelessAdapter(SandboxNone):
    """Breaks the contract twice: its own client per call, and a 500 called 'not sent'."""

    def publish(self, ctx: PublishContext) -> Published:
        with httpx.Client() as client:
            answer = client.post(f"{BASE}/api/none/posts", json={"text": ctx.text})
        if answer.status_code >= 500:
            raise NotSent("the platform failed")
        return Published("none-1", f"{BASE}/p/none-1")


def test_the_kit_fails_an_adapter_that_builds_its_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    contract = TestSandboxNoneConforms()
    with respx.mock(assert_all_called=False) as router, httpx.Client() as client:
        ctx = PublishContext(settings=contract.settings, client=client, key=KEY, text="x")
        with pytest.raises(AssertionError, match="its own httpx client"):
            contract.test_it_calls_the_platform_through_the_client_it_is_given(
                CarelessAdapter(), ctx, router, monkeypatch
            )


def test_the_kit_fails_an_adapter_that_calls_a_server_error_not_sent() -> None:
    contract = TestSandboxNoneConforms()
    with respx.mock(assert_all_called=False) as router, httpx.Client() as client:
        ctx = PublishContext(settings=contract.settings, client=client, key=KEY, text="x")
        with pytest.raises(NotSent):
            contract.test_a_server_error_after_which_the_post_may_exist_is_ambiguous_not_not_sent(
                CarelessAdapter(), ctx, router
            )
