"""How the kit calls an adapter: once per call, through a client of herald's own, the platform
answering as the contract's ``respond_*`` sets up, and everything the platform saw recorded."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import httpx

from core.domain.errors import ConfigError, PublishError, Rejected
from core.domain.states import Reason
from core.plugins.adapter import Adapter, Attachment, MediaFile, PublishContext, UploadContext
from core.plugins.conformance.answers import Answer, label
from core.plugins.conformance.parts import KEY, MEDIA_PART, REPLY_TO, ROOT, TEXT, TEXT_PART, THREAD_PART, media_files
from core.plugins.deadline import DeadlineTransport
from core.plugins.transport import call_platform

if TYPE_CHECKING:
    import respx

T = TypeVar("T")

#: ``ctx.client``'s timeout: one no adapter picks by chance, so a request that overrides it shows.
TIMEOUT = httpx.Timeout(8.5)


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


def run(
    adapter: Adapter,
    settings: Mapping[str, str],
    respond: Callable[[respx.MockRouter], respx.Route | None],
    *,
    part: str = TEXT_PART,
    answer: Answer | Exception | None = None,
    find: bool = False,
) -> Call:
    """Call ``publish`` (or ``find``) of ``adapter`` on ``part`` once, with the channel's
    ``settings``, the platform answering as ``respond`` sets up – or with ``answer``, on the
    post's route ``respond`` returns (on every route it sets up where it returns none). An
    adapter that uploads first has the part's attachments uploaded before, as herald does; an
    upload's failure is then the call's."""
    import respx

    method = "find()" if find else "publish()"
    what = f"{method} of {part}" + (f", answered {label(answer)}" if answer is not None else "")
    read = ReadSettings(settings)
    transport = _Recording(DeadlineTransport(ssl_context=_ssl_context()))
    with (
        respx.mock(assert_all_called=False, assert_all_mocked=True) as router,
        httpx.Client(transport=transport, timeout=TIMEOUT, follow_redirects=False) as client,
    ):
        marked = respond(router)
        posting = [marked] if marked is not None else list(router.routes)
        for route in posting if answer is not None else ():
            route.mock(side_effect=answer.response if isinstance(answer, Answer) else answer)
        uploading = _Uploading(adapter, read, client)
        result: object = None
        error: Exception | None = None
        unanswered: AssertionError | None = None
        before, counts = 0, [0 for _ in posting]
        try:
            fields, error = _outcome(lambda: _part(adapter, part, uploading))
            # Where the call's own requests start: those before are the part's uploads.
            before, counts = len(router.calls), [route.call_count for route in posting]
            if fields is not None:
                ctx = PublishContext(settings=read, client=client, key=KEY, text=TEXT, **fields)
                result, error = _outcome(lambda: adapter.find(ctx) if find else adapter.publish(ctx))
        except respx.models.AllMockedAssertionError as exc:
            unanswered = exc
        if unanswered is not None:
            fail(
                f"{uploading.doing or what} sent a request the contract does not answer ({unanswered}); "
                "describe the platform's answer to it (for a part with attachments, its uploads too: "
                "respond_published_with_media, and respond_rejected for MEDIA_INVALID)"
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
            read=read.read,
        )


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
                    fail(
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


def fail(message: str) -> NoReturn:
    """Fail the contract test with ``message``, which names the fix."""
    __tracebackhide__ = True
    raise AssertionError(message)


def _part(adapter: Adapter, part: str, uploading: _Uploading) -> dict[str, Any]:
    """The fields of :class:`PublishContext` that make ``part``, its attachments uploaded."""
    if part == THREAD_PART:
        return {"part_index": 2, "reply_to": REPLY_TO, "root": ROOT}
    if part == MEDIA_PART:
        return {"media": uploading.attach(media_files(adapter), part)}
    return {}
