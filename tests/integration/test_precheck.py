"""The pre-publish check (issue 16 point 4): before a part's first send on a read_back
channel herald looks for it, and a copy it did not send holds the delivery
``duplicate_suspected`` for a person – adopt it, or publish anyway – never a silent skip,
never a second copy unasked.

Most tests run the job in this process with the injected clock; one runs a real worker
and the CLI. The platform is the real sandbox; its copies are the oracle, and the
adapter's own ``find`` is counted where a test must see whether herald searched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from adapters.sandbox.adapters import SandboxReadback
from core.config import Settings
from core.domain.errors import Conflict, UserError
from core.domain.keys import delivery_key
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason
from core.plugins.adapter import PublishContext, Published
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.posts import create_post, show_post
from core.services.support import Adopt, Landed, SendAgain, resolve_post, retry_post
from core.services.timeline import timeline
from core.store import db
from core.store.models import Post, Publication
from tests.integration.conftest import Sandbox, Workers, post_json, wait_until
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def _key(post_id: int, idx: int = 0) -> str:
    """The delivery key herald gives part ``idx`` of the post's one delivery (§4)."""
    with db.reading() as s:
        post = s.get_one(Post, post_id)
        (delivery,) = post.deliveries
        return delivery_key(post.id, delivery.channel_id, post.scheduled_at, post.revision, idx)


def placed_copy(sandbox_url: str, post_id: int, text: str, idx: int = 0) -> dict[str, Any]:
    """A copy of the part put on the platform behind herald's back (another tool, say),
    carrying the key herald's send would: its id and URL as the platform answered."""
    answer = httpx.post(
        f"{sandbox_url}/api/readback/posts",
        json={"text": text, "key": _key(post_id, idx)},
        headers={"Authorization": "Bearer t-ok"},
    )
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    return body


def _delivery(post_id: int) -> Any:
    (delivery,) = show_post(post_id).deliveries
    return delivery


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys herald looked up on the read_back platform, in order: the adapter's own
    ``find``, counted as it runs."""
    seen: list[str] = []
    find: Callable[[SandboxReadback, PublishContext], Published | None] = SandboxReadback.find

    def counted(self: SandboxReadback, ctx: PublishContext) -> Published | None:
        seen.append(ctx.key)
        return find(self, ctx)

    monkeypatch.setattr(SandboxReadback, "find", counted)
    return seen


def held_with_copy(channel: str, sandbox_url: str, parts: list[str] | None = None) -> tuple[int, dict[str, Any]]:
    """A post on ``channel`` whose first part was on the platform before herald sent it."""
    texts = parts or ["already out"]
    post_id = create_post(channels=[channel], parts=texts)
    copy = placed_copy(sandbox_url, post_id, texts[0])
    job.publish_post(post_id)
    held = _delivery(post_id)
    assert (held.status, held.reason) == (DeliveryStatus.HELD, Reason.DUPLICATE_SUSPECTED)
    return post_id, copy


def test_a_copy_placed_before_the_slot_holds_the_delivery_and_a_worker_sends_no_second(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, workers: Workers
) -> None:
    post_id = create_post(
        channels=[channels["readback"]], parts=["out before its slot"], at=datetime.now(UTC) + timedelta(seconds=3)
    )
    copy = placed_copy(sandbox_url, post_id, "out before its slot")
    workers.start()

    wait_until(lambda: post_json(post_id)["status"] == "held", timeout=30)
    (delivery,) = post_json(post_id)["deliveries"]
    assert (delivery["status"], delivery["reason"]) == ("held", "duplicate_suspected")
    assert copy["url"] in delivery["detail"] and f"platform id {copy['id']}" in delivery["detail"]
    assert "herald post resolve POST --channel NAME adopt" in delivery["action"]
    assert [p["id"] for p in platform.posts("readback")] == [copy["id"]]  # no second copy
    assert delivery["parts"][0]["state"] == "unsent"

    # A person settles it from the command line.
    adopted = herald_cmd("post", "resolve", str(post_id), "adopt", "--channel", channels["readback"])
    assert adopted.returncode == 0, adopted.stderr
    assert f"adopted: recorded as published at {copy['url']} (platform id {copy['id']})" in adopted.stdout
    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts("readback")) == 1


def test_adopting_the_copy_records_it_published_there_and_sends_nothing(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock
) -> None:
    post_id, copy = held_with_copy(channels["readback"], sandbox_url)

    done = resolve_post(post_id, channels["readback"], Adopt(), clock=clock)
    assert (done.outcome, done.part, done.url, done.platform_id) == ("adopt", 0, copy["url"], copy["id"])
    assert (done.delivery_status, done.post_status) == (DeliveryStatus.PUBLISHED, PostStatus.PUBLISHED)
    job.publish_post(post_id)

    adopted = _delivery(post_id)
    assert (adopted.status, adopted.url, adopted.platform_id) == (DeliveryStatus.PUBLISHED, copy["url"], copy["id"])
    with db.reading() as s:
        (publication,) = s.query(Publication).filter(Publication.post_id == post_id).all()
        assert (publication.url, publication.platform_id) == (copy["url"], copy["id"])
    assert [p["id"] for p in platform.posts("readback")] == [copy["id"]]
    (action,) = timeline(post_id).deliveries[0].actions
    assert action.action == "adopt" and copy["url"] in action.detail


def test_an_adopted_first_part_is_what_the_rest_of_the_thread_replies_to(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock
) -> None:
    post_id, copy = held_with_copy(channels["readback"], sandbox_url, ["one/3", "two/3", "three/3"])

    done = resolve_post(post_id, channels["readback"], Adopt(), clock=clock)
    assert (done.delivery_status, done.post_status) == (DeliveryStatus.PENDING, PostStatus.PUBLISHING)
    job.publish_post(post_id)

    assert _delivery(post_id).status is DeliveryStatus.PUBLISHED
    copies = platform.posts("readback")
    assert [(p["text"], p["reply_to"]) for p in copies] == [
        ("one/3", None),
        ("two/3", copy["id"]),
        ("three/3", copies[1]["id"]),
    ]


def test_publishing_anyway_makes_one_second_copy_and_publishes(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock, searches: list[str]
) -> None:
    post_id, copy = held_with_copy(channels["readback"], sandbox_url)

    done = resolve_post(post_id, channels["readback"], SendAgain(), clock=clock)
    assert (done.outcome, done.delivery_status) == ("send_again", DeliveryStatus.PENDING)
    job.publish_post(post_id)
    job.publish_post(post_id)  # and nothing more

    sent = _delivery(post_id)
    assert sent.status is DeliveryStatus.PUBLISHED and sent.platform_id != copy["id"]
    assert [p["key"] for p in platform.posts("readback")] == [_key(post_id)] * 2
    assert searches == [_key(post_id)]  # the send a person let through skipped the check
    (action,) = timeline(post_id).deliveries[0].actions
    assert action.action == "send_again" and "published anyway" in action.detail and copy["url"] in action.detail


def test_with_no_copy_each_part_is_checked_before_its_first_send_and_never_after(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, searches: list[str]
) -> None:
    # Part 2's first send is refused with a 503 (nothing stored): its retry is not a first send.
    platform.faults(error_before_accept=1.0, after=1, times=1, strategies=["readback"])
    post_id = create_post(channels=[channels["readback"]], parts=["a/3", "b/3", "c/3"])
    job.publish_post(post_id)
    assert (_delivery(post_id).status, _delivery(post_id).progress) == (DeliveryStatus.RETRY_WAIT, "1/3")
    clock.advance(30)
    job.publish_post(post_id)

    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert searches == [_key(post_id, 0), _key(post_id, 1), _key(post_id, 2)]
    assert [p["text"] for p in platform.posts("readback")] == ["a/3", "b/3", "c/3"]


def test_a_copy_of_a_later_part_holds_the_thread_there_and_publishing_anyway_lets_only_that_part_through(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["first/3", "second/3", "third/3"])
    second = placed_copy(sandbox_url, post_id, "second/3", idx=1)
    third = placed_copy(sandbox_url, post_id, "third/3", idx=2)
    job.publish_post(post_id)

    held = _delivery(post_id)
    assert (held.status, held.reason, held.progress) == (DeliveryStatus.HELD, Reason.DUPLICATE_SUSPECTED, "1/3")
    assert second["url"] in (held.detail or "")

    resolve_post(post_id, channels["readback"], SendAgain(), clock=clock)
    job.publish_post(post_id)
    held = _delivery(post_id)
    assert (held.status, held.reason, held.progress) == (DeliveryStatus.HELD, Reason.DUPLICATE_SUSPECTED, "2/3")
    assert third["url"] in (held.detail or "")
    assert [p["text"] for p in platform.posts("readback")] == ["second/3", "third/3", "first/3", "second/3"]


def test_the_check_turned_off_on_a_channel_searches_nothing_before_the_first_send(
    herald: Settings, platform: Sandbox, sandbox_url: str, clock: ManualClock, searches: list[str]
) -> None:
    add_channel("r2", "sandbox-readback", {"base_url": sandbox_url, "token": "t-ok", "precheck": "false"})
    post_id = create_post(channels=["r2"], parts=["unchecked"])
    placed_copy(sandbox_url, post_id, "unchecked")
    job.publish_post(post_id)

    assert _delivery(post_id).status is DeliveryStatus.PUBLISHED
    assert searches == []
    assert len(platform.posts("readback")) == 2  # the copy there, and herald's: nobody looked


def test_a_search_that_fails_sends_nothing_parks_the_delivery_and_looks_again_on_the_retry(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock, herald: Settings
) -> None:
    platform.faults(latency=herald.call_timeout + 1.0)  # the search outlasts its deadline
    post_id = create_post(channels=[channels["readback"]], parts=["search down"])
    job.publish_post(post_id)

    parked = _delivery(post_id)
    assert parked.status is DeliveryStatus.RETRY_WAIT and parked.reason is None
    assert parked.parts[0].state is PartState.UNSENT  # not in doubt: nothing was sent
    assert "the search before the first send failed, so nothing was sent" in (parked.detail or "")
    assert platform.posts("readback") == []

    # Meanwhile something else publishes it: the retry looks again, and holds.
    platform.faults()
    copy = placed_copy(sandbox_url, post_id, "search down")
    clock.advance(30)
    job.publish_post(post_id)

    held = _delivery(post_id)
    assert (held.status, held.reason) == (DeliveryStatus.HELD, Reason.DUPLICATE_SUSPECTED)
    assert [p["id"] for p in platform.posts("readback")] == [copy["id"]]


def test_only_resolve_lifts_the_hold_and_adopt_fits_no_other(
    channels: dict[str, str], sandbox_url: str, clock: ManualClock
) -> None:
    post_id, copy = held_with_copy(channels["readback"], sandbox_url)
    with pytest.raises(UserError, match=rf"duplicate_suspected: .*`herald post resolve {post_id} --channel r1 adopt`"):
        retry_post(post_id, clock=clock)

    other = create_post(channels=[channels["readback"]], parts=["published"])
    job.publish_post(other)
    with pytest.raises(Conflict, match=r"is published, not an attempt in doubt .* nor a copy found before its first"):
        resolve_post(other, channels["readback"], Adopt(), clock=clock)

    # A person may also say where the copy is themselves.
    done = resolve_post(post_id, channels["readback"], Landed(copy["url"]), clock=clock)
    assert (done.outcome, done.platform_id, done.post_status) == ("landed", copy["id"], PostStatus.PUBLISHED)
