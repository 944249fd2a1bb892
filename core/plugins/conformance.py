"""The adapter conformance kit: prove an adapter keeps herald's contract (§6, §9).

Shipped as a pytest plugin (entry point ``pytest11``; it needs pytest and respx, the
``conformance`` extra), so an adapter author's test suite only has to subclass
:class:`AdapterContract`, name the adapter and its channel settings, and say with respx
how the platform answers in each situation – taken from the platform's API reference::

    from core.plugins import Reason
    from core.plugins.conformance import AdapterContract

    class TestMyPlatform(AdapterContract):
        adapter_class = MyPlatform
        settings = {"base_url": "https://api.example.test", "token": "a-long-test-token"}
        refusals = (Reason.CONTENT_REJECTED, Reason.PERMISSION_DENIED)

        def respond_published(self, router):
            router.post("https://api.example.test/session").respond(200, json={"session": "s"})
            return router.post("https://api.example.test/posts").respond(201, json={"id": "1", "url": "u"})

        def respond_rejected(self, router, reason):
            status = 403 if reason is Reason.PERMISSION_DENIED else 422
            router.post("https://api.example.test/posts").respond(status, json={"error": reason.value})
        ...

pytest then runs every contract test below against that adapter. The ``respond_*``
methods answer every request a call makes (a sign-in, a look-up of the post replied to,
the part's uploads for an adapter that uploads first – the kit uploads them, as herald
does), and ``respond_published`` (``respond_search``) returns the post's (the search's)
own route where it sets up several. What the kit cannot know of the platform, the
contract declares (citing its docs where it departs from the rule): ``refusals`` (the
reasons :meth:`~AdapterContract.respond_rejected` can describe), ``not_stored`` (a 5xx
documented as storing nothing), ``confirms_without_id``, ``replies_name_the_root``,
``config`` (the adapter's ``plugins.toml`` settings), and
:meth:`~AdapterContract.respond_published_with_media` where a part with attachments goes
elsewhere. The adapter itself says where the key goes (``Adapter.key_in``) and, where it
goes transformed, as what (``Adapter.key_on_wire``).

Besides the answers the author describes, the kit gives answers of its own in the
platform's place – bare statuses, a proxy's HTML page, a success without the post's id,
a failed connection – on the post's route (and the search's), and takes only one of
herald's errors for them: an adapter that crashes on a body it cannot read fails. It
reads every request the adapter made: where the key went, whether the reply target and
every attachment travelled, which client and timeout carried it, how many were sent.
Each failure names the fix.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import mimetypes
import re
import ssl
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from functools import cache, partial
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar
from urllib.parse import parse_qsl

import httpx
import pytest

from core.domain.errors import Ambiguous, AuthExpired, ConfigError, NotSent, PublishError, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import Adapter, Attachment, MediaFile, PublishContext, Published, UploadContext
from core.plugins.channel_settings import check_settings, declared, is_secret
from core.plugins.deadline import DeadlineTransport
from core.plugins.transport import call_platform

if TYPE_CHECKING:
    import respx

T = TypeVar("T")

#: The delivery key of every part the kit publishes.
KEY = "conformancekey0000000001z"
#: The platform ids a thread part replies to (digits: every platform takes them for ids).
REPLY_TO = "4242424242424242001"
ROOT = "4242424242424242000"
TEXT = "conformance"
#: ``ctx.client``'s timeout: one no adapter picks by chance, so a request that overrides it shows.
TIMEOUT = httpx.Timeout(8.5)
#: The reasons a refusal for good may have, as :attr:`AdapterContract.refusals` lists them.
REFUSALS = (Reason.CONTENT_REJECTED, Reason.PERMISSION_DENIED, Reason.MEDIA_INVALID, Reason.THREAD_PARENT_MISSING)
#: The shortest secret the kit can look for in messages without mistaking a common word for it.
MIN_SECRET_CHARS = 8

#: The parts the kit publishes.
TEXT_PART = "a text part"
THREAD_PART = f"a thread's third part (reply_to={REPLY_TO!r}, root={ROOT!r})"
MEDIA_PART = "a part with attachments"

#: ``Adapter.key_in``'s forms.
_KEY_PLACE = re.compile(r"(?:header|query|body):[^\s:]+|path")


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


@dataclass(frozen=True)
class Answer:
    """An answer the kit gives in the platform's place, shaped by no platform's docs."""

    #: How messages name it: ``a 503 (a proxy's HTML page)``.
    label: str
    status: int
    content: bytes = b""
    content_type: str | None = None

    def response(self, request: httpx.Request, **_: Any) -> httpx.Response:
        """The answer to ``request`` (a respx side effect: a fresh response for every request)."""
        headers = {"Content-Type": self.content_type} if self.content_type else {}
        return httpx.Response(self.status, headers=headers, content=self.content, request=request)


def _page(status: int, phrase: str) -> Answer:
    html = f"<html><head><title>{status} {phrase}</title></head><body><h1>{phrase}</h1></body></html>"
    return Answer(f"a {status} (a proxy's HTML page)", status, html.encode(), "text/html")


#: A bare answer of each status family; what each must become is in the test that gives it.
STATUS_FAMILIES: dict[int, Answer] = {
    401: Answer("a bare 401", 401),
    403: Answer("a bare 403", 403),
    418: Answer("a 418, a status the adapter cannot know", 418, b"I'm a teapot", "text/plain"),
    429: Answer("a bare 429 without Retry-After", 429),
    500: Answer("a bare 500", 500, b"Internal Server Error", "text/plain"),
    502: _page(502, "Bad Gateway"),
    503: _page(503, "Service Unavailable"),
    504: _page(504, "Gateway Timeout"),
}
#: Successes that name no post: they confirm nothing herald can record.
UNCONFIRMED: dict[str, Answer] = {
    "json-without-id": Answer("a 200 whose JSON names no id", 200, b"{}", "application/json"),
    "empty": Answer("a 204 with no body", 204),
    "html": Answer("a 200 with an HTML page", 200, b"<html><body>Thanks!</body></html>", "text/html"),
    "truncated-json": Answer("a 200 with JSON cut short", 200, b'{"id": "12', "application/json"),
}
#: A search that failed: it says nothing of whether the post is there.
FAILED_SEARCHES: dict[str, Answer] = {
    "500": STATUS_FAMILIES[500],
    "503": STATUS_FAMILIES[503],
    "html": Answer("a 200 with an HTML page", 200, b"<html><body>Search</body></html>", "text/html"),
    "truncated-json": Answer("a 200 with JSON cut short", 200, b'{"posts": [', "application/json"),
}
#: Transport failures herald maps for every adapter, and what they become.
TRANSPORT_FAILURES: dict[str, tuple[Exception, type[PublishError]]] = {
    "connect-error": (httpx.ConnectError("refused"), NotSent),
    "read-timeout": (httpx.ReadTimeout("slow"), Ambiguous),
}


@dataclass
class Call:
    """One adapter call the kit made, and everything the platform saw of it."""

    #: ``publish() of a text part, answered a 503 (a proxy's HTML page)``.
    what: str
    #: Whether the kit gave an answer of its own (``what`` then ends with it).
    answered: bool
    result: object
    error: Exception | None
    #: Every request the platform received, in order: the part's uploads, then the call's own.
    requests: list[httpx.Request]
    #: The call's requests that reached the post's route (the one ``respond_*`` returned; every
    #: route it set up where it returned none).
    posted: list[httpx.Request]
    #: The attachments the part carried (``ctx.media``), with the platform ids their uploads got.
    media: tuple[Attachment, ...]
    #: How many of the requests came through ``ctx.client``.
    through_client: int
    #: The most requests the call sent to any one of the post's routes.
    to_one_route: int
    #: The channel settings the adapter read.
    read: set[str]

    def said(self, outcome: str | None = None) -> str:
        """``what``, then ``outcome`` (by default what the call did), as one phrase."""
        return f"{self.what}{',' if self.answered else ''} {outcome or self.outcome()}"

    def outcome(self) -> str:
        """``raised NotSent('...')``, ``returned Published(...)``, ``crashed with KeyError('id')``."""
        if self.error is None:
            return f"returned {self.result!r}"
        verb = "raised" if isinstance(self.error, PublishError | ConfigError) else "crashed with"
        return f"{verb} {type(self.error).__name__}({str(self.error)[:200]!r})"

    @property
    def crashed(self) -> bool:
        """An exception outside herald's errors: herald records it as ``adapter_error`` (§6 step 8),
        an outcome nobody chose. Where the kit gave the answer itself, it fails the crash: the
        adapter's answer mapping must say what the answer means."""
        return self.error is not None and not isinstance(self.error, PublishError | ConfigError)

    def mapping_fix(self) -> str:
        """What to add to a fix when the adapter crashed on an answer rather than mapping it."""
        if not self.crashed:
            return ""
        return (
            " from the adapter's one answer mapping – a body it cannot read (no JSON, JSON cut short) is an "
            "answer too, not a crash"
        )

    def raised(self, *classes: type[Exception]) -> bool:
        return isinstance(self.error, classes)

    def rejected(self) -> Reason | None:
        return self.error.reason if isinstance(self.error, Rejected) else None


class AdapterContract:
    """Subclass it (named ``Test...``) to run the contract against one adapter."""

    #: The adapter under test.
    adapter_class: ClassVar[type[Adapter]]
    #: Channel settings the adapter needs (base URL, token...); a secret one at least 8 characters long.
    settings: ClassVar[dict[str, str]] = {}
    #: Adapter-wide settings, as ``plugins.toml`` gives them to the adapter's constructor.
    config: ClassVar[dict[str, Any]] = {}
    #: The refusals for good :meth:`respond_rejected` can describe (of :data:`REFUSALS`).
    refusals: ClassVar[tuple[Reason, ...]] = (Reason.CONTENT_REJECTED,)
    #: Statuses the platform documents as storing nothing (a resend is safe), each with where
    #: its docs say so: ``{503: "https://docs.example.test/errors#503"}``. The kit then takes
    #: NotSent for them; every other 5xx must be Ambiguous.
    not_stored: ClassVar[dict[int, str]] = {}
    #: Where the platform documents that a 2xx without an id confirms the post (herald then
    #: records the key as its id); None: a 2xx without the post's id must be Ambiguous.
    confirms_without_id: ClassVar[str | None] = None
    #: Whether the platform's replies name the thread's first post as well (``ctx.root``).
    replies_name_the_root: ClassVar[bool] = False

    # -- what the author describes: the platform's answers, as respx routes ----------------

    def respond_published(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform accepts the post and answers with its id and URL.

        Answer every request a publish makes: a sign-in, a look-up of the post replied to
        (:data:`REPLY_TO`, :data:`ROOT`), the post itself. Where there are several, return the
        post's own route: the kit gives its own answers there (bare statuses, an HTML page...)
        and reads the key, the reply target, the attachments and the retries in what reached
        it. None (one route): that route.
        """
        raise NotImplementedError

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route | None:
        """The same for a part with attachments. An adapter that uploads first
        (``uploads_first``) has each one uploaded by the kit, as herald does, before the part
        is published: answer those uploads (and ``media_ready``'s looks) too. By default
        :meth:`respond_published`."""
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform refuses the credentials."""
        raise NotImplementedError

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> respx.Route | None:
        """The platform asks to be called again in ``retry_after`` seconds."""
        raise NotImplementedError

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> respx.Route | None:
        """The platform refuses this post for good, for ``reason`` (one of :attr:`refusals`).

        The part carries attachments for ``MEDIA_INVALID`` (the refusal may be an upload's)
        and replies to :data:`REPLY_TO` for ``THREAD_PARENT_MISSING`` (it may be the look-up's).
        """
        raise NotImplementedError

    def respond_server_error(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform fails in a way after which the post may have been stored."""
        raise NotImplementedError

    def respond_search(self, router: respx.MockRouter, found: bool) -> respx.Route | None:
        """``read_back`` adapters: the platform's search finds the post by key, or not. Where
        it sets up several routes, return the search's own: the kit fails it there."""
        raise NotImplementedError

    # -- declarations ------------------------------------------------------------------------

    @pytest.fixture
    def adapter(self) -> Adapter:
        return self.adapter_class(dict(self.config))

    @pytest.fixture(autouse=True)
    def _httpx_patched(self) -> Iterator[None]:
        """respx's patches, on for the whole test: each call's own router then starts without
        patching httpx again. This router answers nothing, so every request falls to the call's."""
        import respx

        with respx.mock(assert_all_called=False, assert_all_mocked=True):
            yield

    def test_declares_a_name_a_strategy_and_limits(self, adapter: Adapter) -> None:
        assert isinstance(adapter.name, str) and adapter.name
        assert adapter.strategy in Strategy
        assert adapter.limits.max_chars > 0
        if adapter.strategy is Strategy.NATIVE_KEY and adapter.key_ttl is not None and not adapter.key_ttl > 0:
            # None is "remembered for good" (a key that is the post's own record key): core then
            # resends with it at any age (core/runtime/job.py, _key_remembered).
            _fail(
                f"{_name(adapter)} declares key_ttl = {adapter.key_ttl!r}: a native_key adapter says for how many "
                "seconds the platform remembers a key, or None where it remembers it for good"
            )
        if adapter.strategy is Strategy.READ_BACK:
            assert adapter.can_find, "read_back adapters implement find()"
        if adapter.key_in is not None and not _KEY_PLACE.fullmatch(adapter.key_in):
            _fail(
                f"{_name(adapter)} declares key_in = {adapter.key_in!r}: say where the key goes as "
                "'header:NAME', 'query:NAME', 'body:FIELD' (dotted for a nested one) or 'path'"
            )

    def test_an_adapter_taking_media_can_upload_it_and_says_which(self, adapter: Adapter) -> None:
        limits = adapter.limits
        if limits.max_media == 0:
            pytest.skip("takes no attachments (max_media=0): herald refuses them when a post is written")
        assert not adapter.uploads_first or type(adapter).upload is not Adapter.upload, (
            f"{_name(adapter)} declares max_media={limits.max_media} but does not implement upload(): "
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
            _fail(f"the kit's settings are not valid channel settings of {cls.__name__}: {exc}")
        for name, value in self._secrets(adapter).items():
            if len(value) < MIN_SECRET_CHARS:
                _fail(
                    f"the contract's value of the secret setting {name!r} is {len(value)} characters long: give "
                    f"it one of at least {MIN_SECRET_CHARS}, so the kit can tell it in a message that leaks it"
                )

    def test_it_reads_only_the_channel_settings_it_declares(self, adapter: Adapter) -> None:
        read = set().union(*(call.read for call in self._confirmed(adapter)))
        if adapter.can_find:
            read |= self._run(adapter, lambda router: self.respond_search(router, True), find=True).read
        known = {s.name for s in declared(type(adapter)) or ()}
        undeclared = sorted(read - known)
        if undeclared:
            _fail(
                f"{_name(adapter)} reads channel settings it does not declare: {', '.join(undeclared)}; "
                "add a Setting for each to its settings, so `herald channel add` checks them"
            )

    # -- a confirmed post, and the requests that made it ---------------------------------------

    def test_a_confirmed_post_returns_the_platforms_id_and_url(self, adapter: Adapter) -> None:
        for call in self._confirmed(adapter):
            result = call.result
            if not isinstance(result, Published) or not result.platform_id or not result.url:
                _fail(
                    f"{call.said()}: return Published(platform_id=..., url=...) with the id "
                    "and the address the platform's answer gives"
                )

    def test_it_calls_the_platform_through_the_client_it_is_given(self, adapter: Adapter) -> None:
        expected = TIMEOUT.as_dict()
        for call in self._confirmed(adapter):
            bypassed = len(call.requests) - call.through_client
            if bypassed > 0:
                _fail(
                    f"{bypassed} of the {len(call.requests)} requests of {call.what} did not go through "
                    "ctx.client: the adapter built its own httpx client (httpx.Client(), httpx.post(), one "
                    "kept on the adapter); make every request with ctx.client, herald's one long-lived "
                    "client, whose deadline bounds the call"
                )
            for n, request in enumerate(call.requests, 1):
                timeout = request.extensions.get("timeout")
                if timeout != expected:
                    _fail(
                        f"request {n} of {call.what} ({request.method} {request.url}) ran with the timeout "
                        f"{timeout} instead of ctx.client's {expected}: pass no timeout= and leave ctx.client's "
                        "alone; herald's deadline keeps every call shorter than the lease"
                    )

    def test_it_never_retries_inside_publish(self, adapter: Adapter) -> None:
        calls = [*self._confirmed(adapter), self._run(adapter, self.respond_server_error)]
        calls += [self._run(adapter, self.respond_published, answer=STATUS_FAMILIES[s]) for s in (500, 502, 503, 504)]
        calls += [self._run(adapter, self.respond_published, answer=exc) for exc, _ in TRANSPORT_FAILURES.values()]
        for call in calls:
            if call.to_one_route > 1:
                _fail(
                    f"{call.what}: one publish() sent {call.to_one_route} requests to the platform's route; the "
                    "adapter retries inside publish(). Raise the outcome and let herald retry: it backs off, "
                    "honours Retry-After and keeps a part in doubt from being sent twice"
                )

    def test_the_key_travels_where_the_adapter_declares_it(self, adapter: Adapter) -> None:
        place = adapter.key_in
        if place is None and adapter.strategy is Strategy.NONE:
            pytest.skip("a none adapter that declares no key_in: nothing to deduplicate or find by")
        wire = adapter.key_on_wire(KEY)
        sent = "ctx.key" if wire == KEY else f"adapter.key_on_wire(ctx.key) ({wire!r})"
        for call in self._confirmed(adapter):
            if place is None:
                if not any(wire.encode() in _raw(request) for request in call.posted):
                    _fail(
                        f"no request of {call.what} carries the delivery key ({sent}): a {adapter.strategy} "
                        "adapter must send it, and should say where with key_in = 'header:Idempotency-Key' "
                        "(or 'body:FIELD', 'query:NAME', 'path')"
                    )
                continue
            for n, request in enumerate(call.posted, 1):
                found = _key_places(request, wire)
                if not _declared_place_holds_key(place, found):
                    where = f"at {', '.join(found)}" if found else "nowhere"
                    instead = f" (key_in = {found[0]!r})" if found else ""
                    transformed = (
                        ""
                        if wire != KEY or found
                        else "; if the platform takes it transformed, say how with Adapter.key_on_wire"
                    )
                    _fail(
                        f"{_name(adapter)} declares key_in = {place!r}, but request {n} of {call.what} "
                        f"({request.method} {request.url}) carries the key {where}: send {sent} exactly "
                        f"there, where the platform looks for it, or declare where it goes{instead}{transformed}"
                    )

    def test_a_thread_part_names_the_part_it_replies_to(self, adapter: Adapter) -> None:
        if not adapter.limits.threads:
            pytest.skip("posts no threads (Limits.threads=False)")
        call = self._run(adapter, self.respond_published, part=THREAD_PART)
        targets = [("ctx.reply_to", REPLY_TO)] + ([("ctx.root", ROOT)] if self.replies_name_the_root else [])
        for name, value in targets:
            if not any(value.encode() in _raw(request) for request in call.posted):
                _fail(
                    f"{call.what} dropped {name} ({value!r}): no request carries it, so the part would not "
                    f"reply to the thread; send it as the platform's reply target"
                    + (" (the contract says its replies name the root too)" if name == "ctx.root" else "")
                )

    def test_every_attachment_and_its_alt_text_travel(self, adapter: Adapter) -> None:
        limits = adapter.limits
        if limits.max_media == 0:
            pytest.skip("takes no attachments (max_media=0)")
        call = self._run(adapter, self.respond_published_with_media, part=MEDIA_PART)
        if call.error is not None:
            _fail(
                f"{call.said()}: answered as respond_published_with_media describes, the part must be published; "
                "describe every request a part with attachments makes (its uploads too, for an adapter that "
                "uploads first)"
            )
        posted = b"".join(_raw(request) for request in call.posted)
        documents = [document for request in call.posted for document in _documents(request)]
        sent = b"".join(_raw(request) for request in call.requests)  # alt text may go with the upload
        media = call.media
        for n, attachment in enumerate(media, 1):
            if not _carries_attachment(posted, documents, attachment, adapter.uploads_first):
                what = (
                    f"platform id {attachment.platform_id!r}"
                    if adapter.uploads_first
                    else f"file's bytes ({attachment.file.filename if attachment.file else '?'}, raw or base64)"
                )
                _fail(
                    f"{_name(adapter)} declares max_media={limits.max_media}, but {call.what} sent no request "
                    f"with attachment {n} of {len(media)} (its {what}): send every one of ctx.media, in order"
                )
            if limits.alt_text and attachment.alt and attachment.alt.encode() not in sent:
                _fail(
                    f"{_name(adapter)} declares alt_text=True, but {call.what} dropped attachment {n}'s alt text "
                    f"({attachment.alt!r}): send ctx.media[i].alt with each attachment, or declare alt_text=False"
                )

    # -- the platform's answers -----------------------------------------------------------------

    def test_refused_credentials_are_auth_expired(self, adapter: Adapter) -> None:
        call = self._run(adapter, self.respond_auth_expired)
        if not call.raised(AuthExpired):
            _fail(
                f"{call.what} answered as respond_auth_expired describes, {call.outcome()}: raise AuthExpired, "
                "so herald holds the channel until a person reconnects it"
            )

    def test_a_rate_limit_is_rate_limited_with_the_platforms_retry_after(self, adapter: Adapter) -> None:
        call = self._run(adapter, lambda router: self.respond_rate_limited(router, 7))
        if not isinstance(call.error, RateLimited) or call.error.retry_after != 7:
            _fail(
                f"{call.what} answered as respond_rate_limited(router, 7) describes, {call.outcome()}: raise "
                "RateLimited(retry_after=7.0), the seconds the platform asked for"
            )

    def test_each_refusal_is_rejected_with_the_reason_it_means(self, adapter: Adapter) -> None:
        if len(inspect.signature(self.respond_rejected).parameters) < 2:
            _fail(
                "respond_rejected takes the reason of the refusal it describes: def respond_rejected(self, router, "
                "reason), with the reasons it can describe listed in refusals = (Reason.CONTENT_REJECTED, ...)"
            )
        for reason in self.refusals:
            if reason not in REFUSALS:
                _fail(f"refusals lists {reason}, which is not a refusal for good: list some of {list(REFUSALS)}")
            part = _refused_part(adapter, reason)
            if part is None:
                continue
            call = self._run(adapter, self._refusal(reason), part=part)
            got = call.rejected()
            if got is reason:
                continue
            said = f"the platform's {reason} refusal (respond_rejected(router, Reason.{reason.name}))"
            fix = f"map that answer to Rejected(Reason.{reason.name}, ...)"
            if got is not None:
                _fail(
                    f"{said} of {call.what} came back as Rejected({got}): {fix}. The reason is what support staff "
                    f"act on, and {got}'s advice ('{got.action}') would not fix this post"
                )
            _fail(f"{said} of {call.said()}: {fix}; it will never succeed if sent again")

    def test_a_server_error_after_which_the_post_may_exist_is_ambiguous_not_not_sent(self, adapter: Adapter) -> None:
        call = self._run(adapter, self.respond_server_error)
        if not call.raised(Ambiguous):
            _fail(
                f"{call.what} answered as respond_server_error describes, {call.outcome()}: the platform may have "
                "stored the post before it failed; raise Ambiguous"
            )

    @pytest.mark.parametrize("status", list(STATUS_FAMILIES), ids=str)
    def test_a_bare_answer_of_each_status_family_is_mapped(self, adapter: Adapter, status: int) -> None:
        answer = STATUS_FAMILIES[status]
        call = self._run(adapter, self.respond_published, answer=answer)
        said = call.said()
        if status == 401 and not call.raised(AuthExpired):
            _fail(f"{said}: a 401 refuses the credentials; raise AuthExpired, so herald holds the channel")
        if status == 403 and not (call.raised(AuthExpired) or call.rejected() is Reason.PERMISSION_DENIED):
            _fail(
                f"{said}: a 403 refuses the account, not the text; raise Rejected(Reason.PERMISSION_DENIED, ...) "
                "(or AuthExpired where the platform answers a bad token with 403)"
            )
        if status == 429 and not call.raised(RateLimited):
            _fail(f"{said}: a 429 asks herald to slow down; raise RateLimited (retry_after=None when none is given)")
        if status == 418 and not call.raised(Rejected, Ambiguous):
            fix = "raise Rejected(Reason.CONTENT_REJECTED, ...) for a 4xx the adapter does not know (or Ambiguous)"
            fix += call.mapping_fix()
            if call.raised(NotSent):
                fix += "; NotSent would send a post the platform refused again on every attempt"
            _fail(f"{said}: {fix}")
        if status >= 500:
            self._judge_server_failure(call, status)

    def _judge_server_failure(self, call: Call, status: int) -> None:
        if call.raised(Ambiguous) or (status in self.not_stored and call.raised(NotSent)):
            return
        said = call.said()
        if call.raised(Rejected):
            _fail(
                f"{said}: a {status} is the platform failing, not refusing the post; raise Ambiguous (Rejected "
                "gives up on a post that may be up, or would go through on the next attempt)"
            )
        if call.raised(NotSent):
            gateway = " comes from a gateway that may have passed the post on, and" if status in (502, 503, 504) else ""
            _fail(
                f"{said}: a {status}{gateway} may come after the platform stored the post; raise Ambiguous "
                f"(NotSent only where the platform documents that a {status} stores nothing: declare it in the "
                f"contract, not_stored = {{{status}: 'where its docs say so'}})"
            )
        _fail(f"{said}: after a {status} the post may exist; raise Ambiguous{call.mapping_fix()}")

    @pytest.mark.parametrize("answer", list(UNCONFIRMED))
    def test_a_success_without_the_posts_id_is_not_a_confirmation(self, adapter: Adapter, answer: str) -> None:
        given = UNCONFIRMED[answer]
        call = self._run(adapter, self.respond_published, answer=given)
        if call.raised(Ambiguous):
            return
        said = call.said()
        declared_success = self.confirms_without_id is not None and answer in ("json-without-id", "empty")
        if declared_success and isinstance(call.result, Published) and call.result.platform_id == KEY:
            return
        if isinstance(call.result, Published) and declared_success:
            _fail(
                f"{said}: the contract says a 2xx without an id confirms the post ({self.confirms_without_id}), "
                f"with the key as its id: return Published(platform_id=ctx.key, ...), or raise Ambiguous"
            )
        if isinstance(call.result, Published):
            _fail(
                f"{said}: a success that does not name the post confirms nothing herald can record (it records "
                "Published for good); raise Ambiguous – the post may exist, and a read-back or a person settles it"
            )
        _fail(f"{said}: the platform said yes to something, so the post may exist; raise Ambiguous{call.mapping_fix()}")

    @pytest.mark.parametrize("failure", list(TRANSPORT_FAILURES))
    def test_transport_errors_are_left_to_herald(self, adapter: Adapter, failure: str) -> None:
        exc, outcome = TRANSPORT_FAILURES[failure]
        call = self._run(adapter, self.respond_published, answer=exc)
        if not call.raised(outcome):
            _fail(
                f"{call.said()}, where herald makes it {outcome.__name__}: let httpx's transport "
                "errors out of publish() – herald maps them once, for every adapter"
            )

    def test_no_message_repeats_a_secret_setting(self, adapter: Adapter) -> None:
        secrets = self._secrets(adapter)
        if not secrets:
            pytest.skip("declares no secret settings")
        for call in self._failures(adapter):
            message = str(call.error)
            for name, value in secrets.items():
                if len(value) >= MIN_SECRET_CHARS and value in message:  # a shorter one fails the settings test
                    _fail(
                        f"{call.said(call.outcome().split('(')[0])} whose message repeats the secret setting "
                        f"{name!r} ({message.replace(value, '••••')[:300]!r}): leave secrets out of messages; "
                        "herald shows them to support staff and writes them to logs"
                    )

    # -- read-back --------------------------------------------------------------------------------

    def test_read_back_finds_the_post_by_its_key(self, adapter: Adapter) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        call = self._run(adapter, lambda router: self.respond_search(router, True), find=True)
        if not isinstance(call.result, Published) or not call.result.platform_id:
            _fail(f"{call.what} for a post that is there {call.outcome()}: return it as Published")

    def test_read_back_says_none_when_the_post_is_not_there(self, adapter: Adapter) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        call = self._run(adapter, lambda router: self.respond_search(router, False), find=True)
        if call.result is not None or call.error is not None:
            _fail(f"{call.what} for a post that is not there {call.outcome()}: return None")

    @pytest.mark.parametrize("answer", list(FAILED_SEARCHES))
    def test_a_failed_search_raises_rather_than_saying_not_found(self, adapter: Adapter, answer: str) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        search = FAILED_SEARCHES[answer]
        call = self._run(adapter, lambda router: self.respond_search(router, False), answer=search, find=True)
        if call.error is None or call.crashed:
            _fail(
                f"{call.said()}: a search that failed says nothing of whether the post is there, "
                "and 'not there' makes herald send it again – a second copy. Raise Ambiguous from the search's "
                "answer mapping"
            )

    # -- how the kit calls the adapter ------------------------------------------------------------

    def _run(
        self,
        adapter: Adapter,
        respond: Callable[[respx.MockRouter], respx.Route | None],
        *,
        part: str = TEXT_PART,
        answer: Answer | Exception | None = None,
        find: bool = False,
    ) -> Call:
        """Call ``publish`` (or ``find``) on ``part`` once, the platform answering as ``respond``
        sets up – or with ``answer``, on the post's route ``respond`` returns (on every route
        it sets up where it returns none). An adapter that uploads first has the part's
        attachments uploaded before, as herald does; an upload's failure is then the call's."""
        import respx

        method = "find()" if find else "publish()"
        what = f"{method} of {part}" + (f", answered {_label(answer)}" if answer is not None else "")
        settings = ReadSettings(self.settings)
        transport = _Recording(DeadlineTransport(ssl_context=_ssl_context()))
        with (
            respx.mock(assert_all_called=False, assert_all_mocked=True) as router,
            httpx.Client(transport=transport, timeout=TIMEOUT, follow_redirects=False) as client,
        ):
            marked = respond(router)
            posting = [marked] if marked is not None else list(router.routes)
            for route in posting if answer is not None else ():
                route.mock(side_effect=answer.response if isinstance(answer, Answer) else answer)
            uploading = _Uploading(adapter, settings, client)
            result: object = None
            error: Exception | None = None
            unanswered: AssertionError | None = None
            before, counts = 0, [0 for _ in posting]
            try:
                fields, error = _outcome(lambda: _part(adapter, part, uploading))
                # Where the call's own requests start: those before are the part's uploads.
                before, counts = len(router.calls), [route.call_count for route in posting]
                if fields is not None:
                    ctx = PublishContext(settings=settings, client=client, key=KEY, text=TEXT, **fields)
                    result, error = _outcome(lambda: adapter.find(ctx) if find else adapter.publish(ctx))
            except respx.models.AllMockedAssertionError as exc:
                unanswered = exc
            if unanswered is not None:
                _fail(
                    f"{uploading.doing or what} sent a request the contract does not answer ({unanswered}); "
                    "describe the platform's answer to it (respond_published_with_media, for a part with "
                    "attachments and their uploads)"
                )
            reached = {id(c.request) for route in posting for c in route.calls}
            own = [c.request for c in list(router.calls)[before:]]
            return Call(
                what=what,
                answered=answer is not None,
                result=result,
                error=error,
                requests=[c.request for c in router.calls],
                posted=[request for request in own if id(request) in reached],
                media=uploading.media,
                through_client=transport.requests,
                to_one_route=max((route.call_count - n for route, n in zip(posting, counts, strict=True)), default=0),
                read=settings.read,
            )

    def _confirmed(self, adapter: Adapter) -> list[Call]:
        """Publish each kind of part the adapter takes, confirmed by the platform."""
        calls = [self._run(adapter, self.respond_published)]
        if adapter.limits.threads:
            calls.append(self._run(adapter, self.respond_published, part=THREAD_PART))
        if adapter.limits.max_media > 0:
            calls.append(self._run(adapter, self.respond_published_with_media, part=MEDIA_PART))
        return calls

    def _failures(self, adapter: Adapter) -> Iterator[Call]:
        """Every call the kit makes that ends in an error."""
        yield self._run(adapter, self.respond_auth_expired)
        yield self._run(adapter, lambda router: self.respond_rate_limited(router, 7))
        yield self._run(adapter, self.respond_server_error)
        for reason in self.refusals:
            part = _refused_part(adapter, reason)
            if part is not None:
                yield self._run(adapter, self._refusal(reason), part=part)
        for answer in [*STATUS_FAMILIES.values(), *UNCONFIRMED.values()]:
            yield self._run(adapter, self.respond_published, answer=answer)
        for exc, _ in TRANSPORT_FAILURES.values():
            yield self._run(adapter, self.respond_published, answer=exc)
        if adapter.can_find:
            for answer in FAILED_SEARCHES.values():
                yield self._run(adapter, lambda router: self.respond_search(router, False), answer=answer, find=True)

    def _refusal(self, reason: Reason) -> Callable[[respx.MockRouter], respx.Route | None]:
        return lambda router: self.respond_rejected(router, reason)

    def _secrets(self, adapter: Adapter) -> dict[str, str]:
        """The contract's values of the adapter's secret settings."""
        return {name: value for name, value in self.settings.items() if is_secret(type(adapter), name)}


class _Recording(httpx.BaseTransport):
    """``ctx.client``'s transport: herald's, counting the requests that come through it."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class _Uploading:
    """The uploads of a part's attachments before it is published, as herald makes them
    (``core.runtime.attaching``): each file uploaded, then looked at until processed."""

    #: How many times the kit asks ``media_ready`` before it takes an upload for stuck.
    LOOKS = 3

    def __init__(self, adapter: Adapter, settings: Mapping[str, str], client: httpx.Client) -> None:
        self.adapter, self.settings, self.client = adapter, settings, client
        #: The upload under way, for messages; None once every one is done.
        self.doing: str | None = None
        #: The attachments, with the platform ids their uploads got.
        self.media: tuple[Attachment, ...] = ()

    def attach(self, files: tuple[MediaFile, ...], part: str) -> tuple[Attachment, ...]:
        """``files`` as the part's attachments (run under ``call_platform``, as every adapter call)."""
        if not self.adapter.uploads_first:  # the files go with the post itself
            self.media = tuple(Attachment("", f.alt, f.mime, f) for f in files)
            return self.media
        media = []
        for n, file in enumerate(files, 1):
            self.doing = f"upload() of attachment {n} of {part}"
            ctx = UploadContext(settings=self.settings, client=self.client, file=file, key=f"{KEY}m{n - 1}")
            uploaded = self.adapter.upload(ctx)
            looks = 0
            while not uploaded.ready and not self.adapter.media_ready(ctx, uploaded.platform_id):
                looks += 1
                if looks == self.LOOKS:
                    _fail(
                        f"{self.doing}: media_ready() still says it is processing after {looks} looks; answer "
                        "the upload as processed in respond_published_with_media (or its look, media_ready's request)"
                    )
            media.append(Attachment(uploaded.platform_id, file.alt, file.mime, file))
        self.doing = None
        self.media = tuple(media)
        return self.media


def _outcome(call: Callable[[], T]) -> tuple[T | None, Exception | None]:
    """What ``call`` returned, or what it raised; the kit's own failures (an AssertionError,
    respx's for a request no route answers among them) go on up."""
    try:
        return call_platform(call), None
    except AssertionError:
        raise
    except Exception as exc:
        return None, exc


@cache
def _ssl_context() -> ssl.SSLContext:
    """One for every call the kit makes: each takes milliseconds to load the CA bundle."""
    return httpx.create_ssl_context()


def _fail(message: str) -> NoReturn:
    """Fail the contract test with ``message``, which names the fix."""
    __tracebackhide__ = True
    raise AssertionError(message)


def _name(adapter: Adapter) -> str:
    return type(adapter).__name__


def _label(answer: Answer | Exception) -> str:
    return answer.label if isinstance(answer, Answer) else f"httpx.{type(answer).__name__}"


def _part(adapter: Adapter, part: str, uploading: _Uploading) -> dict[str, Any]:
    """The fields of :class:`PublishContext` that make ``part``, its attachments uploaded."""
    if part == THREAD_PART:
        return {"part_index": 2, "reply_to": REPLY_TO, "root": ROOT}
    if part == MEDIA_PART:
        return {"media": uploading.attach(_media_files(adapter), part)}
    return {}


def _refused_part(adapter: Adapter, reason: Reason) -> str | None:
    """The part the platform refuses for ``reason``; None where the adapter takes no such part."""
    if reason is Reason.MEDIA_INVALID:
        return MEDIA_PART if adapter.limits.max_media > 0 else None
    if reason is Reason.THREAD_PARENT_MISSING:
        return THREAD_PART if adapter.limits.threads else None
    return TEXT_PART


def _media_files(adapter: Adapter) -> tuple[MediaFile, ...]:
    """Two files (one where the adapter takes one), with alt text where it takes it."""
    limits = adapter.limits
    preferred = ("image/png", "image/jpeg", "image/webp", "image/gif")
    mime = next((t for t in preferred if t in limits.media_types), min(limits.media_types, default="image/png"))
    video = mime.startswith("video/")
    files = []
    for n in range(1, min(2, limits.max_media) + 1):
        data, alt = _png(n), f"conformance-alt-{n}" if limits.alt_text else None
        file = MediaFile(
            digest=hashlib.sha256(data).hexdigest(),
            mime=mime,
            size=len(data),
            filename=f"conformance-{n}{mimetypes.guess_extension(mime) or ''}",
            alt=alt,
            width=1,
            height=1,
            duration=1.0 if video else None,
            read=partial(bytes, data),
        )
        files.append(file)
    return tuple(files)


def _png(shade: int) -> bytes:
    """A one-pixel PNG, a different one for each ``shade``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixel = zlib.compress(bytes([0, shade, 255 - shade, shade]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel) + chunk(b"IEND", b"")


def _carries_attachment(sent: bytes, documents: list[Any], attachment: Attachment, uploads_first: bool) -> bool:
    """Whether the requests ``sent`` (read as ``documents``) carry ``attachment``: its platform id
    (as it is, or – an id that is JSON, such as a blob reference – as that value in a body), or
    the file's bytes (raw or base64) where the files go with the post."""
    if uploads_first:
        if attachment.platform_id.encode() in sent:
            return True
        value = _json(attachment.platform_id)
        return isinstance(value, dict | list) and any(_holds(document, value) for document in documents)
    data = attachment.file.read() if attachment.file else b""
    return bool(data) and (data in sent or base64.b64encode(data) in sent)


def _holds(document: Any, value: Any) -> bool:
    """Whether ``document`` is ``value`` or holds it, at any depth."""
    if document == value:
        return True
    items = document.values() if isinstance(document, dict) else document if isinstance(document, list) else ()
    return any(_holds(inner, value) for inner in items)


def _raw(request: httpx.Request) -> bytes:
    """Everything a request carries, for looking a value up in it."""
    headers = b"\n".join(k + b": " + v for k, v in request.headers.raw)
    return str(request.url).encode() + b"\n" + headers + b"\n\n" + request.content


def _key_places(request: httpx.Request, key: str) -> list[str]:
    """Where ``request`` carries ``key`` (:data:`KEY` as it goes on the wire), in ``Adapter.key_in``'s forms."""
    headers = [(name.decode(errors="replace"), value.decode(errors="replace")) for name, value in request.headers.raw]
    places = [f"header:{name}" for name, value in headers if value in (key, f'"{key}"')]
    places += [f"query:{name}" for name, value in request.url.params.multi_items() if value == key]
    if key in request.url.path.split("/"):
        places.append("path")
    for document in _documents(request):
        places += [f"body:{path}" for path in _paths_to_key(document, "", key)]
    return list(dict.fromkeys(places))


def _declared_place_holds_key(place: str, found: list[str]) -> bool:
    if place.startswith("header:"):
        return place.lower() in (f.lower() for f in found)
    return place in found


def _documents(request: httpx.Request) -> list[Any]:
    """The request's body as a platform reads it: JSON, a form's fields, a multipart body's
    fields and JSON parts."""
    content_type = request.headers.get("Content-Type", "")
    content = request.content
    if content_type.startswith("multipart/"):
        message = BytesParser(policy=policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + content
        )
        fields: dict[str, str] = {}
        documents: list[Any] = [fields]
        for part in message.iter_parts():
            payload = part.get_payload(decode=True)
            if part.get_filename() is not None or not isinstance(payload, bytes):
                continue
            text = payload.decode(errors="replace")
            fields[str(part.get_param("name", header="content-disposition") or "")] = text
            if part.get_content_type() == "application/json":
                documents.append(_json(text))
        return documents
    if content_type.startswith("application/x-www-form-urlencoded"):
        return [dict(parse_qsl(content.decode(errors="replace"), keep_blank_values=True))]
    return [_json(content.decode(errors="replace"))] if content else []


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _paths_to_key(value: Any, path: str, key: str) -> Iterator[str]:
    """The dotted paths at which ``value`` holds ``key``, descending into JSON held in strings."""
    if isinstance(value, str):
        if value == key:
            yield path
        elif value[:1] in ("{", "["):
            yield from _paths_to_key(_json(value), path, key)
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for name, inner in items:
        yield from _paths_to_key(inner, f"{path}.{name}" if path else str(name), key)
