"""Recurring releases with catch-up (§12): an RRULE in a zone, fed by a queue of drafts.

Clocks are injected (the ``clock`` fixture), except in the one test where a real worker
process releases a slot by its timer and publishes it on the sandbox.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from core.config import Settings
from core.domain.recurrence import RELEASE_LEAD, SlotOutcome, parse_rule
from core.runtime.arming import job_id, release_job_id
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.queue import post_queue
from core.services.channels import remove_channel
from core.services.posts import cancel_post
from core.services.schedules import (
    add_schedule,
    list_schedules,
    queue_post,
    release_schedule,
    remove_schedule,
    show_schedule,
)
from core.store import db
from core.store.models import Alarm, AlarmKind, Delivery, Post, ReleaseSlot
from reconciler import releases
from reconciler.releases import Release, ReleaseResult, release
from reconciler.tick import repair
from tests.integration.conftest import ROOT, Captured, Sandbox, Workers, drain, post_json, wait_until

pytestmark = pytest.mark.integration

BERLIN = ZoneInfo("Europe/Berlin")
MON_TUE_10 = "FREQ=WEEKLY;BYDAY=MO,TU;BYHOUR=10;BYMINUTE=0"
DAILY_10 = "FREQ=DAILY;BYHOUR=10;BYMINUTE=0"


def berlin(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN)


def slots(schedule_id: int) -> list[tuple[datetime, SlotOutcome, int | None, datetime | None, int]]:
    """What became of each slot, oldest first: (slot, outcome, post, released at, slots)."""
    with db.reading() as s:
        rows = s.execute(
            select(ReleaseSlot).where(ReleaseSlot.schedule_id == schedule_id).order_by(ReleaseSlot.slot)
        ).scalars()
        return [(r.slot, r.outcome, r.post_id, r.released_at, r.slots) for r in rows]


def run_timer(schedule_id: int) -> None:
    """Do what rq's scheduler does when the release timer is due: move it to the queue."""
    queue = post_queue()
    job = queue.fetch_job(release_job_id(schedule_id))
    assert job is not None
    queue.scheduled_job_registry.remove(job)
    queue.enqueue_job(job)


def test_after_a_stop_from_monday_to_wednesday_tuesday_publishes_once_and_monday_is_skipped(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    clock.set(berlin("2030-03-03T12:00"))  # Sunday
    schedule = add_schedule(channels["native"], MON_TUE_10, "Europe/Berlin", clock=clock).id
    first = queue_post(schedule, ["Week 10 notes"], clock=clock).post_id
    second = queue_post(schedule, ["Week 11 notes"], clock=clock).post_id

    # Nothing runs from before Monday 10:00 until Wednesday 09:00: Tuesday's slot is 23 h
    # old (inside the 24 h window), Monday's 47 h (outside).
    clock.set(berlin("2030-03-06T09:00"))
    assert repair(clock).released == 1
    drain()

    assert [p["text"] for p in platform.posts()] == ["Week 10 notes"]
    assert post_json(first)["status"] == "published"
    assert slots(schedule) == [
        (berlin("2030-03-04T10:00"), SlotOutcome.SKIPPED, None, None, 1),
        (berlin("2030-03-05T10:00"), SlotOutcome.RELEASED, first, berlin("2030-03-06T09:00"), 1),
    ]
    # The real publish time is the post's own: the platform confirmed it after the release.
    (released,) = [h for h in show_schedule(schedule).history if h.outcome is SlotOutcome.RELEASED]
    assert released.published_at is not None and released.published_at >= berlin("2030-03-06T09:00")

    clock.advance(60)
    assert repair(clock).released == 0
    drain()
    assert [p["text"] for p in platform.posts()] == ["Week 10 notes"]
    assert post_json(second)["status"] == "draft"
    assert [q.post_id for q in show_schedule(schedule).queue] == [second]
    assert len(slots(schedule)) == 2


def test_an_empty_queue_raises_one_alarm_over_several_ticks_and_no_error(
    channels: dict[str, str], clock: ManualClock, captured: Captured, caplog: pytest.LogCaptureFixture
) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["native"], DAILY_10, "UTC", clock=clock).id

    with caplog.at_level(logging.INFO):
        for day in range(3):
            clock.set(datetime(2030, 3, 3 + day, 10, 0, 30, tzinfo=UTC))
            repair(clock)
            repair(clock)  # a second tick in the same minute

    assert [(e.kind, e.state, e.schedule_id, e.post_id) for e in captured.events] == [
        ("empty_queue", "open", schedule, None)
    ]
    assert [outcome for _, outcome, *_ in slots(schedule)] == [SlotOutcome.EMPTY] * 3
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert "Traceback" not in caplog.text

    queue_post(schedule, ["At last"], clock=clock)
    repair(clock)
    assert [(e.kind, e.state) for e in captured.events][-1] == ("empty_queue", "resolved")
    with db.reading() as s:
        (alarm,) = s.execute(select(Alarm).where(Alarm.kind == AlarmKind.EMPTY_QUEUE)).scalars()
    assert alarm.open_key is None and alarm.schedule_id == schedule and alarm.post_id is None


def test_two_reconcilers_and_a_person_releasing_at_once_release_once(
    channels: dict[str, str], clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["native"], DAILY_10, "UTC", clock=clock).id
    posts = [queue_post(schedule, [f"queued {i}"], clock=clock).post_id for i in range(3)]
    clock.set(datetime(2030, 3, 3, 10, 0, 1, tzinfo=UTC))

    # Every caller reads the same stamp before any of them writes: only the
    # compare-and-set can keep them from all releasing.
    barrier = threading.Barrier(3, timeout=30)
    read = releases._read

    def read_then_wait(schedule_id: int) -> Any:
        found = read(schedule_id)
        barrier.wait()
        return found

    monkeypatch.setattr(releases, "_read", read_then_wait)
    results: list[object] = []
    errors: list[BaseException] = []

    def run(call: Any) -> None:
        try:
            results.append(call())
        except BaseException as exc:
            errors.append(exc)

    callers = [
        threading.Thread(target=run, args=(lambda: repair(clock).released,)),
        threading.Thread(target=run, args=(lambda: repair(clock).released,)),
        threading.Thread(target=run, args=(lambda: release_schedule(schedule, clock=clock).result,)),
    ]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=60)

    assert errors == []
    released = sum(r == 1 for r in results) + sum(r == ReleaseResult.RELEASED for r in results)
    assert released == 1, results
    assert ReleaseResult.LOST in results or 0 in results
    assert [post_json(p)["status"] for p in posts] == ["scheduled", "draft", "draft"]
    assert [(outcome, post) for _, outcome, post, *_ in slots(schedule)] == [(SlotOutcome.RELEASED, posts[0])]


def test_the_timer_releases_a_healthy_schedule_for_the_slot_itself_not_the_next_tick(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["native"], DAILY_10, "UTC", clock=clock).id
    post_id = queue_post(schedule, ["On the dot"], clock=clock).post_id
    slot = datetime(2030, 3, 3, 10, 0, tzinfo=UTC)
    timers = post_queue().scheduled_job_registry
    assert timers.get_scheduled_time(release_job_id(schedule)) == slot - RELEASE_LEAD

    clock.set(slot - RELEASE_LEAD)  # the timer fires, a little before the slot
    run_timer(schedule)
    drain()

    with db.reading() as s:
        post = s.get_one(Post, post_id)
    assert (post.status, post.scheduled_at) == ("scheduled", slot)
    assert timers.get_scheduled_time(job_id(post_id)) == slot  # its own timer, at the slot
    # The worker armed the next day's timer after the release.
    assert timers.get_scheduled_time(release_job_id(schedule)) == slot + timedelta(days=1) - RELEASE_LEAD
    assert platform.posts() == []

    clock.set(slot)
    queue = post_queue()
    job = queue.fetch_job(job_id(post_id))
    assert job is not None
    timers.remove(job)
    queue.enqueue_job(job)
    drain()
    assert [p["text"] for p in platform.posts()] == ["On the dot"]
    assert slots(schedule) == [(slot, SlotOutcome.RELEASED, post_id, slot, 1)]


def test_a_worker_process_releases_by_the_timer_and_publishes_once_on_the_sandbox(
    channels: dict[str, str], platform: Sandbox, workers: Workers, herald: Settings
) -> None:
    now = DatabaseClock(db.engine()).now()
    slot = now.replace(microsecond=0) + timedelta(seconds=RELEASE_LEAD.total_seconds() + 4)
    rule = f"FREQ=DAILY;BYHOUR={slot.hour};BYMINUTE={slot.minute};BYSECOND={slot.second}"
    schedule = add_schedule(channels["native"], rule, "UTC").id
    post_id = queue_post(schedule, ["Released by its timer"]).post_id

    workers.start()  # with rq's scheduler; no reconciler runs
    wait_until(lambda: post_json(post_id)["status"] == "published", timeout=40, interval=0.2)

    assert [p["text"] for p in platform.posts()] == ["Released by its timer"]
    with db.reading() as s:
        post = s.get_one(Post, post_id)
        (confirmed,) = s.execute(select(Delivery.confirmed_at).where(Delivery.post_id == post_id)).scalars()
    assert post.scheduled_at == slot
    assert confirmed is not None and confirmed >= slot
    assert slots(schedule) == [(slot, SlotOutcome.RELEASED, post_id, slot, 1)]
    # The worker armed the timer for tomorrow's slot.
    assert post_queue().scheduled_job_registry.get_scheduled_time(release_job_id(schedule)) == (
        slot + timedelta(days=1) - RELEASE_LEAD
    )


@pytest.mark.parametrize(
    ("zone", "spring", "autumn"),
    [
        ("Europe/Berlin", "2027-03-28", "2027-10-31"),
        ("America/New_York", "2027-03-14", "2027-11-07"),
        ("Australia/Sydney", "2027-10-03", "2027-04-04"),
    ],
)
def test_a_weekly_ten_oclock_rule_stays_ten_oclock_local_across_both_dst_changes(
    zone: str, spring: str, autumn: str
) -> None:
    where = ZoneInfo(zone)
    for change in (spring, autumn):
        day = datetime.fromisoformat(change).replace(tzinfo=where)
        weekday = day.strftime("%a")[:2].upper()
        rule = parse_rule(f"FREQ=WEEKLY;BYDAY={weekday};BYHOUR=10;BYMINUTE=0", zone, day - timedelta(days=8))
        before, on, after = rule.upcoming(day - timedelta(days=8), 3)
        for slot in (before, on, after):
            local = slot.astimezone(where)
            assert (local.hour, local.minute) == (10, 0), slot
        assert on.astimezone(where).date() == day.date()
        assert before.astimezone(where).utcoffset() != after.astimezone(where).utcoffset()
        assert after - before != timedelta(days=14)  # 14 days of wall time, not of UTC


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--rrule", "FREQ=FORTNIGHTLY", "--zone", "UTC"], "'FREQ=FORTNIGHTLY' is not an RRULE"),
        (["--rrule", "BYHOUR=10", "--zone", "UTC"], "needs a FREQ"),
        (["--rrule", DAILY_10, "--zone", "Europe/Atlantis"], "unknown time zone 'Europe/Atlantis'"),
        (["--rrule", "FREQ=DAILY;UNTIL=20200101T000000Z", "--zone", "UTC"], "has no slot after now"),
        (["--rrule", "FREQ=SECONDLY", "--zone", "UTC"], "more often than once a minute"),
        (["--rrule", "FREQ=MINUTELY;BYSECOND=0,30", "--zone", "UTC"], "more often than once a minute"),
        (["--rrule", DAILY_10, "--zone", "UTC", "--catch-up", "0s"], "--catch-up must be more than 0"),
    ],
)
def test_schedule_add_refuses_a_bad_rule_in_one_line_naming_it(
    args: list[str], says: str, channels: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from core.cli import main

    sys_argv = sys.argv
    sys.argv = ["herald", "schedule", "add", channels["native"], *args]
    try:
        with pytest.raises(SystemExit) as done:
            main()
    finally:
        sys.argv = sys_argv
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert says in err and "Traceback" not in err


def test_a_release_with_nothing_due_changes_nothing_and_keeps_the_timer(
    channels: dict[str, str], clock: ManualClock
) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["native"], DAILY_10, "UTC", clock=clock).id
    queue_post(schedule, ["Not yet"], clock=clock)
    done = release(schedule, clock)
    assert done is not None
    assert (done.result, done.next_slot) == (ReleaseResult.NOTHING_DUE, datetime(2030, 3, 3, 10, 0, tzinfo=UTC))
    assert slots(schedule) == []


def test_the_docs_recurring_page_runs_as_pasted(herald: Settings, sandbox_url: str, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "recurring.md").read_text()
    script = "\n".join(re.findall(r"```sh\n(.*?)```", text, flags=re.S))
    # The page's first line activates the project's virtualenv; here the tests' own is on PATH.
    script = script.replace(". .venv/bin/activate\n", "").replace("http://127.0.0.1:8025", sandbox_url)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "COLUMNS": "200"}
    done = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}\necho VARS $WEEKLY $FIRST $SECOND\n"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr
    schedule, first, second = map(int, done.stdout.rsplit("VARS ", 1)[1].split())
    detail = show_schedule(schedule)
    assert [q.post_id for q in detail.queue] == [first, second]
    assert all(u.astimezone(BERLIN).strftime("%a %H:%M") == "Tue 10:00" for u in detail.upcoming)
    assert post_json(first)["status"] == "draft"
    assert "no slot has come since the last release" in done.stdout
    assert "error: 'FREQ=SECONDLY' recurs more often than once a minute" in done.stderr


def test_a_slot_older_than_the_catch_up_window_is_skipped_not_released(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    clock.set(berlin("2030-03-03T12:00"))
    schedule = add_schedule(
        channels["native"],
        "FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0",
        "Europe/Berlin",
        timedelta(hours=24),
        clock=clock,
    ).id
    post_id = queue_post(schedule, ["Too late for Tuesday"], clock=clock).post_id

    clock.set(berlin("2030-03-06T11:00"))  # Tuesday's slot is 25 h old
    assert repair(clock).released == 0
    drain()

    assert platform.posts() == []
    assert post_json(post_id)["status"] == "draft"
    assert slots(schedule) == [(berlin("2030-03-05T10:00"), SlotOutcome.SKIPPED, None, None, 1)]
    assert show_schedule(schedule).schedule.next_slot == berlin("2030-03-12T10:00")


def test_removing_a_schedule_keeps_its_queued_posts_as_drafts_and_its_timer_goes(
    channels: dict[str, str], clock: ManualClock
) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["native"], DAILY_10, "UTC", clock=clock).id
    kept = queue_post(schedule, ["Kept as a draft"], clock=clock).post_id
    cancelled = queue_post(schedule, ["Cancelled"], clock=clock).post_id
    cancel_post(cancelled)
    assert [q.post_id for q in show_schedule(schedule).queue] == [kept]
    assert release_job_id(schedule) in post_queue().scheduled_job_registry.get_job_ids()

    done = remove_schedule(schedule, clock=clock)

    assert done.drafts == (kept, cancelled)
    assert post_json(kept)["status"] == "draft"
    assert list_schedules() == []
    assert release_job_id(schedule) not in post_queue().scheduled_job_registry.get_job_ids()
    clock.set(datetime(2030, 3, 3, 10, 0, 1, tzinfo=UTC))
    assert repair(clock).released == 0
    assert post_json(kept)["status"] == "draft"


def test_removing_a_channel_removes_its_schedules(channels: dict[str, str], clock: ManualClock) -> None:
    clock.set(datetime(2030, 3, 3, 8, 0, tzinfo=UTC))
    schedule = add_schedule(channels["readback"], DAILY_10, "UTC", clock=clock).id
    queue_post(schedule, ["Never sent"], clock=clock)

    done = remove_channel(channels["readback"], cancel_pending=True)

    assert done.kept_as is not None  # the schedule's history names it
    assert list_schedules() == []
    clock.set(datetime(2030, 3, 3, 10, 0, 1, tzinfo=UTC))
    assert release(schedule, clock) == Release(schedule, ReleaseResult.ENDED)
