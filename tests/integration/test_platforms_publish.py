"""The Mastodon and Bluesky adapters through herald itself: channels added with the
channels service, posts created with the posts service and published by a real worker
process over real SQL and Redis, landing on the sandbox's Bluesky and Mastodon
personalities over HTTP; each outcome checked on the sandbox's own record (the oracle and
the personality's reads) and in herald's ledger (``herald post show --json``)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from core.domain.errors import UserError
from core.services.channels import add_channel, reconnect_channel
from core.services.finding import PostQuery, list_posts
from core.services.posts import create_post
from tests.integration.conftest import Sandbox, Workers, channels_json, post_json, wait_until

pytestmark = pytest.mark.integration

HANDLE = "alice.example.com"
APP_PASSWORD = "abcd-efgh-ijkl-mnop"
MENTIONED = "bob.example.com"
XRPC = "/bluesky/xrpc"
POST = "app.bsky.feed.post"
MASTODON_TOKEN = "mast0don-token"


@pytest.fixture
def bluesky(sandbox_url: str, platform: Sandbox) -> str:
    """A Bluesky channel signing in to the sandbox's PDS with an app password."""
    add_channel("sky", "bluesky", {"handle": HANDLE, "app_password": APP_PASSWORD, "service": f"{sandbox_url}/bluesky"})
    return "sky"


@pytest.fixture
def mastodon(sandbox_url: str, platform: Sandbox) -> str:
    """A Mastodon channel on the sandbox's instance, with an access token."""
    add_channel("toots", "mastodon", {"base_url": sandbox_url, "token": MASTODON_TOKEN})
    return "toots"


def settled(post_id: int, *statuses: str) -> dict[str, Any] | None:
    info = post_json(post_id)
    return info if info["status"] in statuses else None


def only_delivery(info: dict[str, Any]) -> dict[str, Any]:
    (shown,) = info["deliveries"]
    delivery: dict[str, Any] = shown
    return delivery


def strong_ref(copy: dict[str, Any]) -> dict[str, str]:
    """A stored post as ``com.atproto.repo.strongRef``: how a reply names it."""
    return {"uri": copy["id"], "cid": copy["cid"]}


def get_record(sandbox_url: str, uri: str) -> dict[str, Any]:
    """``com.atproto.repo.getRecord`` of an ``at://`` uri, from the personality itself."""
    repo, collection, rkey = uri.removeprefix("at://").split("/")
    response = httpx.get(
        f"{sandbox_url}{XRPC}/com.atproto.repo.getRecord", params={"repo": repo, "collection": collection, "rkey": rkey}
    )
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def connected(name: str) -> bool:
    return bool({c["name"]: c["connected"] for c in channels_json()}[name])


# -- Bluesky: threads, facets, graphemes --------------------------------------------------


def test_a_four_part_thread_lands_on_bluesky_with_root_and_parent_refs(
    bluesky: str, platform: Sandbox, workers: Workers
) -> None:
    texts = [f"thread part {i} of 4" for i in range(1, 5)]
    workers.start()

    post_id = create_post(channels=[bluesky], parts=texts)

    info = wait_until(lambda: settled(post_id, "published", "partially_published", "failed", "held"), timeout=30)
    assert info["status"] == "published", info
    posts = platform.posts("bluesky")
    assert [p["text"] for p in posts] == texts  # every part once, in order
    first = posts[0]
    assert "reply" not in first["record"]
    assert (first["reply_to"], first["root"]) == (None, None)
    for parent, child in itertools.pairwise(posts):
        assert child["record"]["reply"] == {"root": strong_ref(first), "parent": strong_ref(parent)}
        assert (child["reply_to"], child["root"]) == (parent["id"], first["id"])
    delivery = only_delivery(info)
    assert delivery["progress"] == "4/4"
    assert [p["platform_id"] for p in delivery["parts"]] == [f"{p['id']}|{p['cid']}" for p in posts]
    assert [p["url"] for p in delivery["parts"]] == [
        f"https://bsky.app/profile/{HANDLE}/post/{p['id'].rsplit('/', 1)[1]}" for p in posts
    ]
    assert delivery["platform_id"] == delivery["parts"][0]["platform_id"]


def test_links_mentions_and_hashtags_get_facets_at_their_utf8_byte_offsets(
    bluesky: str, platform: Sandbox, workers: Workers, sandbox_url: str
) -> None:
    link, mention, tag = "https://example.com/menu", f"@{MENTIONED}", "#déjàvu"
    text = f"Crème brûlée 👩🏽‍🍳 à {link}, ça va 👍🏽 {mention} ☕️ naïve {tag}"
    data = text.encode()
    # Offsets counted here from the UTF-8 bytes themselves, not by herald's code.
    expected = [
        (data.index(link.encode()), data.index(link.encode()) + len(link.encode())),
        (data.index(mention.encode()), data.index(mention.encode()) + len(mention.encode())),
        (data.index(tag.encode()), data.index(tag.encode()) + len(tag.encode())),
    ]
    assert [start for start, _ in expected] != [text.index(s) for s in (link, mention, tag)]  # bytes, not characters
    resolved = httpx.get(f"{sandbox_url}{XRPC}/com.atproto.identity.resolveHandle", params={"handle": MENTIONED})
    resolved.raise_for_status()
    workers.start()

    post_id = create_post(channels=[bluesky], parts=[text])

    info = wait_until(lambda: settled(post_id, "published", "failed", "held"), timeout=30)
    assert info["status"] == "published", info
    (copy,) = platform.posts("bluesky")
    value = get_record(sandbox_url, copy["id"])["value"]
    assert value["text"] == text
    facets = value["facets"]
    assert [(f["index"]["byteStart"], f["index"]["byteEnd"]) for f in facets] == expected
    assert [f["features"] for f in facets] == [
        [{"$type": "app.bsky.richtext.facet#link", "uri": link}],
        [{"$type": "app.bsky.richtext.facet#mention", "did": resolved.json()["did"]}],
        [{"$type": "app.bsky.richtext.facet#tag", "tag": "déjàvu"}],
    ]
    assert [data[start:end].decode() for start, end in expected] == [link, mention, tag]
    assert only_delivery(info)["platform_id"] == f"{copy['id']}|{copy['cid']}"


def test_a_301_grapheme_part_is_refused_at_create_and_a_300_grapheme_one_publishes(
    bluesky: str, platform: Sandbox, workers: Workers
) -> None:
    # Each pair is 2 graphemes of 4 code points: a thumb with its skin tone, an e with a
    # combining acute accent. A count of characters would say 600 and 602.
    fits = "👍🏽e\u0301" * 150
    too_long = fits + "👍🏽"
    assert (len(fits), len(too_long)) == (600, 602)

    with pytest.raises(UserError) as refused:
        create_post(channels=[bluesky], parts=["a first part", too_long])

    message = str(refused.value)
    assert f"part 2 for {bluesky} has 301 graphemes" in message
    assert "bluesky allows 300" in message
    assert list_posts(PostQuery(channel=bluesky)).rows == ()
    workers.start()

    post_id = create_post(channels=[bluesky], parts=[fits])

    info = wait_until(lambda: settled(post_id, "published", "failed", "held"), timeout=30)
    assert info["status"] == "published", info
    assert [p["text"] for p in platform.posts("bluesky")] == [fits]  # the refused post never reached it


# -- credentials mid-run ----------------------------------------------------------------------


def test_an_expired_bluesky_access_token_is_refreshed_and_the_channel_stays_connected(
    bluesky: str, platform: Sandbox, workers: Workers, sandbox_url: str
) -> None:
    workers.start()
    before = create_post(channels=[bluesky], parts=["signed in"])
    assert wait_until(lambda: settled(before, "published", "failed", "held"), timeout=30)["status"] == "published"
    # The worker's session was made before this probe's: once the probe's access token
    # expires, the worker's has too.
    with httpx.Client(base_url=f"{sandbox_url}{XRPC}", timeout=5.0) as xrpc:
        probe = xrpc.post("/com.atproto.server.createSession", json={"identifier": HANDLE, "password": APP_PASSWORD})
        probe.raise_for_status()
        platform.faults(bluesky_access_ttl=1.5)

        def probe_expired() -> bool:
            answer = xrpc.get(
                "/com.atproto.server.getSession", headers={"Authorization": f"Bearer {probe.json()['accessJwt']}"}
            )
            return answer.status_code == 400 and answer.json()["error"] == "ExpiredToken"

        wait_until(probe_expired, timeout=10)

    after = create_post(channels=[bluesky], parts=["after the access token expired"])

    info = wait_until(lambda: settled(after, "published", "failed", "held"), timeout=30)
    delivery = only_delivery(info)
    assert (info["status"], delivery["status"], delivery["reason"]) == ("published", "published", None), delivery
    assert delivery["attempts"] == 1  # refreshed within the attempt, not retried
    assert [p["text"] for p in platform.posts("bluesky")] == ["signed in", "after the access token expired"]
    assert connected(bluesky)
    # What herald keeps of the channel is the app password (sealed; shown masked): the
    # session lives in the worker, which renewed it.
    (shown,) = [c for c in channels_json() if c["name"] == bluesky]
    assert shown["settings"]["app_password"] == "••••" + APP_PASSWORD[-4:]


def test_a_revoked_mastodon_token_disconnects_the_channel_until_reconnected(
    mastodon: str, platform: Sandbox, workers: Workers
) -> None:
    platform.token(MASTODON_TOKEN, "revoked")
    workers.start()

    post_id = create_post(channels=[mastodon], parts=["with a revoked token"])

    info = wait_until(lambda: settled(post_id, "held", "published", "failed"), timeout=30)
    delivery = only_delivery(info)
    assert (info["status"], delivery["status"], delivery["reason"]) == ("held", "held", "auth_expired"), delivery
    assert [p["state"] for p in delivery["parts"]] == ["unsent"]
    assert not connected(mastodon)
    assert platform.posts("mastodon") == []

    reconnected = reconnect_channel(mastodon, {"token": "a-new-token"})

    assert reconnected.armed == (post_id,)
    info = wait_until(lambda: settled(post_id, "published", "failed"), timeout=30)
    delivery = only_delivery(info)
    assert (info["status"], delivery["status"], delivery["reason"]) == ("published", "published", None), delivery
    (copy,) = platform.posts("mastodon")
    assert (copy["text"], copy["token"]) == ("with a revoked token", "a-new-token")
    assert delivery["platform_id"] == copy["id"]
    assert connected(mastodon)
