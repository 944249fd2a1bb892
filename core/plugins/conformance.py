"""The adapter conformance kit: prove an adapter keeps herald's contract (§6, §9).

Shipped as a pytest plugin (entry point ``pytest11``), so an adapter author's test suite
only has to subclass :class:`AdapterContract`, name the adapter and its channel settings,
and say with respx how the platform answers in each situation – taken from the
platform's API reference::

    from core.plugins.conformance import AdapterContract

    class TestMyPlatform(AdapterContract):
        adapter_class = MyPlatform
        settings = {"base_url": "https://api.example.test", "token": "t"}

        def respond_published(self, router):
            router.post("https://api.example.test/posts").respond(201, json={"id": "1", "url": "u"})
        ...

pytest then runs every contract test below against that adapter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import httpx
import pytest

from core.domain.errors import Ambiguous, AuthExpired, ConfigError, NotSent, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import Adapter, PublishContext, Published
from core.plugins.channel_settings import check_settings, declared
from core.plugins.transport import call_platform

if TYPE_CHECKING:
    import respx

KEY = "conformancekey0000000001z"


class ReadSettings(Mapping[str, str]):
    """A channel's settings that note every name the adapter reads (``get``, ``[]``, ``in``)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        self.read.update(self._values)  # an adapter that walks them all reads them all
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class AdapterContract:
    """Subclass it (named ``Test...``) to run the contract against one adapter."""

    #: The adapter under test.
    adapter_class: ClassVar[type[Adapter]]
    #: Channel settings the adapter needs (base URL, token...).
    settings: ClassVar[dict[str, str]] = {}

    # -- what the author describes: the platform's answers, as respx routes ----------------

    def respond_published(self, router: respx.MockRouter) -> None:
        """The platform accepts the post and answers with its id and URL."""
        raise NotImplementedError

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        """The platform refuses the credentials."""
        raise NotImplementedError

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        """The platform asks to be called again in ``retry_after`` seconds."""
        raise NotImplementedError

    def respond_rejected(self, router: respx.MockRouter) -> None:
        """The platform refuses this post for good (content, permission...)."""
        raise NotImplementedError

    def respond_server_error(self, router: respx.MockRouter) -> None:
        """The platform fails in a way after which the post may have been stored."""
        raise NotImplementedError

    def respond_search(self, router: respx.MockRouter, found: bool) -> None:
        """``read_back`` adapters: the platform's search finds the post by key, or not."""
        raise NotImplementedError

    # -- the contract ----------------------------------------------------------------------

    @pytest.fixture
    def router(self) -> Iterator[respx.MockRouter]:
        import respx

        with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
            yield router

    @pytest.fixture
    def adapter(self) -> Adapter:
        return self.adapter_class()

    @pytest.fixture
    def ctx(self) -> Iterator[PublishContext]:
        with httpx.Client(timeout=5.0) as client:
            yield PublishContext(settings=dict(self.settings), client=client, key=KEY, text="conformance")

    def test_declares_a_name_a_strategy_and_limits(self, adapter: Adapter) -> None:
        assert isinstance(adapter.name, str) and adapter.name
        assert adapter.strategy in Strategy
        assert adapter.limits.max_chars > 0
        if adapter.strategy is Strategy.NATIVE_KEY:
            assert adapter.key_ttl is not None and adapter.key_ttl > 0, "native_key adapters declare key_ttl"
        if adapter.strategy is Strategy.READ_BACK:
            assert adapter.can_find, "read_back adapters implement find()"

    def test_an_adapter_taking_media_can_upload_it_and_says_which(self, adapter: Adapter) -> None:
        limits = adapter.limits
        if limits.max_media == 0:
            pytest.skip("takes no attachments (max_media=0): herald refuses them when a post is written")
        assert not adapter.uploads_first or type(adapter).upload is not Adapter.upload, (
            f"{type(adapter).__name__} declares max_media={limits.max_media} but does not implement upload(): "
            "implement it, set uploads_first = False if the files go with the post, or leave max_media at 0"
        )
        assert limits.media_types, "an adapter taking media lists the MIME types it takes (Limits.media_types)"
        assert all("/" in t for t in limits.media_types), f"media_types are MIME types: {sorted(limits.media_types)}"

    def test_declares_its_channel_settings_and_the_kits_settings_pass_them(self, adapter: Adapter) -> None:
        cls = type(adapter)
        assert cls.settings is not None, (
            f"{cls.__name__} declares no channel settings: set settings = (Setting('base_url', "
            "'the platform's address', required=True, check=http_url), ...) so `herald channel add` "
            "can refuse a channel that cannot work"
        )
        try:
            check_settings(cls, self.settings)
        except ConfigError as exc:
            raise AssertionError(
                f"the kit's settings are not valid channel settings of {cls.__name__}: {exc}"
            ) from None

    def test_it_reads_only_the_channel_settings_it_declares(self, adapter: Adapter, router: respx.MockRouter) -> None:
        settings = ReadSettings(self.settings)
        self.respond_published(router)
        with httpx.Client(timeout=5.0) as client:
            ctx = PublishContext(settings=settings, client=client, key=KEY, text="conformance")
            call_platform(lambda: adapter.publish(ctx))
            if adapter.can_find:
                self.respond_search(router, True)
                call_platform(lambda: adapter.find(ctx))
        known = {s.name for s in declared(type(adapter)) or ()}
        undeclared = sorted(settings.read - known)
        assert not undeclared, (
            f"{type(adapter).__name__} reads channel settings it does not declare: {', '.join(undeclared)}; "
            "add a Setting for each to its settings, so `herald channel add` checks them"
        )

    def test_a_confirmed_post_returns_the_platforms_id_and_url(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_published(router)
        result = call_platform(lambda: adapter.publish(ctx))
        assert isinstance(result, Published)
        assert result.platform_id and result.url

    def test_it_calls_the_platform_through_the_client_it_is_given(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.respond_published(router)

        def no_new_clients(*args: Any, **kwargs: Any) -> None:
            raise AssertionError("the adapter built its own httpx client; use ctx.client")

        monkeypatch.setattr(httpx.Client, "__init__", no_new_clients)
        call_platform(lambda: adapter.publish(ctx))
        assert router.calls.call_count >= 1

    def test_the_key_travels_with_the_request_where_the_strategy_needs_it(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_published(router)
        call_platform(lambda: adapter.publish(ctx))
        request = router.calls.last.request
        carried = KEY in json.dumps(dict(request.headers)) or KEY in request.content.decode(errors="replace")
        if adapter.strategy is Strategy.NONE:
            return  # nothing to deduplicate or find by
        assert carried, f"a {adapter.strategy} adapter must send the delivery key (header or body)"

    def test_refused_credentials_are_auth_expired(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_auth_expired(router)
        with pytest.raises(AuthExpired):
            call_platform(lambda: adapter.publish(ctx))

    def test_a_rate_limit_is_rate_limited_with_the_platforms_retry_after(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_rate_limited(router, 7)
        with pytest.raises(RateLimited) as caught:
            call_platform(lambda: adapter.publish(ctx))
        assert caught.value.retry_after == 7

    def test_a_refusal_for_good_is_rejected_with_a_reason(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_rejected(router)
        with pytest.raises(Rejected) as caught:
            call_platform(lambda: adapter.publish(ctx))
        assert caught.value.reason in Reason

    def test_a_server_error_after_which_the_post_may_exist_is_ambiguous_not_not_sent(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        self.respond_server_error(router)
        with pytest.raises(Ambiguous):
            call_platform(lambda: adapter.publish(ctx))

    @pytest.mark.parametrize(
        ("failure", "outcome"),
        [(httpx.ConnectError("refused"), NotSent), (httpx.ReadTimeout("slow"), Ambiguous)],
        ids=["connect-error", "read-timeout"],
    )
    def test_transport_errors_are_left_to_herald(
        self,
        adapter: Adapter,
        ctx: PublishContext,
        router: respx.MockRouter,
        failure: Exception,
        outcome: type[Exception],
    ) -> None:
        router.route().mock(side_effect=failure)
        with pytest.raises(outcome):
            call_platform(lambda: adapter.publish(ctx))

    def test_read_back_finds_the_post_by_its_key(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        self.respond_search(router, True)
        found = call_platform(lambda: adapter.find(ctx))
        assert isinstance(found, Published) and found.platform_id

    def test_read_back_says_none_when_the_post_is_not_there(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        self.respond_search(router, False)
        assert call_platform(lambda: adapter.find(ctx)) is None
