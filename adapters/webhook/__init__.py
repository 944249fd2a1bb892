"""The webhook adapter: herald POSTs each part, signed, to an HTTP receiver of your own.

Using it
========

A channel needs the receiver's address and a secret both sides keep::

    herald channel add --platform webhook --name hooks \\
        --set url=https://example.org/hooks/herald \\
        --set secret=$(openssl rand -hex 32)

* ``url`` (required): an http(s) address. herald does not follow redirects: give the final one.
* ``secret`` (required, at least 16 characters, kept encrypted): the HMAC key. Make it long
  and random, and give the receiver the same value.
* ``signature_header`` (optional): the header carrying the signature, ``X-Herald-Signature``
  when left out.

``herald channel test hooks`` asks the receiver to prove it holds the secret (below).
Attachments travel inside the JSON, so a part carrying large videos needs a call timeout
long enough to send them (``HERALD_CALL_TIMEOUT``, 10 s by default).

What the receiver is sent
=========================

One ``POST`` to ``url`` per part, with a UTF-8 JSON body (``Content-Type: application/json``)::

    {"key": "3n1k8q0c2w5e7r9t1y3u5i7o9", "text": "Hello", "part_index": 0,
     "reply_to": null, "root": null,
     "media": [{"mime": "image/png", "filename": "chart.png", "alt": "A rising line",
                "size": 48213, "sha256": "9f86d0...", "data_base64": "iVBORw0KGgo..."}]}

* ``key``: the part's delivery key, at most 25 characters of ``[a-z0-9]``. It is the same on
  every attempt at this part, and different for every other part, post, channel, slot or revision.
* ``part_index``: 0 for a thread's first part; ``reply_to`` and ``root`` are the ids this
  receiver answered for the part before and for the first part (null on the first).
* ``media``: the part's attachments, in order (at most 4; PNG, JPEG, GIF, WebP up to 8 MB,
  MP4 up to 40 MB), each with its bytes in standard base64, their size, their SHA-256
  (hex) and the alt text (null when there is none).

Headers:

* ``Idempotency-Key``: the key again, as a quoted String of RFC 8941
  (``Idempotency-Key: "3n1k8q0c2w5e7r9t1y3u5i7o9"``), as the IETF Idempotency-Key draft says.
* ``X-Herald-Timestamp``: when herald signed the request, in whole seconds since the Unix epoch.
* ``X-Herald-Signature`` (or the channel's ``signature_header``): ``sha256=`` followed by the
  lowercase hex HMAC-SHA256, keyed with the secret (its UTF-8 bytes), of the timestamp's
  ASCII digits, a dot, and the body's exact bytes::

      sha256=hex(HMAC_SHA256(secret, timestamp + "." + body))

To accept a request, a receiver recomputes that value over the raw body it received
(before parsing it), compares it in constant time, and refuses (401) a request whose
signature differs or whose timestamp is more than five minutes from its own clock, which
turns away a replayed request. ``adapters.webhook.signing.signature_matches`` is the reference.

What herald expects back
========================

* **Keep each key for at least 24 hours**, with the answer you gave, and answer a request
  repeating a key you have seen with that same answer: herald sends a part again, with the
  same key and body, when it cannot tell whether an attempt arrived. After 24 hours herald no
  longer resends a part in doubt: it waits for a person to decide.
* **2xx**: you have the post and will not lose it. Answer ``{"id": "...", "url": "..."}``
  (both strings; the id at most 200 characters, the url at most 500) to name it: the id is
  what later parts of the thread receive as ``reply_to`` and ``root``, the url is what people
  are shown. A 2xx with an empty body (a 204), or a JSON object without ``id``, makes the
  key the post's id, with no url. Any other body (not a JSON object, an id that is not such
  a string) leaves the post in doubt.
* **409** while a request with the same key is still being processed, as the draft says:
  herald asks again later. A 409 whose JSON body names the ``id`` of the first request's
  post is taken as that post.
* **401**: the signature or timestamp did not verify. herald holds the channel until it is
  reconnected with the right secret (``herald channel reconnect hooks --set secret=...``).
* **403**: this post may not be published here (``permission_denied``, final).
* **400 or 422** (and other 4xx): the post is refused for good. ``{"error": "...", "detail": "..."}``
  may name the reason: ``content_rejected`` (the default), ``media_invalid``,
  ``thread_parent_missing`` or ``permission_denied``. **413**: too large (``media_invalid``
  when the part has attachments).
* **404, 405, 410** or a redirect: there is no receiver at this url; the channel is held
  until it is reconnected with the right one.
* **429** with ``Retry-After`` (seconds, or an HTTP date): herald waits at least that long.
* **408, 5xx**, or no answer: the post may exist. herald sends it again with the same key,
  after the call's deadline has passed.

Proving the secret (``herald channel test``)
============================================

herald sends ``GET url`` with ``X-Herald-Verify: 1``, a fresh ``X-Herald-Timestamp`` and the
signature of that timestamp and an empty body (``timestamp + "."``). A receiver that takes
it checks the signature as above, does nothing else (a GET must change nothing), and
answers 2xx, with the signature header set to the signature of the same timestamp and its
answer's body, computed the same way. That proves it holds the same secret, which a bare
200 from any web server would not. The body may be ``{"name": "..."}``, shown as whom the
channel reaches. A receiver that answers the GET with 404, 405 or 501 does not take it,
and ``herald channel test`` says so; posting still works.
"""

from __future__ import annotations

from adapters.webhook.adapter import WebhookAdapter
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["WebhookAdapter", "herald_register_adapters"]


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the webhook adapter."""
    register(WebhookAdapter)
