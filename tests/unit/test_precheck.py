"""The pre-publish check's pure parts: which channels check, and the hold's detail that
names the copy found (read back when a person adopts it)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from adapters.sandbox.adapters import SandboxReadback
from core.domain.precheck import copy_found, found_in
from core.plugins.channel_settings import precheck_on


class DearSearch(SandboxReadback):
    """A read_back adapter whose search walks a timeline: not checked unless a channel asks."""

    name: ClassVar[str] = "dear-search"
    cheap_find: ClassVar[bool] = False


@pytest.mark.parametrize(
    ("adapter", "settings", "checks"),
    [
        (SandboxReadback(), {}, True),
        (SandboxReadback(), {"precheck": "false"}, False),
        (SandboxReadback(), {"precheck": "no"}, False),
        (SandboxReadback(), {"precheck": " "}, True),
        (DearSearch(), {}, False),
        (DearSearch(), {"precheck": "true"}, True),
        (DearSearch(), {"precheck": "Yes"}, True),
    ],
)
def test_the_check_is_on_where_find_is_cheap_unless_the_channel_says_otherwise(
    adapter: SandboxReadback, settings: dict[str, str], checks: bool
) -> None:
    assert precheck_on(adapter, settings) is checks


@pytest.mark.parametrize(
    ("url", "platform_id"),
    [
        ("http://127.0.0.1:8025/p/readback-3", "readback-3"),
        ("https://bsky.app/profile/ada.bsky.social/post/3kq", "at://did:plc:x/app.bsky.feed.post/3kq|bafy (cid)"),
    ],
)
def test_the_holds_detail_names_the_copy_and_gives_it_back_whole(url: str, platform_id: str) -> None:
    detail = copy_found(url, platform_id)
    assert url in detail and platform_id in detail
    assert found_in(detail) == (url, platform_id)


def test_a_detail_that_names_no_copy_gives_none() -> None:
    assert found_in(None) is None
    assert found_in("a read-back found 2 copies of part 1 on r1") is None
    assert found_in(copy_found("http://h/p/1", "1") + " (edited)") is None
