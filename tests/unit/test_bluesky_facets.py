"""Facets (links, mentions, hashtags) by UTF-8 byte offsets, the record key a delivery key
gives, and herald's names for a post: pure functions, no network.

Expected values come from the docs' own examples where they have one: bluesky-social/bsky-docs
docs/advanced-guides/posts.md ("Mentions and links"), the TID spec's examples
(https://atproto.com/specs/tid), lexicons/app/bsky/richtext/facet.json.
"""

from __future__ import annotations

import itertools

import pytest

from adapters.bluesky.facets import facets_of
from adapters.bluesky.record import PostRef, created_at, post_url
from adapters.bluesky.tid import ALPHABET, TID_SYNTAX, encode, tid_for
from core.domain.errors import Rejected
from core.domain.states import Reason

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def known(handle: str) -> str | None:
    return DID if handle in ("atproto.com", "bob.test") else None


def spans(text: str) -> list[tuple[str, dict[str, str]]]:
    data = text.encode()
    return [
        (data[f["index"]["byteStart"] : f["index"]["byteEnd"]].decode(), f["features"][0])
        for f in facets_of(text, known)
    ]


def test_the_docs_example_gets_the_docs_byte_offsets() -> None:
    text = "✨ example mentioning @atproto.com to share the URL 👨‍❤️‍👨 https://en.wikipedia.org/wiki/CBOR."
    assert facets_of(text, known) == [
        {
            "index": {"byteStart": 23, "byteEnd": 35},
            "features": [{"$type": "app.bsky.richtext.facet#mention", "did": DID}],
        },
        {
            "index": {"byteStart": 74, "byteEnd": 108},
            "features": [{"$type": "app.bsky.richtext.facet#link", "uri": "https://en.wikipedia.org/wiki/CBOR"}],
        },
    ]


def test_offsets_count_bytes_past_accents_and_emoji() -> None:
    text = "Crème brûlée 🇫🇷 #pâtisserie et 👩🏽‍💻 @bob.test"
    assert spans(text) == [
        ("#pâtisserie", {"$type": "app.bsky.richtext.facet#tag", "tag": "pâtisserie"}),
        ("@bob.test", {"$type": "app.bsky.richtext.facet#mention", "did": DID}),
    ]


def test_a_link_leaves_out_the_punctuation_that_ends_its_sentence() -> None:
    assert [s for s, _ in spans("see https://example.com/a. or (https://example.com/b) or https://x.org/c_(d)")] == [
        "https://example.com/a",
        "https://example.com/b",
        "https://x.org/c_(d)",
    ]


def test_a_bare_domain_is_no_link() -> None:
    assert spans("see example.com") == []


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("#tag!", ["tag"]),
        ("a #1st place", ["1st"]),
        ("no #123", []),
        ("issue#12 and mail#x", []),
        ("full-width ＃タグ", ["タグ"]),
        ("two #a #b", ["a", "b"]),
        ("#" + "x" * 64, ["x" * 64]),
        ("#" + "x" * 65, []),
    ],
)
def test_hashtags_are_the_clients(text: str, tags: list[str]) -> None:
    assert [feature["tag"] for _, feature in spans(text)] == tags


@pytest.mark.parametrize(
    "text",
    ["mail alice@atproto.com", "@nobody.example", "@atproto", "@-atproto.com"],
    ids=["in-an-address", "unknown", "no-dot", "bad-handle"],
)
def test_only_a_known_handle_after_a_space_is_a_mention(text: str) -> None:
    assert [f for _, f in spans(text) if f["$type"].endswith("#mention")] == []


def test_a_mention_is_looked_up_in_lower_case() -> None:
    asked: list[str] = []
    facets_of("hi @Bob.Test", lambda handle: asked.append(handle) or None)
    assert asked == ["bob.test"]


def test_facets_are_sorted_and_never_overlap() -> None:
    result = facets_of("#a https://example.com/#b @bob.test", known)
    starts = [f["index"]["byteStart"] for f in result]
    assert starts == sorted(starts)
    assert all(a["index"]["byteEnd"] <= b["index"]["byteStart"] for a, b in itertools.pairwise(result))


# -- record keys -------------------------------------------------------------------------


def test_encode_gives_the_specs_tids() -> None:
    # "The TID corresponding to integer zero is ``2222222222222``" (specs/tid).
    assert encode(0) == "2222222222222"
    assert encode(2**63 - 1) == "bzzzzzzzzzzzz"
    with pytest.raises(ValueError):
        encode(2**63)


@pytest.mark.parametrize("key", ["k" * 25, "a", "0123456789abcdefghijklmno", "zzzzzzzzzzzzzzzzzzzzzzzzz"])
def test_a_delivery_keys_record_key_is_a_valid_tid_with_its_top_bit_clear(key: str) -> None:
    rkey = tid_for(key)
    assert TID_SYNTAX.match(rkey)
    assert rkey[0] in ALPHABET[:8]  # bit 63 of the integer is 0
    assert rkey == tid_for(key)


def test_distinct_delivery_keys_give_distinct_record_keys() -> None:
    keys = [f"{n:025d}" for n in range(5000)]
    assert len({tid_for(k) for k in keys}) == len(keys)


# -- herald's names for a post -----------------------------------------------------------


def test_a_platform_id_carries_the_posts_uri_and_cid() -> None:
    uri = "at://did:plc:u5cwb2mwiv2bfq53cjufe6yn/app.bsky.feed.post/3k43tv4rft22g"
    ref = PostRef.parse(f"{uri}|bafyreig2", own_repo="did:plc:other")
    assert (ref.uri, ref.cid, ref.rkey, ref.repo) == (
        uri,
        "bafyreig2",
        "3k43tv4rft22g",
        "did:plc:u5cwb2mwiv2bfq53cjufe6yn",
    )
    assert ref.platform_id == f"{uri}|bafyreig2"


def test_a_bare_record_key_names_a_post_of_the_account() -> None:
    ref = PostRef.parse("3k43tv4rft22g", own_repo="did:plc:me")
    assert (ref.uri, ref.cid) == ("at://did:plc:me/app.bsky.feed.post/3k43tv4rft22g", None)


@pytest.mark.parametrize("platform_id", ["at://did:plc:me/app.bsky.feed.like/3k|c", "https://bsky.app/x/y", ""])
def test_an_id_that_names_no_post_cannot_be_replied_to(platform_id: str) -> None:
    with pytest.raises(Rejected) as caught:
        PostRef.parse(platform_id, own_repo="did:plc:me")
    assert caught.value.reason is Reason.THREAD_PARENT_MISSING


def test_created_at_is_utc_with_milliseconds_and_a_z() -> None:
    assert created_at(0) == "1970-01-01T00:00:00.000Z"
    assert created_at(1_691_386_272.156888) == "2023-08-07T05:31:12.156Z"


def test_a_post_link_is_the_apps() -> None:
    assert post_url("atproto.com", "3k5ivi6or4d2r") == "https://bsky.app/profile/atproto.com/post/3k5ivi6or4d2r"
