"""The pieces the sandbox's Mastodon and Bluesky are made of: AT Protocol identifiers,
form bodies, and text counted as each platform counts it."""

from __future__ import annotations

import os

import httpx

from adapters.sandbox.atproto import blob_cid, did_for, is_record_key, is_tid, next_tid, record_cid
from adapters.sandbox.forms import parse_form
from adapters.sandbox.mastodon import countable_length


def test_a_blobs_cid_is_the_real_one() -> None:
    # CIDv1, raw codec, SHA-256 of nothing: the well-known CID of the empty blob.
    assert blob_cid(b"") == "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"


def test_a_records_cid_depends_on_its_content_not_on_the_order_of_its_keys() -> None:
    record = {"$type": "app.bsky.feed.post", "text": "héllo", "createdAt": "2026-01-01T00:00:00Z"}

    assert record_cid(record) == record_cid(dict(reversed(list(record.items()))))
    assert record_cid(record) != record_cid({**record, "text": "hello"})
    assert record_cid(record).startswith("bafyrei")


def test_tids_are_valid_and_each_later_than_the_one_before() -> None:
    tids = [next_tid() for _ in range(1000)]

    assert all(is_tid(tid) for tid in tids)
    assert tids == sorted(tids) and len(set(tids)) == len(tids)
    assert not is_tid("self") and not is_tid("zzzzzzzzzzzzz")  # the top bit stays 0


def test_record_keys_follow_the_record_key_syntax() -> None:
    assert is_record_key("self") and is_record_key("3kabcdefghij2") and is_record_key("a:b~c_d.e-f")
    assert not is_record_key(".") and not is_record_key("..") and not is_record_key("a/b") and not is_record_key("")


def test_every_handle_resolves_always_to_the_same_did() -> None:
    assert did_for("alice.example.com") == did_for("Alice.Example.com")
    assert did_for("alice.example.com") != did_for("bob.example.com")
    assert did_for("alice.example.com").startswith("did:plc:")


def test_a_multipart_form_keeps_a_files_bytes_exactly() -> None:
    data = os.urandom(4096) + b"\r\n--\r\n\r\n" + os.urandom(64) + b"\r"
    request = httpx.Request(
        "POST",
        "http://sandbox/",
        files={"file": ("photo.png", data, "image/png")},
        data={"description": "ünïcode\r\nlines", "media_ids[]": ["1", "2"]},
    )

    form = parse_form(request.headers["Content-Type"], request.read())

    assert form is not None
    assert form.files["file"].data == data
    assert (form.files["file"].filename, form.files["file"].content_type) == ("photo.png", "image/png")
    assert form.value("description") == "ünïcode\r\nlines"
    assert form.fields["media_ids[]"] == ["1", "2"]


def test_a_url_encoded_form_keeps_repeated_fields() -> None:
    form = parse_form("application/x-www-form-urlencoded", b"status=hi+there&media_ids%5B%5D=1&media_ids%5B%5D=2")

    assert form is not None
    assert form.value("status") == "hi there"
    assert form.fields["media_ids[]"] == ["1", "2"]


def test_a_body_that_is_not_the_form_it_says_is_none() -> None:
    assert parse_form("application/json", b"{}") is None
    assert parse_form("multipart/form-data", b"no boundary") is None
    assert parse_form("application/x-www-form-urlencoded", b"\xff") is None


def test_mastodon_counts_graphemes_and_every_url_as_23() -> None:
    assert countable_length("👍🏽") == 1
    assert countable_length("é") == countable_length("e\u0301") == 1
    assert countable_length("see https://example.com/" + "a" * 100) == len("see ") + 23
