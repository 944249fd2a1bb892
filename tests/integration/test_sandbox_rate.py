"""The sandbox platform's rate limit over real HTTP (``PUT /sandbox/rate``, limiter.py): a
sliding window of accepted posts per account, answered 429 with ``Retry-After`` past it,
by every API the sandbox speaks."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.integration.test_sandbox_bluesky import create_session, record, write
from tests.integration.test_sandbox_mastodon import status
from tests.integration.test_sandbox_server import post, stored

pytestmark = pytest.mark.integration


def limit(client: httpx.Client, count: int | None, per_seconds: float = 60.0) -> None:
    response = client.put("/sandbox/rate", json={"count": count, "per_seconds": per_seconds})
    assert response.status_code == 200, response.text


def test_without_a_limit_a_burst_is_taken_whole(client: httpx.Client) -> None:
    assert client.get("/sandbox/rate").json() == {"count": None, "per_seconds": 1.0, "admitted": 0, "refused": 0}
    assert [post(client, "native").status_code for _ in range(12)] == [201] * 12


def test_a_post_past_the_rate_is_refused_429_with_retry_after_and_not_stored(client: httpx.Client) -> None:
    limit(client, 2, 60)
    assert [post(client, "none", f"p{i}").status_code for i in range(2)] == [201, 201]

    refused = post(client, "none", "one too many")

    assert refused.status_code == 429
    assert refused.json() == {"error": "rate_limited"}
    assert 59 <= int(refused.headers["Retry-After"]) <= 60
    assert [p["text"] for p in stored(client)] == ["p0", "p1"]
    assert client.get("/sandbox/rate").json() == {"count": 2, "per_seconds": 60.0, "admitted": 2, "refused": 1}


def test_each_account_has_its_own_window(client: httpx.Client) -> None:
    limit(client, 1, 60)
    assert post(client, "native", token="alice").status_code == 201
    assert post(client, "native", token="bob").status_code == 201
    assert post(client, "native", token="alice").status_code == 429


def test_the_window_slides_room_comes_back_as_the_oldest_post_leaves_it(client: httpx.Client) -> None:
    limit(client, 2, 0.4)
    assert post(client, "native").status_code == 201
    time.sleep(0.2)
    assert post(client, "native").status_code == 201
    assert post(client, "native").status_code == 429
    time.sleep(0.25)  # the first post has left the window, the second has not
    assert post(client, "native").status_code == 201
    assert post(client, "native").status_code == 429


def test_mastodon_and_bluesky_keep_the_same_limit_in_their_own_words(client: httpx.Client) -> None:
    limit(client, 1, 60)
    assert status(client, "first").status_code == 200
    refused = status(client, "second")
    assert refused.status_code == 429
    assert refused.json() == {"error": "Too many requests"}
    assert "X-RateLimit-Reset" in refused.headers  # what Mastodon tells a client to wait for

    session = create_session(client).json()
    assert write(client, session, record("first"), rkey=None).status_code == 200
    refused = write(client, session, record("second"), rkey=None)
    assert refused.status_code == 429
    assert refused.json()["error"] == "RateLimitExceeded"
    assert "RateLimit-Reset" in refused.headers
    assert [p["text"] for p in stored(client)] == ["first", "first"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"count": 0}, "count is the posts an account may make in the window (1 or more, or null): 0"),
        ({"count": 3, "per_seconds": 0}, "per_seconds is the window in seconds and must be above 0, got 0"),
        ({"count": 3, "window": 2}, "unknown rate field(s) ['window']"),
        ([3, 2], "the rate must be a JSON object"),
    ],
)
def test_a_rate_that_cannot_work_is_refused_in_one_line(client: httpx.Client, body: object, says: str) -> None:
    response = client.put("/sandbox/rate", json=body)
    assert response.status_code == 400
    assert says in response.json()["detail"]
    assert client.get("/sandbox/rate").json()["count"] is None


def test_forgetting_the_sandbox_lifts_the_limit_and_its_counts(client: httpx.Client) -> None:
    limit(client, 1, 60)
    post(client, "native")
    assert post(client, "native").status_code == 429

    client.delete("/sandbox/posts").raise_for_status()

    assert client.get("/sandbox/rate").json() == {"count": None, "per_seconds": 1.0, "admitted": 0, "refused": 0}
    assert post(client, "native").status_code == 201
