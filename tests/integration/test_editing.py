"""Editing, per-channel text, drafts and idempotent create (§13, §15), through the services.

The publish job runs in this process with the injected clock (``clock`` fixture), so a
slot is reached by setting the clock, not by waiting; the platform is the real sandbox,
and counting its copies is the oracle for "sent exactly once".
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from rq.job import Job
from sqlalchemy import func, select

from adapters.sandbox.adapters import SandboxNone
from core.config import Settings
from core.domain.errors import Conflict, NotFound, UserError
from core.domain.keys import delivery_key
from core.plugins.adapter import Limits
from core.runtime import job
from core.runtime.arming import job_id
from core.runtime.clock import ManualClock
from core.runtime.queue import post_queue
from core.services.channels import add_channel, reconnect_channel
from core.services.editing import EditMode, PostEdit, edit_post, schedule_draft
from core.services.posts import cancel_post, create_post, submit_post
from core.store import db
from core.store.models import Attempt, Channel, Delivery, IdempotencyKey, Post
from reconciler.tick import tick
from tests.integration.conftest import Sandbox, post_json

pytestmark = pytest.mark.integration


def deliveries(post_id: int) -> dict[str, dict[str, Any]]:
    return {d["channel"]: d for d in post_json(post_id)["deliveries"]}


def part_texts(post_id: int) -> dict[str, list[str]]:
    """Channel → the text of each part its delivery carries."""
    with db.reading() as s:
        post = s.get_one(Post, post_id)
        return {d.channel.name: [p.text for p in d.parts] for d in post.deliveries}


def channel_id(name: str) -> int:
    with db.reading() as s:
        return s.execute(select(Channel.id).where(Channel.name == name)).scalar_one()


def slot_of(post_id: int) -> Any:
    with db.reading() as s:
        return s.get_one(Post, post_id).scheduled_at


def has_job(post_id: int) -> bool:
    return Job.exists(job_id(post_id), connection=post_queue().connection)


# -- editing before anything has published -------------------------------------------------


def test_an_edit_before_publishing_changes_every_key_and_the_edited_text_goes_out_once(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    native = channels["native"]
    # The first try provably fails (503: nothing stored), leaving the key it was sent with.
    platform.faults(error_before_accept=1.0, times=1)
    post_id = create_post(channels=[native], parts=["first draft, part 1", "first draft, part 2"])
    job.publish_post(post_id)
    (tried,) = deliveries(post_id).values()
    assert tried["status"] == "retry_wait" and platform.posts() == []
    old_key = tried["parts"][0]["key"]
    slot = slot_of(post_id)
    assert old_key == delivery_key(post_id, channel_id(native), slot, 1, 0)

    result = edit_post(post_id, PostEdit(parts=("edited, part 1", "edited, part 2")))

    assert (result.post_id, result.revision, result.mode) == (post_id, 2, None)
    assert [p["key"] for p in deliveries(post_id)[native]["parts"]] == [None, None]  # no stale key kept
    clock.set(clock.now() + timedelta(seconds=5))  # past the retry's backoff
    job.publish_post(post_id)

    sent = platform.posts("native")
    assert [p["text"] for p in sent] == ["edited, part 1", "edited, part 2"]
    new_keys = [delivery_key(post_id, channel_id(native), slot, 2, i) for i in range(2)]
    assert [p["idempotency_key"] for p in sent] == new_keys
    assert old_key not in new_keys
    shown = deliveries(post_id)[native]
    assert shown["status"] == "published"
    assert [p["key"] for p in shown["parts"]] == new_keys
    job.publish_post(post_id)  # a second run sends nothing more
    assert len(platform.posts()) == 2


def test_an_edit_moves_the_slot_adds_and_takes_off_channels_and_arms_the_post_again(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    slot = clock.now() + timedelta(hours=2)
    post_id = create_post(channels=[channels["native"], channels["none"]], parts=["before"], at=slot)
    new_slot = clock.now() + timedelta(minutes=40)  # into the arming horizon

    result = edit_post(
        post_id,
        PostEdit(parts=("after",), channels=(channels["native"], channels["readback"]), at=new_slot, zone="Asia/Tokyo"),
    )

    assert (result.added, result.removed, result.cancelled) == (("r1",), ("x1",), ())
    info = post_json(post_id)
    assert (info["status"], info["revision"], info["zone"]) == ("scheduled", 2, "Asia/Tokyo")
    assert {d["channel"]: d["status"] for d in info["deliveries"]} == {"n1": "pending", "r1": "pending"}
    scheduled = post_queue().scheduled_job_registry
    assert scheduled.get_scheduled_time(job_id(post_id)).replace(microsecond=0) <= new_slot  # moved earlier
    clock.set(new_slot)
    job.publish_post(post_id)

    assert sorted((p["strategy"], p["text"]) for p in platform.posts()) == [("native", "after"), ("readback", "after")]
    assert post_json(post_id)["status"] == "published"


def test_a_channel_taken_off_after_a_failed_try_is_cancelled_and_keeps_its_attempts(
    herald: Settings, sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    platform.token("t-gone", "revoked")
    add_channel("lapsed", "sandbox-readback", {"base_url": sandbox_url, "token": "t-gone"})
    add_channel("fine", "sandbox-native", {"base_url": sandbox_url})
    post_id = create_post(channels=["lapsed"], parts=["one"], at=clock.now())
    job.publish_post(post_id)
    assert deliveries(post_id)["lapsed"]["reason"] == "auth_expired"

    result = edit_post(post_id, PostEdit(channels=("fine",)))

    assert (result.added, result.removed, result.cancelled) == (("fine",), (), ("lapsed",))
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Attempt)).scalar_one() == 1
    job.publish_post(post_id)
    assert [p["text"] for p in platform.posts()] == ["one"]
    assert {d: v["status"] for d, v in deliveries(post_id).items()} == {"lapsed": "cancelled", "fine": "published"}
    with pytest.raises(Conflict, match="cannot be added back"):
        edit_post(post_id, PostEdit(channels=("fine", "lapsed")), mode=EditMode.CORRECT)


def test_an_edit_is_refused_while_an_attempt_is_in_doubt_and_says_how_to_resolve_it(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    # The platform stores the post and drops the connection: it may have landed.
    platform.faults(drop_after_accept=1.0, times=1, strategies=["readback"])
    post_id = create_post(channels=[channels["readback"]], parts=["in doubt"])
    job.publish_post(post_id)
    assert deliveries(post_id)["r1"]["parts"][0]["state"] == "sending"

    with pytest.raises(Conflict) as refused:
        edit_post(post_id, PostEdit(parts=("changed",)))

    message = str(refused.value)
    assert "attempt in doubt on r1" in message
    assert f"herald post resolve {post_id} --channel r1 landed --url URL" in message and "send-again" in message
    assert post_json(post_id)["revision"] == 1
    assert [p["text"] for p in platform.posts()] == ["in doubt"]


def test_a_cancelled_post_a_stale_revision_and_bad_content_are_refused(
    channels: dict[str, str], clock: ManualClock
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["x"], at=clock.now() + timedelta(hours=1))
    with pytest.raises(UserError, match="nothing to change"):
        edit_post(post_id, PostEdit())
    with pytest.raises(UserError, match=r"part 2 of .* is empty"):
        edit_post(post_id, PostEdit(parts=("fine", " ")))
    with pytest.raises(NotFound, match="no channel named nope"):
        edit_post(post_id, PostEdit(channels=("nope",)))
    with pytest.raises(UserError, match="unknown time zone 'Mars/Olympus'"):
        edit_post(post_id, PostEdit(zone="Mars/Olympus"))
    with pytest.raises(UserError, match="allows 500"):
        edit_post(post_id, PostEdit(parts=("x" * 501,)))
    edit_post(post_id, PostEdit(parts=("y",)), revision=1)
    with pytest.raises(Conflict, match="edited since revision 1 \\(it is at 2\\)"):
        edit_post(post_id, PostEdit(parts=("z",)), revision=1)
    cancel_post(post_id)
    with pytest.raises(Conflict, match="cancelled and cannot be edited"):
        edit_post(post_id, PostEdit(parts=("y",)))
    with pytest.raises(NotFound, match="no post 999"):
        edit_post(999, PostEdit(parts=("y",)))


# -- editing after a channel has published ---------------------------------------------


def published_post(channels: dict[str, str], platform: Sandbox, *names: str) -> int:
    post_id = create_post(channels=[channels[n] for n in names], parts=["as published"])
    job.publish_post(post_id)
    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts()) == len(names)
    return post_id


def test_editing_a_published_post_without_a_choice_names_both_choices(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = published_post(channels, platform, "native")
    with pytest.raises(Conflict) as refused:
        edit_post(post_id, PostEdit(parts=("typo fixed",)))
    assert "--correct" in str(refused.value) and "--republish" in str(refused.value)
    assert post_json(post_id)["revision"] == 1


def test_correct_fixes_the_record_leaves_the_one_platform_copy_and_says_it_was_not_edited(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = published_post(channels, platform, "native")

    result = edit_post(post_id, PostEdit(parts=("typo fixed",)), mode=EditMode.CORRECT)

    assert (result.post_id, result.mode, result.revision, result.republished_from) == (
        post_id,
        EditMode.CORRECT,
        2,
        None,
    )
    (copy,) = result.unchanged_copies
    assert (copy.channel, copy.note) == ("n1", "the platform copy was not edited: sandbox-native cannot edit")
    assert copy.url == deliveries(post_id)["n1"]["url"]
    with db.reading() as s:
        assert [p["text"] for p in s.get_one(Post, post_id).parts] == ["typo fixed"]
    job.publish_post(post_id)
    tick()
    assert [p["text"] for p in platform.posts()] == ["as published"]  # one copy, as it was
    assert post_json(post_id)["status"] == "published"
    with pytest.raises(Conflict, match="slot cannot be moved"):
        edit_post(post_id, PostEdit(at=clock.now() + timedelta(hours=1)), mode=EditMode.CORRECT)


def test_correct_on_a_partly_published_post_sends_the_corrected_text_where_it_had_not_gone(
    herald: Settings, sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    platform.token("t-later", "revoked")
    add_channel("out", "sandbox-native", {"base_url": sandbox_url})
    add_channel("later", "sandbox-readback", {"base_url": sandbox_url, "token": "t-later"})
    post_id = create_post(channels=["out", "later"], parts=["first version"])
    job.publish_post(post_id)
    assert {d: v["status"] for d, v in deliveries(post_id).items()} == {"out": "published", "later": "held"}

    result = edit_post(post_id, PostEdit(parts=("corrected version",)), mode=EditMode.CORRECT)
    assert [c.channel for c in result.unchanged_copies] == ["out"]
    reconnect_channel("later", {"token": "t-renewed"})
    job.publish_post(post_id)

    assert sorted((p["strategy"], p["text"]) for p in platform.posts()) == [
        ("native", "first version"),
        ("readback", "corrected version"),
    ]
    later = deliveries(post_id)["later"]
    assert later["parts"][0]["key"] == delivery_key(post_id, channel_id("later"), slot_of(post_id), 2, 0)


def test_correct_on_a_thread_stopped_part_way_rewrites_only_the_parts_not_yet_out(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    platform.faults(error_before_accept=1.0, after=1, times=1)  # part 2's first try: 503, nothing stored
    post_id = create_post(channels=[channels["native"]], parts=["1/3", "2/3 tpyo", "3/3"])
    job.publish_post(post_id)
    (stopped,) = deliveries(post_id).values()
    assert (stopped["status"], stopped["progress"]) == ("retry_wait", "1/3")
    with pytest.raises(Conflict, match="choose --correct"):
        edit_post(post_id, PostEdit(parts=("1/3", "2/3 typo fixed", "3/3")))
    with pytest.raises(Conflict, match="must have more than 1 part"):
        edit_post(post_id, PostEdit(parts=("all in one",)), mode=EditMode.CORRECT)

    edit_post(post_id, PostEdit(parts=("1/3 (reworded, too late)", "2/3 typo fixed", "3/3")), mode=EditMode.CORRECT)
    clock.set(clock.now() + timedelta(seconds=5))
    job.publish_post(post_id)

    sent = platform.posts("native")
    assert [p["text"] for p in sent] == ["1/3", "2/3 typo fixed", "3/3"]
    assert [p["reply_to"] for p in sent] == [None, sent[0]["id"], sent[1]["id"]]
    assert part_texts(post_id)["n1"] == ["1/3", "2/3 typo fixed", "3/3"]  # the record says what went out


def test_a_channel_that_has_published_cannot_be_taken_off(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = published_post(channels, platform, "native", "readback")
    with pytest.raises(Conflict, match="has published on r1, so that channel cannot be taken off"):
        edit_post(post_id, PostEdit(channels=("n1",)), mode=EditMode.CORRECT)
    assert post_json(post_id)["revision"] == 1


def test_republish_makes_a_new_post_with_its_own_keys_and_a_second_copy_and_leaves_the_old_one(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = published_post(channels, platform, "native")

    result = edit_post(post_id, PostEdit(parts=("second edition",)), mode=EditMode.REPUBLISH)

    assert result.post_id != post_id and result.republished_from == post_id
    assert (result.revision, result.mode) == (1, EditMode.REPUBLISH)
    job.publish_post(result.post_id)
    copies = platform.posts("native")
    assert [p["text"] for p in copies] == ["as published", "second edition"]
    assert copies[0]["idempotency_key"] != copies[1]["idempotency_key"]
    old = post_json(post_id)
    assert (old["status"], old["revision"]) == ("published", 1)
    assert post_json(result.post_id)["status"] == "published"


def test_republish_of_a_post_that_has_not_published_is_refused(channels: dict[str, str], clock: ManualClock) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["x"], at=clock.now() + timedelta(hours=1))
    with pytest.raises(Conflict, match="has not published anywhere"):
        edit_post(post_id, PostEdit(parts=("y",)), mode=EditMode.REPUBLISH)
    # --correct on it is a plain edit.
    assert edit_post(post_id, PostEdit(parts=("y",)), mode=EditMode.CORRECT).mode is None


# -- per-channel text ------------------------------------------------------------------


def test_per_channel_text_reaches_that_channel_only(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = create_post(
        channels=[channels["native"], channels["none"]],
        parts=["the thread, 1/2", "the thread, 2/2"],
        channel_texts={channels["none"]: ["the one-part version"]},
    )
    job.publish_post(post_id)

    assert [p["text"] for p in platform.posts("native")] == ["the thread, 1/2", "the thread, 2/2"]
    assert [p["text"] for p in platform.posts("none")] == ["the one-part version"]
    with db.reading() as s:
        assert [p["text"] for p in s.get_one(Post, post_id).parts] == ["the thread, 1/2", "the thread, 2/2"]


def test_per_channel_text_in_an_edit_and_back_to_the_posts_text(channels: dict[str, str], clock: ManualClock) -> None:
    slot = clock.now() + timedelta(hours=1)
    post_id = create_post(
        channels=[channels["native"], channels["none"]], parts=["shared"], channel_texts={"x1": ["own"]}, at=slot
    )
    edit_post(post_id, PostEdit(parts=("shared, edited",)))  # x1 keeps its own text
    assert part_texts(post_id) == {
        "n1": ["shared, edited"],
        "x1": ["own"],
    }
    edit_post(post_id, PostEdit(channel_texts={"n1": ("n1's own",), "x1": ()}))  # () puts x1 back
    assert part_texts(post_id) == {
        "n1": ["n1's own"],
        "x1": ["shared, edited"],
    }


def test_limits_are_checked_against_the_text_each_channel_gets(
    channels: dict[str, str], clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SandboxNone, "limits", Limits(max_chars=40, threads=False))
    thread = ["a thread that is longer than forty characters, part 1", "part 2"]
    with pytest.raises(UserError, match=r"x1 .* does not support threads"):
        create_post(channels=["n1", "x1"], parts=thread)
    with pytest.raises(UserError, match="part 1 for x1 has 41 characters"):
        create_post(channels=["n1", "x1"], parts=thread, channel_texts={"x1": ["y" * 41]})
    post_id = create_post(channels=["n1", "x1"], parts=thread, channel_texts={"x1": ["short"]})
    assert part_texts(post_id)["x1"] == ["short"]
    with pytest.raises(UserError, match=r"x1 .* does not support threads"):
        edit_post(post_id, PostEdit(channel_texts={"x1": ()}))


def test_per_channel_text_for_a_channel_the_post_does_not_go_to_is_refused(
    channels: dict[str, str], clock: ManualClock
) -> None:
    with pytest.raises(UserError, match="--channel-text names r1, which the post does not go to"):
        create_post(channels=["n1"], parts=["x"], channel_texts={"r1": ["y"]})
    post_id = create_post(channels=["n1"], parts=["x"], at=clock.now() + timedelta(hours=1))
    with pytest.raises(UserError, match=f"names r1, which post {post_id} does not go to"):
        edit_post(post_id, PostEdit(channel_texts={"r1": ("y",)}))


# -- drafts ----------------------------------------------------------------------------


def test_a_draft_is_never_armed_and_scheduling_it_publishes_it(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["draft"], draft=True)
    assert post_json(post_id)["status"] == "draft"
    tick(clock)
    edit_post(post_id, PostEdit(parts=("draft, reworded",)))  # freely: no choice asked
    job.publish_post(post_id)  # even a job that somehow ran would not claim it
    assert not has_job(post_id) and post_queue().count == 0
    assert platform.posts() == []
    info = post_json(post_id)
    assert (info["status"], info["revision"]) == ("draft", 2)

    scheduled = schedule_draft(post_id)

    assert scheduled.status == "scheduled" and has_job(post_id)
    job.publish_post(post_id)
    assert [p["text"] for p in platform.posts()] == ["draft, reworded"]
    with pytest.raises(Conflict, match=f"post {post_id} is published, not a draft"):
        schedule_draft(post_id)


def test_scheduling_a_draft_at_a_slot_arms_it_for_that_slot(channels: dict[str, str], clock: ManualClock) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["later"], draft=True)
    slot = clock.now() + timedelta(minutes=40)
    scheduled = schedule_draft(post_id, slot, "Europe/Paris")
    assert scheduled.scheduled_at == slot and scheduled.zone == "Europe/Paris"
    assert post_queue().scheduled_job_registry.get_scheduled_time(job_id(post_id)).replace(microsecond=0) == (
        slot.replace(microsecond=0)
    )


# -- idempotent create -----------------------------------------------------------------


def test_the_same_key_and_content_answer_with_the_first_post(channels: dict[str, str], clock: ManualClock) -> None:
    content: dict[str, Any] = {"channels": ["n1", "x1"], "parts": ["once"], "channel_texts": {"x1": ["x1's"]}}
    first = submit_post(**content, idempotency_key="k-1")
    again = submit_post(**{**content, "channels": ["x1", "n1"]}, idempotency_key="k-1")

    assert (first.existed, again.existed) == (False, True)
    assert again.post_id == first.post_id
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Post)).scalar_one() == 1
    assert submit_post(**content, idempotency_key="k-2").post_id != first.post_id


def test_the_same_key_with_other_content_is_refused_naming_the_first_post(
    channels: dict[str, str], clock: ManualClock
) -> None:
    first = create_post(channels=["n1"], parts=["one text"], idempotency_key="k")
    with pytest.raises(Conflict, match=f"was used for post {first} with other content \\(parts differ\\)"):
        create_post(channels=["n1"], parts=["another text"], idempotency_key="k")
    with pytest.raises(Conflict, match="slot differ"):
        create_post(channels=["n1"], parts=["one text"], at=clock.now() + timedelta(hours=1), idempotency_key="k")
    with pytest.raises(Conflict, match="draft differ"):
        create_post(channels=["n1"], parts=["one text"], draft=True, idempotency_key="k")
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Post)).scalar_one() == 1


def test_keys_are_scoped_to_the_account(herald: Settings, sandbox_url: str, clock: ManualClock) -> None:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url}, account="acme")
    add_channel("b1", "sandbox-native", {"base_url": sandbox_url}, account="globex")
    assert create_post(channels=["a1"], parts=["x"], idempotency_key="k") != create_post(
        channels=["b1"], parts=["x"], idempotency_key="k"
    )


def test_concurrent_creates_with_one_key_make_one_post(channels: dict[str, str], clock: ManualClock) -> None:
    start = threading.Barrier(4)
    answers: list[int] = []
    errors: list[BaseException] = []

    def create() -> None:
        start.wait()
        try:
            answers.append(create_post(channels=["n1", "r1"], parts=["raced"], idempotency_key="race"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(answers) == 4 and len(set(answers)) == 1
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Post)).scalar_one() == 1
        assert s.execute(select(func.count()).select_from(Delivery)).scalar_one() == 2
        assert s.execute(select(IdempotencyKey.post_id)).scalars().all() == answers[:1]


def test_an_edit_or_a_draft_scheduled_into_the_past_is_refused_and_nothing_changes(
    channels: dict[str, str], clock: ManualClock
) -> None:
    later = clock.now() + timedelta(hours=2)
    post_id = create_post(channels=[channels["native"]], parts=["soon"], at=later)
    draft_id = create_post(channels=[channels["native"]], parts=["draft"], draft=True)
    an_hour_ago = clock.now() - timedelta(hours=1)

    with pytest.raises(UserError, match="in the past: give a later --at or --in"):
        edit_post(post_id, PostEdit(at=an_hour_ago))
    with pytest.raises(UserError, match="in the past"):
        schedule_draft(draft_id, an_hour_ago)

    assert slot_of(post_id) == later
    assert post_json(draft_id)["status"] == "draft"
    assert not has_job(draft_id)
