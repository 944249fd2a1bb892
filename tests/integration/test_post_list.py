"""Finding posts (`herald post list`): filters, slot order, keyset pages, needs-attention,
windows read in a zone, refusals – through the service with real SQL, and through the
command as a real process."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from core.config import Settings
from core.domain.errors import NotFound, UserError
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.runtime.clock import DatabaseClock, ManualClock
from core.services.channels import add_channel
from core.services.finding import (
    TEXT_WIDTH,
    PostPage,
    PostQuery,
    decode_cursor,
    encode_cursor,
    list_posts,
    parse_query,
    parse_window,
)
from core.services.posts import create_post
from core.store import db
from core.store.models import Channel, Delivery, Post
from tests.integration.conftest import Sandbox, drain
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def _future(days: float) -> datetime:
    """A slot ``days`` ahead, to the second (slots in the past are refused at create)."""
    return (DatabaseClock(db.engine()).now() + timedelta(days=days)).replace(microsecond=0)


def _post(channels: list[str], at: datetime, *parts: str, zone: str = "UTC") -> int:
    return create_post(channels=channels, parts=list(parts) or [f"post at {at.isoformat()}"], at=at, zone=zone)


def _ids(page: PostPage) -> list[int]:
    return [row.id for row in page.rows]


def _all_pages(query: PostQuery) -> list[list[int]]:
    pages = [list_posts(query)]
    while pages[-1].next_cursor is not None:
        pages.append(list_posts(replace(query, cursor=pages[-1].next_cursor)))
    return [_ids(p) for p in pages]


def _set_state(post_id: int, post: PostStatus, deliveries: dict[str, tuple[DeliveryStatus, Reason | None]]) -> None:
    """Put a post and its deliveries in a state the publish path reaches (test setup only)."""
    with db.transaction() as s:
        s.execute(update(Post).where(Post.id == post_id).values(status=post, fence=1))
        for name, (status, reason) in deliveries.items():
            channel_id = s.execute(select(Channel.id).where(Channel.name == name)).scalar_one()
            s.execute(
                update(Delivery)
                .where(Delivery.post_id == post_id, Delivery.channel_id == channel_id)
                .values(status=status, reason=reason)
            )


def test_posts_come_in_slot_order_with_each_channels_state_in_the_posts_zone(channels: dict[str, str]) -> None:
    n1, r1 = channels["native"], channels["readback"]
    base = _future(10)
    late = _post([n1], base + timedelta(hours=2), "late")
    early = _post([n1, r1], base, "early " * 40, "second part", zone="Asia/Tokyo")
    middle = _post([r1], base + timedelta(hours=1), "middle")

    page = list_posts(PostQuery())

    assert _ids(page) == [early, middle, late]
    assert page.next_cursor is None
    first = page.rows[0]
    assert (first.status, first.zone, first.account, first.parts) == (PostStatus.SCHEDULED, "Asia/Tokyo", "default", 2)
    assert first.scheduled_at == base and first.scheduled_at.utcoffset() == timedelta(hours=9)
    assert [(c.channel, c.status, c.reason) for c in first.channels] == [
        (n1, DeliveryStatus.PENDING, None),
        (r1, DeliveryStatus.PENDING, None),
    ]
    assert len(first.text) == TEXT_WIDTH and first.text.startswith("early early") and first.text.endswith("…")
    assert page.rows[1].text == "middle" and page.rows[1].scheduled_at.utcoffset() == timedelta(0)
    assert not any(row.needs_attention for row in page.rows)


def test_pages_never_repeat_or_skip_a_post_even_when_slots_are_equal(channels: dict[str, str]) -> None:
    n1 = channels["native"]
    slot = _future(5)
    same = [_post([n1], slot, f"same {i}") for i in range(7)]
    before = _post([n1], slot - timedelta(minutes=1), "before")
    after = _post([n1], slot + timedelta(minutes=1), "after")

    pages = _all_pages(PostQuery(limit=3))

    assert pages == [[before, *same[:2]], same[2:5], [*same[5:], after]]
    # Rows written between two pages: one before the cursor is not shown again (nor does
    # it shift the page), one after it comes in its place.
    first = list_posts(PostQuery(limit=4))
    _post([n1], slot - timedelta(hours=1), "earlier than the cursor")
    later = _post([n1], slot + timedelta(hours=1), "later than the cursor")
    rest = _all_pages(PostQuery(limit=4, cursor=first.next_cursor))
    assert [i for page in rest for i in page] == [*same[3:], after, later]


def test_the_last_page_has_no_cursor_and_a_full_one_has(channels: dict[str, str]) -> None:
    slot = _future(3)
    ids = [_post([channels["native"]], slot + timedelta(minutes=i)) for i in range(4)]

    full = list_posts(PostQuery(limit=4))
    assert _ids(full) == ids and full.next_cursor is None
    first = list_posts(PostQuery(limit=3))
    assert first.next_cursor is not None
    assert decode_cursor(first.next_cursor) == (slot + timedelta(minutes=2), ids[2])
    assert _ids(list_posts(PostQuery(limit=3, cursor=first.next_cursor))) == ids[3:]


def test_the_window_is_start_inclusive_end_exclusive_and_read_in_the_zone_given(channels: dict[str, str]) -> None:
    n1 = channels["native"]
    year = _future(0).year + 1
    # 10:00 in Paris: 09:00 UTC in winter (UTC+1), 08:00 UTC in summer (UTC+2).
    for month, ten in ((1, datetime(year, 1, 15, 9, tzinfo=UTC)), (7, datetime(year, 7, 15, 8, tzinfo=UTC))):
        before, at_ten, at_eleven = (_post([n1], ten + timedelta(hours=h)) for h in (-1, 0, 1))
        start, end = parse_window(f"{year}-{month:02}-15T10:00", f"{year}-{month:02}-15T11:00", tz="Europe/Paris")
        assert (start, end) == (ten, ten + timedelta(hours=1))
        assert _ids(list_posts(PostQuery(start=start, end=end))) == [at_ten]
        assert _ids(list_posts(PostQuery(start=ten - timedelta(hours=1), end=ten + timedelta(hours=1)))) == [
            before,
            at_ten,
        ]
        assert _ids(list_posts(PostQuery(start=ten + timedelta(seconds=1), end=ten + timedelta(hours=2)))) == [
            at_eleven
        ]
    in_utc = parse_window(f"{year}-01-15T09:00+00:00", f"{year}-01-15T10:00Z")
    assert in_utc == (datetime(year, 1, 15, 9, tzinfo=UTC), datetime(year, 1, 15, 10, tzinfo=UTC))
    assert len(list_posts(PostQuery(start=datetime(year, 1, 1, tzinfo=UTC))).rows) == 6
    assert len(list_posts(PostQuery(end=datetime(year, 7, 15, 8, tzinfo=UTC))).rows) == 4


def test_a_local_window_is_the_zones_own_hours() -> None:
    start, end = parse_window("2027-01-15T09:00", "2027-07-15T09:00", tz="Europe/Paris")
    assert start == datetime(2027, 1, 15, 8, tzinfo=UTC)  # winter: UTC+1
    assert end == datetime(2027, 7, 15, 7, tzinfo=UTC)  # summer: UTC+2
    # A local time that happens twice is read as its first occurrence (summer time).
    assert parse_window("2027-10-31T02:30", tz="Europe/Paris")[0] == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)


def test_week_is_monday_to_monday_in_the_zone_by_the_clock() -> None:
    # Wednesday 2027-03-10 23:30 UTC is Thursday 08:30 in Tokyo: that week began on Monday
    # 2027-03-08 00:00 Tokyo time, 2027-03-07 15:00 UTC.
    clock = ManualClock(datetime(2027, 3, 10, 23, 30, tzinfo=UTC))
    assert parse_window(tz="Asia/Tokyo", week=True, clock=clock) == (
        datetime(2027, 3, 7, 15, tzinfo=UTC),
        datetime(2027, 3, 14, 15, tzinfo=UTC),
    )
    # In New York it is still Wednesday, and the week spans the change to summer time.
    assert parse_window(tz="America/New_York", week=True, clock=clock) == (
        datetime(2027, 3, 8, 5, tzinfo=UTC),
        datetime(2027, 3, 15, 4, tzinfo=UTC),
    )


def test_status_channel_and_account_filters_combine(channels: dict[str, str], sandbox_url: str) -> None:
    n1, r1 = channels["native"], channels["readback"]
    add_channel("acme-1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"}, account="acme")
    slot = _future(7)
    on_n1 = _post([n1], slot)
    on_r1 = _post([r1], slot + timedelta(minutes=1))
    on_both = _post([n1, r1], slot + timedelta(minutes=2))
    acme = _post(["acme-1"], slot + timedelta(minutes=3))
    _set_state(
        on_both, PostStatus.CANCELLED, {n1: (DeliveryStatus.CANCELLED, None), r1: (DeliveryStatus.CANCELLED, None)}
    )

    assert _ids(list_posts(PostQuery(channel=n1))) == [on_n1, on_both]
    assert _ids(list_posts(PostQuery(channel=r1, status=PostStatus.SCHEDULED))) == [on_r1]
    assert _ids(list_posts(PostQuery(status=PostStatus.CANCELLED))) == [on_both]
    assert _ids(list_posts(PostQuery(account="acme"))) == [acme]
    assert _ids(list_posts(PostQuery(account="default", channel=n1, status=PostStatus.SCHEDULED))) == [on_n1]
    assert list_posts(PostQuery(account="acme", channel=n1)).rows == ()
    assert list_posts(PostQuery(account="acme")).rows[0].account == "acme"


def test_search_finds_text_in_any_part_ignoring_case_and_nothing_else(channels: dict[str, str]) -> None:
    n1 = channels["native"]
    slot = _future(4)
    coffee = _post([n1], slot, "Café au lait", "then the NEEDLE in part two")
    percent = _post([n1], slot + timedelta(minutes=1), "100% sure")
    plain = _post([n1], slot + timedelta(minutes=2), "a plain post")

    def found(text: str) -> list[int]:
        return _ids(list_posts(PostQuery(search=text)))

    assert found("needle") == [coffee]
    assert found("AU LAIT") == [coffee]
    assert found("Café") == [coffee]  # stored as \u00e9 in the JSON: found all the same
    assert found("100%") == [percent] and found("0%") == [percent]
    assert found("%") == [percent]  # a wildcard in SQL, a character here
    assert found("post") == [plain]
    assert found("text") == [] and found("media") == []  # the JSON's keys are not its text
    assert found(" plain ") == [plain]


def test_needs_attention_is_a_held_or_failed_delivery_or_a_partly_published_post(channels: dict[str, str]) -> None:
    n1, r1 = channels["native"], channels["readback"]
    slot = _future(6)
    posts = {
        name: _post([n1, r1], slot + timedelta(minutes=i), name)
        for i, name in enumerate(
            ["scheduled", "published", "held", "one held, one sending", "failed", "partly", "retrying", "cancelled"]
        )
    }
    done, held = (DeliveryStatus.PUBLISHED, None), (DeliveryStatus.HELD, Reason.AUTH_EXPIRED)
    _set_state(posts["published"], PostStatus.PUBLISHED, {n1: done, r1: done})
    _set_state(posts["held"], PostStatus.HELD, {n1: done, r1: held})
    # The post's own status says publishing: only its delivery tells that a person is needed.
    _set_state(posts["one held, one sending"], PostStatus.PUBLISHING, {n1: (DeliveryStatus.SENDING, None), r1: held})
    failed = (DeliveryStatus.FAILED, Reason.CONTENT_REJECTED)
    _set_state(posts["failed"], PostStatus.FAILED, {n1: failed, r1: failed})
    _set_state(posts["partly"], PostStatus.PARTIALLY_PUBLISHED, {n1: done, r1: (DeliveryStatus.CANCELLED, None)})
    waiting = (DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED)
    _set_state(posts["retrying"], PostStatus.PUBLISHING, {n1: done, r1: waiting})
    cancelled = (DeliveryStatus.CANCELLED, None)
    _set_state(posts["cancelled"], PostStatus.CANCELLED, {n1: cancelled, r1: cancelled})
    attention = ["held", "one held, one sending", "failed", "partly"]

    page = list_posts(PostQuery(needs_attention=True))

    assert _ids(page) == [posts[name] for name in attention]
    flagged = {row.id: row.needs_attention for row in list_posts(PostQuery()).rows}
    assert flagged == {post_id: name in attention for name, post_id in posts.items()}
    held_row = page.rows[1]
    assert [(c.channel, c.status, c.reason) for c in held_row.channels] == [
        (n1, DeliveryStatus.SENDING, None),
        (r1, DeliveryStatus.HELD, Reason.AUTH_EXPIRED),
    ]
    assert _ids(list_posts(PostQuery(needs_attention=True, status=PostStatus.FAILED))) == [posts["failed"]]
    assert _ids(list_posts(PostQuery(needs_attention=True, limit=2))) == [posts["held"], posts["one held, one sending"]]


def test_a_delivery_refused_by_the_platform_needs_attention_with_its_reason(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("revoked", "sandbox-native", {"base_url": sandbox_url, "token": "t-revoked"})
    refused = create_post(channels=["revoked"], parts=["refused"])
    fine = create_post(channels=[channels["native"]], parts=["fine"])
    drain()

    page = list_posts(PostQuery(needs_attention=True))

    assert _ids(page) == [refused]
    (state,) = page.rows[0].channels
    assert (state.channel, state.status, state.reason) == ("revoked", DeliveryStatus.HELD, Reason.AUTH_EXPIRED)
    assert [r.needs_attention for r in list_posts(PostQuery(search="fine")).rows] == [False]
    assert _ids(list_posts(PostQuery(status=PostStatus.PUBLISHED))) == [fine]


def test_parse_query_reads_the_commands_options(channels: dict[str, str]) -> None:
    query = parse_query(
        status="needs-attention", channel="n1", start="2027-01-04T00:00", end="2027-01-11T00:00", tz="Europe/Paris"
    )
    assert query == PostQuery(
        needs_attention=True,
        channel="n1",
        start=datetime(2027, 1, 3, 23, tzinfo=UTC),
        end=datetime(2027, 1, 10, 23, tzinfo=UTC),
    )
    assert parse_query(status="Partially-Published").status is PostStatus.PARTIALLY_PUBLISHED
    assert parse_query(status="held", needs_attention=True) == PostQuery(status=PostStatus.HELD, needs_attention=True)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (PostQuery(channel="nope"), "no channel named nope; `herald channel list`"),
        (PostQuery(account="nobody"), "no account named nobody"),
        (PostQuery(limit=0), "--limit must be between 1 and 500"),
        (PostQuery(limit=501), "--limit must be between 1 and 500"),
        (PostQuery(search="  "), "--search needs some text"),
        (PostQuery(cursor="garbage!"), "is not a cursor herald gave"),
        (PostQuery(cursor="MXwyMDI3"), "is not a cursor herald gave"),  # "1|2027": cut short
        (PostQuery(cursor=encode_cursor(datetime(2027, 1, 1, tzinfo=UTC), 1)[:-2]), "is not a cursor herald gave"),
        (
            PostQuery(start=datetime(2027, 1, 2, tzinfo=UTC), end=datetime(2027, 1, 1, tzinfo=UTC)),
            "--to (2027-01-01T00:00:00+00:00) must be after --from",
        ),
        (PostQuery(start=datetime(2027, 1, 1, tzinfo=UTC), end=datetime(2027, 1, 1, tzinfo=UTC)), "must be after"),
        (PostQuery(start=datetime(2027, 1, 1)), "--from 2027-01-01T00:00:00 has no offset"),
    ],
)
def test_a_query_that_cannot_work_is_refused_with_the_fix(query: PostQuery, message: str, herald: Settings) -> None:
    with pytest.raises(UserError) as refused:
        list_posts(query)
    assert message in str(refused.value)
    assert isinstance(refused.value, NotFound) == message.startswith("no ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"status": "bogus"}, "'bogus' is not a post status: use one of draft, scheduled"),
        ({"start": "tomorrow"}, "not an ISO 8601 time"),
        ({"start": "2027-01-01T09:00"}, "has no offset"),
        ({"start": "2027-03-28T02:30", "tz": "Europe/Paris"}, "does not exist in Europe/Paris"),
        ({"tz": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"week": True, "start": "2027-01-01T00:00Z"}, "give --week or --from/--to, not both"),
    ],
)
def test_options_that_cannot_be_read_are_refused_with_the_fix(
    options: dict[str, object], message: str, herald: Settings
) -> None:
    with pytest.raises(UserError) as refused:
        parse_query(**options)  # type: ignore[arg-type]
    assert message in str(refused.value)


# The command, as a real process.


def _cli_json(*args: str) -> dict[str, object]:
    result = herald_cmd("post", "list", "--json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_post_list_json_pages_through_the_posts_post_create_printed(herald: Settings, sandbox_url: str) -> None:
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "c1", "--set", f"base_url={sandbox_url}"
    )
    assert added.returncode == 0, added.stderr
    day = f"{datetime.now(UTC).year + 1}-06-01"
    ids = []
    for hour in ("09:00", "10:00", "11:00"):
        created = herald_cmd(
            "post", "create", "--channel", "c1", "--text", f"at {hour}",
            "--at", f"{day}T{hour}", "--zone", "Europe/Paris",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        ids.append(int(created.stdout.strip()))

    window = ("--from", f"{day}T09:00", "--to", f"{day}T11:00", "--zone", "Europe/Paris")
    data = _cli_json(*window, "--channel", "c1")
    rows = data["rows"]
    assert isinstance(rows, list) and [r["id"] for r in rows] == ids[:2]
    assert data["next_cursor"] is None
    assert rows[0]["scheduled_at"] == f"{day}T09:00:00+02:00"
    assert rows[0]["zone"] == "Europe/Paris" and rows[0]["status"] == "scheduled"
    assert rows[0]["channels"] == [{"channel": "c1", "status": "pending", "reason": None}]
    assert (rows[0]["text"], rows[0]["needs_attention"]) == ("at 09:00", False)

    first = _cli_json("--limit", "2")
    assert [r["id"] for r in first["rows"]] == ids[:2]  # type: ignore[union-attr]
    cursor = first["next_cursor"]
    assert isinstance(cursor, str)
    rest = _cli_json("--limit", "2", "--cursor", cursor)
    assert [r["id"] for r in rest["rows"]] == ids[2:] and rest["next_cursor"] is None  # type: ignore[union-attr]

    table = herald_cmd("post", "list", "--limit", "2", "--search", "AT")
    assert table.returncode == 0, table.stderr
    assert f"--cursor {cursor}" in table.stdout
    assert "at 09:00" in table.stdout and f"{day}T10:00:00+02:00" in table.stdout
    assert "at 11:00" not in table.stdout


def test_post_list_needs_attention_names_the_held_channel_and_its_reason(
    herald: Settings, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-revoked", "revoked")
    for name, token in (("ok1", "t-ok"), ("gone1", "t-revoked")):
        added = herald_cmd(
            "channel", "add", "--platform", "sandbox-readback", "--name", name,
            "--set", f"base_url={sandbox_url}", "--set", f"token={token}",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
    fine = herald_cmd("post", "create", "--channel", "ok1", "--text", "fine", "--in", "0s").stdout.strip()
    refused = herald_cmd("post", "create", "--channel", "gone1", "--text", "[refused]", "--in", "0s").stdout.strip()
    assert herald_cmd("worker", "--burst", "--no-scheduler").returncode == 0

    data = _cli_json("--needs-attention")
    assert [r["id"] for r in data["rows"]] == [int(refused)]  # type: ignore[union-attr]
    assert data["rows"][0]["channels"] == [{"channel": "gone1", "status": "held", "reason": "auth_expired"}]  # type: ignore[index]
    assert [r["id"] for r in _cli_json("--status", "needs-attention")["rows"]] == [int(refused)]  # type: ignore[union-attr]
    assert [r["id"] for r in _cli_json("--status", "published")["rows"]] == [int(fine)]  # type: ignore[union-attr]

    table = herald_cmd("post", "list")
    assert table.returncode == 0, table.stderr
    refused_line = next(line for line in table.stdout.splitlines() if "[refused]" in line)
    assert "gone1 held (auth_expired)" in refused_line and "needs attention" in refused_line
    assert "more posts" not in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--status", "bogus"], "'bogus' is not a post status"),
        (["--channel", "nope"], "no channel named nope"),
        (["--account", "nobody"], "no account named nobody"),
        (["--from", "2027-01-02T00:00Z", "--to", "2027-01-01T00:00Z"], "must be after --from"),
        (["--from", "next week"], "not an ISO 8601 time"),
        (["--from", "2027-01-01T09:00"], "has no offset"),
        (["--zone", "Nowhere/Land", "--week"], "unknown time zone"),
        (["--week", "--to", "2027-01-01T00:00Z"], "give --week or --from/--to, not both"),
        (["--cursor", "nonsense"], "is not a cursor herald gave"),
        (["--limit", "0"], "--limit must be between 1 and 500"),
        (["--limit", "many"], "Invalid value for '--limit'"),
        (["--search", ""], "--search needs some text"),
    ],
)
def test_post_list_refuses_bad_input_in_one_line_without_a_traceback(
    args: list[str], message: str, herald: Settings
) -> None:
    result = herald_cmd("post", "list", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
