"""The ``bluesky`` adapter against respx: what it sends to a PDS (sign-in, putRecord at the
key's record key, replies, images, mentions), how it keeps and renews its sessions, what
it makes of every answer, find(), verify() and its channel settings.

Request and answer shapes come from bluesky-social/atproto (lexicons/..., packages/pds/...),
bluesky-social/bsky-docs (docs/...) and the XRPC spec (https://atproto.com/specs/xrpc),
named at each route; the shared ones are in test_bluesky_conformance.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from adapters.bluesky import Bluesky, herald_register_adapters
from adapters.bluesky.record import MAX_IMAGE_BYTES
from adapters.bluesky.tid import tid_for
from core.domain.errors import Ambiguous, AuthExpired, ConfigError, NotSent, RateLimited, Rejected
from core.domain.states import Reason
from core.plugins.adapter import (
    IMAGE_TYPES,
    Adapter,
    Attachment,
    MediaFile,
    PublishContext,
    Published,
    UploadContext,
    VerifyContext,
)
from core.plugins.channel_settings import check_settings, is_secret
from tests.unit.test_bluesky_conformance import (
    CID,
    CREATE_SESSION,
    DID,
    GET_RECORD,
    HANDLE,
    PUT_RECORD,
    REFRESH_SESSION,
    RESOLVE_HANDLE,
    SETTINGS,
    UPLOAD_BLOB,
    post_answer,
    session_body,
    xrpc_error,
)

KEY = "k" * 25
RKEY = tid_for(KEY)
NOW = 1_700_000_000.123
CREATED = "2023-11-14T22:13:20.123Z"
URI = f"at://{DID}/app.bsky.feed.post/{RKEY}"
#: The root and parent of the docs' example reply (docs/advanced-guides/posts.md, "Replies").
ROOT_URI = f"at://{DID}/app.bsky.feed.post/3k43tv4rft22g"
ROOT_CID = "bafyreig2fjxi3rptqdgylg7e5hmjl6mcke7rn2b6cugzlqq3i4zu6rq52q"
PARENT_URI = f"at://{DID}/app.bsky.feed.post/3k44deefqdk2g"
PARENT_CID = "bafyreiecx6dujwoeqpdzl27w67z4h46hyklk3an4i4cvvmioaqb2qbyo5u"
#: The blob of the docs' image upload (docs/advanced-guides/posts.md, "Images embeds").
BLOB_LINK = "bafkreibabalobzn6cd366ukcsjycp4yymjymgfxcv6xczmlgpemzkz3cfa"
BLOB = {
    "$type": "blob",
    "ref": {"$link": BLOB_LINK},
    "mimeType": "image/png",
    "size": 760898,
}
BLOB_2 = {
    "$type": "blob",
    "ref": {"$link": "bafkreif3fouono2i3fmm5moqypwskh3yjtp7snd5hfq5pr453oggygyrte"},
    "mimeType": "image/png",
    "size": 13208,
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


@pytest.fixture
def pds() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


@pytest.fixture
def bluesky() -> Bluesky:
    adapter = Bluesky()
    adapter.clock = lambda: NOW
    return adapter


def context(client: httpx.Client, *, text: str = "hello", key: str = KEY, **extra: Any) -> PublishContext:
    settings = extra.pop("settings", SETTINGS)
    return PublishContext(settings=settings, client=client, key=key, text=text, **extra)


def media_file(data: bytes = b"\x89PNG...", mime: str = "image/png", **facts: Any) -> MediaFile:
    values: dict[str, Any] = {"alt": None, "width": None, "height": None} | facts
    return MediaFile(
        digest="0" * 64, mime=mime, size=len(data), filename="a.png", duration=None, read=lambda: data, **values
    )


def signs_in(pds: respx.MockRouter, **body: Any) -> respx.Route:
    # createSession: lexicons/com/atproto/server/createSession.json.
    return pds.post(CREATE_SESSION).respond(200, json=session_body(**body))


def puts(pds: respx.MockRouter, *answers: httpx.Response) -> respx.Route:
    # putRecord: lexicons/com/atproto/repo/putRecord.json.
    route = pds.post(PUT_RECORD)
    if answers:
        route.side_effect = list(answers)
    else:
        route.respond(200, json=post_answer(RKEY))
    return route


def sent(route: respx.Route, n: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls[n].request.content)
    return body


# -- the post and where it goes ------------------------------------------------------------


def test_registers_the_bluesky_adapter() -> None:
    registered: list[type[Adapter]] = []
    herald_register_adapters(registered.append)
    assert registered == [Bluesky]


def test_publish_signs_in_then_puts_the_post_at_the_record_key_its_delivery_key_gives(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = signs_in(pds)
    put = puts(pds)
    result = bluesky.publish(context(client, text="hello"))

    assert json.loads(session.calls.last.request.content) == {
        "identifier": HANDLE,
        "password": SETTINGS["app_password"],
    }
    request = put.calls.last.request
    assert request.headers["Authorization"] == "Bearer access-1"
    assert sent(put) == {
        "repo": DID,
        "collection": "app.bsky.feed.post",
        "rkey": RKEY,
        # Only where no record is yet: a record already there is an earlier attempt's post.
        "swapRecord": None,
        "record": {"$type": "app.bsky.feed.post", "text": "hello", "createdAt": CREATED},
    }
    assert result == Published(f"{URI}|{CID}", f"https://bsky.app/profile/{HANDLE}/post/{RKEY}")


def test_every_attempt_of_a_part_names_the_same_record_key_and_other_parts_others(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    for key in (KEY, KEY, "a" * 25):
        bluesky.publish(context(client, key=key))
    assert [sent(put, n)["rkey"] for n in range(3)] == [RKEY, RKEY, tid_for("a" * 25)]
    assert tid_for("a" * 25) != RKEY


def test_a_resend_whose_earlier_attempt_landed_confirms_that_post_without_a_second(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    # A record already at the key: BadRecordSwapError → InvalidRequestError(..., 'InvalidSwap')
    # (packages/pds/src/api/com/atproto/repo/putRecord.ts; putRecord.json's errors).
    put = puts(pds, httpx.Response(400, json=xrpc_error("InvalidSwap", f"Record was at {URI}")))
    # getRecord: lexicons/com/atproto/repo/getRecord.json (uri, cid, value).
    earlier = {"$type": "app.bsky.feed.post", "text": "hello", "createdAt": "2023-11-14T22:10:00.000Z"}
    get = pds.get(GET_RECORD, params={"repo": DID, "collection": "app.bsky.feed.post", "rkey": RKEY}).respond(
        200, json={"uri": URI, "cid": "bafyreiearlier", "value": earlier}
    )
    result = bluesky.publish(context(client))
    assert result.platform_id == f"{URI}|bafyreiearlier"
    assert put.call_count == 1 and get.call_count == 1


def test_a_resend_whose_earlier_post_cannot_be_read_is_ambiguous(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    puts(pds, httpx.Response(400, json=xrpc_error("InvalidSwap", f"Record was at {URI}")))
    pds.get(GET_RECORD).respond(500, json=xrpc_error("InternalServerError", "Internal Server Error"))
    with pytest.raises(Ambiguous, match="earlier attempt"):
        bluesky.publish(context(client))


def test_a_custom_service_gets_every_call(bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter) -> None:
    service = "https://pds.example.com"
    pds.post(f"{service}/xrpc/com.atproto.server.createSession").respond(200, json=session_body())
    put = pds.post(f"{service}/xrpc/com.atproto.repo.putRecord").respond(200, json=post_answer(RKEY))
    bluesky.publish(context(client, settings=SETTINGS | {"service": service + "/"}))
    assert put.called


def test_posts_go_to_the_pds_the_did_document_names_and_sign_ins_to_the_service(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    host = "https://morel.us-east.host.bsky.network"  # a Bluesky PDS (docs/advanced-guides/entryway.md)
    # The DID document's PDS entry: "id ending #atproto_pds, and type matching
    # AtprotoPersonalDataServer" (https://atproto.com/specs/did).
    did_doc = {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": DID,
        "alsoKnownAs": [f"at://{HANDLE}"],
        "service": [
            {"id": "#bsky_chat", "type": "BskyChatService", "serviceEndpoint": "https://api.bsky.chat"},
            {"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": host},
        ],
    }
    signs_in(pds, didDoc=did_doc)
    put = pds.post(f"{host}/xrpc/com.atproto.repo.putRecord")
    put.side_effect = [
        httpx.Response(400, json=xrpc_error("ExpiredToken", "Token has expired")),
        httpx.Response(200, json=post_answer(RKEY)),
    ]
    # Session routes go to the entryway, which the PDS would forward them to anyway (entryway.md).
    refresh = pds.post(REFRESH_SESSION).respond(200, json=session_body(access="access-2", didDoc=did_doc))
    bluesky.publish(context(client))
    assert put.call_count == 2 and refresh.called


def test_a_text_over_3000_bytes_is_refused_before_anything_is_sent(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    # post.json: "maxLength": 3000 (UTF-8 bytes: https://atproto.com/specs/lexicon) beside 300 graphemes.
    family = "👨‍👩‍👧‍👦"  # one grapheme, 25 bytes
    with pytest.raises(Rejected) as caught:
        bluesky.publish(context(client, text=family * 121))
    assert caught.value.reason is Reason.CONTENT_REJECTED
    assert not pds.calls


# -- sessions ----------------------------------------------------------------------------


def test_a_session_is_kept_for_the_next_posts_of_the_account(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = signs_in(pds)
    puts(pds)
    for key in ("a" * 25, "b" * 25, "c" * 25):
        bluesky.publish(context(client, key=key))
    assert session.call_count == 1


def test_each_account_and_each_app_password_has_its_own_session(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = signs_in(pds)
    puts(pds)
    bluesky.publish(context(client))
    bluesky.publish(context(client, settings=SETTINGS | {"handle": "bob.bsky.social"}))
    bluesky.publish(context(client, settings=SETTINGS | {"app_password": "zzzz-yyyy-xxxx-wwww"}))
    assert session.call_count == 3


def test_an_expired_access_token_is_refreshed_and_the_post_sent_once_more(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    # "Token has expired", 'ExpiredToken': a 400 (packages/pds/src/auth-verifier.ts, verifyBearerJwt).
    put = puts(
        pds,
        httpx.Response(400, json=xrpc_error("ExpiredToken", "Token has expired")),
        httpx.Response(200, json=post_answer(RKEY)),
    )
    # refreshSession: lexicons/com/atproto/server/refreshSession.json, with the refresh token as bearer.
    refresh = pds.post(REFRESH_SESSION).respond(200, json=session_body(access="access-2", refresh="refresh-2"))
    bluesky.publish(context(client))
    assert refresh.calls.last.request.headers["Authorization"] == "Bearer refresh-1"
    assert [c.request.headers["Authorization"] for c in put.calls] == ["Bearer access-1", "Bearer access-2"]
    assert sent(put, 0) == sent(put, 1)


def test_a_refresh_token_that_no_longer_works_signs_in_again(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = pds.post(CREATE_SESSION)
    session.side_effect = [
        httpx.Response(200, json=session_body()),
        httpx.Response(200, json=session_body(access="access-3", refresh="refresh-3")),
    ]
    put = puts(
        pds,
        httpx.Response(400, json=xrpc_error("ExpiredToken", "Token has expired")),
        httpx.Response(200, json=post_answer(RKEY)),
    )
    # A rotated refresh token: InvalidRequestError('Token has been revoked', 'ExpiredToken')
    # (packages/pds/src/api/com/atproto/server/refreshSession.ts).
    pds.post(REFRESH_SESSION).respond(400, json=xrpc_error("ExpiredToken", "Token has been revoked"))
    bluesky.publish(context(client))
    assert session.call_count == 2
    assert put.calls.last.request.headers["Authorization"] == "Bearer access-3"


def test_a_token_refused_again_after_a_new_session_is_auth_expired_and_not_tried_a_third_time(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    pds.post(REFRESH_SESSION).respond(200, json=session_body(access="access-2"))
    put = pds.post(PUT_RECORD).respond(401, json=xrpc_error("AuthenticationRequired", "Token is revoked"))
    with pytest.raises(AuthExpired, match="app_password"):
        bluesky.publish(context(client))
    assert put.call_count == 2


def test_threads_publishing_one_account_at_once_sign_in_once_and_refresh_once(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    threads = 6
    session = signs_in(pds)
    every_thread_holds_the_first_token = threading.Barrier(threads, timeout=5)

    def put(request: httpx.Request) -> httpx.Response:
        if request.headers["Authorization"] == "Bearer access-1":
            every_thread_holds_the_first_token.wait()
            return httpx.Response(400, json=xrpc_error("ExpiredToken", "Token has expired"))
        return httpx.Response(200, json=post_answer(json.loads(request.content)["rkey"]))

    pds.post(PUT_RECORD).mock(side_effect=put)
    refresh = pds.post(REFRESH_SESSION).respond(200, json=session_body(access="access-2", refresh="refresh-2"))
    results: list[Published] = []
    workers = [
        threading.Thread(target=lambda n=n: results.append(bluesky.publish(context(client, key=f"{n}" * 25))))
        for n in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert len(results) == threads
    assert session.call_count == 1
    assert refresh.call_count == 1


@pytest.mark.parametrize(
    ("error", "message", "fix"),
    [
        # account-manager.ts, login: AuthRequiredError('Invalid identifier or password'), a 401.
        ("AuthenticationRequired", "Invalid identifier or password", "app_password"),
        # createSession.json's errors; lex-password-session/README.md: "2FA code needed".
        ("AuthFactorTokenRequired", "A sign in code has been sent to your email address", "own password"),
        # createSession.ts: AuthRequiredError('Account has been taken down', 'AccountTakedown').
        ("AccountTakedown", "Account has been taken down", "taken down"),
    ],
)
def test_a_sign_in_the_pds_refuses_is_auth_expired_naming_the_fix(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter, error: str, message: str, fix: str
) -> None:
    pds.post(CREATE_SESSION).respond(401, json=xrpc_error(error, message))
    put = puts(pds)
    with pytest.raises(AuthExpired, match=fix):
        bluesky.publish(context(client))
    assert not put.called


def test_a_sign_in_that_fails_on_the_server_sent_no_post(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    pds.post(CREATE_SESSION).respond(503, json=xrpc_error("NotEnoughResources", "Service Unavailable"))
    with pytest.raises(NotSent):
        bluesky.publish(context(client))


def test_a_sign_in_answered_without_tokens_sent_no_post(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    pds.post(CREATE_SESSION).respond(200, json={"handle": HANDLE, "did": DID})
    with pytest.raises(NotSent, match="no session"):
        bluesky.publish(context(client))


# -- threads -----------------------------------------------------------------------------


def test_a_reply_names_the_threads_root_and_its_parent_by_uri_and_cid(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    bluesky.publish(context(client, part_index=2, reply_to=f"{PARENT_URI}|{PARENT_CID}", root=f"{ROOT_URI}|{ROOT_CID}"))
    # post.json, replyRef: root and parent, each a com.atproto.repo.strongRef (uri, cid).
    assert sent(put)["record"]["reply"] == {
        "root": {"uri": ROOT_URI, "cid": ROOT_CID},
        "parent": {"uri": PARENT_URI, "cid": PARENT_CID},
    }


def test_the_second_part_replies_to_the_first_as_root_and_parent(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    first = f"{ROOT_URI}|{ROOT_CID}"
    bluesky.publish(context(client, part_index=1, reply_to=first, root=first))
    assert sent(put)["record"]["reply"] == {
        "root": {"uri": ROOT_URI, "cid": ROOT_CID},
        "parent": {"uri": ROOT_URI, "cid": ROOT_CID},
    }


def test_a_reply_to_a_post_recorded_by_its_link_looks_its_cid_up(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    # `herald post resolve ... landed --url https://bsky.app/profile/H/post/3k43tv4rft22g` records the key.
    get = pds.get(GET_RECORD, params={"repo": DID, "rkey": "3k43tv4rft22g"}).respond(
        200, json={"uri": ROOT_URI, "cid": ROOT_CID, "value": {"$type": "app.bsky.feed.post", "text": "1/2"}}
    )
    bluesky.publish(context(client, part_index=1, reply_to="3k43tv4rft22g", root="3k43tv4rft22g"))
    assert get.called
    assert sent(put)["record"]["reply"]["parent"] == {"uri": ROOT_URI, "cid": ROOT_CID}


def test_a_reply_whose_parent_is_read_without_its_cid_is_not_sent(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    pds.get(GET_RECORD).respond(200, json={"uri": ROOT_URI, "value": {"$type": "app.bsky.feed.post", "text": "1/2"}})
    with pytest.raises(NotSent, match="CID"):
        bluesky.publish(context(client, part_index=1, reply_to="3k43tv4rft22g", root="3k43tv4rft22g"))
    assert not put.called


def test_a_reply_to_a_post_that_is_gone_is_thread_parent_missing_and_nothing_is_posted(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    pds.get(GET_RECORD).respond(400, json=xrpc_error("RecordNotFound", f"Could not locate record: {ROOT_URI}"))
    with pytest.raises(Rejected) as caught:
        bluesky.publish(context(client, part_index=1, reply_to="3k43tv4rft22g", root="3k43tv4rft22g"))
    assert caught.value.reason is Reason.THREAD_PARENT_MISSING
    assert not put.called


def test_a_reply_to_an_id_that_names_no_post_is_thread_parent_missing(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    with pytest.raises(Rejected) as caught:
        bluesky.publish(context(client, part_index=1, reply_to="at://did:plc:x/app.bsky.feed.like/3k|c", root="x"))
    assert caught.value.reason is Reason.THREAD_PARENT_MISSING


# -- mentions, links, hashtags -----------------------------------------------------------


def test_a_mention_is_resolved_to_its_did_and_its_facet_counts_bytes(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    # resolveHandle: lexicons/com/atproto/identity/resolveHandle.json (output did). The DID is the
    # one of the docs' mention of @atproto.com (docs/advanced-guides/posts.md).
    resolve = pds.get(RESOLVE_HANDLE, params={"handle": "atproto.com"}).respond(
        200, json={"did": "did:plc:ewvi7nxzyoun6zhxrhs64oiz"}
    )
    text = "✨ à @atproto.com et #café https://atproto.com/specs"
    bluesky.publish(context(client, text=text))
    assert resolve.call_count == 1
    facets = sent(put)["record"]["facets"]
    data = text.encode()
    spans = [data[f["index"]["byteStart"] : f["index"]["byteEnd"]].decode() for f in facets]
    assert spans == ["@atproto.com", "#café", "https://atproto.com/specs"]
    assert [f["features"] for f in facets] == [
        [{"$type": "app.bsky.richtext.facet#mention", "did": "did:plc:ewvi7nxzyoun6zhxrhs64oiz"}],
        [{"$type": "app.bsky.richtext.facet#tag", "tag": "café"}],
        [{"$type": "app.bsky.richtext.facet#link", "uri": "https://atproto.com/specs"}],
    ]


def test_a_handle_the_network_does_not_know_stays_plain_text(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    # resolveHandle.json's error "HandleNotFound"; "If the handle can't be resolved, just skip it!"
    # (docs/advanced-guides/posts.md checks for a 400).
    pds.get(RESOLVE_HANDLE).respond(400, json=xrpc_error("HandleNotFound", "Unable to resolve handle"))
    bluesky.publish(context(client, text="hi @nobody.example.com"))
    assert "facets" not in sent(put)["record"]


def test_a_mention_that_cannot_be_resolved_for_now_holds_the_post_back_unsent(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    pds.get(RESOLVE_HANDLE).respond(502, json=xrpc_error("UpstreamFailure", "Upstream Failure"))
    with pytest.raises(NotSent):
        bluesky.publish(context(client, text="hi @bob.bsky.social"))
    assert not put.called


# -- images ------------------------------------------------------------------------------


def test_upload_sends_the_files_bytes_and_type_and_keeps_the_blob_as_its_id(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    # uploadBlob: lexicons/com/atproto/repo/uploadBlob.json ("input": "*/*", output {"blob"}).
    upload = pds.post(UPLOAD_BLOB).respond(200, json={"blob": BLOB})
    data = b"\x89PNG\r\n\x1a\n" + b"0" * 100
    uploaded = bluesky.upload(UploadContext(settings=SETTINGS, client=client, file=media_file(data), key="k"))
    request = upload.calls.last.request
    assert request.content == data
    assert request.headers["Content-Type"] == "image/png"
    assert request.headers["Authorization"] == "Bearer access-1"
    assert json.loads(uploaded.platform_id) == BLOB and uploaded.ready


def test_a_post_embeds_its_images_in_order_with_alt_text_and_aspect_ratio(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    put = puts(pds)
    media = (
        Attachment(json.dumps(BLOB), "a cat", "image/png", media_file(width=1280, height=760)),
        Attachment(json.dumps(BLOB_2), None, "image/png", media_file()),
    )
    bluesky.publish(context(client, text="", media=media))
    # The docs' post with two images (docs/advanced-guides/posts.md, "Images embeds"); alt is
    # required, "Pass an empty string if there is no alt text" (blog/2023-08-11-create-post.md).
    assert sent(put)["record"]["embed"] == {
        "$type": "app.bsky.embed.images",
        "images": [
            {"alt": "a cat", "image": BLOB, "aspectRatio": {"width": 1280, "height": 760}},
            {"alt": "", "image": BLOB_2},
        ],
    }


def test_a_blob_the_pds_no_longer_holds_is_uploaded_again_and_the_post_sent_once_more(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    # verifyBlobAndMakePermanent: InvalidRequestError(`Could not find blob: ${cid}`, 'BlobNotFound')
    # (packages/pds/src/actor-store/blob/transactor.ts).
    put = puts(
        pds,
        httpx.Response(400, json=xrpc_error("BlobNotFound", f"Could not find blob: {BLOB_LINK}")),
        httpx.Response(200, json=post_answer(RKEY)),
    )
    upload = pds.post(UPLOAD_BLOB).respond(200, json={"blob": BLOB})
    media = (Attachment(json.dumps(BLOB), "a cat", "image/png", media_file(b"cat")),)
    bluesky.publish(context(client, media=media))
    assert upload.calls.last.request.content == b"cat"
    assert put.call_count == 2
    assert sent(put, 1)["record"]["embed"]["images"][0]["image"] == BLOB


def test_a_blob_the_pds_no_longer_holds_without_its_file_at_hand_is_media_invalid(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    puts(pds, httpx.Response(400, json=xrpc_error("BlobNotFound", "Could not find blob: bafkrei")))
    with pytest.raises(Rejected) as caught:
        bluesky.publish(context(client, media=(Attachment(json.dumps(BLOB), None, "image/png"),)))
    assert caught.value.reason is Reason.MEDIA_INVALID


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (httpx.Response(200, json={"blob": BLOB | {"mimeType": "application/octet-stream"}}), "not as an image"),
        (httpx.Response(200, json={"blob": BLOB | {"size": MAX_IMAGE_BYTES + 1}}), "at most"),
        # "413 Payload Too Large: Request body was too large" (xrpc spec).
        (httpx.Response(413, json=xrpc_error("PayloadTooLarge", "request entity too large")), "413"),
    ],
    ids=["sniffed-as-no-image", "over-2-mb", "413"],
)
def test_an_upload_the_post_could_not_embed_is_media_invalid(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter, answer: httpx.Response, why: str
) -> None:
    signs_in(pds)
    pds.post(UPLOAD_BLOB).mock(return_value=answer)
    with pytest.raises(Rejected, match=why) as caught:
        bluesky.upload(UploadContext(settings=SETTINGS, client=client, file=media_file(), key="k"))
    assert caught.value.reason is Reason.MEDIA_INVALID


def test_an_upload_answered_without_a_blob_is_ambiguous(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    pds.post(UPLOAD_BLOB).respond(200, json={"blob": {"cid": "bafkrei", "mimeType": "image/png"}})
    with pytest.raises(Ambiguous):
        bluesky.upload(UploadContext(settings=SETTINGS, client=client, file=media_file(), key="k"))


def test_it_takes_four_images_of_2_mb_with_alt_text() -> None:
    # images.json: "maxLength": 4, "maxSize": 2000000, "accept": ["image/*"]; alt per image.
    limits = Bluesky.limits
    assert (limits.max_media, limits.max_image_bytes, limits.alt_text) == (4, 2_000_000, True)
    assert limits.media_types == IMAGE_TYPES


# -- every answer ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "outcome", "reason"),
    [
        (httpx.Response(500, json=xrpc_error("InternalServerError", "Internal Server Error")), Ambiguous, None),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), Ambiguous, None),
        (httpx.Response(503, json=xrpc_error("NotEnoughResources", "Service Unavailable")), Ambiguous, None),
        (httpx.Response(504, json=xrpc_error("UpstreamTimeout", "Upstream Timeout")), Ambiguous, None),
        (httpx.Response(302, headers={"Location": "https://example.com"}), Ambiguous, None),
        (
            httpx.Response(400, json=xrpc_error("InvalidRequest", "Invalid app.bsky.feed.post record: ...")),
            Rejected,
            Reason.CONTENT_REJECTED,
        ),
        (
            httpx.Response(
                400,
                json=xrpc_error(
                    "InvalidRequest", "Invalid app.bsky.feed.post record: Record/embed/images/0/image too big"
                ),
            ),
            Rejected,
            Reason.MEDIA_INVALID,
        ),
        (
            httpx.Response(400, json=xrpc_error("InvalidMimeType", "Referenced Mimetype does not match stored blob")),
            Rejected,
            Reason.MEDIA_INVALID,
        ),
        (httpx.Response(400, text="not json"), Rejected, Reason.CONTENT_REJECTED),
        (httpx.Response(413, json=xrpc_error("PayloadTooLarge", "too large")), Rejected, Reason.CONTENT_REJECTED),
        (httpx.Response(403, json=xrpc_error("Forbidden", "Forbidden")), Rejected, Reason.PERMISSION_DENIED),
        (httpx.Response(404, json=xrpc_error("XRPCNotSupported", "Not Found")), ConfigError, None),
        (httpx.Response(501, json=xrpc_error("MethodNotImplemented", "Method Not Implemented")), ConfigError, None),
    ],
    ids=[
        "500",
        "502-html",
        "503",
        "504",
        "302",
        "400-lexicon",
        "400-embed",
        "400-blob",
        "400-not-json",
        "413",
        "403",
        "404",
        "501",
    ],
)
def test_every_answer_to_put_record_is_mapped(
    bluesky: Bluesky,
    client: httpx.Client,
    pds: respx.MockRouter,
    answer: httpx.Response,
    outcome: type[Exception],
    reason: Reason | None,
) -> None:
    signs_in(pds)
    puts(pds, answer)
    with pytest.raises(outcome) as caught:
        bluesky.publish(context(client))
    if reason is not None:
        assert isinstance(caught.value, Rejected) and caught.value.reason is reason


def test_a_rate_limit_without_retry_after_waits_until_its_reset(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    signs_in(pds)
    # RateLimit-Reset: the UNIX second the window resets (packages/xrpc-server/src/rate-limiter-http.ts).
    puts(
        pds,
        httpx.Response(429, headers={"RateLimit-Reset": str(int(NOW) + 90)}, json=xrpc_error("RateLimitExceeded", "")),
    )
    with pytest.raises(RateLimited) as caught:
        bluesky.publish(context(client))
    assert caught.value.retry_after == pytest.approx(90 - 0.123)


def test_a_sign_in_rate_limit_is_rate_limited(bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter) -> None:
    # createSession: "30 per 5 minutes, 300 per day" per account (docs/advanced-guides/rate-limits.md).
    pds.post(CREATE_SESSION).respond(429, headers={"Retry-After": "300"}, json=xrpc_error("RateLimitExceeded", ""))
    with pytest.raises(RateLimited) as caught:
        bluesky.publish(context(client))
    assert caught.value.retry_after == 300


@pytest.mark.parametrize(
    "body",
    [{"cid": CID}, {"uri": URI}, {"uri": "not-a-uri", "cid": CID}, "ok"],
    ids=["no-uri", "no-cid", "bad-uri", "not-an-object"],
)
def test_a_2xx_without_the_posts_uri_and_cid_is_ambiguous(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter, body: Any
) -> None:
    signs_in(pds)
    puts(pds, httpx.Response(200, json=body))
    with pytest.raises(Ambiguous):
        bluesky.publish(context(client))


# -- find --------------------------------------------------------------------------------


def test_find_reads_the_post_at_the_keys_record_key_without_signing_in(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = signs_in(pds)
    get = pds.get(GET_RECORD, params={"repo": HANDLE, "collection": "app.bsky.feed.post", "rkey": RKEY}).respond(
        200, json={"uri": URI, "cid": CID, "value": {"$type": "app.bsky.feed.post", "text": "hello"}}
    )
    found = bluesky.find(context(client))
    assert found == Published(f"{URI}|{CID}", f"https://bsky.app/profile/{HANDLE}/post/{RKEY}")
    # getRecord.json: "Does not require auth".
    assert "Authorization" not in get.calls.last.request.headers
    assert not session.called


def test_find_of_a_post_read_back_without_its_cid_still_names_it(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    # getRecord.json's output requires uri and value, not cid.
    pds.get(GET_RECORD).respond(200, json={"uri": URI, "value": {"$type": "app.bsky.feed.post", "text": "hello"}})
    found = bluesky.find(context(client))
    assert found is not None and found.platform_id == URI


def test_find_says_none_where_the_account_has_no_post_at_the_key(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    pds.get(GET_RECORD).respond(400, json=xrpc_error("RecordNotFound", f"Could not locate record: {URI}"))
    assert bluesky.find(context(client)) is None


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(500, json=xrpc_error("InternalServerError", "Internal Server Error")),
        # No error name: where the PDS holds no such repository (getRecord.ts).
        httpx.Response(400, json={"error": "InvalidRequest", "message": "Could not locate record"}),
    ],
    ids=["500", "400-other"],
)
def test_a_find_that_could_not_ask_says_so_instead_of_none(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter, answer: httpx.Response
) -> None:
    pds.get(GET_RECORD).mock(return_value=answer)
    with pytest.raises(NotSent):
        bluesky.find(context(client))


# -- verify ------------------------------------------------------------------------------


def test_verify_signs_in_and_names_the_account(bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter) -> None:
    session = signs_in(pds)
    said = bluesky.verify(VerifyContext(settings=SETTINGS, client=client))
    assert said == f"the Bluesky account @{HANDLE} ({DID})"
    assert session.call_count == 1
    assert [c.request.url.path for c in pds.calls] == ["/xrpc/com.atproto.server.createSession"]


def test_verify_checks_the_password_even_with_a_session_kept(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    session = signs_in(pds)
    puts(pds)
    bluesky.publish(context(client))
    bluesky.verify(VerifyContext(settings=SETTINGS, client=client))
    assert session.call_count == 2


def test_verify_of_a_refused_app_password_is_auth_expired(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    pds.post(CREATE_SESSION).respond(401, json=xrpc_error("AuthenticationRequired", "Invalid identifier or password"))
    with pytest.raises(AuthExpired):
        bluesky.verify(VerifyContext(settings=SETTINGS, client=client))


def test_verify_of_a_deactivated_account_says_it_cannot_post(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    # createSession.json: "active", and "status" knownValues takendown, suspended, deactivated.
    signs_in(pds, active=False, status="deactivated")
    with pytest.raises(AuthExpired, match="deactivated"):
        bluesky.verify(VerifyContext(settings=SETTINGS, client=client))


# -- channel settings --------------------------------------------------------------------


def test_a_handle_and_an_app_password_make_a_channel() -> None:
    check_settings(Bluesky, SETTINGS)
    check_settings(Bluesky, {"handle": DID, "app_password": "abcd-efgh-2345-67ij", "service": "https://pds.example"})
    assert is_secret(Bluesky, "app_password") and not is_secret(Bluesky, "handle")


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"app_password": "abcd-efgh-2345-67ij"}, "handle"),
        ({"handle": HANDLE}, "app_password"),
        ({"handle": "@alice.bsky.social", "app_password": "abcd-efgh-2345-67ij"}, "without it"),
        ({"handle": "alice", "app_password": "abcd-efgh-2345-67ij"}, "neither"),
        ({"handle": "https://bsky.app/profile/alice.bsky.social", "app_password": "abcd"}, "link"),
        ({"handle": HANDLE, "app_password": "my own password"}, "never takes the account's own password"),
        ({"handle": HANDLE, "app_password": "abcd-efgh-2345-67ij", "service": "bsky.social"}, "http"),
        ({"handle": HANDLE, "app_password": "abcd-efgh-2345-67ij", "pds": "https://x"}, "service"),
    ],
    ids=["no-handle", "no-app-password", "at-sign", "no-dot", "link", "main-password", "service", "unknown"],
)
def test_a_channel_that_cannot_work_is_refused(settings: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        check_settings(Bluesky, settings)


def test_a_refused_app_password_is_never_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        check_settings(Bluesky, {"handle": HANDLE, "app_password": "hunter2"})
    assert "hunter2" not in str(caught.value)


def test_a_channel_made_before_the_checks_without_a_password_is_misconfigured(
    bluesky: Bluesky, client: httpx.Client, pds: respx.MockRouter
) -> None:
    with pytest.raises(ConfigError, match="app_password"):
        bluesky.publish(context(client, settings={"handle": HANDLE}))
    assert not pds.calls
