"""The Bluesky adapter passes the conformance kit every adapter passes.

Every request and answer below is shaped as the AT Protocol's lexicons and Bluesky's docs
show it – bluesky-social/atproto (lexicons/...), bluesky-social/bsky-docs (docs/...,
published at https://docs.bsky.app), the XRPC spec (https://atproto.com/specs/xrpc) – and
the file each comes from is named at its route. Two of the kit's tests are restated for what
this adapter does differently, each saying why.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx
import respx

from adapters.bluesky import Bluesky
from adapters.bluesky.tid import tid_for
from core.domain.states import Strategy
from core.plugins.adapter import Adapter, PublishContext
from core.plugins.conformance import KEY, AdapterContract
from core.plugins.transport import call_platform

SERVICE = "https://bsky.social"
HANDLE = "alice.bsky.social"
APP_PASSWORD = "abcd-efgh-2345-67ij"
SETTINGS = {"handle": HANDLE, "app_password": APP_PASSWORD}
#: The DID and CID of the docs' example post (docs/advanced-guides/posts.md, createRecord's answer).
DID = "did:plc:u5cwb2mwiv2bfq53cjufe6yn"
CID = "bafyreibjifzpqj6o6wcq3hejh7y4z4z2vmiklkvykc57tw3pcbx3kxifpm"

CREATE_SESSION = f"{SERVICE}/xrpc/com.atproto.server.createSession"
REFRESH_SESSION = f"{SERVICE}/xrpc/com.atproto.server.refreshSession"
PUT_RECORD = f"{SERVICE}/xrpc/com.atproto.repo.putRecord"
GET_RECORD = f"{SERVICE}/xrpc/com.atproto.repo.getRecord"
UPLOAD_BLOB = f"{SERVICE}/xrpc/com.atproto.repo.uploadBlob"
RESOLVE_HANDLE = f"{SERVICE}/xrpc/com.atproto.identity.resolveHandle"


def session_body(access: str = "access-1", refresh: str = "refresh-1", **extra: Any) -> dict[str, Any]:
    """createSession's (and refreshSession's) output: lexicons/com/atproto/server/createSession.json
    ("required": accessJwt, refreshJwt, handle, did; optional email, active, status...)."""
    return {
        "accessJwt": access,
        "refreshJwt": refresh,
        "handle": HANDLE,
        "did": DID,
        "email": "alice@example.com",
        "emailConfirmed": True,
        "active": True,
    } | extra


def post_answer(rkey: str, cid: str = CID) -> dict[str, Any]:
    """putRecord's output: lexicons/com/atproto/repo/putRecord.json ("required": uri, cid)."""
    return {
        "uri": f"at://{DID}/app.bsky.feed.post/{rkey}",
        "cid": cid,
        "commit": {"cid": "bafyreihkwvxvgsbaa4jrzcvqjzvqmrbavcxhuqsuadlv2llfbs33lkwgiq", "rev": "3k4duaz5vfs2b"},
        "validationStatus": "valid",
    }


def xrpc_error(error: str, message: str) -> dict[str, str]:
    """An XRPC error body: "``error`` (string, required) ... ``message`` (string, optional)"
    (https://atproto.com/specs/xrpc, "Error Responses")."""
    return {"error": error, "message": message}


class TestBlueskyConforms(AdapterContract):
    """The adapter against a PDS: createSession, then putRecord at the key's record key."""

    adapter_class: ClassVar[type[Adapter]] = Bluesky
    settings: ClassVar[dict[str, str]] = SETTINGS

    def signs_in(self, router: respx.MockRouter) -> None:
        # POST com.atproto.server.createSession: lexicons/com/atproto/server/createSession.json.
        router.post(CREATE_SESSION).respond(200, json=session_body())

    def respond_published(self, router: respx.MockRouter) -> None:
        self.signs_in(router)
        # POST com.atproto.repo.putRecord: lexicons/com/atproto/repo/putRecord.json.
        router.post(PUT_RECORD).respond(200, json=post_answer(tid_for(KEY)))

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # A refused app password: AuthRequiredError('Invalid identifier or password') is a 401
        # "AuthenticationRequired" (packages/pds/src/account-manager/account-manager.ts, login;
        # packages/lex/lex-password-session/README.md, "Common error codes").
        router.post(CREATE_SESSION).respond(
            401, json=xrpc_error("AuthenticationRequired", "Invalid identifier or password")
        )

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        self.signs_in(router)
        # 429 "RateLimitExceeded" with Retry-After and the RateLimit-* headers
        # (packages/xrpc-server/src/rate-limiter-http.ts; docs/advanced-guides/rate-limits.md).
        router.post(PUT_RECORD).respond(
            429,
            headers={
                "Retry-After": str(retry_after),
                "RateLimit-Limit": "5000",
                "RateLimit-Remaining": "0",
                "RateLimit-Reset": "1700000000",
                "RateLimit-Policy": "5000;w=3600",
            },
            json=xrpc_error("RateLimitExceeded", "Rate Limit Exceeded"),
        )

    def respond_rejected(self, router: respx.MockRouter) -> None:
        self.signs_in(router)
        # A record its lexicon refuses: InvalidRequestError(`Invalid ${$type} record: ...`), a 400
        # (packages/pds/src/repo/prepare.ts, validateRecord; post.json's "maxGraphemes": 300).
        router.post(PUT_RECORD).respond(
            400,
            json=xrpc_error(
                "InvalidRequest",
                "Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes",
            ),
        )

    def respond_server_error(self, router: respx.MockRouter) -> None:
        self.signs_in(router)
        # "500 Internal Server Error: Generic internal service error" (xrpc spec); the body names
        # no detail for a 500 (packages/xrpc-server/src/errors.ts, XRPCError.payload).
        router.post(PUT_RECORD).respond(500, json=xrpc_error("InternalServerError", "Internal Server Error"))

    def respond_search(self, router: respx.MockRouter, found: bool) -> None:
        # GET com.atproto.repo.getRecord: lexicons/com/atproto/repo/getRecord.json (output uri,
        # cid, value; error RecordNotFound, a 400: docs/api/com-atproto-repo-get-record.api.mdx).
        route = router.get(GET_RECORD, params={"rkey": tid_for(KEY)})
        if found:
            rkey = tid_for(KEY)
            value = {"$type": "app.bsky.feed.post", "text": "conformance", "createdAt": "2023-08-07T05:31:12.156Z"}
            route.respond(200, json={"uri": f"at://{DID}/app.bsky.feed.post/{rkey}", "cid": CID, "value": value})
        else:
            # InvalidRequestError(`Could not locate record: ${uri}`, 'RecordNotFound')
            # (packages/pds/src/api/com/atproto/repo/getRecord.ts).
            uri = f"at://{DID}/app.bsky.feed.post/{tid_for(KEY)}"
            route.respond(400, json=xrpc_error("RecordNotFound", f"Could not locate record: {uri}"))

    # -- the kit's tests this adapter keeps differently -------------------------------------

    def test_declares_a_name_a_strategy_and_limits(self, adapter: Adapter) -> None:
        """The kit asks a native_key adapter for a finite ``key_ttl``. Bluesky's key is the post's
        record key, held by the account's repository for as long as the post exists, so
        ``key_ttl`` is None – which core reads as "remembered" at any age (core/runtime/job.py,
        ``_key_remembered``) – and ``find`` is there for the read-back sweep."""
        assert adapter.name == "bluesky"
        assert adapter.strategy is Strategy.NATIVE_KEY
        assert adapter.key_ttl is None
        assert adapter.can_find
        assert adapter.limits.max_chars == 300 and adapter.limits.text_unit == "graphemes"

    def test_the_key_travels_with_the_request_where_the_strategy_needs_it(
        self, adapter: Adapter, ctx: PublishContext, router: respx.MockRouter
    ) -> None:
        """The kit looks for the delivery key itself in the request. A post's record key must be
        a TID (post.json, ``"key": "tid"``), never herald's key as it is: what travels is the
        TID computed from it, as putRecord's ``rkey``."""
        self.respond_published(router)
        call_platform(lambda: adapter.publish(ctx))
        request = router.calls.last.request
        assert request.url == httpx.URL(PUT_RECORD)
        assert json.loads(request.content)["rkey"] == tid_for(KEY)
