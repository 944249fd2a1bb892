"""The composer's files (each beside its part, with its alt text, kept by the media
service) and per-channel threads, counted live against each channel's limit."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from dataclasses import replace

import pytest
from PIL import Image

from adapters.sandbox.adapters import SandboxNative
from core.domain.roles import Role
from core.plugins.adapter import MB
from core.services.finding import PostQuery, list_posts
from core.services.media import list_media
from core.services.posts import show_post
from tests.web.conftest import TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]

SLOT = {"when": "at", "at": "2030-03-01T10:00", "zone": "UTC"}


def picture(color: str = "red", size: tuple[int, int] = (8, 6), kind: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, kind)
    return buffer.getvalue()


def noise(side: int) -> bytes:
    """A PNG of random pixels (they do not compress): about ``3 * side²`` bytes."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(buffer, "PNG", compress_level=0)
    return buffer.getvalue()


def flash(client: TestClient, path: str = "/compose") -> str:
    found = re.search(r'<p class="flash (?:ok|error)" role="\w+">(.*?)</p>', client.get(path).text, re.S)
    assert found, "no message on the page"
    return found.group(1)


def compose(client: TestClient, data: dict[str, object], files: list[tuple[str, tuple[str, bytes, str]]]) -> object:
    token = csrf_of(client.get("/compose").text)
    return client.post(
        "/compose", data={"csrf": token, **data}, files=files, headers={"referer": "http://dash.test/compose"}
    )


def test_each_file_goes_on_its_part_with_its_alt_text(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    page = client.get("/compose").text
    assert 'name="media.1"' in page and 'name="alt.1"' in page
    made = compose(
        client,
        # The blank second box is left out: the third box's files go on part 2.
        {"channel": "a1", "part": ["one", "", "three"], "alt.1": "a red kite", "alt.3": ["a green field", ""], **SLOT},
        [
            ("media.1", ("kite.png", picture("red"), "image/png")),
            ("media.3", ("field.jpg", picture("green", kind="JPEG"), "image/jpeg")),
            ("media.3", ("sky.png", picture("blue"), "image/png")),
        ],
    )
    assert made.status_code == 303, made.text
    post = show_post(int(made.headers["location"].rsplit("/", 1)[1]))
    assert post.texts == ("one", "three")
    assert [[(m.filename, m.mime, m.alt) for m in part] for part in post.media] == [
        [("kite.png", "image/png", "a red kite")],
        [("field.jpg", "image/jpeg", "a green field"), ("sky.png", "image/png", None)],
    ]
    assert {m.filename for m in list_media()} == {"kite.png", "field.jpg", "sky.png"}
    assert "📎 kite.png – alt: a red kite" in client.get(made.headers["location"]).text


def test_a_file_that_is_not_an_image_is_refused_in_one_sentence_naming_it(
    browser: Browser, accounts: dict[str, str]
) -> None:
    client = browser(Role.MANAGER)
    refused = compose(
        client,
        {"channel": "a1", "part": "look", **SLOT},
        [("media.1", ("holiday.png", b"just some text", "image/png"))],
    )
    assert (refused.status_code, refused.headers["location"]) == (303, "/compose")
    said = flash(client)
    assert said.startswith("holiday.png is not an image or a video") and "\n" not in said
    assert list_posts(PostQuery()).rows == () and list_media() == []


def test_an_image_too_big_for_a_channel_is_refused_naming_the_file_and_the_channel(
    browser: Browser, accounts: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SandboxNative, "limits", replace(SandboxNative.limits, max_image_bytes=MB // 10))
    client = browser(Role.MANAGER)
    refused = compose(
        client, {"channel": "a1", "part": "big", **SLOT}, [("media.1", ("poster.png", noise(320), "image/png"))]
    )
    assert refused.status_code == 303
    said = flash(client)
    assert re.fullmatch(r"poster\.png \(media \d+\) is 0\.3 MB; a1 \(sandbox-native\) takes images up to 0\.1 MB", said)
    assert list_posts(PostQuery()).rows == ()


def test_a_file_without_its_part_or_alt_text_without_a_file_is_refused(
    browser: Browser, accounts: dict[str, str]
) -> None:
    client = browser(Role.MANAGER)
    compose(
        client, {"channel": "a1", "part": ["one", " "], **SLOT}, [("media.2", ("kite.png", picture(), "image/png"))]
    )
    assert flash(client) == "part 2 has no text but carries kite.png: give it text, or take the file off"
    compose(
        client,
        {"channel": "a1", "part": "one", "alt.1": "a kite", **SLOT},
        [("media.1", ("", b"", "application/octet-stream"))],
    )
    assert flash(client) == "part 1 has alt text &#39;a kite&#39; but no file: choose the file, or clear it"
    compose(client, {"channel": "a1", "part": "one", **SLOT}, [("media.4", ("kite.png", picture(), "image/png"))])
    assert flash(client).startswith("media.4 names no part of this post")
    assert list_posts(PostQuery()).rows == ()


def test_a_channel_gets_a_thread_of_its_own(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    page = client.get("/compose").text
    assert 'name="text.a1"' in page and "Add a part for a1" in page
    made = compose(
        client, {"channel": "a1", "part": "the post's text", "text.a1": ["a1's first", "", "a1's second"], **SLOT}, []
    )
    assert made.status_code == 303, made.text
    post = show_post(int(made.headers["location"].rsplit("/", 1)[1]))
    assert post.texts == ("the post's text",) and post.channel_texts == {"a1": ("a1's first", "a1's second")}
    assert [p.text for p in post.deliveries[0].parts] == ["a1's first", "a1's second"]


def test_the_live_count_counts_a_channels_own_parts(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    token = csrf_of(client.get("/compose").text)
    answer = client.post(
        "/compose/count",
        data={"channel": "a1", "part": "short", "text.a1": ["x" * 10, "", "y" * 600]},
        headers={"X-CSRF-Token": token},
    )
    rows = answer.text
    assert '<tr class="fits" data-channel="a1"><td>a1</td><td>1 (its own)</td><td>10 / 500' in rows
    assert '<tr class="over" data-channel="a1"><td>a1</td><td>2 (its own)</td><td>600 / 500' in rows
    assert "5 / 500" not in rows  # the post's own text does not go to a1


def test_the_composer_with_files_is_refused_without_its_csrf_token(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    for data in ({}, {"csrf": "not-the-token"}):
        refused = client.post(
            "/compose",
            data={"channel": "a1", "part": "forged", **SLOT, **data},
            files=[("media.1", ("kite.png", picture(), "image/png"))],
        )
        assert refused.status_code == 403
    assert list_posts(PostQuery()).rows == () and list_media() == []
