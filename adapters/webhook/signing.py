"""How a webhook delivery is signed, and how a receiver checks it.

herald signs the timestamp and the exact body bytes together, so a receiver can tell both
that the request comes from someone holding the channel's secret and that it is recent::

    signed    = timestamp + "." + body          (bytes: ASCII decimal seconds, a dot, the raw body)
    signature = "sha256=" + hex(HMAC-SHA256(key=secret as UTF-8, message=signed))

The ``sha256=`` hex form is GitHub's (``X-Hub-Signature-256``, "Validating webhook
deliveries", docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries); the
timestamp joined by a dot before the body is Stripe's (``Stripe-Signature`` ``t=``/``v1=``,
docs.stripe.com/webhooks#verify-manually), which is what lets a receiver refuse a replay.
Only the standard library's :mod:`hmac` and :mod:`hashlib` are used, on both sides.
"""

from __future__ import annotations

import hashlib
import hmac

#: What prefixes the hex digest in the signature header, as GitHub writes it.
SCHEME = "sha256="
#: How old a timestamp :func:`signature_matches` accepts by default, in seconds (Stripe's five minutes).
TOLERANCE = 300


def signed_message(timestamp: str, body: bytes) -> bytes:
    """``timestamp.body``: the bytes the HMAC covers."""
    return timestamp.encode("ascii") + b"." + body


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of ``timestamp.body``."""
    digest = hmac.new(secret.encode("utf-8"), signed_message(timestamp, body), hashlib.sha256).hexdigest()
    return SCHEME + digest


def signature_matches(
    secret: str, timestamp: str, body: bytes, header: str, *, now: float, tolerance: float = TOLERANCE
) -> bool:
    """What a receiver checks before it reads the body: the signature, in constant time, and
    the timestamp within ``tolerance`` seconds of ``now`` (either way, for clock skew).

    A receiver in another language does the same three steps; this one is the reference
    herald's tests hold the adapter to.
    """
    if not (timestamp.isascii() and timestamp.isdigit()):
        return False
    if abs(now - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), header)
