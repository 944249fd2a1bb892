"""Request bodies sent as HTML forms: ``application/x-www-form-urlencoded`` and
``multipart/form-data`` (RFC 7578), as Mastodon's API takes its parameters and files.

The multipart reader is small on purpose: it takes what an HTTP client sends (a boundary,
parts with a ``Content-Disposition: form-data; name=...`` header, optionally a filename
and a ``Content-Type``), not every corner of MIME.
"""

from __future__ import annotations

import email.parser
import email.policy
from dataclasses import dataclass, field
from urllib.parse import parse_qs


@dataclass(frozen=True)
class FormFile:
    """One file of a multipart form."""

    filename: str
    content_type: str
    data: bytes


@dataclass
class Form:
    """A form's fields (every value of each, in order) and files, by field name."""

    fields: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, FormFile] = field(default_factory=dict)

    def value(self, name: str) -> str | None:
        """The last value of field ``name``, None when absent."""
        values = self.fields.get(name)
        return values[-1] if values else None


def parse_form(content_type_header: str, raw: bytes) -> Form | None:
    """The form in ``raw``, as its ``Content-Type`` header (with parameters) says it is sent;
    None when the body is not that form (or the header names no form)."""
    mime = content_type_header.partition(";")[0].strip().lower()
    if mime == "application/x-www-form-urlencoded":
        try:
            return Form(fields=parse_qs(raw.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            return None
    if mime == "multipart/form-data":
        return _multipart(content_type_header, raw)
    return None


def _multipart(content_type_header: str, raw: bytes) -> Form | None:
    # The email parser reads MIME multiparts; it is given the header the body came with.
    head = f"Content-Type: {content_type_header}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    if not message.is_multipart() or message.get_boundary() is None:
        return None
    form = Form()
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            return None  # every part of a form has a name
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        if filename is not None:
            form.files[name] = FormFile(filename, part.get_content_type(), data)
            continue
        try:
            form.fields.setdefault(name, []).append(data.decode(part.get_content_charset() or "utf-8"))
        except (UnicodeDecodeError, LookupError):
            return None
    return form
