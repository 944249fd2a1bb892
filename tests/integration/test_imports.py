"""`herald import` (§13): posts another system published are recorded and never sent by
any path; posts to schedule are checked as `post create` checks them; every bad row is
named and one bad row writes nothing. Real SQL, real Redis, real workers where the point
needs one, and the sandbox's copies as the oracle."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rq.job import Job
from sqlalchemy import func, select, update

from core.config import Settings
from core.domain.errors import Conflict, UserError
from core.domain.states import DeliveryStatus, PartState, PostStatus
from core.runtime.arming import arm, job_id, job_options
from core.runtime.clock import ManualClock
from core.runtime.queue import post_queue
from core.runtime.worker import PUBLISH_FUNC
from core.services.editing import EditMode, PostEdit, edit_post
from core.services.import_file import FIELDS
from core.services.imports import ImportReport, import_posts
from core.services.posts import approve_post, cancel_post, create_post, reschedule_post, show_post
from core.services.support import Landed, SendAgain, resolve_post, retry_post
from core.services.timeline import timeline
from core.services.views import jsonable
from core.store import db
from core.store.models import Delivery, DeliveryPart, Post, Publication
from reconciler.tick import candidates, tick
from tests.integration.conftest import ROOT, Sandbox, Workers, post_json, wait_until
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration

#: An old system's post: published on n1 long before herald.
OLD = {
    "status": "published",
    "channel": "n1",
    "text": "From the old system",
    "at": "2024-03-01T09:00:00+01:00",
    "url": "https://social.example/@desk/111",
    "platform_id": "111",
}


def now() -> datetime:
    return datetime.now(UTC)


def write_csv(path: Path, rows: Iterable[dict[str, str]], columns: Iterable[str] = FIELDS) -> Path:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def write_json(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return path


def scheduled(text: str, at: datetime, channel: str = "n1") -> dict[str, str]:
    return {"status": "scheduled", "channel": channel, "text": text, "at": at.isoformat()}


def old_post(i: int, channel: str = "n1") -> dict[str, str]:
    return {
        **OLD,
        "channel": channel,
        "text": f"old post {i}",
        "url": f"https://social.example/@desk/{i}",
        "platform_id": str(i),
    }


def imported_one(tmp_path: Path, row: dict[str, str] | None = None) -> int:
    report = import_posts(write_csv(tmp_path / "old.csv", [row or OLD]))
    assert report.written, report.problems
    (made,) = report.posts
    return made.post_id


def knocked_back(post_id: int, delivery: DeliveryStatus = DeliveryStatus.PENDING) -> None:
    """Leave an imported post as a path that forgot the marker would: scheduled at its old
    slot (long past, so due), its delivery waiting, its part unsent. Only the marker is
    left to keep it from being sent."""
    with db.transaction() as s:
        s.execute(update(Post).where(Post.id == post_id).values(status=PostStatus.SCHEDULED))
        s.execute(update(Delivery).where(Delivery.post_id == post_id).values(status=delivery))
        deliveries = select(Delivery.id).where(Delivery.post_id == post_id).scalar_subquery()
        s.execute(update(DeliveryPart).where(DeliveryPart.delivery_id.in_(deliveries)).values(state=PartState.UNSENT))


def count_posts() -> int:
    with db.reading() as s:
        return int(s.execute(select(func.count()).select_from(Post)).scalar_one())


def problems_of(report: ImportReport) -> list[tuple[int, str]]:
    return [(p.row, p.field) for p in report.problems]


def enqueue_behind_arming(post_id: int) -> None:
    """A job for the post, made as no path of herald's would: straight onto the queue."""
    queue = post_queue()
    queue.enqueue_job(queue.create_job(PUBLISH_FUNC, **job_options(post_id)))


# -- what an import records --------------------------------------------------------


def test_a_published_row_is_recorded_published_at_its_time_with_its_url_and_shown_imported(
    channels: dict[str, str], tmp_path: Path
) -> None:
    post_id = imported_one(tmp_path, {**OLD, "zone": "Europe/Paris"})

    post = show_post(post_id)
    assert post.status is PostStatus.PUBLISHED
    assert post.imported_at is not None
    assert post.scheduled_at == datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
    assert post.zone == "Europe/Paris" and post.scheduled_at.utcoffset() == timedelta(hours=1)
    assert post.texts == ("From the old system",)
    (d,) = post.deliveries
    assert (d.channel, d.status, d.progress, d.attempts) == ("n1", DeliveryStatus.PUBLISHED, "1/1", 0)
    assert (d.url, d.platform_id) == (OLD["url"], "111")
    (part,) = d.parts
    assert part.state is PartState.PUBLISHED and part.key is None
    assert part.published_at == post.scheduled_at
    assert post.attempts == ()
    assert post_json(post_id)["imported_at"] is not None
    with db.reading() as s:
        (publication,) = s.execute(select(Publication).where(Publication.post_id == post_id)).scalars()
    assert (publication.slot, publication.url, publication.platform_id) == (post.scheduled_at, OLD["url"], "111")
    # The history says where it came from.
    (history,) = timeline(post_id).deliveries
    (action,) = history.actions
    assert action.action == "imported" and "old.csv, row 2" in action.detail and OLD["url"] in action.detail


def test_a_published_row_without_a_platform_id_keeps_none(channels: dict[str, str], tmp_path: Path) -> None:
    post_id = imported_one(tmp_path, {**OLD, "platform_id": ""})
    (d,) = show_post(post_id).deliveries
    assert d.platform_id is None and d.url == OLD["url"]


# -- no path sends an imported post ----------------------------------------------------


def test_a_running_worker_never_sends_an_imported_post_even_with_a_job_for_it(
    channels: dict[str, str], platform: Sandbox, workers: Workers, tmp_path: Path
) -> None:
    report = import_posts(write_csv(tmp_path / "old.csv", [old_post(1), old_post(2)]))
    as_imported, knocked = (r.post_id for r in report.posts)
    knocked_back(knocked)
    for post_id in (as_imported, knocked):
        assert arm(post_id) is None  # nothing arms them...
        enqueue_behind_arming(post_id)  # ...so their jobs are made behind arming's back
    # One worker takes jobs in order: once a post created after them is out, theirs have run.
    workers.start()
    control = create_post(channels=["n1"], parts=["herald's own"])
    wait_until(lambda: post_json(control)["status"] == "published", timeout=30)

    assert [p["text"] for p in platform.posts()] == ["herald's own"]
    for post_id in (as_imported, knocked):
        assert show_post(post_id).attempts == ()
    assert show_post(as_imported).status is PostStatus.PUBLISHED


def test_a_reconciler_tick_arms_no_imported_post(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, tmp_path: Path
) -> None:
    report = import_posts(write_csv(tmp_path / "old.csv", [old_post(1), old_post(2), old_post(3)]))
    as_imported, knocked, failed = (r.post_id for r in report.posts)
    knocked_back(knocked)
    knocked_back(failed, DeliveryStatus.RETRY_WAIT)
    with db.transaction() as s:  # and a retry whose time has come
        s.execute(update(Delivery).where(Delivery.post_id == failed).values(next_attempt_at=clock.now()))
    clock.advance(60)

    assert candidates(clock.now(), settings_of()) & {as_imported, knocked, failed} <= {failed}
    assert tick(clock).armed == 0
    for post_id in (as_imported, knocked, failed):
        assert not Job.exists(job_id(post_id), connection=post_queue().connection)
    assert platform.posts() == []


def settings_of() -> Settings:
    from core.config import settings

    return settings()


def test_post_retry_refuses_an_imported_post_and_sends_nothing(
    channels: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    post_id = imported_one(tmp_path)
    with pytest.raises(Conflict, match=f"post {post_id} was imported"):
        retry_post(post_id)
    knocked_back(post_id, DeliveryStatus.FAILED)  # a failed delivery is what a retry re-drives
    with pytest.raises(Conflict, match="was imported"):
        retry_post(post_id)

    result = herald_cmd("post", "retry", str(post_id))
    assert result.returncode == 2 and "was imported" in result.stderr
    assert not Job.exists(job_id(post_id), connection=post_queue().connection)
    assert platform.posts() == []


def test_a_reschedule_refuses_an_imported_post_and_sends_nothing(
    channels: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    post_id = imported_one(tmp_path)
    with pytest.raises(Conflict, match=f"post {post_id} was imported"):
        reschedule_post(post_id, now() + timedelta(minutes=5))
    knocked_back(post_id)  # a scheduled post that never started is what a reschedule moves
    with pytest.raises(Conflict, match="was imported"):
        reschedule_post(post_id, None)

    result = herald_cmd("post", "reschedule", str(post_id), "--now")
    assert result.returncode == 2 and "was imported" in result.stderr
    assert show_post(post_id).scheduled_at == datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
    assert not Job.exists(job_id(post_id), connection=post_queue().connection)
    assert platform.posts() == []


@pytest.mark.parametrize(
    "action",
    [
        lambda post_id: cancel_post(post_id),
        lambda post_id: approve_post(post_id),
        lambda post_id: resolve_post(post_id, "n1", SendAgain()),
        lambda post_id: resolve_post(post_id, "n1", Landed("https://social.example/@desk/1")),
        lambda post_id: edit_post(post_id, PostEdit(parts=("fixed",)), mode=EditMode.CORRECT),
    ],
    ids=["cancel", "approve", "resolve-send-again", "resolve-landed", "edit-correct"],
)
def test_every_other_change_refuses_an_imported_post(
    action: Any, channels: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    post_id = imported_one(tmp_path)
    before = post_json(post_id)

    with pytest.raises(Conflict, match="was imported"):
        action(post_id)

    assert post_json(post_id) == before
    assert platform.posts() == []


def test_republishing_an_imported_post_makes_a_new_post_and_leaves_the_record(
    channels: dict[str, str], platform: Sandbox, workers: Workers, tmp_path: Path
) -> None:
    post_id = imported_one(tmp_path)
    before = post_json(post_id)

    made = edit_post(post_id, PostEdit(parts=("Again, from herald",)), mode=EditMode.REPUBLISH)
    workers.start()
    wait_until(lambda: post_json(made.post_id)["status"] == "published", timeout=30)

    assert made.post_id != post_id and show_post(made.post_id).imported_at is None
    assert [p["text"] for p in platform.posts()] == ["Again, from herald"]
    assert post_json(post_id) == before


# -- scheduled rows: checked as `post create` checks them, then armed -------------------


def test_a_scheduled_row_is_armed_and_published_like_a_created_post(
    channels: dict[str, str], platform: Sandbox, workers: Workers, tmp_path: Path
) -> None:
    slot = now() + timedelta(seconds=2)
    report = import_posts(write_csv(tmp_path / "plan.csv", [scheduled("From the plan", slot)]))
    (row,) = report.posts
    assert (row.row, row.status) == (2, PostStatus.SCHEDULED)
    assert post_queue().scheduled_job_registry.get_job_ids() == [job_id(row.post_id)]
    workers.start()

    info = wait_until(lambda: (i := post_json(row.post_id))["status"] == "published" and i, timeout=30)

    (copy,) = platform.posts()
    assert copy["text"] == "From the plan"
    assert datetime.fromisoformat(copy["created_at"]) >= slot.replace(microsecond=0)
    (d,) = info["deliveries"]
    assert d["platform_id"] == copy["id"] and d["parts"][0]["key"]
    assert [a["outcome"] for a in info["attempts"]] == ["published"]
    assert info["imported_at"] is None


def test_scheduled_rows_take_what_post_create_takes(channels: dict[str, str], tmp_path: Path) -> None:
    slot = now() + timedelta(days=3)
    rows = [
        {
            "status": "scheduled",
            "channels": ["n1", "x1"],
            "parts": ["1/2", "2/2"],
            "at": (slot.replace(tzinfo=None)).isoformat(timespec="minutes"),
            "zone": "Europe/Berlin",
            "not_before": (slot + timedelta(hours=1)).isoformat(),
            "needs_approval": True,
        }
    ]
    report = import_posts(write_json(tmp_path / "plan.json", rows))

    (row,) = report.posts
    post = show_post(row.post_id)
    assert [d.channel for d in post.deliveries] == ["n1", "x1"]
    assert post.texts == ("1/2", "2/2") and post.zone == "Europe/Berlin"
    assert post.not_before is not None and post.approval.value == "pending"


# -- every bad row named; one bad row writes nothing ---------------------------------


def hundred(tmp_path: Path) -> list[dict[str, str]]:
    """100 good rows: 50 old posts on n1, 50 to schedule on x1 within the arming horizon."""
    start = now() + timedelta(minutes=5)
    rows = []
    for i in range(100):
        if i % 2:
            rows.append(old_post(i))
        else:
            rows.append(scheduled(f"plan {i}", start + timedelta(seconds=30 * i), "x1"))
    return rows


def test_a_csv_with_three_bad_rows_among_a_hundred_writes_nothing_and_names_the_three(
    channels: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    rows = hundred(tmp_path)
    good = {i: dict(r) for i, r in enumerate(rows)}
    rows[10]["channel"] = "no-such-channel"  # row 12: the header is row 1
    rows[38]["at"] = (now() - timedelta(days=2)).isoformat()  # row 40: a scheduled row in the past
    rows[75]["url"] = ""  # row 77: a published row without its url
    path = write_csv(tmp_path / "posts.csv", rows)

    dry = import_posts(path, dry_run=True)
    report = import_posts(path)

    for checked in (dry, report):
        assert problems_of(checked) == [(12, "channel"), (40, "at"), (77, "url")]
        assert not checked.written and checked.posts == ()
    why = {p.row: p.why for p in report.problems}
    assert jsonable(report)["problems"][0] == {"row": 12, "field": "channel", "why": why[12]}  # --json
    assert "no channel named no-such-channel" in why[12]
    assert "in the past" in why[40]
    assert "address on the platform" in why[77]
    assert count_posts() == 0
    assert post_queue().scheduled_job_registry.get_job_ids() == [] and post_queue().count == 0

    fixed = write_csv(tmp_path / "posts.csv", good.values())
    assert import_posts(fixed, dry_run=True).problems == ()
    assert count_posts() == 0
    done = import_posts(fixed)

    assert done.written and (done.rows, done.published, done.scheduled) == (100, 50, 50)
    assert [r.row for r in done.posts] == list(range(2, 102))
    assert count_posts() == 100
    assert len(post_queue().scheduled_job_registry.get_job_ids()) == 50
    assert platform.posts() == []


def test_a_json_file_with_bad_rows_writes_nothing_and_names_each_then_the_fixed_one_commits(
    channels: dict[str, str], tmp_path: Path
) -> None:
    later = now() + timedelta(days=2)
    rows: list[dict[str, Any]] = [
        scheduled("fine", later),
        {**scheduled("x" * 501, later)},  # row 2: too long for n1 (500)
        {**scheduled("local", later), "at": "2030-03-31T02:30", "zone": "Europe/Berlin"},  # row 3: no such time
        {**scheduled("no zone", later), "at": "2030-06-01T09:00"},  # row 4: local, no zone
        {**OLD, "text": "  "},  # row 5: empty text
        {**scheduled("typed", later), "fold": "two"},  # row 6
        {**OLD, "url": "https://social.example/@desk/9", "platform_id": 9},  # row 7: not a string
        {**old_post(8), "at": (now() + timedelta(days=1)).isoformat()},  # row 8: published in the future
    ]
    path = write_json(tmp_path / "posts.json", rows)

    report = import_posts(path)

    assert problems_of(report) == [
        (2, "text"),
        (3, "at"),
        (4, "at"),
        (5, "text"),
        (6, "fold"),
        (7, "platform_id"),
        (8, "at"),
    ]
    why = {p.row: p.why for p in report.problems}
    assert "501 characters" in why[2] and "allows 500" in why[2]
    assert "does not exist in Europe/Berlin" in why[3]
    assert "has no offset" in why[4]
    assert "empty" in why[5]
    assert "in the future" in why[8]
    assert count_posts() == 0

    fixed = [rows[0], {**rows[1], "text": "x" * 500}, {**rows[2], "at": "2030-03-31T03:30"}]
    fixed += [
        {**rows[3], "zone": "Asia/Tokyo"},
        {**rows[4], "text": "kept"},
        {**rows[5], "at": "2030-10-27T02:30", "zone": "Europe/Berlin", "fold": 0},
    ]
    fixed += [{**rows[6], "platform_id": "9"}, {**rows[7], "at": "2024-05-01T10:00:00Z"}]
    done = import_posts(write_json(tmp_path / "posts.json", fixed))
    assert done.written and (done.published, done.scheduled) == (3, 5)
    assert count_posts() == 8


@pytest.mark.parametrize(
    ("row", "field", "why"),
    [
        ({"status": "sent"}, "status", "'sent' is not a status"),
        ({"status": ""}, "status", "give published"),
        ({"channel": ""}, "channel", "give the channel's name"),
        ({"at": ""}, "at", "when it was published"),
        ({"at": "yesterday"}, "at", "not an ISO 8601 time"),
        ({"at": "2024-03-01T09:00", "zone": "Mars/Olympus"}, "zone", "unknown time zone"),
        ({"at": "2024-10-27T02:30", "zone": "Europe/Berlin"}, "at", "happens twice"),
        ({"at": "2024-03-01T09:00+01:00", "fold": "1"}, "fold", "--fold"),
        ({"url": "social.example/111"}, "url", "give the post's address"),
        ({"platform_id": "9" * 201}, "platform_id", "at most 200"),
        ({"not_before": "2024-03-01T09:00+01:00"}, "not_before", "only a scheduled row"),
        ({"text": "a\x00b"}, "text", "NUL"),
    ],
)
def test_a_bad_published_row_is_named_with_its_field_and_why(
    row: dict[str, str], field: str, why: str, channels: dict[str, str], tmp_path: Path
) -> None:
    report = import_posts(write_csv(tmp_path / "old.csv", [old_post(1), {**OLD, **row}]), dry_run=True)
    assert problems_of(report) == [(3, field)]
    assert why in report.problems[0].why


@pytest.mark.parametrize(
    ("row", "field", "why"),
    [
        ({"url": "https://social.example/1"}, "url", "not published yet"),
        ({"needs_approval": "perhaps"}, "needs_approval", "give true or false"),
        ({"not_before": "soon"}, "not_before", "not an ISO 8601 time"),
        ({"text": ""}, "text", "part 1 of 1 is empty"),
    ],
)
def test_a_bad_scheduled_row_is_named_with_its_field_and_why(
    row: dict[str, str], field: str, why: str, channels: dict[str, str], tmp_path: Path
) -> None:
    later = now() + timedelta(days=1)
    report = import_posts(write_csv(tmp_path / "plan.csv", [{**scheduled("ok", later), **row}]), dry_run=True)
    assert problems_of(report) == [(2, field)]
    assert why in report.problems[0].why


def test_a_row_is_refused_where_it_would_record_a_copy_twice(channels: dict[str, str], tmp_path: Path) -> None:
    imported_one(tmp_path)
    again = [old_post(5), OLD, old_post(5), {**old_post(5), "channel": "x1"}]
    report = import_posts(write_csv(tmp_path / "again.csv", again))

    assert problems_of(report) == [(3, "url"), (4, "url")]
    why = {p.row: p.why for p in report.problems}
    assert "herald holds this copy already: post 1" in why[3]
    assert "row 2 records the same copy on n1" in why[4]  # the x1 copy of the same URL is another copy


def test_scheduled_rows_imported_again_are_refused_naming_the_posts_the_first_import_made(
    channels: dict[str, str], tmp_path: Path
) -> None:
    slot = now() + timedelta(days=2)
    rows = [scheduled("Launch day", slot), scheduled("Launch day, part two", slot + timedelta(hours=1))]
    first = import_posts(write_csv(tmp_path / "plan.csv", rows))
    made = {r.row: r.post_id for r in first.posts}
    before = count_posts()

    # The same file again, and the same rows in a file with a new one.
    again = import_posts(write_csv(tmp_path / "plan.csv", rows))
    mixed = import_posts(write_csv(tmp_path / "more.csv", [scheduled("Something new", slot), *rows]))

    assert problems_of(again) == [(2, "text"), (3, "text")] and not again.written
    assert problems_of(mixed) == [(3, "text"), (4, "text")] and not mixed.written
    why = {p.row: p.why for p in again.problems}
    assert f"herald scheduled this post already, from an earlier import: post {made[2]}" in why[2]
    assert f"post {made[3]}" in why[3]
    assert count_posts() == before  # all or nothing: the new row of the mixed file waits too
    # What differs in any field is another post: the same text an hour later imports.
    later = import_posts(write_csv(tmp_path / "later.csv", [scheduled("Launch day", slot + timedelta(hours=2))]))
    assert later.written and count_posts() == before + 1


def test_a_second_import_that_raced_past_the_check_is_refused_by_the_key_and_writes_nothing(
    channels: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [scheduled("Raced", now() + timedelta(days=2))]
    assert import_posts(write_csv(tmp_path / "plan.csv", rows)).written
    before = count_posts()
    # As if both imports had checked before either wrote: only the unique key stands between.
    monkeypatch.setattr("core.services.imports._Checker.check_recorded", lambda self: None)

    with pytest.raises(Conflict, match="another import made some of these posts at the same moment"):
        import_posts(write_csv(tmp_path / "plan.csv", rows))
    assert count_posts() == before


def test_the_same_scheduled_row_twice_in_one_file_is_refused(channels: dict[str, str], tmp_path: Path) -> None:
    slot = now() + timedelta(days=2)
    row = scheduled("Once is enough", slot)
    report = import_posts(write_csv(tmp_path / "twice.csv", [row, scheduled("Another", slot), row]))

    assert problems_of(report) == [(4, "text")]
    assert "row 2 schedules the same post: each post is one row" in report.problems[0].why
    assert count_posts() == 0


def test_the_header_is_checked_before_any_row(channels: dict[str, str], tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "odd.csv", [{"status": "published", "channel": "n1", "txet": "typo"}], ["status", "channel", "txet"]
    )
    report = import_posts(path, dry_run=True)
    assert problems_of(report) == [(1, "txet"), (1, "text"), (1, "at")]
    assert "unknown column" in report.problems[0].why and "missing column" in report.problems[1].why


def test_rows_are_numbered_as_a_spreadsheet_shows_them_with_or_without_a_bom(
    channels: dict[str, str], tmp_path: Path
) -> None:
    text = (
        "status,channel,text,at,url\r\n"
        'published,n1,"two lines,\r\nwith a comma",2024-03-01T09:00:00Z,https://social.example/1\r\n'
        "\r\n"
        "published,n1,,2024-03-01T09:00:00Z,https://social.example/2\r\n"
        "published,n1,too,many,cells,here\r\n"
    )
    for name, data in (("plain.csv", text.encode()), ("bom.csv", b"\xef\xbb\xbf" + text.encode())):
        path = tmp_path / name
        path.write_bytes(data)
        report = import_posts(path, dry_run=True)
        assert problems_of(report) == [(4, "text"), (5, "row")], name
        assert report.rows == 3


def test_a_file_that_cannot_be_read_as_an_import_is_refused_in_one_line(herald: Settings, tmp_path: Path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("status,channel,text,at\r\npublished,n1,caf\xe9,2024-01-01T00:00Z\r\n".encode("latin-1"))
    cases = {
        latin: "is not UTF-8",
        write_json(tmp_path / "object.json", {"status": "published"}): "JSON array of objects",  # type: ignore[arg-type]
        tmp_path / "notes.txt": "--format csv",
        tmp_path / "broken.json": "is not JSON",
        tmp_path / "empty.csv": "is empty",
    }
    (tmp_path / "notes.txt").write_text("status\n")
    (tmp_path / "broken.json").write_text("[{")
    (tmp_path / "empty.csv").write_text("")
    for path, said in cases.items():
        with pytest.raises(UserError, match=re.escape(said)):
            import_posts(path)


# -- the command -----------------------------------------------------------------------


def test_herald_import_names_every_bad_row_exits_2_and_writes_nothing_then_imports(
    channels: dict[str, str], tmp_path: Path
) -> None:
    later = now() + timedelta(days=1)
    bad = write_csv(tmp_path / "posts.csv", [old_post(1), {**old_post(2), "url": ""}, scheduled("plan", later, "zz")])

    dry = herald_cmd("import", str(bad), "--dry-run")
    assert dry.returncode == 2
    assert re.search(r"│ 3\s+│ url\s+│ give the post's address", dry.stdout), dry.stdout
    assert re.search(r"│ 4\s+│ channel\s+│ no channel named zz", dry.stdout), dry.stdout
    assert "nothing was written: 2 bad row(s) of 3" in dry.stderr
    assert count_posts() == 0

    good = write_csv(tmp_path / "posts.csv", [old_post(1), old_post(2), scheduled("plan", later, "x1")])
    done = herald_cmd("import", str(good))
    assert done.returncode == 0, done.stderr
    assert "3 row(s) imported: 2 published post(s) recorded, 1 post(s) scheduled (posts 1–3)" in done.stdout
    shown = herald_cmd("post", "show", "1")
    assert "imported" in shown.stdout and "never sends it" in shown.stdout


# -- the documented format, and a big file --------------------------------------------


def doc_blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", (ROOT / "docs" / "imports.md").read_text(), flags=re.S)


def test_the_examples_in_docs_imports_import_as_pasted(
    herald: Settings, sandbox_url: str, tmp_path: Path, platform: Sandbox
) -> None:
    from core.services.channels import add_channel

    for name, strategy in (("demo-native", "native"), ("demo-none", "none")):
        add_channel(name, f"sandbox-{strategy}", {"base_url": sandbox_url, "token": "t-ok"})
    (csv_example,) = doc_blocks("csv")
    (json_example,) = doc_blocks("json")
    (commands,) = doc_blocks("sh")
    (tmp_path / "posts.csv").write_text(csv_example)
    (tmp_path / "posts.json").write_text(json_example)

    # The commands as a person pastes them, `herald` being this checkout's.
    shell = f'herald() {{ PYTHONPATH={ROOT} {sys.executable} -m core.cli "$@"; }}\nset -e\n{commands}'
    ran = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert ran.returncode == 0, ran.stderr
    assert "4 row(s) checked: 2 published post(s) to record, 2 post(s) to schedule" in ran.stdout
    assert '"written": true' in ran.stdout  # the JSON file's --json report
    with db.reading() as s:
        statuses = sorted(str(status) for status in s.execute(select(Post.status)).scalars())
    assert statuses == ["published"] * 3 + ["scheduled"] * 4
    assert platform.posts() == []


def test_ten_thousand_rows_import_in_one_run(channels: dict[str, str], tmp_path: Path) -> None:
    start = now() + timedelta(days=1)
    rows = [
        scheduled(f"plan {i}", start + timedelta(minutes=i), "x1") if i % 5 == 0 else old_post(i) for i in range(10_000)
    ]
    steps: dict[str, tuple[int, int]] = {}

    report = import_posts(
        write_csv(tmp_path / "big.csv", rows), progress=lambda step, done, total: steps.update({step: (done, total)})
    )

    assert report.written and (report.published, report.scheduled) == (8000, 2000)
    assert steps == {"checking": (10_000, 10_000), "writing": (10_000, 10_000), "arming": (2000, 2000)}
    assert count_posts() == 10_000
    # A day ahead, beyond the arming horizon: in the table, not in Redis (§7).
    assert post_queue().scheduled_job_registry.get_job_ids() == []
    assert [r.row for r in report.posts] == list(range(2, 10_002))
