"""Reading the requests an adapter made as a platform reads them: where the key is, what the
bodies hold, whether an attachment travelled."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from email import policy
from email.parser import BytesParser
from typing import Any
from urllib.parse import parse_qsl

import httpx

from core.plugins.adapter import Attachment

#: ``Adapter.key_in``'s forms.
KEY_PLACE = re.compile(r"(?:header|query|body):[^\s:]+|path")


def carries_attachment(sent: bytes, documents: list[Any], attachment: Attachment, uploads_first: bool) -> bool:
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


def raw(request: httpx.Request) -> bytes:
    """Everything a request carries, for looking a value up in it."""
    headers = b"\n".join(k + b": " + v for k, v in request.headers.raw)
    return str(request.url).encode() + b"\n" + headers + b"\n\n" + request.content


def key_places(request: httpx.Request, key: str) -> list[str]:
    """Where ``request`` carries ``key`` (:data:`KEY` as it goes on the wire), in ``Adapter.key_in``'s forms."""
    headers = [(name.decode(errors="replace"), value.decode(errors="replace")) for name, value in request.headers.raw]
    places = [f"header:{name}" for name, value in headers if value in (key, f'"{key}"')]
    places += [f"query:{name}" for name, value in request.url.params.multi_items() if value == key]
    if key in request.url.path.split("/"):
        places.append("path")
    for document in bodies(request):
        places += [f"body:{path}" for path in _paths_to_key(document, "", key)]
    return list(dict.fromkeys(places))


def key_place_holds(place: str, found: list[str]) -> bool:
    if place.startswith("header:"):
        return place.lower() in (f.lower() for f in found)
    return place in found


def bodies(request: httpx.Request) -> list[Any]:
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
