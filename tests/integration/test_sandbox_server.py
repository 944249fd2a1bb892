"""The sandbox platform over real HTTP: its three strategies, its validation, its faults."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import pytest

from adapters.sandbox.server import SandboxServer
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.integration


def post(
    client: httpx.Client,
    strategy: str,
    text: str = "hello",
    *,
    key: str | None = None,
    idempotency_key: str | None = None,
    reply_to: str | None = None,
    token: str | None = "t0ken",
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    body = {"text": text, "reply_to": reply_to, "root": None, "key": key}
    return client.post(f"/api/{strategy}/posts", json=body, headers=headers)


def stored(client: httpx.Client, strategy: str | None = None) -> list[dict[str, Any]]:
    params = {"strategy": strategy} if strategy else {}
    posts: list[dict[str, Any]] = client.get("/sandbox/posts", params=params).json()["posts"]
    return posts


def set_faults(client: httpx.Client, **faults: Any) -> dict[str, Any]:
    response = client.put("/sandbox/faults", json=faults)
    assert response.status_code == 200, response.text
    config: dict[str, Any] = response.json()
    return config


# -- the three strategies -----------------------------------------------------------------


def test_health_answers_ok_and_says_which_process_and_state_file_answer(client: httpx.Client) -> None:
    # The pid tells `herald run` that the sandbox answering is the one it started.
    assert client.get("/sandbox/health").json() == {"ok": True, "pid": os.getpid(), "state": ""}


def test_created_post_has_id_url_and_creation_time(client: httpx.Client, server: SandboxServer) -> None:
    response = post(client, "native", idempotency_key="k1")

    assert response.status_code == 201
    body = response.json()
    assert body["id"] == stored(client)[0]["id"]
    assert body["id"].startswith("native-")
    assert body["url"] == f"{server.url}/p/{body['id']}"
    assert body["created_at"]


def test_native_same_idempotency_key_answers_original_post_and_creates_nothing(client: httpx.Client) -> None:
    first = post(client, "native", "first", idempotency_key="k1")
    again = post(client, "native", "second", idempotency_key="k1")

    assert again.status_code == 200
    assert again.json() == first.json()
    assert [p["text"] for p in stored(client)] == ["first"]
    assert stored(client)[0]["idempotency_key"] == "k1"


def test_native_different_keys_create_separate_posts(client: httpx.Client) -> None:
    post(client, "native", idempotency_key="k1")
    post(client, "native", idempotency_key="k2")

    assert len(stored(client, "native")) == 2


def test_native_can_be_searched_by_idempotency_key(client: httpx.Client) -> None:
    created = post(client, "native", idempotency_key="k1").json()

    found = client.get("/api/native/posts", params={"key": "k1"}).json()["posts"]

    assert [p["id"] for p in found] == [created["id"]]


def test_readback_stores_key_and_finds_every_copy_because_it_does_not_deduplicate(
    client: httpx.Client,
) -> None:
    first = post(client, "readback", key="k1", idempotency_key="k1").json()
    second = post(client, "readback", key="k1", idempotency_key="k1").json()
    post(client, "readback", key="other")

    found = client.get("/api/readback/posts", params={"key": "k1"}).json()["posts"]

    assert [p["id"] for p in found] == [first["id"], second["id"]]
    assert found[0] == {
        "id": first["id"],
        "url": first["url"],
        "key": "k1",
        "text": "hello",
        "reply_to": None,
        "root": None,
        "created_at": first["created_at"],
        "media": [],
    }
    assert stored(client, "readback")[0]["idempotency_key"] is None


def test_readback_search_without_match_is_empty(client: httpx.Client) -> None:
    assert client.get("/api/readback/posts", params={"key": "nope"}).json() == {"posts": []}


def test_none_stores_no_key_deduplicates_nothing_and_cannot_be_searched(client: httpx.Client) -> None:
    post(client, "none", key="k1", idempotency_key="k1")
    post(client, "none", key="k1", idempotency_key="k1")

    posts = stored(client, "none")
    assert len(posts) == 2
    assert all(p["key"] is None and p["idempotency_key"] is None for p in posts)
    assert client.get("/api/none/posts", params={"key": "k1"}).status_code == 404


def test_admin_lists_posts_in_acceptance_order_with_strategy_filter(client: httpx.Client) -> None:
    post(client, "none", "a")
    post(client, "native", "b")
    post(client, "readback", "c", key="k")

    assert [(p["strategy"], p["text"]) for p in stored(client)] == [
        ("none", "a"),
        ("native", "b"),
        ("readback", "c"),
    ]
    assert [p["text"] for p in stored(client, "native")] == ["b"]
    assert stored(client)[0]["token"] == "t0ken"


def test_reply_to_a_known_post_is_stored_with_its_thread(client: httpx.Client) -> None:
    parent = post(client, "readback", "one", key="k0").json()["id"]

    reply = post(client, "readback", "two", key="k1", reply_to=parent)

    assert reply.status_code == 201
    assert stored(client)[-1]["reply_to"] == parent


# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "x" * 501])
def test_empty_or_too_long_text_is_rejected_and_not_stored(client: httpx.Client, text: str) -> None:
    response = post(client, "none", text)

    assert response.status_code == 422
    assert response.json()["error"] == "content_rejected"
    assert stored(client) == []


def test_text_of_exactly_500_characters_is_accepted(client: httpx.Client) -> None:
    assert post(client, "none", "x" * 500).status_code == 201


def test_reply_to_unknown_post_is_thread_parent_missing(client: httpx.Client) -> None:
    other_strategy = post(client, "native", idempotency_key="k").json()["id"]

    for parent in ("readback-999", other_strategy):
        response = post(client, "readback", reply_to=parent, key="k1")
        assert response.status_code == 422
        assert response.json()["error"] == "thread_parent_missing"
    assert len(stored(client)) == 1


def test_missing_token_is_refused_with_401(client: httpx.Client) -> None:
    assert post(client, "none", token=None).status_code == 401
    assert stored(client) == []


def test_revoked_token_is_auth_expired_and_forbidden_token_is_permission_denied(client: httpx.Client) -> None:
    client.put("/sandbox/tokens/bad", json={"state": "revoked"}).raise_for_status()
    client.put("/sandbox/tokens/nope", json={"state": "forbidden"}).raise_for_status()

    revoked = post(client, "none", token="bad")
    forbidden = post(client, "none", token="nope")

    assert (revoked.status_code, revoked.json()["error"]) == (401, "auth_expired")
    assert (forbidden.status_code, forbidden.json()["error"]) == (403, "permission_denied")
    assert stored(client) == []
    client.put("/sandbox/tokens/bad", json={"state": "ok"}).raise_for_status()
    assert post(client, "none", token="bad").status_code == 201


def test_token_state_must_be_known(client: httpx.Client) -> None:
    assert client.put("/sandbox/tokens/t", json={"state": "banned"}).status_code == 400


def test_body_that_is_not_json_is_a_bad_request(client: httpx.Client) -> None:
    response = client.post("/api/none/posts", content=b"{", headers={"Authorization": "Bearer t"})

    assert response.status_code == 400


# -- pages --------------------------------------------------------------------------------


def test_post_url_resolves_to_an_html_page(client: httpx.Client) -> None:
    url = post(client, "none", "visible").json()["url"]

    page = client.get(url)

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "visible" in page.text
    assert client.get("/p/none-99999").status_code == 404


def test_feed_shows_posts_newest_first_and_escapes_their_text(client: httpx.Client) -> None:
    post(client, "none", "older")
    post(client, "none", "<script>alert(1)</script>")

    feed = client.get("/").text

    assert "<script>alert" not in feed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in feed
    assert feed.index("&lt;script&gt;") < feed.index("older")


# -- faults -------------------------------------------------------------------------------


def test_drop_after_accept_stores_the_post_but_never_answers(client: httpx.Client) -> None:
    set_faults(client, drop_after_accept=1.0)

    with pytest.raises(httpx.TransportError):
        post(client, "readback", key="k1")

    assert [p["key"] for p in stored(client)] == ["k1"]


def test_error_after_accept_answers_500_but_stores_the_post(client: httpx.Client) -> None:
    set_faults(client, error_after_accept=1.0)

    assert post(client, "none").status_code == 500
    assert len(stored(client)) == 1


def test_error_before_accept_answers_503_and_stores_nothing(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0)

    assert post(client, "none").status_code == 503
    assert stored(client) == []


def test_rate_limit_answers_429_with_retry_after_and_stores_nothing(client: httpx.Client) -> None:
    set_faults(client, rate_limit=1.0, retry_after=7)

    response = post(client, "none")

    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert stored(client) == []


def test_hold_after_accept_stores_at_once_and_answers_late(client: httpx.Client) -> None:
    set_faults(client, hold_after_accept=1.0, hold_seconds=0.3)

    started = time.monotonic()
    response = post(client, "none")

    assert response.status_code == 201
    assert time.monotonic() - started >= 0.3


def test_trickle_after_accept_sends_the_whole_answer_a_byte_at_a_time(client: httpx.Client) -> None:
    set_faults(client, trickle_after_accept=1.0, trickle_interval=0.01)

    started = time.monotonic()
    response = post(client, "none")

    assert response.status_code == 201
    assert time.monotonic() - started >= 0.01 * len(response.content)
    assert len(stored(client)) == 1


def test_held_answers_are_listed_with_whether_they_were_sent_and_forgotten_on_delete(client: httpx.Client) -> None:
    set_faults(client, hold_after_accept=1.0, hold_seconds=0.05, times=1)
    post_id = post(client, "none").json()["id"]

    assert client.get("/sandbox/held").json() == {
        "held": [{"post_id": post_id, "fault": "hold_after_accept", "client_closed_after": None, "answered": True}]
    }
    client.delete("/sandbox/posts").raise_for_status()
    assert client.get("/sandbox/held").json() == {"held": []}


def test_latency_delays_every_api_request_including_searches(client: httpx.Client) -> None:
    set_faults(client, latency=0.2)

    started = time.monotonic()
    client.get("/api/readback/posts", params={"key": "k"})

    assert time.monotonic() - started >= 0.2


def test_times_applies_the_fault_to_the_next_requests_only(client: httpx.Client) -> None:
    set_faults(client, error_after_accept=1.0, times=1)

    assert post(client, "none").status_code == 500
    assert post(client, "none").status_code == 201


def test_after_lets_the_first_requests_through_then_faults_the_next_times(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, after=2, times=1)

    statuses = [post(client, "none", f"part {i}").status_code for i in range(1, 5)]

    assert statuses == [201, 201, 503, 201]
    assert [p["text"] for p in stored(client)] == ["part 1", "part 2", "part 4"]


def test_after_without_times_faults_every_request_after_the_first_ones(client: httpx.Client) -> None:
    set_faults(client, error_after_accept=1.0, after=1)

    assert [post(client, "none").status_code for _ in range(3)] == [201, 500, 500]


def test_after_counts_only_requests_to_the_listed_strategies(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, after=1, times=1, strategies=["readback"])

    assert post(client, "native", idempotency_key="k").status_code == 201
    assert post(client, "readback", key="k1").status_code == 201
    assert post(client, "none").status_code == 201
    assert post(client, "readback", key="k2").status_code == 503
    assert post(client, "readback", key="k2").status_code == 201


def test_putting_faults_again_restarts_the_after_count(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, after=1, times=1)
    assert post(client, "none").status_code == 201

    set_faults(client, error_before_accept=1.0, after=1, times=1)

    assert [post(client, "none").status_code for _ in range(3)] == [201, 503, 201]


def test_native_forgets_idempotency_key_after_forget_keys_after(client: httpx.Client) -> None:
    set_faults(client, forget_keys_after=0.2)
    first = post(client, "native", idempotency_key="k1").json()
    assert post(client, "native", idempotency_key="k1").json() == first

    def resent() -> httpx.Response | None:
        answer = post(client, "native", idempotency_key="k1")
        return answer if answer.status_code == 201 else None

    again = wait_until(resent, timeout=5)  # every resend until then is deduplicated

    assert again.json()["id"] != first["id"]
    assert len(stored(client, "native")) == 2


def test_native_replay_still_deduplicates_when_the_answer_was_dropped(client: httpx.Client) -> None:
    set_faults(client, drop_after_accept=1.0, times=1)
    with pytest.raises(httpx.TransportError):
        post(client, "native", idempotency_key="k1")

    assert post(client, "native", idempotency_key="k1").status_code == 200
    assert len(stored(client)) == 1


def test_faults_apply_only_to_the_listed_strategies(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, strategies=["none"])

    assert post(client, "none").status_code == 503
    assert post(client, "native", idempotency_key="k").status_code == 201
    assert post(client, "readback", key="k").status_code == 201


def test_faults_do_not_apply_to_searches(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, rate_limit=1.0)

    assert client.get("/api/readback/posts", params={"key": "k"}).status_code == 200


def test_same_seed_replays_the_same_faults(client: httpx.Client) -> None:
    def run() -> list[int]:
        set_faults(client, error_before_accept=0.5, seed=42)
        return [post(client, "none").status_code for _ in range(20)]

    first = run()

    assert set(first) == {201, 503}
    assert run() == first


def test_fault_config_is_returned_with_defaults_and_readable(client: httpx.Client) -> None:
    config = set_faults(client, rate_limit=0.5)

    assert config["rate_limit"] == 0.5
    assert config["hold_seconds"] == 5.0
    assert config["retry_after"] == 1
    assert config["strategies"] == ["native", "readback", "none", "mastodon", "bluesky"]
    assert config["times"] is None
    assert config["after"] == 0
    assert client.get("/sandbox/faults").json() == config


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"drop_after_accept": 1.5}, "drop_after_accept"),
        ({"latency": -1}, "latency"),
        ({"times": "twice"}, "times"),
        ({"after": -1}, "after"),
        ({"after": 1.5}, "after"),
        ({"strategies": ["myspace"]}, "myspace"),
        ({"surprise": 1}, "surprise"),
        ([1, 2], "JSON object"),
    ],
)
def test_invalid_fault_config_is_refused_with_a_clear_message(client: httpx.Client, body: object, names: str) -> None:
    response = client.put("/sandbox/faults", json=body)

    assert response.status_code == 400
    assert names in response.json()["detail"]


def test_delete_forgets_posts_keys_tokens_and_faults(client: httpx.Client) -> None:
    post(client, "native", idempotency_key="k1")
    client.put("/sandbox/tokens/t0ken", json={"state": "revoked"})
    set_faults(client, latency=0.01)

    client.delete("/sandbox/posts").raise_for_status()

    assert stored(client) == []
    assert client.get("/sandbox/faults").json()["latency"] == 0.0
    assert post(client, "native", idempotency_key="k1").status_code == 201


def test_stopped_server_stops_answering_kept_alive_clients() -> None:
    server = SandboxServer()
    server.start()
    with httpx.Client(base_url=server.url, timeout=2.0) as http:
        assert http.get("/sandbox/health").status_code == 200
        server.stop()

        with pytest.raises(httpx.TransportError):
            http.get("/sandbox/health")


def test_search_lag_hides_a_stored_post_from_the_key_search_until_it_has_passed(client: httpx.Client) -> None:
    set_faults(client, search_lag=0.3, strategies=["readback"])
    sent = time.monotonic()
    assert post(client, "readback", key="k1").status_code == 201

    def search() -> list[dict[str, Any]]:
        return list(client.get("/api/readback/posts", params={"key": "k1"}).json()["posts"])

    hidden = search()
    shown = wait_until(search, timeout=5)

    assert hidden == []
    assert time.monotonic() - sent >= 0.3  # not shown before the lag had passed
    assert [p["key"] for p in shown] == ["k1"]
    assert len(stored(client, "readback")) == 1  # the oracle sees it at once


def test_search_lag_with_a_dropped_answer_lets_a_blind_resend_make_a_second_copy(client: httpx.Client) -> None:
    set_faults(client, search_lag=5.0, drop_after_accept=1.0, times=1, strategies=["readback"])
    with pytest.raises(httpx.TransportError):
        post(client, "readback", key="k1")

    assert client.get("/api/readback/posts", params={"key": "k1"}).json()["posts"] == []
    assert post(client, "readback", key="k1").status_code == 201
    assert len(stored(client, "readback")) == 2
