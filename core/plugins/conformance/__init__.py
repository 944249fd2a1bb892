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

from core.plugins.conformance.answers import FAILED_SEARCHES, STATUS_FAMILIES, TRANSPORT_FAILURES, UNCONFIRMED, Answer
from core.plugins.conformance.calls import TIMEOUT, Call, ReadSettings
from core.plugins.conformance.contract import MIN_SECRET_CHARS, REFUSALS, AdapterContract
from core.plugins.conformance.parts import KEY, MEDIA_PART, REPLY_TO, ROOT, TEXT, TEXT_PART, THREAD_PART

__all__ = [
    "FAILED_SEARCHES",
    "KEY",
    "MEDIA_PART",
    "MIN_SECRET_CHARS",
    "REFUSALS",
    "REPLY_TO",
    "ROOT",
    "STATUS_FAMILIES",
    "TEXT",
    "TEXT_PART",
    "THREAD_PART",
    "TIMEOUT",
    "TRANSPORT_FAILURES",
    "UNCONFIRMED",
    "AdapterContract",
    "Answer",
    "Call",
    "ReadSettings",
]
