"""The sandbox speaks Mastodon over real HTTP, as the official docs describe the API
(github.com/mastodon/documentation, content/en/; cited at each test), so the Mastodon
adapter runs end to end against it; its statuses are counted by the oracle like any post."""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.mastodon import Mastodon
from adapters.sandbox.server import SandboxServer
from core.plugins import (
    Attachment,
    AuthExpired,
    MediaNotReady,
    PublishContext,
    RateLimited,
    UploadContext,
    VerifyContext,
    text_length,
)
from core.plugins.adapter import MediaFile
from core.plugins.channel_settings import check_settings
from tests.integration.conftest import wait_until
from tests.integration.sandbox_http import MP4, image

pytestmark = pytest.mark.integration

TOKEN = "mast0don-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STATUSES = "/mastodon/api/v1/statuses"
MEDIA = "/mastodon/api/v2/media"
NOT_READY = "Cannot attach files that have not finished processing. Try again in a moment!"


PNG = image()


def status(
    client: httpx.Client, text: str = "hello", *, key: str | None = None, token: str = TOKEN, **params: Any
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post(STATUSES, json={"status": text, **params}, headers=headers)


def upload(
    client: httpx.Client, data: bytes = PNG, mime: str = "image/png", description: str | None = "a red square"
) -> httpx.Response:
    form = {"description": description} if description is not None else {}
    return client.post(MEDIA, headers=AUTH, files={"file": ("file", data, mime)}, data=form)


def stored(client: httpx.Client) -> list[dict[str, Any]]:
    posts: list[dict[str, Any]] = client.get("/sandbox/posts", params={"strategy": "mastodon"}).json()["posts"]
    return posts


def set_faults(client: httpx.Client, **faults: Any) -> None:
    client.put("/sandbox/faults", json=faults).raise_for_status()


def account_id(client: httpx.Client, token: str = TOKEN) -> str:
    found: str = client.get(
        "/mastodon/api/v1/accounts/verify_credentials", headers={"Authorization": f"Bearer {token}"}
    ).json()["id"]
    return found


# -- accounts and tokens (methods/accounts.md, entities/Error.md) --------------------------


def test_verify_credentials_answers_the_tokens_own_credential_account(client: httpx.Client) -> None:
    # methods/accounts.md#verify_credentials: a CredentialAccount, with `source`.
    response = client.get("/mastodon/api/v1/accounts/verify_credentials", headers=AUTH)

    assert response.status_code == 200
    account = response.json()
    assert account["id"].isdigit() and account["username"] and account["acct"] == account["username"]
    assert account["url"].endswith(f"/@{account['username']}")
    assert account["source"]["privacy"] == "public"
    assert account_id(client) == account["id"]  # the same token, the same account
    assert account_id(client, "another-token") != account["id"]


@pytest.mark.parametrize(
    ("state", "code", "message"),
    [
        # statuses.md#create 401 "Invalid or missing Authorization header"; Doorkeeper's wording
        # for a revoked token, which Mastodon passes on; a token without the scope: 403.
        (None, 401, "The access token is invalid"),
        ("revoked", 401, "The access token was revoked"),
        ("forbidden", 403, "This action is outside the authorized scopes"),
    ],
)
def test_a_missing_revoked_or_forbidden_token_is_refused_in_mastodons_words(
    client: httpx.Client, state: str | None, code: int, message: str
) -> None:
    if state is not None:
        client.put(f"/sandbox/tokens/{TOKEN}", json={"state": state}).raise_for_status()
    headers = AUTH if state is not None else {}

    verify = client.get("/mastodon/api/v1/accounts/verify_credentials", headers=headers)
    post = client.post(STATUSES, json={"status": "hello"}, headers=headers)

    assert (verify.status_code, verify.json()) == (code, {"error": message})
    assert (post.status_code, post.json()) == (code, {"error": message})
    assert stored(client) == []


# -- posting a status (methods/statuses.md#create, entities/Status.md) --------------------


def test_a_new_status_answers_a_status_and_is_counted_by_the_oracle(
    client: httpx.Client, server: SandboxServer
) -> None:
    response = status(client, "hello\n\nworld & co", key="k-1", visibility="unlisted")

    assert response.status_code == 200  # statuses.md#create: 200 OK, a Status
    body = response.json()
    assert body["id"].isdigit()
    assert body["url"] == f"{server.url}/p/{body['id']}"
    assert body["uri"].endswith(f"/statuses/{body['id']}")
    assert body["content"] == "<p>hello</p><p>world &amp; co</p>"
    assert body["visibility"] == "unlisted"
    assert body["in_reply_to_id"] is None and body["media_attachments"] == []
    assert body["account"]["id"] == account_id(client)
    datetime.strptime(body["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ")  # "2019-12-05T11:34:47.196Z"
    [copy] = stored(client)
    assert (copy["id"], copy["strategy"], copy["text"]) == (body["id"], "mastodon", "hello\n\nworld & co")
    assert (copy["key"], copy["idempotency_key"], copy["reply_to"], copy["media"]) == ("k-1", "k-1", None, [])
    assert copy["token"] == TOKEN


def test_a_status_is_taken_as_a_form_too(client: httpx.Client) -> None:
    # statuses.md#create: "Form data parameters", media_ids[] an array.
    media_id = upload(client).json()["id"]
    form = {"status": "from a form", "media_ids[]": [media_id], "visibility": "private"}

    encoded = client.post(STATUSES, headers=AUTH, data=form)
    multipart = client.post(STATUSES, headers=AUTH, data={"status": "multipart"}, files={"x": ("x", b"", "a/b")})

    assert encoded.status_code == 200, encoded.text
    assert encoded.json()["visibility"] == "private"
    assert [m["id"] for m in encoded.json()["media_attachments"]] == [media_id]
    assert multipart.status_code == 200, multipart.text
    assert [copy["text"] for copy in stored(client)] == ["from a form", "multipart"]


def test_a_repeat_with_a_known_key_returns_the_first_status_even_if_its_body_differs(client: httpx.Client) -> None:
    # statuses.md#create Idempotency-Key: "prevent duplicate submissions of the same status".
    first = status(client, "the first", key="same")
    again = status(client, "changed since", key="same", visibility="direct")

    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["content"] == "<p>the first</p>"
    assert [copy["text"] for copy in stored(client)] == ["the first"]


def test_keys_are_kept_per_account(client: httpx.Client) -> None:
    # PostStatusService: the key is "idempotency:status:#{account.id}:#{key}".
    mine = status(client, "mine", key="shared")
    theirs = status(client, "theirs", key="shared", token="someone-else")

    assert mine.json()["id"] != theirs.json()["id"]
    assert len(stored(client)) == 2


def test_the_key_is_stored_only_after_the_status_so_two_requests_at_once_both_post(client: httpx.Client) -> None:
    # PostStatusService checks the key, creates and distributes the status, then stores the
    # key (redis.setex): nothing holds the key meanwhile.
    set_faults(client, mastodon_status_seconds=1.0)
    start = threading.Barrier(2)
    answers: list[httpx.Response] = []

    def post_once() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=10.0) as own:
            start.wait()
            answers.append(status(own, "posted twice", key="raced"))

    threads = [threading.Thread(target=post_once) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    later = status(client, "a repeat, once the key is kept", key="raced")

    assert [answer.status_code for answer in answers] == [200, 200]
    assert len({answer.json()["id"] for answer in answers}) == 2
    assert [copy["text"] for copy in stored(client)] == ["posted twice", "posted twice"]
    assert later.json()["id"] in {answer.json()["id"] for answer in answers}  # remembered by now
    assert len(stored(client)) == 2


def test_a_forgotten_key_posts_again(client: httpx.Client) -> None:
    # "Idempotency keys are stored for up to 1 hour"; forget_keys_after shortens that.
    set_faults(client, forget_keys_after=0, strategies=["mastodon"])

    first = status(client, "once", key="short-lived")
    second = status(client, "twice", key="short-lived")

    assert first.json()["id"] != second.json()["id"]
    assert len(stored(client)) == 2


def test_a_reply_names_its_parent_and_the_parents_account(client: httpx.Client) -> None:
    parent = status(client, "parent").json()

    reply = status(client, "reply", in_reply_to_id=parent["id"])

    assert reply.status_code == 200
    assert reply.json()["in_reply_to_id"] == parent["id"]
    assert reply.json()["in_reply_to_account_id"] == parent["account"]["id"]
    assert stored(client)[1]["reply_to"] == parent["id"]


def test_a_reply_to_a_status_that_does_not_exist_is_404(client: httpx.Client) -> None:
    # StatusesController#set_thread: 404, statuses.errors.in_reply_not_found.
    response = status(client, "reply", in_reply_to_id="999999")

    assert response.status_code == 404
    assert response.json() == {"error": "The post you are trying to reply to does not appear to exist."}
    assert stored(client) == []


def test_text_is_counted_in_graphemes_with_every_url_as_23(client: httpx.Client) -> None:
    # instance.md#v2 max_characters 500, characters_reserved_per_url 23; StatusLengthValidator
    # counts grapheme clusters.
    thumbs = "👍🏽" * 500  # 1000 code points, 500 graphemes
    long_url = "https://example.com/" + "a" * 200  # counts 23

    assert status(client, thumbs).status_code == 200
    assert status(client, "x" * 477 + long_url).status_code == 200
    too_long = status(client, thumbs + "!")

    assert too_long.status_code == 422
    assert too_long.json() == {"error": "Validation failed: Text character limit of 500 exceeded"}
    assert len(stored(client)) == 2


def test_herald_counts_a_status_as_the_instance_does_links_included(
    server: SandboxServer, client: httpx.Client
) -> None:
    # The limits herald reads at channel add (instance.md#v2), applied with herald's own count,
    # agree with what the instance takes on each side of the limit.
    with httpx.Client(timeout=5.0) as http:
        limits = Mastodon().channel_limits(VerifyContext({"base_url": server.url, "token": TOKEN}, http))
    assert limits is not None and (limits.max_chars, limits.url_chars) == (500, 23)
    link = "https://example.com/" + "a" * 200
    texts = ["x" * 477 + link, "x" * 478 + link, "👍🏽" * 476 + " " + link, f"{link} {link} " + "é" * 453]
    for text in texts:
        fits = text_length(text, limits.text_unit, limits.url_chars) <= limits.max_chars
        assert fits == (status(client, text).status_code == 200), text[:20]
    assert [fits for fits in (text_length(t, "graphemes", 23) <= 500 for t in texts)] == [True, False, True, False]


def test_a_blank_status_without_media_is_refused(client: httpx.Client) -> None:
    # statuses.md#create 422: "Validation failed: Text can't be blank".
    response = status(client, "  ")

    assert (response.status_code, response.json()) == (422, {"error": "Validation failed: Text can't be blank"})


def test_parameters_the_sandbox_does_not_implement_are_refused_not_ignored(client: httpx.Client) -> None:
    response = status(client, "a poll", poll={"options": ["a", "b"], "expires_in": 300})

    assert response.status_code == 422
    assert "poll" in response.json()["error"]
    assert stored(client) == []


# -- reading statuses (methods/statuses.md#get, methods/accounts.md#statuses) ---------------


def test_an_accounts_statuses_are_listed_newest_first_and_paged(client: httpx.Client) -> None:
    ids = [status(client, f"s{n}").json()["id"] for n in range(5)]
    status(client, "someone else's", token="other")
    mine = account_id(client)
    path = f"/mastodon/api/v1/accounts/{mine}/statuses"

    everything = client.get(path)
    page = client.get(path, params={"limit": 2})
    older = client.get(path, params={"limit": 2, "max_id": ids[3]})
    just_newer = client.get(path, params={"limit": 2, "min_id": ids[0]})
    since = client.get(path, params={"since_id": ids[2]})

    assert [s["id"] for s in everything.json()] == ids[::-1]
    assert [s["id"] for s in page.json()] == [ids[4], ids[3]]
    assert f"max_id={ids[3]}" in page.headers["Link"] and 'rel="next"' in page.headers["Link"]
    assert [s["id"] for s in older.json()] == [ids[2], ids[1]]
    assert [s["id"] for s in just_newer.json()] == [ids[2], ids[1]]  # "immediately newer than this ID"
    assert [s["id"] for s in since.json()] == [ids[4], ids[3]]
    assert client.get("/mastodon/api/v1/accounts/nobody/statuses").status_code == 404


def test_private_statuses_show_to_their_author_only(client: httpx.Client) -> None:
    secret = status(client, "secret", visibility="private").json()
    path = f"/mastodon/api/v1/accounts/{account_id(client)}/statuses"

    assert client.get(path).json() == []
    assert [s["id"] for s in client.get(path, headers=AUTH).json()] == [secret["id"]]
    assert client.get(f"{STATUSES}/{secret['id']}").status_code == 404
    assert client.get(f"{STATUSES}/{secret['id']}", headers=AUTH).json()["content"] == "<p>secret</p>"


# -- media (methods/media.md) ---------------------------------------------------------------


def test_an_image_is_processed_at_once_and_answered_200_with_its_url(client: httpx.Client) -> None:
    response = upload(client)

    assert response.status_code == 200  # 4.0.0: smaller media processed synchronously
    media = response.json()
    assert (media["type"], media["description"]) == ("image", "a red square")
    assert media["url"].endswith(f"/media/{media['id']}")
    assert client.get(media["url"]).content == PNG


def test_a_video_is_answered_202_with_no_url_then_206_or_200_when_asked(client: httpx.Client) -> None:
    # 202: "the full-size file is still processing ... url will still be null".
    response = upload(client, MP4, "video/mp4")

    assert response.status_code == 202
    assert response.json()["url"] is None and response.json()["type"] == "video"
    polled = client.get(f"/mastodon/api/v1/media/{response.json()['id']}", headers=AUTH)
    assert polled.status_code == 200 and polled.json()["url"]  # processing took no time here


def test_media_still_processing_is_206_and_cannot_be_attached(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=30, strategies=["mastodon"])
    response = upload(client)
    media_id = response.json()["id"]

    polled = client.get(f"/mastodon/api/v1/media/{media_id}", headers=AUTH)
    attached = status(client, "too soon", media_ids=[media_id])

    assert response.status_code == 202 and response.json()["url"] is None
    assert polled.status_code == 206  # "The media attachment is still being processed"
    assert (attached.status_code, attached.json()) == (422, {"error": NOT_READY})
    assert stored(client) == []


def test_media_whose_processing_failed_is_422(client: httpx.Client) -> None:
    set_faults(client, media_processing_seconds=0.2, media_processing_fails=1.0, strategies=["mastodon"])
    media_id = upload(client).json()["id"]

    # media.md#get 422: "There was an error processing the media attachment".
    wait_until(lambda: client.get(f"/mastodon/api/v1/media/{media_id}", headers=AUTH).status_code == 422, 5)
    set_faults(client, media_processing_fails=1.0, strategies=["mastodon"])
    synchronous = upload(client)
    assert synchronous.status_code == 500  # media.md#v2 500: could not generate a thumbnail
    assert synchronous.json() == {"error": "Error processing thumbnail for uploaded media"}


def test_a_status_carries_its_media_in_order_with_their_descriptions(client: httpx.Client) -> None:
    first = upload(client, description="first").json()["id"]
    second = upload(client, image("JPEG"), "image/jpeg", description=None).json()["id"]

    response = status(client, "two images", media_ids=[second, first])

    attachments = response.json()["media_attachments"]
    assert [(a["id"], a["description"]) for a in attachments] == [(second, None), (first, "first")]
    assert [(m["id"], m["alt"]) for m in stored(client)[0]["media"]] == [(second, None), (first, "first")]


def test_media_that_is_not_yours_or_is_attached_already_is_refused(client: httpx.Client) -> None:
    media_id = upload(client).json()["id"]
    status(client, "uses it", media_ids=[media_id]).raise_for_status()

    again = status(client, "uses it again", media_ids=[media_id])
    foreign = status(client, "not mine", media_ids=[media_id], token="other")
    polled = client.get(f"/mastodon/api/v1/media/{media_id}", headers=AUTH)

    assert again.status_code == 422 and media_id in again.json()["error"]
    assert foreign.status_code == 422
    assert polled.status_code == 404  # "MediaAttachment is not owned by you or does not exist"
    assert len(stored(client)) == 1


def test_at_most_four_media_and_a_video_alone(client: httpx.Client) -> None:
    images = [upload(client).json()["id"] for _ in range(5)]
    video = upload(client, MP4, "video/mp4").json()["id"]

    five = status(client, "five", media_ids=images)
    mixed = status(client, "mixed", media_ids=[images[0], video])

    assert (five.status_code, five.json()) == (422, {"error": "Cannot attach more than 4 files"})
    assert mixed.status_code == 422
    assert mixed.json() == {"error": "Cannot attach a video to a post that already contains images"}


def test_a_file_of_an_unsupported_or_false_type_is_refused_422(client: httpx.Client) -> None:
    # media.md#v2 422: "File or file type is unsupported or invalid".
    text_file = upload(client, b"just text", "text/plain")
    lying = upload(client, PNG, "image/jpeg")

    for response in (text_file, lying):
        assert response.status_code == 422
        assert response.json()["error"] == "Validation failed: File content type is invalid, File is invalid"
    assert client.get("/sandbox/media").json()["media"] == []


# -- the instance (methods/instance.md#v2) --------------------------------------------------


def test_the_instance_configuration_gives_the_limits_the_sandbox_enforces(client: httpx.Client) -> None:
    configuration = client.get("/mastodon/api/v2/instance").json()["configuration"]

    assert configuration["statuses"] == {
        "max_characters": 500,
        "max_media_attachments": 4,
        "characters_reserved_per_url": 23,
    }
    media = configuration["media_attachments"]
    assert (media["image_size_limit"], media["video_size_limit"], media["description_limit"]) == (
        16_777_216,
        103_809_024,
        1500,
    )
    assert {"image/png", "image/jpeg", "video/mp4"} <= set(media["supported_mime_types"])


# -- faults ---------------------------------------------------------------------------------


def test_a_rate_limit_answers_429_with_the_docs_headers_and_stores_nothing(client: httpx.Client) -> None:
    # api/rate-limits.md: X-RateLimit-Limit, -Remaining, -Reset ("Timestamp", ISO 8601).
    set_faults(client, rate_limit=1.0, retry_after=30, strategies=["mastodon"])

    response = status(client, "limited", key="k")

    assert (response.status_code, response.json()) == (429, {"error": "Too many requests"})
    assert response.headers["X-RateLimit-Limit"] == "300"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    reset = datetime.fromisoformat(response.headers["X-RateLimit-Reset"].replace("Z", "+00:00"))
    assert 25 < (reset - datetime.now(UTC)).total_seconds() <= 30
    assert stored(client) == []


def test_faults_on_the_sandboxs_own_strategies_leave_mastodon_alone(client: httpx.Client) -> None:
    set_faults(client, error_before_accept=1.0, strategies=["native", "readback", "none"])

    assert status(client, "untouched").status_code == 200


def test_a_status_whose_answer_is_lost_is_stored_and_a_repeat_with_its_key_finds_it(client: httpx.Client) -> None:
    set_faults(client, drop_after_accept=1.0, times=1, strategies=["mastodon"])

    with pytest.raises(httpx.TransportError):
        status(client, "answer lost", key="lost")
    repeat = status(client, "answer lost", key="lost")

    [copy] = stored(client)
    assert repeat.json()["id"] == copy["id"]


def test_a_500_after_accept_and_a_503_before_it(client: httpx.Client) -> None:
    set_faults(client, error_after_accept=1.0, times=1, strategies=["mastodon"])
    after = status(client, "stored, then 500")
    set_faults(client, error_before_accept=1.0, times=1, strategies=["mastodon"])
    before = status(client, "never stored")

    assert after.status_code == 500 and before.status_code == 503
    assert [copy["text"] for copy in stored(client)] == ["stored, then 500"]


def test_upload_faults_hit_media_only_when_targeted(client: httpx.Client) -> None:
    set_faults(client, refuse_media=1.0, targets=["media"], strategies=["mastodon"])

    refused = upload(client)
    posted = status(client, "posts untouched")

    assert refused.status_code == 422
    assert posted.status_code == 200


def test_latency_applies_to_mastodons_routes(client: httpx.Client) -> None:
    set_faults(client, latency=0.3)

    started = time.monotonic()
    client.get("/mastodon/api/v2/instance").raise_for_status()

    assert time.monotonic() - started >= 0.3


# -- the feed and a restart -----------------------------------------------------------------


def test_the_feed_shows_mastodon_statuses(client: httpx.Client) -> None:
    posted = status(client, "seen in the feed").json()

    feed = client.get("/").text
    page = client.get(f"/p/{posted['id']}")

    assert "seen in the feed" in feed and "mastodon" in feed
    assert page.status_code == 200 and "seen in the feed" in page.text


def test_a_restart_keeps_statuses_ids_media_and_remembered_keys(tmp_path: Path) -> None:
    state = tmp_path / "posts.jsonl"
    with SandboxServer(state=state) as first, httpx.Client(base_url=first.url, timeout=5.0) as http:
        media_id = upload(http).json()["id"]
        posted = status(http, "before the restart", key="kept", media_ids=[media_id]).json()
        mine = account_id(http)
    with SandboxServer(state=state) as second, httpx.Client(base_url=second.url, timeout=5.0) as http:
        listed = http.get(f"/mastodon/api/v1/accounts/{mine}/statuses").json()
        repeat = status(http, "after the restart", key="kept").json()
        new = status(http, "a new one").json()

    assert [s["id"] for s in listed] == [posted["id"]]
    assert listed[0]["media_attachments"][0]["description"] == "a red square"
    assert repeat["id"] == posted["id"]  # the key outlived the restart
    assert int(new["id"]) > int(posted["id"])


# -- the Mastodon adapter, end to end ---------------------------------------------------------


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


def test_the_mastodon_adapter_posts_a_thread_with_an_image_once_per_key(server: SandboxServer) -> None:
    adapter = Mastodon()
    settings = {"base_url": server.url, "token": "abcd-1234-efgh"}  # the root: no path, as the adapter asks
    with httpx.Client(timeout=5.0) as http:
        http.delete(f"{server.url}/sandbox/posts").raise_for_status()
        assert check_settings(Mastodon, settings) is None
        who = adapter.verify(VerifyContext(settings, http))
        limits = adapter.channel_limits(VerifyContext(settings, http))
        uploaded = adapter.upload(UploadContext(settings, http, media_file(), key="k" * 25))
        image = (Attachment(uploaded.platform_id, "a red square", "image/png"),)
        first = adapter.publish(PublishContext(settings, http, key="a" * 25, text="part one", media=image))
        resent = adapter.publish(PublishContext(settings, http, key="a" * 25, text="part one", media=image))
        reply = adapter.publish(
            PublishContext(settings, http, key="b" * 25, text="part two", reply_to=first.platform_id, part_index=1)
        )
        posts = http.get(f"{server.url}/sandbox/posts").json()["posts"]

    assert who.startswith("@herald_")
    assert limits is not None and (limits.max_chars, limits.max_media, limits.max_image_bytes) == (500, 4, 16_777_216)
    assert uploaded.ready
    assert resent == first  # the Idempotency-Key: the first status again
    assert [(p["id"], p["strategy"], p["text"], p["reply_to"]) for p in posts] == [
        (first.platform_id, "mastodon", "part one", None),
        (reply.platform_id, "mastodon", "part two", first.platform_id),
    ]
    assert posts[0]["media"] == [{"id": uploaded.platform_id, "alt": "a red square", "mime": "image/png"}]


def test_the_mastodon_adapter_waits_for_processing_and_reads_the_rate_limit(server: SandboxServer) -> None:
    adapter = Mastodon()
    settings = {"base_url": server.url, "token": "abcd-1234-efgh"}
    with httpx.Client(timeout=5.0) as http:
        http.delete(f"{server.url}/sandbox/posts").raise_for_status()
        http.put(f"{server.url}/sandbox/faults", json={"media_processing_seconds": 30}).raise_for_status()
        uploaded = adapter.upload(UploadContext(settings, http, media_file(), key="k" * 25))
        ready = adapter.media_ready(UploadContext(settings, http, media_file(), key="k" * 25), uploaded.platform_id)
        image = (Attachment(uploaded.platform_id, "a red square", "image/png"),)
        with pytest.raises(MediaNotReady):
            adapter.publish(PublishContext(settings, http, key="a" * 25, text="too soon", media=image))
        http.put(f"{server.url}/sandbox/faults", json={"rate_limit": 1.0, "retry_after": 20}).raise_for_status()
        with pytest.raises(RateLimited) as limited:
            adapter.publish(PublishContext(settings, http, key="a" * 25, text="limited"))
        http.put(f"{server.url}/sandbox/tokens/abcd-1234-efgh", json={"state": "revoked"}).raise_for_status()
        http.put(f"{server.url}/sandbox/faults", json={}).raise_for_status()
        with pytest.raises(AuthExpired):
            adapter.publish(PublishContext(settings, http, key="a" * 25, text="revoked"))

    assert (uploaded.ready, ready) == (False, False)
    assert limited.value.retry_after is not None and 18 <= limited.value.retry_after <= 21
