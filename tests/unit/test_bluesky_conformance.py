"""The Bluesky adapter passes the conformance kit every adapter passes.

Every request and answer below is shaped as the AT Protocol's lexicons and Bluesky's docs
show it – bluesky-social/atproto (lexicons/...), bluesky-social/bsky-docs (docs/...,
published at https://docs.bsky.app), the XRPC spec (https://atproto.com/specs/xrpc) – and
the file each comes from is named at its route.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
import respx

from adapters.bluesky import Bluesky
from adapters.bluesky.tid import tid_for
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import KEY, REPLY_TO, ROOT, AdapterContract

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


def record_answer(rkey: str, cid: str = CID, text: str = "conformance") -> dict[str, Any]:
    """getRecord's output: lexicons/com/atproto/repo/getRecord.json ("required": uri, value;
    cid optional), a post of the docs' example account."""
    value = {"$type": "app.bsky.feed.post", "text": text, "createdAt": "2023-08-07T05:31:12.156Z"}
    return {"uri": f"at://{DID}/app.bsky.feed.post/{rkey}", "cid": cid, "value": value}


#: The blobs of the docs' image uploads (docs/advanced-guides/posts.md, "Images embeds"), one
#: for each file the kit uploads.
BLOB_LINKS = (
    "bafkreibabalobzn6cd366ukcsjycp4yymjymgfxcv6xczmlgpemzkz3cfa",
    "bafkreif3fouono2i3fmm5moqypwskh3yjtp7snd5hfq5pr453oggygyrte",
)
#: The CIDs of the docs' example reply's root and parent (docs/advanced-guides/posts.md, "Replies").
ROOT_CID = "bafyreig2fjxi3rptqdgylg7e5hmjl6mcke7rn2b6cugzlqq3i4zu6rq52q"
PARENT_CID = "bafyreiecx6dujwoeqpdzl27w67z4h46hyklk3an4i4cvvmioaqb2qbyo5u"


def xrpc_error(error: str, message: str) -> dict[str, str]:
    """An XRPC error body: "``error`` (string, required) ... ``message`` (string, optional)"
    (https://atproto.com/specs/xrpc, "Error Responses")."""
    return {"error": error, "message": message}


class TestBlueskyConforms(AdapterContract):
    """The adapter against a PDS: createSession, then putRecord at the key's record key."""

    adapter_class: ClassVar[type[Adapter]] = Bluesky
    settings: ClassVar[dict[str, str]] = SETTINGS
    # Not PERMISSION_DENIED: a PDS answers 403 to an OAuth session missing a scope
    # (packages/oauth/oauth-scopes/src/scope-missing-error.ts, status 403), and herald signs in
    # with an app password, which may write the account's posts. The kit's bare 403 still
    # checks how the adapter maps one.
    refusals: ClassVar[tuple[Reason, ...]] = (
        Reason.CONTENT_REJECTED,
        Reason.THREAD_PARENT_MISSING,
        Reason.MEDIA_INVALID,
    )
    # A reply holds both the parent and the thread's root (lexicons/app/bsky/feed/post.json, replyRef).
    replies_name_the_root = True

    def signs_in(self, router: respx.MockRouter) -> None:
        # POST com.atproto.server.createSession: lexicons/com/atproto/server/createSession.json.
        router.post(CREATE_SESSION).respond(200, json=session_body())
        # POST com.atproto.server.refreshSession (lexicons/com/atproto/server/refreshSession.json),
        # which the adapter asks once when a call is refused for its access token alone.
        router.post(REFRESH_SESSION).respond(200, json=session_body("access-2", "refresh-2"))

    def finds_the_thread(self, router: respx.MockRouter) -> None:
        # GET com.atproto.repo.getRecord of the parts replied to: a reply names each with its
        # CID, which the kit's bare ids lack (lexicons/com/atproto/repo/strongRef.json).
        router.get(GET_RECORD, params={"rkey": ROOT}).respond(200, json=record_answer(ROOT, ROOT_CID, "1/3"))
        router.get(GET_RECORD, params={"rkey": REPLY_TO}).respond(200, json=record_answer(REPLY_TO, PARENT_CID, "2/3"))

    def uploads(self, router: respx.MockRouter) -> None:
        # POST com.atproto.repo.uploadBlob: the file's bytes as the body, answered {"blob": ...}
        # (lexicons/com/atproto/repo/uploadBlob.json), the blob's type and size those the PDS
        # read (https://atproto.com/specs/data-model, "blob Type").
        links = iter(BLOB_LINKS)

        def uploaded(request: httpx.Request) -> httpx.Response:
            blob = {
                "$type": "blob",
                "ref": {"$link": next(links)},
                "mimeType": request.headers["Content-Type"],
                "size": len(request.content),
            }
            return httpx.Response(200, json={"blob": blob})

        router.post(UPLOAD_BLOB).mock(side_effect=uploaded)

    def puts(self, router: respx.MockRouter) -> respx.Route:
        # POST com.atproto.repo.putRecord: lexicons/com/atproto/repo/putRecord.json.
        return router.post(PUT_RECORD)

    def respond_published(self, router: respx.MockRouter) -> respx.Route:
        self.signs_in(router)
        self.finds_the_thread(router)
        return self.puts(router).respond(200, json=post_answer(tid_for(KEY)))

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route:
        self.uploads(router)
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # A revoked app password. A session kept from before is refused first: its access token
        # "Token has expired" (packages/pds/src/auth-verifier.ts) and its refresh token "Token has
        # been revoked" (packages/pds/src/api/com/atproto/server/refreshSession.ts), 400s named
        # ExpiredToken.
        self.puts(router).respond(400, json=xrpc_error("ExpiredToken", "Token has expired"))
        router.post(REFRESH_SESSION).respond(400, json=xrpc_error("ExpiredToken", "Token has been revoked"))
        # Then signing in again: AuthRequiredError('Invalid identifier or password') is a 401
        # "AuthenticationRequired" (packages/pds/src/account-manager/account-manager.ts, login;
        # packages/lex/lex-password-session/README.md, "Common error codes").
        router.post(CREATE_SESSION).respond(
            401, json=xrpc_error("AuthenticationRequired", "Invalid identifier or password")
        )

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        self.signs_in(router)
        # 429 "RateLimitExceeded" with Retry-After and the RateLimit-* headers
        # (packages/xrpc-server/src/rate-limiter-http.ts; docs/advanced-guides/rate-limits.md).
        self.puts(router).respond(
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

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        self.signs_in(router)
        if reason is Reason.THREAD_PARENT_MISSING:
            # The post replied to is gone: InvalidRequestError(`Could not locate record: ${uri}`,
            # 'RecordNotFound'), a 400 (packages/pds/src/api/com/atproto/repo/getRecord.ts).
            for rkey in (ROOT, REPLY_TO):
                uri = f"at://{DID}/app.bsky.feed.post/{rkey}"
                router.get(GET_RECORD, params={"rkey": rkey}).respond(
                    400, json=xrpc_error("RecordNotFound", f"Could not locate record: {uri}")
                )
            return
        if reason is Reason.MEDIA_INVALID:
            # A file past the PDS's upload limit: XRPCError(PayloadTooLarge, 'request entity too
            # large'), a 413 (packages/xrpc-server/src/util.ts; blobUploadLimit,
            # packages/pds/src/config/config.ts).
            router.post(UPLOAD_BLOB).respond(413, json=xrpc_error("PayloadTooLarge", "request entity too large"))
            return
        # A record its lexicon refuses: InvalidRequestError(`Invalid ${$type} record: ...`), a 400
        # (packages/pds/src/repo/prepare.ts, validateRecord; post.json's "maxGraphemes": 300).
        self.puts(router).respond(
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
        self.puts(router).respond(500, json=xrpc_error("InternalServerError", "Internal Server Error"))

    def respond_search(self, router: respx.MockRouter, found: bool) -> None:
        # GET com.atproto.repo.getRecord: lexicons/com/atproto/repo/getRecord.json (output uri,
        # cid, value; error RecordNotFound, a 400: docs/api/com-atproto-repo-get-record.api.mdx).
        rkey = tid_for(KEY)
        route = router.get(GET_RECORD, params={"rkey": rkey})
        if found:
            route.respond(200, json=record_answer(rkey))
        else:
            # InvalidRequestError(`Could not locate record: ${uri}`, 'RecordNotFound')
            # (packages/pds/src/api/com/atproto/repo/getRecord.ts).
            uri = f"at://{DID}/app.bsky.feed.post/{rkey}"
            route.respond(400, json=xrpc_error("RecordNotFound", f"Could not locate record: {uri}"))
