"""The sandbox platform takes media over real HTTP: uploads, their processing, the checks
a platform makes, the faults on uploads, posts that carry media, the feed that shows
them, the oracle that counts them, and a state file that keeps them over a restart."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.sandbox.server import SandboxServer
from tests.integration.conftest import wait_until
from tests.integration.sandbox_http import MP4, image
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration

MB = 1024 * 1024
AUTH = {"Authorization": "Bearer t0ken"}


PNG, JPEG, GIF, WEBP = image("PNG"), image("JPEG"), image("GIF"), image("WEBP")


def upload(
    client: httpx.Client,
    strategy: str = "none",
    data: bytes = PNG,
    mime: str | None = "image/png",
    token: str | None = "t0ken",
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if mime is not None:
        headers["Content-Type"] = mime
    return client.post(f"/api/{strategy}/media", content=data, headers=headers)


def uploaded(client: httpx.Client, strategy: str = "none", data: bytes = PNG, mime: str = "image/png") -> str:
    response = upload(client, strategy, data, mime)
    assert response.status_code == 201, response.text
    media_id: str = response.json()["id"]
    return media_id


def post(client: httpx.Client, strategy: str, media: Any, text: str = "hello", **headers: str) -> httpx.Response:
    body = {"text": text, "reply_to": None, "root": None, "key": "k1" if strategy == "readback" else None}
    if media is not None:
        body["media"] = media
    return client.post(f"/api/{strategy}/posts", json=body, headers={**AUTH, **headers})


def state_of(client: httpx.Client, strategy: str, media_id: str) -> str:
    response = client.get(f"/api/{strategy}/media/{media_id}")
    assert response.status_code == 200, response.text
    state: str = response.json()["state"]
    return state


def oracle(client: httpx.Client) -> list[dict[str, Any]]:
    media: list[dict[str, Any]] = client.get("/sandbox/media").json()["media"]
    return media


def posts(client: httpx.Client) -> list[dict[str, Any]]:
    stored: list[dict[str, Any]] = client.get("/sandbox/posts").json()["posts"]
    return stored


def set_faults(client: httpx.Client, **faults: Any) -> dict[str, Any]:
    response = client.put("/sandbox/faults", json=faults)
    assert response.status_code == 200, response.text
    config: dict[str, Any] = response.json()
    return config


def refusal(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]


# -- uploads and their processing ---------------------------------------------------------


def test_an_upload_is_answered_201_ready_with_its_id_and_url_and_looked_up_the_same(
    client: httpx.Client, server: SandboxServer
) -> None:
    response = upload(client, "native")

    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("media-")
    assert body == {"id": body["id"], "state": "ready", "url": f"{server.url}/media/{body['id']}"}
    assert client.get(f"/api/native/media/{body['id']}").json() == body


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp"), (MP4, "video/mp4")],
)
def test_every_type_the_platform_takes_is_accepted(client: httpx.Client, data: bytes, mime: str) -> None:
    assert upload(client, data=data, mime=mime).status_code == 201
    assert [m["mime"] for m in oracle(client)] == [mime]


def test_a_content_type_with_parameters_is_read_for_its_type(client: httpx.Client) -> None:
    assert upload(client, mime="Image/PNG; charset=binary").status_code == 201
    assert oracle(client)[0]["mime"] == "image/png"


def test_an_upload_is_processing_until_media_processing_seconds_have_passed_then_ready(
    client: httpx.Client,
) -> None:
    set_faults(client, media_processing_seconds=0.3)
    sent = time.monotonic()
    response = upload(client, "readback")
    media_id = response.json()["id"]

    ready = wait_until(lambda: state_of(client, "readback", media_id) == "ready", timeout=5)

    assert response.json()["state"] == "processing"
    assert ready and time.monotonic() - sent >= 0.3
    assert oracle(client)[0]["state"] == "ready"


def test_processing_that_fails_ends_failed(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=0.2, media_processing_fails=1.0)
    media_id = upload(client).json()["id"]

    failed = wait_until(lambda: state_of(client, "none", media_id) == "failed", timeout=5)

    assert failed and oracle(client)[0]["state"] == "failed"


def test_processing_that_fails_without_delay_is_failed_at_once(client: httpx.Client) -> None:
    set_faults(client, media_processing_fails=1.0)

    assert upload(client).json()["state"] == "failed"


def test_processing_time_applies_only_to_the_listed_strategies(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=30, strategies=["native"])

    assert upload(client, "native").json()["state"] == "processing"
    assert upload(client, "none").json()["state"] == "ready"


def test_processing_time_is_the_one_at_upload_whatever_the_config_says_later(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=30)
    media_id = uploaded(client)

    set_faults(client)

    assert state_of(client, "none", media_id) == "processing"


def test_media_ids_are_never_reused_not_even_after_a_reset(client: httpx.Client) -> None:
    first = int(uploaded(client, "native").removeprefix("media-"))
    second = int(uploaded(client, "none").removeprefix("media-"))
    client.delete("/sandbox/posts").raise_for_status()
    third = int(uploaded(client, "native").removeprefix("media-"))

    assert first < second < third


def test_an_unknown_or_another_strategys_media_is_not_found(client: httpx.Client) -> None:
    media_id = uploaded(client, "native")

    for path in ("/api/native/media/media-99999", f"/api/readback/media/{media_id}"):
        assert refusal(client.get(path)) == (404, "not_found")


# -- what the platform refuses ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime", "detail"),
    [
        (b"", "image/png", "empty"),
        (b"hello", "text/plain", "text/plain"),
        (PNG, None, "(none)"),
        (PNG, "image/jpeg", "image/jpeg"),
        (JPEG, "image/png", "image/png"),
        (PNG, "image/gif", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "image/webp", "image/webp"),
        (b"\x00\x00\x00\x18moov" + b"\x00" * 16, "video/mp4", "video/mp4"),
        (b"\x89PNG" + b"\x00" * (8 * MB - 3), "image/png", "at most 8388608"),
        (MP4 + b"\x00" * (40 * MB - len(MP4) + 1), "video/mp4", "at most 41943040"),
    ],
    ids=[
        "empty",
        "type",
        "no-type",
        "png-as-jpeg",
        "jpeg-as-png",
        "png-as-gif",
        "riff-not-webp",
        "no-ftyp",
        "8MiB+1",
        "40MiB+1",
    ],
)
def test_a_file_the_platform_does_not_take_is_media_invalid_and_not_stored(
    client: httpx.Client, data: bytes, mime: str | None, detail: str
) -> None:
    response = upload(client, data=data, mime=mime)

    assert refusal(response) == (422, "media_invalid")
    assert detail in response.json()["detail"]
    assert oracle(client) == []


def test_an_image_of_exactly_8_mib_and_a_video_of_exactly_40_mib_are_taken(client: httpx.Client) -> None:
    assert upload(client, data=b"\x89PNG" + b"\x00" * (8 * MB - 4)).status_code == 201
    assert upload(client, data=MP4 + b"\x00" * (40 * MB - len(MP4)), mime="video/mp4").status_code == 201


def test_refuse_media_answers_media_invalid_before_any_fault_after_accept_and_never_hits_a_post(
    client: httpx.Client,
) -> None:
    set_faults(client, refuse_media=1.0, error_after_accept=1.0)

    response = upload(client)

    assert response.status_code == 422
    assert response.json() == {"error": "media_invalid", "detail": "the platform refused the file"}
    assert oracle(client) == []
    assert post(client, "none", None).status_code == 500  # the post's fault: refuse_media is for uploads


def test_uploads_check_the_token_like_posts(client: httpx.Client) -> None:
    client.put("/sandbox/tokens/bad", json={"state": "revoked"}).raise_for_status()
    client.put("/sandbox/tokens/nope", json={"state": "forbidden"}).raise_for_status()

    assert refusal(upload(client, token=None)) == (401, "auth_missing")
    assert refusal(upload(client, token="bad")) == (401, "auth_expired")
    assert refusal(upload(client, token="nope")) == (403, "permission_denied")
    assert oracle(client) == []


# -- faults on uploads --------------------------------------------------------------------


def test_rate_limit_on_an_upload_answers_429_with_retry_after_and_stores_nothing(client: httpx.Client) -> None:
    set_faults(client, rate_limit=1.0, retry_after=4)

    response = upload(client)

    assert response.status_code == 429 and response.headers["Retry-After"] == "4"
    assert oracle(client) == []


def test_error_before_accept_on_an_upload_answers_503_and_stores_nothing(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0)

    assert upload(client).status_code == 503
    assert oracle(client) == []


def test_drop_after_accept_on_an_upload_stores_it_and_never_answers(client: httpx.Client) -> None:
    set_faults(client, drop_after_accept=1.0)

    with pytest.raises(httpx.TransportError):
        upload(client)

    assert [m["sha256"] for m in oracle(client)] == [hashlib.sha256(PNG).hexdigest()]


def test_error_after_accept_on_an_upload_answers_500_but_stores_it(client: httpx.Client) -> None:
    set_faults(client, error_after_accept=1.0)

    assert upload(client).status_code == 500
    assert len(oracle(client)) == 1


def test_hold_after_accept_on_an_upload_stores_it_and_answers_late(client: httpx.Client) -> None:
    set_faults(client, hold_after_accept=1.0, hold_seconds=0.3)

    started = time.monotonic()
    response = upload(client)

    assert response.status_code == 201 and time.monotonic() - started >= 0.3
    assert client.get("/sandbox/held").json()["held"] == [
        {"post_id": response.json()["id"], "fault": "hold_after_accept", "client_closed_after": None, "answered": True}
    ]


def test_trickle_after_accept_on_an_upload_sends_the_whole_answer_a_byte_at_a_time(client: httpx.Client) -> None:
    set_faults(client, trickle_after_accept=1.0, trickle_interval=0.01)

    started = time.monotonic()
    response = upload(client)

    assert response.status_code == 201 and response.json()["state"] == "ready"
    assert time.monotonic() - started >= 0.01 * len(response.content)


def test_targets_media_aims_the_faults_at_uploads_only(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, targets=["media"])

    assert post(client, "none", None).status_code == 201
    assert upload(client).status_code == 503


def test_targets_posts_aims_the_faults_at_posts_only(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, refuse_media=1.0, media_processing_fails=1.0, targets=["posts"])

    response = upload(client)

    assert (response.status_code, response.json()["state"]) == (201, "ready")
    assert post(client, "none", None).status_code == 503


def test_after_and_times_count_only_the_targeted_posts(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, after=1, times=1, targets=["media"])

    statuses = [
        post(client, "none", None).status_code,
        upload(client).status_code,
        post(client, "none", None).status_code,
    ]
    statuses += [upload(client).status_code, upload(client).status_code]

    assert statuses == [201, 201, 201, 503, 201]


def test_after_and_times_count_uploads_and_posts_alike_by_default(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, after=1, times=1)

    assert [upload(client).status_code, post(client, "none", None).status_code, upload(client).status_code] == [
        201,
        503,
        201,
    ]


def test_processing_failure_is_a_counted_fault_too(client: httpx.Client) -> None:
    set_faults(client, media_processing_fails=1.0, after=1, times=1, targets=["media"])

    assert [upload(client).json()["state"] for _ in range(3)] == ["ready", "failed", "ready"]


def test_same_seed_replays_the_same_faults_on_posts_and_uploads(client: httpx.Client) -> None:
    def run() -> list[tuple[int, str]]:
        set_faults(client, error_before_accept=0.3, refuse_media=0.3, media_processing_fails=0.5, seed=42)
        answers = []
        for n in range(20):
            response = upload(client) if n % 2 else post(client, "none", None)
            state = response.json().get("state", "") if response.status_code == 201 else ""
            answers.append((response.status_code, state))
        return answers

    first = run()

    assert {status for status, _ in first} == {201, 422, 503}
    assert {state for _, state in first} >= {"ready", "failed"}
    assert run() == first


def test_media_faults_draw_as_many_values_so_the_post_faults_of_a_seed_stay_the_same(client: httpx.Client) -> None:
    def statuses(**media_faults: float) -> list[int]:
        set_faults(client, error_before_accept=0.5, seed=7, **media_faults)
        return [post(client, "none", None).status_code for _ in range(20)]

    plain = statuses()

    assert set(plain) == {201, 503}
    assert statuses(refuse_media=1.0, media_processing_fails=1.0) == plain


def test_fault_config_has_the_media_fields_with_their_defaults(client: httpx.Client) -> None:
    config = set_faults(client)

    assert (config["media_processing_seconds"], config["media_processing_fails"], config["refuse_media"]) == (0, 0, 0)
    assert config["targets"] == ["posts", "media"]
    assert set_faults(client, targets=["media", "media"])["targets"] == ["media"]


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"targets": ["tweets"]}, "tweets"),
        ({"targets": "media"}, "targets"),
        ({"refuse_media": 2}, "refuse_media"),
        ({"media_processing_fails": -0.1}, "media_processing_fails"),
        ({"media_processing_seconds": -1}, "media_processing_seconds"),
        ({"media_processing_seconds": "soon"}, "media_processing_seconds"),
    ],
)
def test_invalid_media_fault_settings_are_refused_naming_them(client: httpx.Client, body: object, names: str) -> None:
    response = client.put("/sandbox/faults", json=body)

    assert response.status_code == 400
    assert names in response.json()["detail"]


def test_the_cli_sets_targets_as_a_list(client: httpx.Client, server: SandboxServer) -> None:
    done = herald_cmd(
        "sandbox", "fault", "--set", "targets=media", "--set", "media_processing_seconds=2", "--url", server.url
    )

    assert done.returncode == 0, done.stderr
    config = client.get("/sandbox/faults").json()
    assert (config["targets"], config["media_processing_seconds"]) == (["media"], 2.0)


# -- posts that carry media ---------------------------------------------------------------


def test_a_post_carries_two_images_in_order_with_their_alt_text_everywhere_it_is_shown(
    client: httpx.Client, server: SandboxServer
) -> None:
    first, second = uploaded(client, "readback", PNG), uploaded(client, "readback", JPEG, "image/jpeg")

    response = post(client, "readback", [{"id": second, "alt": 'a "cat" <b>'}, {"id": first, "alt": None}])

    assert response.status_code == 201
    post_id = response.json()["id"]
    (stored,) = posts(client)
    assert stored["media"] == [
        {"id": second, "alt": 'a "cat" <b>', "mime": "image/jpeg"},
        {"id": first, "alt": None, "mime": "image/png"},
    ]
    (found,) = client.get("/api/readback/posts", params={"key": "k1"}).json()["posts"]
    assert found["media"] == [
        {"id": second, "alt": 'a "cat" <b>', "mime": "image/jpeg", "url": f"{server.url}/media/{second}"},
        {"id": first, "alt": None, "mime": "image/png", "url": f"{server.url}/media/{first}"},
    ]
    shown_second = f'<img src="/media/{second}" alt="a &quot;cat&quot; &lt;b&gt;">'
    shown_first = f'<img src="/media/{first}" alt="">'
    for page in (client.get("/").text, client.get(f"/p/{post_id}").text):
        assert shown_second in page and shown_first in page
        assert page.index(shown_second) < page.index(shown_first)
        assert "max-width" in page


def test_a_video_is_shown_with_controls_and_a_post_without_media_shows_none(client: httpx.Client) -> None:
    video = uploaded(client, data=MP4, mime="video/mp4")
    assert post(client, "none", [{"id": video, "alt": "a clip"}]).status_code == 201
    assert post(client, "none", []).status_code == 201

    feed = client.get("/").text

    assert f'<video controls src="/media/{video}"' in feed
    assert feed.count("<video") == 1 and "<img" not in feed
    assert [p["media"] for p in posts(client)] == [[{"id": video, "alt": "a clip", "mime": "video/mp4"}], []]


def test_four_media_and_an_alt_of_1500_characters_are_taken(client: httpx.Client) -> None:
    ids = [uploaded(client) for _ in range(4)]

    response = post(client, "none", [{"id": media_id, "alt": "x" * 1500} for media_id in ids])

    assert response.status_code == 201
    assert [m["id"] for m in posts(client)[0]["media"]] == ids


@pytest.mark.parametrize(
    "media",
    [
        "media-1",
        {"id": "media-1"},
        ["media-1"],
        [{"id": 1}],
        [{"alt": "no id"}],
        [{"id": "media-99999"}],
        [{"id": "OTHER"}],
        [{"id": "OWN"}] * 5,
        [{"id": "OWN", "alt": 3}],
        [{"id": "OWN", "alt": "x" * 1501}],
        [{"id": "FAILED"}],
        [{"id": "PROCESSING"}, {"id": "FAILED"}],
    ],
    ids=[
        "string",
        "object",
        "list-of-strings",
        "number-id",
        "no-id",
        "unknown",
        "other-strategy",
        "five",
        "alt-number",
        "alt-too-long",
        "failed",
        "failed-beats-processing",
    ],
)
def test_a_post_with_media_it_cannot_carry_is_media_invalid_and_not_stored(client: httpx.Client, media: Any) -> None:
    ids = {"OWN": uploaded(client, "native"), "OTHER": uploaded(client, "readback")}
    set_faults(client, media_processing_seconds=30)
    ids["PROCESSING"] = uploaded(client, "native")
    set_faults(client, media_processing_fails=1.0)
    ids["FAILED"] = uploaded(client, "native")
    if isinstance(media, list):
        media = [
            {**item, "id": ids.get(item.get("id"), item.get("id"))} if isinstance(item, dict) else item
            for item in media
        ]

    response = post(client, "native", media)

    assert refusal(response) == (422, "media_invalid"), response.text
    assert posts(client) == []


def test_a_post_attaching_media_still_processing_is_media_not_ready_until_it_is_ready(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=30)
    slow = uploaded(client, "native")
    set_faults(client, media_processing_seconds=0.3)
    soon = uploaded(client, "native")

    refused = post(client, "native", [{"id": slow}])

    def sent() -> httpx.Response | None:
        answer = post(client, "native", [{"id": soon}])
        if answer.status_code != 201:
            assert refusal(answer) == (422, "media_not_ready")  # every try until it is ready
            return None
        return answer

    wait_until(sent, timeout=5)
    assert refusal(refused) == (422, "media_not_ready")
    assert slow in refused.json()["detail"]
    assert [p["media"][0]["id"] for p in posts(client)] == [soon]


def test_a_native_replay_answers_the_first_post_whatever_media_it_names(client: httpx.Client) -> None:
    media_id = uploaded(client, "native")
    first = post(client, "native", [{"id": media_id, "alt": "one"}], **{"Idempotency-Key": "k1"})

    again = post(client, "native", [{"id": "media-99999"}], **{"Idempotency-Key": "k1"})

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert [p["media"] for p in posts(client)] == [[{"id": media_id, "alt": "one", "mime": "image/png"}]]


# -- serving, the oracle, a reset ---------------------------------------------------------


def test_media_bytes_are_served_with_their_type(client: httpx.Client) -> None:
    media_id = uploaded(client, data=GIF, mime="image/gif")

    served = client.get(f"/media/{media_id}")

    assert served.status_code == 200
    assert (served.content, served.headers["content-type"]) == (GIF, "image/gif")
    assert refusal(client.get("/media/media-99999")) == (404, "not_found")


def test_the_oracle_lists_every_upload_in_acceptance_order(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=30, strategies=["readback"])
    ids = [
        uploaded(client, "native"),
        uploaded(client, "readback", MP4, "video/mp4"),
        uploaded(client, "none", GIF, "image/gif"),
    ]
    upload(client, mime="text/plain")  # refused: not listed

    listed = oracle(client)

    assert [m["id"] for m in listed] == ids
    assert listed[1] == {
        "id": ids[1],
        "strategy": "readback",
        "mime": "video/mp4",
        "size": len(MP4),
        "sha256": hashlib.sha256(MP4).hexdigest(),
        "state": "processing",
        "token": "t0ken",
        "created_at": listed[1]["created_at"],
    }
    assert [m["state"] for m in listed] == ["ready", "processing", "ready"]


def test_delete_forgets_the_media_too(client: httpx.Client) -> None:
    media_id = uploaded(client, "native")

    client.delete("/sandbox/posts").raise_for_status()

    assert oracle(client) == []
    assert client.get(f"/media/{media_id}").status_code == 404
    assert client.get(f"/api/native/media/{media_id}").status_code == 404


# -- a state file keeps media over a restart ----------------------------------------------


def test_a_restarted_sandbox_keeps_its_media_bytes_states_and_posts(tmp_path: Path) -> None:
    state = tmp_path / "sandbox" / "posts.jsonl"
    with SandboxServer(state=state) as running, httpx.Client(base_url=running.url, timeout=5.0) as http:
        kept = uploaded(http, "native", JPEG, "image/jpeg")
        set_faults(http, media_processing_seconds=3600)
        slow = uploaded(http, "native")
        set_faults(http, media_processing_fails=1.0)
        failed = uploaded(http, "native")
        post_id = post(http, "native", [{"id": kept, "alt": "kept"}]).json()["id"]
        before = oracle(http)

    assert sorted(p.name for p in (tmp_path / "sandbox" / "media").rglob("*") if p.is_file()) == sorted(
        [kept, slow, failed]
    )
    with SandboxServer(state=state) as running, httpx.Client(base_url=running.url, timeout=5.0) as http:
        served = http.get(f"/media/{kept}")
        assert (served.content, served.headers["content-type"]) == (JPEG, "image/jpeg")
        assert oracle(http) == before
        assert [state_of(http, "native", media_id) for media_id in (kept, slow, failed)] == [
            "ready",
            "processing",  # its deadline counts from its creation, not from the restart
            "failed",
        ]
        assert posts(http)[0]["media"] == [{"id": kept, "alt": "kept", "mime": "image/jpeg"}]
        assert f'<img src="/media/{kept}" alt="kept">' in http.get(f"/p/{post_id}").text
        newer = uploaded(http, "native")
        assert int(newer.removeprefix("media-")) > int(failed.removeprefix("media-"))


def test_a_reset_removes_the_media_files_and_a_restart_still_gives_new_ids(tmp_path: Path) -> None:
    state = tmp_path / "posts.jsonl"
    with SandboxServer(state=state) as running, httpx.Client(base_url=running.url, timeout=5.0) as http:
        first = uploaded(http)
        http.delete("/sandbox/posts").raise_for_status()

    assert [p for p in (tmp_path / "media").rglob("*") if p.is_file()] == []
    with SandboxServer(state=state) as running, httpx.Client(base_url=running.url, timeout=5.0) as http:
        assert oracle(http) == []
        assert http.get(f"/media/{first}").status_code == 404
        assert int(uploaded(http).removeprefix("media-")) > int(first.removeprefix("media-"))
