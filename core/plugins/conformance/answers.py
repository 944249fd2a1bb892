"""The answers the kit gives in the platform's place, shaped by no platform's docs: a bare
status of each family, successes that name no post, failed searches, broken connections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from core.domain.errors import Ambiguous, NotSent, PublishError


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


def label(answer: Answer | Exception) -> str:
    """How messages name an answer the kit gave: its label, or the transport error raised."""
    return answer.label if isinstance(answer, Answer) else f"httpx.{type(answer).__name__}"
