"""``herald import FILE`` (§13): posts another system published, and posts to schedule in
bulk, from a CSV or JSON file (docs/imports.md; reading it is ``core.services.import_file``).

* A **published** row records a post another system published, on a channel herald
  knows: published, with its original time, URL and platform id, and marked imported
  (``core.ledger.imports``), so that no path ever arms, claims, moves or retries it.
* A **scheduled** row is a post to publish, checked exactly as ``herald post create``
  checks one (``core.services.posts.checked_content``, ``core.services.content.place``,
  ``core.services.slots.refuse_past``: the same refusals, the same limits), then written
  and armed.

A scheduled row is made once, however often its file is imported: it takes an
idempotency key of what it asks for (:func:`row_key`: the channels, the texts, the slot,
the embargo, the approval), so a second import of it is refused, naming the post the
first one made, as a published row herald already holds is.

All or nothing: every row is checked, and every bad row is named (its number, the field,
why); one bad row and nothing is written. A good file is written in one transaction, so a
failure half-way leaves nothing behind either, then its scheduled posts are armed. A dry
run checks and writes nothing.

Published rows are history: they are not checked against the channel's limits of today
(the platform took them then), only for what herald must hold – a channel, a text, a time
in the past, the copy's URL, and a URL herald does not already hold for that channel.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import UserError
from core.domain.states import PostStatus
from core.domain.timing import parse_instant, show
from core.domain.timing import zone as named_zone
from core.ledger.authoring import NewPost, insert_posts, record_idempotency_keys
from core.ledger.imports import ImportedPost, insert_imported
from core.runtime.arming import arm
from core.runtime.clock import Clock, DatabaseClock
from core.services.content import checked_texts, live_channels, place
from core.services.idempotency import request_of
from core.services.import_file import Format, Row, RowProblem, read_import_file
from core.services.posts import checked_content
from core.services.slots import Slot, check_fold, parse_embargo, refuse_past
from core.services.support import checked_platform_id, platform_url
from core.store import db
from core.store.models import Approval, Channel, IdempotencyKey, Publication

#: Tells the caller how far a long import got: the step, and rows done out of all of them.
Progress = Callable[[str, int, int], None]

#: Rows per INSERT (the transaction is one) and URLs per look-up.
BATCH = 1000

#: Posts armed at once after the commit (:func:`_arm_all`).
ARMING_THREADS = 8

#: ``needs_approval`` as a file may write it.
_YES, _NO = {"true", "yes", "1"}, {"", "false", "no", "0"}

T = TypeVar("T")


class RowStatus(StrEnum):
    """A row's ``status``."""

    #: Another system published it: recorded, never sent.
    PUBLISHED = "published"
    #: A post to publish at its slot.
    SCHEDULED = "scheduled"


@dataclass(frozen=True)
class ImportedRow:
    """A row, and the post it made."""

    row: int
    post_id: int
    status: PostStatus


@dataclass(frozen=True)
class ImportReport:
    """What `herald import` found and did."""

    file: str
    format: Format
    #: The rows read (empty rows not counted).
    rows: int
    #: Of them, rows recording a post another system published, and posts to schedule.
    published: int
    scheduled: int
    #: Every problem of every bad row, in row order; any one means nothing was written.
    problems: tuple[RowProblem, ...]
    #: False for a dry run, and whenever a row was bad.
    written: bool
    #: Each row and the post it made, in row order (empty unless written).
    posts: tuple[ImportedRow, ...] = ()


@dataclass(frozen=True)
class _Published:
    row: int
    post: ImportedPost


@dataclass(frozen=True)
class _Scheduled:
    row: int
    post: NewPost
    #: The row's idempotency key (:func:`row_key`) and the request it names.
    key: str
    request: dict[str, Any]


def row_key(request: dict[str, Any]) -> str:
    """A scheduled row's idempotency key: a digest of what it asks for (``request_of``), so
    the same row in a file imported again names the same key, and the post made first."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "import:" + hashlib.sha256(canonical.encode()).hexdigest()


def import_posts(
    path: Path,
    *,
    dry_run: bool = False,
    fmt: Format | None = None,
    clock: Clock | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Check every row of ``path`` and, when none is bad and it is not a dry run, write
    them all in one transaction and arm the scheduled ones.

    Raises:
        UserError: the file cannot be read as an import file (``read_import_file``).
    """
    read = read_import_file(path, fmt)
    tell = progress or _quiet
    clock = clock or DatabaseClock(db.engine())
    opened = db.reading() if dry_run else db.transaction()
    with opened as s:
        now = clock.now()
        checking = _Checker(s, path, now)
        for done, row in enumerate(read.rows, 1):
            checking.check(row)
            tell("checking", done, len(read.rows))
        checking.check_recorded()
        problems = tuple(sorted((*read.problems, *checking.problems), key=lambda p: p.row))
        published, scheduled = checking.published, checking.scheduled
        report = ImportReport(str(path), read.format, read.count, len(published), len(scheduled), problems, False)
        if problems or dry_run:
            return report
        made = _write(s, published, scheduled, now, tell)
    _arm_all([post_id for _, post_id in made[len(published) :]], clock, tell)
    kinds = [PostStatus.PUBLISHED] * len(published) + [PostStatus.SCHEDULED] * len(scheduled)
    posts = sorted(
        (ImportedRow(row, post_id, kind) for (row, post_id), kind in zip(made, kinds, strict=True)),
        key=lambda r: r.row,
    )
    return ImportReport(str(path), read.format, read.count, len(published), len(scheduled), (), True, tuple(posts))


def _arm_all(post_ids: list[int], clock: Clock, tell: Progress) -> None:
    """Arm each post as a create does. Arming mostly waits – on Redis, on the database – so
    a few threads overlap the waits; each post is armed on its own, under its own lock. A
    queue that cannot be reached is logged by ``arm``, and the reconciler arms from the rows."""
    with ThreadPoolExecutor(ARMING_THREADS, thread_name_prefix="herald-import-arm") as pool:
        for done, _ in enumerate(pool.map(lambda post_id: arm(post_id, clock), post_ids), 1):
            tell("arming", done, len(post_ids))


def _quiet(step: str, done: int, total: int) -> None:
    """No progress shown."""


def _batches(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


def _write(
    s: Session, published: list[_Published], scheduled: list[_Scheduled], now: datetime, tell: Progress
) -> list[tuple[int, int]]:
    """Every row's post, in one transaction: (row, post id), published rows first."""
    made: list[tuple[int, int]] = []
    total = len(published) + len(scheduled)
    for records in _batches(published):
        post_ids = insert_imported(s, [r.post for r in records], now)
        made += [(r.row, post_id) for r, post_id in zip(records, post_ids, strict=True)]
        tell("writing", len(made), total)
    for new in _batches(scheduled):
        post_ids = insert_posts(s, [n.post for n in new], now)
        keys = [(n.post.account_id, n.key, n.request, post_id) for n, post_id in zip(new, post_ids, strict=True)]
        record_idempotency_keys(s, keys, now)
        made += [(n.row, post_id) for n, post_id in zip(new, post_ids, strict=True)]
        tell("writing", len(made), total)
    return made


class _Checker:
    """Checks rows one by one, keeping every problem and what each good row will write."""

    def __init__(self, s: Session, path: Path, now: datetime) -> None:
        self.s, self.path, self.now = s, path, now
        self.channels = {c.name: c for c in s.execute(live_channels()).scalars()}
        self.problems: list[RowProblem] = []
        self.published: list[_Published] = []
        self.scheduled: list[_Scheduled] = []
        #: (channel id, url) → the row that gave it first.
        self.urls: dict[tuple[int, str], int] = {}
        #: (account id, idempotency key) → the scheduled row that gave it first, and its text's field.
        self.keys: dict[tuple[int, str], tuple[int, str]] = {}

    def bad(self, row: Row, field: str, why: str) -> None:
        self.problems.append(RowProblem(row.number, field, why))

    def check(self, row: Row) -> None:
        before = len(self.problems)
        status = row.value("status").lower()
        if status not in (RowStatus.PUBLISHED, RowStatus.SCHEDULED):
            given = f"{row.value('status')!r} is not a status: " if row.value("status") else ""
            self.bad(row, "status", f"{given}give published (another system published it) or scheduled (to publish)")
        channels = self._channels(row)
        slot = self._slot(row, status)
        if status == RowStatus.PUBLISHED:
            self._published(row, channels, slot, before)
        elif status == RowStatus.SCHEDULED:
            self._scheduled(row, channels, slot, before)

    def _channels(self, row: Row) -> list[Channel]:
        if not row.channels or not all(row.channels):
            self.bad(row, row.channel_field, "give the channel's name; `herald channel list` shows them")
            return []
        missing = [name for name in row.channels if name not in self.channels]
        if missing:
            self.bad(row, row.channel_field, f"no channel named {', '.join(missing)}; add it with `herald channel add`")
            return []
        return [self.channels[name] for name in dict.fromkeys(row.channels)]

    def _slot(self, row: Row, status: str) -> Slot | None:
        """The row's ``at`` (and ``zone``, ``fold``), read as ``post create`` reads them."""
        zone, fold = row.value("zone") or None, row.value("fold")
        if zone is not None:
            try:
                named_zone(zone)
            except UserError as exc:
                self.bad(row, "zone", str(exc))
                return None
        if fold not in ("", "0", "1"):
            self.bad(row, "fold", f"{fold!r}: give 0 (the first) or 1 (the second) of a local time that happens twice")
            return None
        if not row.value("at"):
            when = "when it was published" if status == RowStatus.PUBLISHED else "when to publish it"
            self.bad(row, "at", f"give {when}: ISO 8601 with an offset, or a local time with zone")
            return None
        try:
            at, shown_in = parse_instant(row.value("at"), zone, int(fold) if fold else None)
        except UserError as exc:
            self.bad(row, "at", str(exc))
            return None
        if fold:
            try:
                check_fold(row.value("at"), zone, row.value("not_before") or None)
            except UserError as exc:
                self.bad(row, "fold", str(exc))
                return None
        return Slot(at, shown_in)

    def _published(self, row: Row, channels: list[Channel], slot: Slot | None, before: int) -> None:
        if len(channels) > 1:
            self.bad(row, row.channel_field, "a published row is one channel's copy: give one channel, with its url")
        texts = self._texts(row)
        if texts is not None and len(texts) > 1:
            self.bad(row, row.text_field, "a published row is one post: give its text (threads are not imported)")
        if slot is not None and slot.at is not None and slot.at > self.now:
            self.bad(
                row, "at", f"{show(slot.at, slot.zone)} is in the future: a published row's at is when it published"
            )
        url = self._field(row, "url", lambda text: platform_url(text, "url"))
        if not row.value("url"):
            self.bad(row, "url", "give the post's address on the platform: a published row records where it is")
        platform_id = self._field(row, "platform_id", lambda text: checked_platform_id(text, "platform_id"))
        for field in ("not_before", "needs_approval"):
            if row.value(field):
                self.bad(row, field, "only a scheduled row has one: a published row has been published")
        if len(self.problems) > before:
            return
        assert slot is not None and slot.at is not None and texts is not None and url  # no problem found
        (channel,) = channels
        first = self.urls.setdefault((channel.id, url), row.number)
        if first != row.number:
            self.bad(row, "url", f"row {first} records the same copy on {channel.name}: each copy is one row")
            return
        imported = ImportedPost(
            account_id=channel.account_id,
            channel_id=channel.id,
            text=texts[0],
            published_at=slot.at,
            zone=slot.zone,
            url=url,
            platform_id=platform_id or None,
            origin=f"{self.path.name}, row {row.number}",
        )
        self.published.append(_Published(row.number, imported))

    def _scheduled(self, row: Row, channels: list[Channel], slot: Slot | None, before: int) -> None:
        for field in ("url", "platform_id"):
            if row.value(field):
                self.bad(row, field, "a scheduled row is not published yet: leave it empty (or give status published)")
        needs = row.value("needs_approval").lower()
        if needs not in _YES | _NO:
            self.bad(row, "needs_approval", f"{row.value('needs_approval')!r}: give true or false")
        zone = row.value("zone") or None
        embargo = self._field(row, "not_before", lambda text: parse_embargo(text, zone))
        if not row.parts:
            self.bad(row, row.text_field, "give the post's text")
            return
        if not channels or len(self.problems) > before:
            return
        # Exactly what `post create` checks, in the same order: the content, its fit on
        # each channel, then the slot.
        try:
            content = checked_content(channels=[c.name for c in channels], parts=row.parts)
            placed = place(self.s, content, known=self.channels)
        except UserError as exc:
            accounts = {c.account_id for c in channels}
            self.bad(row, row.channel_field if len(accounts) > 1 else row.text_field, str(exc))
            return
        if slot is None or slot.at is None:
            return
        try:
            refuse_past(slot.at, self.now, slot.zone)
        except UserError as exc:
            self.bad(row, "at", str(exc))
            return
        request = request_of(
            content,
            at=slot.at,
            zone=slot.zone,
            not_before=embargo,
            needs_approval=needs in _YES,
            draft=False,
        )
        key = row_key(request)
        first, _ = self.keys.setdefault((placed.account_id, key), (row.number, row.text_field))
        if first != row.number:
            self.bad(row, row.text_field, f"row {first} schedules the same post: each post is one row")
            return
        post = NewPost(
            account_id=placed.account_id,
            channel_ids=placed.channel_ids,
            parts=placed.parts,
            scheduled_at=slot.at,
            zone=slot.zone,
            not_before=embargo,
            approval=Approval.PENDING if needs in _YES else Approval.NOT_REQUIRED,
            own_parts=placed.deliveries,
            channel_texts=placed.channel_texts,
        )
        self.scheduled.append(_Scheduled(row.number, post, key, request))

    def _texts(self, row: Row) -> tuple[str, ...] | None:
        if not row.parts:
            self.bad(row, row.text_field, "give the post's text")
            return None
        try:
            return checked_texts(row.parts)
        except UserError as exc:
            self.bad(row, row.text_field, str(exc))
            return None

    def _field(self, row: Row, field: str, check: Callable[[str], T]) -> T | None:
        """``check`` of the row's ``field`` where it is given, its refusal kept as a problem."""
        if not row.value(field):
            return None
        try:
            return check(row.value(field))
        except UserError as exc:
            self.bad(row, field, str(exc))
            return None

    def check_recorded(self) -> None:
        """Refuse a published row whose copy herald holds already (a file imported twice,
        or a post herald published itself), and a scheduled row an earlier import made
        (its idempotency key is taken): one read per batch of URLs, and of keys."""
        held: set[int] = set()
        for batch in _batches(sorted({url for _, url in self.urls})):
            for post_id, channel_id, url in self.s.execute(
                select(Publication.post_id, Publication.channel_id, Publication.url).where(Publication.url.in_(batch))
            ):
                row = self.urls.get((channel_id, url))
                if row is None or row in held:
                    continue
                held.add(row)
                why = f"herald holds this copy already: post {post_id} (`herald post show {post_id}`)"
                self.problems.append(RowProblem(row, "url", why))
        self.published = [p for p in self.published if p.row not in held]
        for batch in _batches(sorted({key for _, key in self.keys})):
            for account_id, key, made in self.s.execute(
                select(IdempotencyKey.account_id, IdempotencyKey.key, IdempotencyKey.post_id).where(
                    IdempotencyKey.key.in_(batch)
                )
            ):
                found = self.keys.get((account_id, key))
                if found is None:
                    continue
                row, field = found
                held.add(row)
                why = (
                    f"herald scheduled this post already, from an earlier import: post {made} "
                    f"(`herald post show {made}`); importing it again would send it twice"
                )
                self.problems.append(RowProblem(row, field, why))
        self.scheduled = [p for p in self.scheduled if p.row not in held]
