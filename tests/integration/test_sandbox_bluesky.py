"""The sandbox speaks Bluesky's XRPC over real HTTP, as the lexicons of
github.com/bluesky-social/atproto describe it (and the PDS's code, packages/pds, where a
lexicon does not say what a call answers; cited at each test), so the Bluesky adapter runs
end to end against it; its posts are counted by the oracle like any post."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from adapters.bluesky import Bluesky
from adapters.sandbox.server import SandboxServer
from core.plugins import Attachment, PublishContext, UploadContext, VerifyContext
from core.plugins.adapter import MediaFile
from core.plugins.channel_settings import check_settings
from tests.integration.conftest import wait_until
from tests.integration.sandbox_http import MP4, image

pytestmark = pytest.mark.integration

PASSWORD = "app-pass-word"
HANDLE = "alice.example.com"
XRPC = "/bluesky/xrpc"
POST = "app.bsky.feed.post"
CREATED_AT = "2026-03-01T12:00:00.000Z"
INTERNAL = {"error": "InternalServerError", "message": "Internal Server Error"}


PNG = image()


@pytest.fixture
def session(client: httpx.Client) -> dict[str, Any]:
    return create_session(client).json()  # type: ignore[no-any-return]


def create_session(client: httpx.Client, identifier: str = HANDLE, password: str = PASSWORD) -> httpx.Response:
    return client.post(
        f"{XRPC}/com.atproto.server.createSession", json={"identifier": identifier, "password": password}
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def record(text: str = "hello", **fields: Any) -> dict[str, Any]:
    return {"$type": POST, "text": text, "createdAt": CREATED_AT, **fields}


def write(
    client: httpx.Client,
    session: dict[str, Any],
    value: dict[str, Any],
    rkey: str | None = "3kabcdefghij2",
    *,
    method: str = "createRecord",
    **extra: Any,
) -> httpx.Response:
    body = {"repo": session["did"], "collection": POST, "record": value, **extra}
    if rkey is not None:
        body["rkey"] = rkey
    return client.post(f"{XRPC}/com.atproto.repo.{method}", json=body, headers=bearer(session["accessJwt"]))


def upload(client: httpx.Client, session: dict[str, Any], data: bytes = PNG, mime: str = "image/png") -> httpx.Response:
    headers = {**bearer(session["accessJwt"]), "Content-Type": mime}
    return client.post(f"{XRPC}/com.atproto.repo.uploadBlob", content=data, headers=headers)


def images(*blobs: dict[str, Any], alt: str | None = "a red square") -> dict[str, Any]:
    entries = [{"image": blob, **({"alt": alt} if alt is not None else {})} for blob in blobs]
    return {"$type": "app.bsky.embed.images", "images": entries}


def stored(client: httpx.Client) -> list[dict[str, Any]]:
    posts: list[dict[str, Any]] = client.get("/sandbox/posts", params={"strategy": "bluesky"}).json()["posts"]
    return posts


def set_faults(client: httpx.Client, **faults: Any) -> None:
    client.put("/sandbox/faults", json=faults).raise_for_status()


def rkey(n: int) -> str:
    """A valid TID, different for each ``n``."""
    return f"3kabcdefghi{'234567abcdefghijklmnopqrstuvwxyz'[n // 32]}{'234567abcdefghijklmnopqrstuvwxyz'[n % 32]}"


# -- sessions (com.atproto.server.createSession, refreshSession, getSession) ----------------


def test_a_session_gives_the_handles_did_and_two_tokens(client: httpx.Client) -> None:
    response = create_session(client)

    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"accessJwt", "refreshJwt", "handle", "did"}  # the output's required properties
    assert body["handle"] == HANDLE
    resolved = client.get(f"{XRPC}/com.atproto.identity.resolveHandle", params={"handle": HANDLE}).json()
    assert resolved == {"did": body["did"]}
    assert body["did"].startswith("did:plc:") and len(body["did"]) == len("did:plc:") + 24
    again = client.get(f"{XRPC}/com.atproto.identity.resolveHandle", params={"handle": "bob.example.com"}).json()
    assert again["did"] != body["did"]


@pytest.mark.parametrize(
    ("state", "error"),
    [
        # createSession.ts: AuthRequiredError("Invalid identifier or password"); a taken down
        # account: AuthRequiredError('Account has been taken down', 'AccountTakedown').
        ("revoked", "AuthenticationRequired"),
        ("forbidden", "AccountTakedown"),
    ],
)
def test_a_revoked_or_forbidden_password_gets_no_session(client: httpx.Client, state: str, error: str) -> None:
    client.put(f"/sandbox/tokens/{PASSWORD}", json={"state": state}).raise_for_status()

    response = create_session(client)

    assert response.status_code == 401
    assert response.json()["error"] == error


def test_get_session_takes_the_access_token_only(client: httpx.Client, session: dict[str, Any]) -> None:
    url = f"{XRPC}/com.atproto.server.getSession"

    mine = client.get(url, headers=bearer(session["accessJwt"]))
    refresh = client.get(url, headers=bearer(session["refreshJwt"]))
    forged = client.get(url, headers=bearer(session["accessJwt"][:-4] + "AAAA"))
    missing = client.get(url)

    assert mine.json() | {"active": True} == {"handle": HANDLE, "did": session["did"], "active": True}
    # auth-verifier.ts: the scope, the signature, the header.
    assert (refresh.status_code, refresh.json()["error"], refresh.json()["message"]) == (
        400,
        "InvalidToken",
        "Bad token scope",
    )
    assert (forged.status_code, forged.json()["error"]) == (400, "InvalidToken")
    assert (missing.status_code, missing.json()["error"]) == (401, "AuthMissing")


def test_an_expired_access_token_answers_expired_token_until_the_client_refreshes(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    set_faults(client, bluesky_access_ttl=0)

    refused = write(client, session, record("too late"))
    refreshed = client.post(f"{XRPC}/com.atproto.server.refreshSession", headers=bearer(session["refreshJwt"]))
    set_faults(client, bluesky_access_ttl=60)
    posted = write(client, {**session, "accessJwt": refreshed.json()["accessJwt"]}, record("in time"))

    # auth-verifier.ts: jose's JWTExpired → InvalidRequestError('Token has expired', 'ExpiredToken').
    assert (refused.status_code, refused.json()) == (400, {"error": "ExpiredToken", "message": "Token has expired"})
    assert refreshed.status_code == 200
    assert refreshed.json()["accessJwt"] != session["accessJwt"]
    assert posted.status_code == 200
    assert [post["text"] for post in stored(client)] == ["in time"]


def test_a_revoked_password_ends_the_session_and_its_refresh(client: httpx.Client, session: dict[str, Any]) -> None:
    client.put(f"/sandbox/tokens/{PASSWORD}", json={"state": "revoked"}).raise_for_status()

    call = write(client, session, record())
    refresh = client.post(f"{XRPC}/com.atproto.server.refreshSession", headers=bearer(session["refreshJwt"]))

    assert (call.status_code, call.json()["error"]) == (400, "ExpiredToken")
    # refreshSession.ts: InvalidRequestError('Token has been revoked', 'ExpiredToken').
    assert (refresh.status_code, refresh.json()) == (
        400,
        {"error": "ExpiredToken", "message": "Token has been revoked"},
    )
    assert stored(client) == []


# -- records (com.atproto.repo.createRecord, putRecord, getRecord) --------------------------


def test_a_created_record_answers_uri_and_cid_and_is_counted_by_the_oracle(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    response = write(client, session, record("hello"))

    assert response.status_code == 200
    body = response.json()
    assert body["uri"] == f"at://{session['did']}/{POST}/3kabcdefghij2"
    assert body["cid"].startswith("bafyrei")
    assert set(body["commit"]) == {"cid", "rev"} and body["validationStatus"] == "valid"
    [copy] = stored(client)
    assert (copy["id"], copy["strategy"], copy["key"], copy["text"]) == (
        body["uri"],
        "bluesky",
        "3kabcdefghij2",
        "hello",
    )
    assert (copy["reply_to"], copy["token"], copy["cid"], copy["overwrites"]) == (None, PASSWORD, body["cid"], 0)


def test_a_record_without_rkey_gets_a_tid(client: httpx.Client, session: dict[str, Any]) -> None:
    response = write(client, session, record(), rkey=None)

    rkey = response.json()["uri"].rsplit("/", 1)[1]
    assert len(rkey) == 13 and rkey[0] in "234567abcdefghij"  # the TID syntax


def test_get_record_answers_the_value_as_stored_and_record_not_found_otherwise(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    value = {"text": "no $type given", "createdAt": CREATED_AT}
    created = write(client, session, value).json()
    url = f"{XRPC}/com.atproto.repo.getRecord"
    params = {"repo": HANDLE, "collection": POST, "rkey": "3kabcdefghij2"}

    found = client.get(url, params=params)
    missing = client.get(url, params={**params, "rkey": rkey(7)})
    other_version = client.get(url, params={**params, "cid": "bafyreiaaaa"})

    # prepare.ts: a record without $type gets the collection's.
    assert found.json() == {"uri": created["uri"], "cid": created["cid"], "value": {**value, "$type": POST}}
    assert (missing.status_code, missing.json()["error"]) == (400, "RecordNotFound")
    assert other_version.status_code == 400


def test_create_record_on_an_existing_rkey_is_a_bare_500(client: httpx.Client, session: dict[str, Any]) -> None:
    # The PDS inserts; the unique index refuses; xrpc-server answers 500 with no details.
    write(client, session, record("first")).raise_for_status()

    again = write(client, session, record("first"))

    assert (again.status_code, again.json()) == (500, INTERNAL)
    assert [post["text"] for post in stored(client)] == ["first"]


def test_put_record_with_the_identical_record_is_a_no_op_with_the_same_uri_and_cid(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    value = record("once only", langs=["en"])
    first = write(client, session, value, method="putRecord").json()
    shuffled = dict(reversed(list(value.items())))  # the same record, its keys in another order

    again = write(client, session, shuffled, method="putRecord")

    # putRecord.ts: "no-op" when the current record's CID is the new one's: no commit.
    assert again.status_code == 200
    assert (again.json()["uri"], again.json()["cid"]) == (first["uri"], first["cid"])
    assert "commit" not in again.json()
    [copy] = stored(client)
    assert copy["overwrites"] == 0


def test_put_record_with_a_different_record_overwrites_it_and_marks_the_post(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    first = write(client, session, record("as published"), method="putRecord").json()

    changed = write(client, session, record("changed afterwards"), method="putRecord").json()

    assert changed["uri"] == first["uri"] and changed["cid"] != first["cid"]
    [copy] = stored(client)
    assert (copy["text"], copy["cid"], copy["overwrites"]) == ("changed afterwards", changed["cid"], 1)
    value = client.get(
        f"{XRPC}/com.atproto.repo.getRecord",
        params={"repo": session["did"], "collection": POST, "rkey": "3kabcdefghij2"},
    ).json()["value"]
    assert value["text"] == "changed afterwards"


def test_put_record_honours_swap_record_after_the_no_op(client: httpx.Client, session: dict[str, Any]) -> None:
    # putRecord.ts: the no-op comes first; then swapRecord (null: "only if there is none").
    first = write(client, session, record("v1"), method="putRecord", swapRecord=None).json()

    resent = write(client, session, record("v1"), method="putRecord", swapRecord=None)
    changed = write(client, session, record("v2"), method="putRecord", swapRecord=None)
    stale = write(client, session, record("v2"), method="putRecord", swapRecord="bafyreinotthisone")
    fresh = write(client, session, record("v2"), method="putRecord", swapRecord=first["cid"])

    assert (resent.status_code, resent.json()["cid"]) == (200, first["cid"])
    assert (changed.status_code, changed.json()["error"]) == (400, "InvalidSwap")
    assert (stale.status_code, stale.json()["error"]) == (400, "InvalidSwap")
    assert fresh.status_code == 200
    assert [(post["text"], post["overwrites"]) for post in stored(client)] == [("v2", 1)]


def test_another_accounts_repo_is_refused(client: httpx.Client, session: dict[str, Any]) -> None:
    # createRecord.ts: the repo's DID must be the credentials' (AuthRequiredError).
    response = client.post(
        f"{XRPC}/com.atproto.repo.createRecord",
        json={"repo": "bob.example.com", "collection": POST, "record": record()},
        headers=bearer(session["accessJwt"]),
    )

    assert (response.status_code, response.json()["error"]) == (401, "AuthenticationRequired")


@pytest.mark.parametrize(
    ("change", "rkey_given"),
    [
        ({"$type": "app.bsky.feed.like"}, "3kabcdefghij2"),  # prepare.ts: Invalid $type
        ({}, "not a key!"),  # record key syntax
        ({}, "self"),  # app.bsky.feed.post's key is "tid"
        ({"createdAt": "yesterday"}, "3kabcdefghij2"),  # format: datetime
        ({"createdAt": None}, "3kabcdefghij2"),  # required
        ({"langs": ["en", "fr", "de", "it"]}, "3kabcdefghij2"),  # langs maxLength 3
    ],
)
def test_records_the_lexicon_refuses_are_invalid_requests(
    client: httpx.Client, session: dict[str, Any], change: dict[str, Any], rkey_given: str
) -> None:
    value = {key: item for key, item in {**record(), **change}.items() if item is not None}

    response = write(client, session, value, rkey_given)

    assert (response.status_code, response.json()["error"]) == (400, "InvalidRequest")
    assert stored(client) == []


# -- text and facets (app.bsky.feed.post, app.bsky.richtext.facet) ---------------------------


def test_text_is_at_most_300_graphemes_and_3000_bytes(client: httpx.Client, session: dict[str, Any]) -> None:
    thumbs = "👍🏽" * 300  # 600 code points, 2400 bytes, 300 graphemes
    family = "👨‍👩‍👧‍👦" * 121  # 121 graphemes, 3025 bytes

    fits = write(client, session, record(thumbs), rkey(1))
    graphemes = write(client, session, record(thumbs + "!"), rkey(2))
    too_many_bytes = write(client, session, record(family), rkey(3))

    assert fits.status_code == 200
    assert graphemes.status_code == 400 and "300 graphemes" in graphemes.json()["message"]
    assert too_many_bytes.status_code == 400 and "3000" in too_many_bytes.json()["message"]
    assert len(stored(client)) == 1


def facet(start: int, end: int, feature: dict[str, Any] | None = None) -> dict[str, Any]:
    chosen = feature or {"$type": "app.bsky.richtext.facet#tag", "tag": "tag"}
    return {"index": {"byteStart": start, "byteEnd": end}, "features": [chosen]}


def test_facets_count_utf8_bytes_through_accents_and_emoji(client: httpx.Client, session: dict[str, Any]) -> None:
    text = "héllo 👍🏽 #tag https://example.com @bob.example.com"
    start = text.encode().index(b"#tag")
    link = text.encode().index(b"https")
    mention = text.encode().index(b"@bob")
    facets = [
        facet(start, start + 4),
        facet(
            link,
            link + len("https://example.com"),
            {"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com"},
        ),
        facet(mention, len(text.encode()), {"$type": "app.bsky.richtext.facet#mention", "did": "did:plc:bob"}),
    ]

    response = write(client, session, record(text, facets=facets))

    assert (start, link) == (16, 21)  # é is 2 bytes, 👍🏽 8
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("start", "end", "why"),
    [
        (0, 99, "past the end of the text"),
        (7, 11, "between 👍 and its skin tone"),
        (6, 10, "inside 👍"),
        (1, 2, "inside é"),
        (5, 5, "empty"),
        (9, 6, "backwards"),
    ],
)
def test_facet_offsets_outside_the_text_or_inside_a_grapheme_are_refused(
    client: httpx.Client, session: dict[str, Any], start: int, end: int, why: str
) -> None:
    response = write(client, session, record("héllo 👍🏽 #tag", facets=[facet(start, end)]))

    assert (response.status_code, response.json()["error"]) == (400, "InvalidRequest"), why
    assert stored(client) == []


def test_a_facet_with_an_unknown_feature_is_refused(client: httpx.Client, session: dict[str, Any]) -> None:
    response = write(client, session, record("hello", facets=[facet(0, 5, {"$type": "app.bsky.richtext.facet#bold"})]))

    assert response.status_code == 400


# -- threads (app.bsky.feed.post#replyRef, com.atproto.repo.strongRef) -----------------------


def test_a_reply_names_its_root_and_parent_by_uri_and_cid(client: httpx.Client, session: dict[str, Any]) -> None:
    root = write(client, session, record("root"), rkey(1)).json()
    parent = write(client, session, record("parent", reply={"root": root, "parent": root}), rkey(2)).json()

    reply = write(client, session, record("reply", reply={"root": root, "parent": parent}), rkey(3))

    assert reply.status_code == 200
    copies = {post["text"]: post for post in stored(client)}
    assert (copies["reply"]["reply_to"], copies["reply"]["root"]) == (parent["uri"], root["uri"])
    assert copies["parent"]["reply_to"] == root["uri"]


def test_a_reply_to_a_post_that_is_not_here_or_not_that_version_is_refused(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    root = write(client, session, record("root"), rkey(1)).json()
    ghost = {"uri": f"at://{session['did']}/{POST}/{rkey(9)}", "cid": root["cid"]}
    stale = {"uri": root["uri"], "cid": "bafyreistale"}

    for ref in (ghost, stale):
        response = write(client, session, record("reply", reply={"root": root, "parent": ref}), rkey(2))
        assert (response.status_code, response.json()["error"]) == (400, "InvalidRequest")
    missing_parent = write(client, session, record("reply", reply={"root": root}), rkey(2))
    assert missing_parent.status_code == 400
    assert len(stored(client)) == 1


# -- blobs and images (com.atproto.repo.uploadBlob, app.bsky.embed.images) -------------------


def test_an_uploaded_blob_answers_its_ref_with_the_type_its_bytes_show(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    response = upload(client, session, PNG, mime="application/octet-stream")
    again = upload(client, session, PNG)

    assert response.status_code == 200
    blob = response.json()["blob"]
    assert blob["$type"] == "blob" and blob["ref"]["$link"].startswith("bafkrei")
    assert (blob["mimeType"], blob["size"]) == ("image/png", len(PNG))  # sniffed, as the PDS does
    assert again.json()["blob"] == blob  # the same bytes, the same blob
    [media] = client.get("/sandbox/media").json()["media"]
    assert (media["id"], media["strategy"], media["token"]) == (blob["ref"]["$link"], "bluesky", PASSWORD)
    assert client.get(f"/media/{blob['ref']['$link']}").content == PNG


def test_a_blob_over_the_pds_upload_limit_is_413(client: httpx.Client, session: dict[str, Any]) -> None:
    response = upload(client, session, PNG + b"\x00" * (5 * 1024 * 1024))

    assert (response.status_code, response.json()["error"]) == (413, "PayloadTooLarge")


def test_a_post_carries_its_images_in_order_with_their_alt_text(client: httpx.Client, session: dict[str, Any]) -> None:
    red = upload(client, session).json()["blob"]
    blue = upload(client, session, image("JPEG", "blue"), "image/jpeg").json()["blob"]
    embed = images(blue, red)
    embed["images"][1]["alt"] = ""

    response = write(client, session, record("two images", embed=embed))

    assert response.status_code == 200, response.text
    [copy] = stored(client)
    assert [(m["id"], m["alt"], m["mime"]) for m in copy["media"]] == [
        (blue["ref"]["$link"], "a red square", "image/jpeg"),
        (red["ref"]["$link"], "", "image/png"),
    ]


def test_image_embeds_the_lexicon_or_the_pds_refuses(client: httpx.Client, session: dict[str, Any]) -> None:
    blob = upload(client, session).json()["blob"]
    video = upload(client, session, MP4, "video/mp4").json()["blob"]
    refusals = {
        "five images": (images(*[blob] * 5), "InvalidRequest"),
        "no alt": (images(blob, alt=None), "InvalidRequest"),
        "over 2 MB": (images({**blob, "size": 2_000_001}), "InvalidRequest"),
        "not an image": (images(video), "InvalidRequest"),
        "never uploaded": (images({**blob, "ref": {"$link": "bafkreinothere"}}), "BlobNotFound"),
        "another size": (images({**blob, "size": blob["size"] + 1}), "InvalidSize"),
        "another type": (images({**blob, "mimeType": "image/jpeg"}), "InvalidMimeType"),
        "another embed": ({"$type": "app.bsky.embed.external", "external": {}}, "InvalidRequest"),
    }

    for why, (embed, error) in refusals.items():
        response = write(client, session, record(why, embed=embed))
        assert (response.status_code, response.json()["error"]) == (400, error), why
    assert stored(client) == []


# -- faults ---------------------------------------------------------------------------------


def test_a_rate_limit_answers_429_with_the_ratelimit_headers_and_stores_nothing(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    # xrpc-server rate-limiter-http.ts: RateLimit-Limit, -Remaining, -Reset (epoch seconds), -Policy.
    set_faults(client, rate_limit=1.0, retry_after=30, strategies=["bluesky"])

    response = write(client, session, record())

    assert (response.status_code, response.json()["error"]) == (429, "RateLimitExceeded")
    assert response.headers["RateLimit-Remaining"] == "0"
    assert int(response.headers["RateLimit-Reset"]) > 0
    assert response.headers["RateLimit-Policy"] == "5000;w=3600"
    assert stored(client) == []


def test_a_post_whose_answer_is_lost_is_settled_by_putting_the_same_record_again(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    set_faults(client, drop_after_accept=1.0, times=1, strategies=["bluesky"])
    value = record("answer lost")

    with pytest.raises(httpx.TransportError):
        write(client, session, value, method="putRecord")
    again = write(client, session, value, method="putRecord")

    [copy] = stored(client)
    assert (again.json()["uri"], again.json()["cid"]) == (copy["id"], copy["cid"])
    assert copy["overwrites"] == 0


def test_a_500_after_accept_stores_the_post_and_a_503_before_it_does_not(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    set_faults(client, error_after_accept=1.0, times=1, strategies=["bluesky"])
    after = write(client, session, record("stored, then 500"), rkey(1))
    set_faults(client, error_before_accept=1.0, times=1, strategies=["bluesky"])
    before = write(client, session, record("never stored"), rkey(2))

    assert (after.status_code, after.json()) == (500, INTERNAL)
    assert (before.status_code, before.json()["error"]) == (503, "NotEnoughResources")
    assert [post["text"] for post in stored(client)] == ["stored, then 500"]


def test_upload_faults_hit_blobs_when_targeted(client: httpx.Client, session: dict[str, Any]) -> None:
    set_faults(client, error_before_accept=1.0, targets=["media"], strategies=["bluesky"])

    refused = upload(client, session)
    posted = write(client, session, record())

    assert refused.status_code == 503
    assert posted.status_code == 200
    assert client.get("/sandbox/media").json()["media"] == []


def test_an_unknown_method_is_not_implemented(client: httpx.Client) -> None:
    response = client.get(f"{XRPC}/app.bsky.feed.getTimeline")

    assert (response.status_code, response.json()["error"]) == (501, "MethodNotImplemented")


# -- the feed and a restart -----------------------------------------------------------------


def test_the_feed_shows_bluesky_posts_and_links_each_by_its_uri(client: httpx.Client, session: dict[str, Any]) -> None:
    uri = write(client, session, record("seen in the feed")).json()["uri"]

    feed = client.get("/").text
    page = client.get(f"/p/{quote(uri, safe='')}")

    assert "seen in the feed" in feed and "bluesky" in feed
    assert f"/p/{quote(uri, safe='')}" in feed
    assert page.status_code == 200 and "seen in the feed" in page.text


def test_a_restart_keeps_posts_blobs_and_sessions(tmp_path: Path) -> None:
    state = tmp_path / "posts.jsonl"
    with SandboxServer(state=state) as first, httpx.Client(base_url=first.url, timeout=5.0) as http:
        session = create_session(http).json()
        blob = upload(http, session).json()["blob"]
        created = write(http, session, record("before the restart", embed=images(blob))).json()
    with SandboxServer(state=state) as second, httpx.Client(base_url=second.url, timeout=5.0) as http:
        found = http.get(
            f"{XRPC}/com.atproto.repo.getRecord", params={"repo": HANDLE, "collection": POST, "rkey": "3kabcdefghij2"}
        )
        same = write(http, session, json.loads(json.dumps(found.json()["value"])), method="putRecord")
        [copy] = stored(http)

    assert found.json()["cid"] == created["cid"]
    assert (same.status_code, same.json()["cid"]) == (200, created["cid"])  # the session, and the no-op, outlived it
    assert copy["media"][0]["id"] == blob["ref"]["$link"]


# -- the Bluesky adapter, end to end ----------------------------------------------------------


def media_file(data: bytes = PNG, mime: str = "image/png", alt: str | None = "a red square") -> MediaFile:
    return MediaFile(
        digest=hashlib.sha256(data).hexdigest(),
        mime=mime,
        size=len(data),
        filename="square.png",
        alt=alt,
        width=4,
        height=4,
        duration=None,
        read=lambda: data,
    )


def adapter_settings(server: SandboxServer) -> dict[str, str]:
    return {"handle": HANDLE, "app_password": "abcd-efgh-ijkl-mnop", "service": f"{server.url}/bluesky"}


def test_the_bluesky_adapter_posts_a_thread_with_an_image_and_facets_once_per_key(server: SandboxServer) -> None:
    adapter, settings = Bluesky(), adapter_settings(server)
    text = "héllo 👍🏽 #tag https://example.com"
    with httpx.Client(timeout=5.0) as http:
        http.delete(f"{server.url}/sandbox/posts").raise_for_status()
        assert check_settings(Bluesky, settings) is None
        who = adapter.verify(VerifyContext(settings, http))
        uploaded = adapter.upload(UploadContext(settings, http, media_file(), key="k" * 25))
        image = (Attachment(uploaded.platform_id, "a red square", "image/png"),)
        first = adapter.publish(PublishContext(settings, http, key="a" * 25, text=text, media=image))
        resent = adapter.publish(PublishContext(settings, http, key="a" * 25, text=text, media=image))
        changed = adapter.publish(PublishContext(settings, http, key="a" * 25, text="an edit herald never makes"))
        reply = adapter.publish(
            PublishContext(
                settings, http, key="b" * 25, text="part two", reply_to=first.platform_id, root=first.platform_id
            )
        )
        found = adapter.find(PublishContext(settings, http, key="a" * 25, text=text))
        posts = http.get(f"{server.url}/sandbox/posts").json()["posts"]

    assert HANDLE in who
    uri = first.platform_id.split("|")[0]
    # A resend finds the post: the very record again is a no-op, another one an InvalidSwap.
    assert resent.platform_id.split("|")[0] == changed.platform_id.split("|")[0] == uri
    assert found is not None and found.platform_id.split("|")[0] == uri
    assert [(p["id"], p["text"], p["reply_to"], p["overwrites"]) for p in posts] == [
        (uri, text, None, 0),
        (reply.platform_id.split("|")[0], "part two", uri, 0),
    ]
    assert [m["alt"] for m in posts[0]["media"]] == ["a red square"]
    assert {feature["$type"] for facet in posts[0]["record"]["facets"] for feature in facet["features"]} == {
        "app.bsky.richtext.facet#tag",
        "app.bsky.richtext.facet#link",
    }


def test_the_bluesky_adapter_refreshes_an_expired_session_and_goes_on(server: SandboxServer) -> None:
    adapter, settings = Bluesky(), adapter_settings(server)
    with httpx.Client(timeout=5.0) as http:
        http.delete(f"{server.url}/sandbox/posts").raise_for_status()
        http.put(f"{server.url}/sandbox/faults", json={"bluesky_access_ttl": 1.0}).raise_for_status()
        started = time.time()
        adapter.publish(PublishContext(settings, http, key="a" * 25, text="before"))
        wait_until(lambda: time.time() > started + 1.1, timeout=5)  # the access token's second is over
        adapter.publish(PublishContext(settings, http, key="b" * 25, text="after, refreshed"))
        posts = http.get(f"{server.url}/sandbox/posts").json()["posts"]

    assert [post["text"] for post in posts] == ["before", "after, refreshed"]
