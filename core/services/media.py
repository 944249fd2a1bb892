"""Media: the files posts carry, kept by herald and probed once when added (§16).

``herald media add FILE`` (and ``post create --media FILE``) copies a file into herald's
storage under the digest of its bytes, probes it (``core.services.probe``) and records its
facts, so a channel's limits are checked when a post is written, not when it is sent.

A kept file belongs to one account (§15): only that account sees it, attaches it or
removes it; another account's is "not found", as its posts are. A post's files are kept
for its channels' account. Adding the same bytes again gives that account's same row;
another account adding them gets its own row (the stored bytes are shared). A file is
removed only when no unfinished post refers to it, and its bytes go once no account's row
keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound, UserError
from core.domain.media import MediaRef
from core.domain.states import PostStatus
from core.runtime.clock import DatabaseClock
from core.services.probe import Facts, probe
from core.store import db
from core.store.blobs import blobs
from core.store.models import Account, Media, Post, PostMedia

#: Posts in these states may still send their attachments: their files are kept.
_FINISHED = (PostStatus.PUBLISHED, PostStatus.CANCELLED)


@dataclass(frozen=True)
class MediaView:
    """A kept file and its probed facts."""

    id: int
    #: The account that keeps it: only that account sees and attaches it.
    account: str
    filename: str
    mime: str
    size: int
    width: int | None
    height: int | None
    #: Seconds, for a video whose length was probed.
    duration: float | None
    #: The alt text parts get unless they give their own.
    alt: str | None
    created_at: datetime
    #: Whether it was removed (its facts stay for the posts that carried it).
    removed: bool

    @property
    def facts(self) -> Facts:
        return Facts(self.mime, self.size, self.width, self.height, self.duration)


@dataclass(frozen=True)
class Added:
    media: MediaView
    #: The same bytes were already kept: nothing new was stored.
    existed: bool


def _view(m: Media) -> MediaView:
    return MediaView(
        id=m.id,
        account=m.account.name,
        filename=m.filename,
        mime=m.mime,
        size=m.size,
        width=m.width,
        height=m.height,
        duration=m.duration,
        alt=m.alt,
        created_at=m.created_at,
        removed=m.removed_at is not None,
    )


def checked_alt(alt: str | None) -> str | None:
    """Alt text as stored: stripped, None when blank."""
    if alt is None:
        return None
    alt = alt.strip()
    return alt or None


def _checked_path(path: Path) -> Path:
    if not path.exists():
        raise UserError(f"no file at {path}: check the path")
    if path.is_dir():
        raise UserError(f"{path} is a folder: give an image or a video file")
    if not path.is_file():
        raise UserError(f"{path} is not a regular file: give an image or a video file")
    return path


def media_account(name: str | None = None) -> int:
    """The account a file is kept for when no post says which (`herald media add`): the
    one named; without a name, the only account there is, or ``default`` (made, as
    `herald channel add` makes it) while there is none.

    Raises:
        NotFound: no account ``name``.
        UserError: no name, and several accounts to choose from.
    """
    from core.services.channels import account_named  # here: channels imports posts, which imports media

    with db.transaction() as s:
        if name is not None:
            return account_named(s, name).id
        known = list(s.execute(select(Account.id, Account.name).order_by(Account.name).limit(11)))
        if len(known) == 1:
            return int(known[0].id)
        if known:
            names = ", ".join(row.name for row in known[:10]) + (" ..." if len(known) > 10 else "")
            raise UserError(f"which account keeps the file? give --account NAME (accounts: {names})")
        return account_named(s, "default", create=True).id


def add_media(path: str | Path, alt: str | None = None, *, account_id: int | None = None) -> Added:
    """Keep the file at ``path`` for an account (once per content) and record its facts.

    Args:
        alt: alt text for the parts that carry it; given again for the same bytes, it
            replaces the one kept.
        account_id: the account that keeps it; None: :func:`media_account`'s.

    Raises:
        UserError: no such file, a folder, an empty file, not an image or a video, or
            damaged; no account given and several to choose from.
    """
    source = _checked_path(Path(path))
    owner = account_id if account_id is not None else media_account()
    store = blobs()
    try:
        digest, local = store.put(source)
    except PermissionError:
        raise UserError(f"{source} cannot be read (permission denied)") from None
    except OSError as exc:
        raise UserError(f"{source} cannot be read ({exc.strerror or exc})") from None
    alt = checked_alt(alt)
    same = (Media.account_id == owner, Media.digest == digest)
    with db.transaction() as s:
        existing = s.execute(select(Media).where(*same)).scalar_one_or_none()
        if existing is not None and existing.removed_at is None:
            if alt is not None:
                existing.alt = alt
            return Added(_view(existing), existed=True)
    try:
        facts = probe(local, source.name)
    except UserError:
        with db.reading() as s:
            if not _bytes_kept(s, digest):
                store.delete(digest)  # nothing refers to the bytes of a refused file
        raise
    now = DatabaseClock(db.engine()).now()
    with db.transaction() as s:
        row = s.execute(select(Media).where(*same)).scalar_one_or_none()
        if row is None:
            row = Media(account_id=owner, digest=digest, filename=source.name[:255], created_at=now)
            s.add(row)
        row.mime, row.size, row.width, row.height, row.duration = (
            facts.mime,
            facts.size,
            facts.width,
            facts.height,
            facts.duration,
        )
        row.alt = alt if alt is not None else row.alt
        row.removed_at = None
        try:
            s.flush()
        except IntegrityError:
            # Another process added the same bytes meanwhile: theirs is the row.
            s.rollback()
            row = s.execute(select(Media).where(*same)).scalar_one()
            return Added(_view(row), existed=True)
        return Added(_view(row), existed=existing is not None)


def _bytes_kept(s: Session, digest: str) -> bool:
    """Whether a row of any account still keeps the bytes of ``digest`` (ix_media_digest)."""
    live = select(func.count()).select_from(Media).where(Media.digest == digest, Media.removed_at.is_(None))
    return bool(s.execute(live).scalar_one())


def list_media(*, include_removed: bool = False, account_id: int | None = None) -> list[MediaView]:
    """Every kept file (of ``account_id``, when given), oldest first."""
    with db.reading() as s:
        query = select(Media).order_by(Media.id)
        if not include_removed:
            query = query.where(Media.removed_at.is_(None))
        if account_id is not None:
            query = query.where(Media.account_id == account_id)
        return [_view(m) for m in s.execute(query).scalars()]


def show_media(media_id: int) -> MediaView:
    """One kept file (a removed one too: its facts stay for the posts that carried it).

    Raises:
        NotFound: no media of that id.
    """
    with db.reading() as s:
        row = s.get(Media, media_id)
        if row is None:
            raise NotFound(f"no media {media_id}; `herald media list` shows the kept files")
        return _view(row)


def get_media(s: Session, ids: Sequence[int]) -> dict[int, MediaView]:
    """The media rows ``ids`` name, by id (removed ones too: their facts are kept)."""
    if not ids:
        return {}
    return {m.id: _view(m) for m in s.execute(select(Media).where(Media.id.in_(set(ids)))).scalars()}


def remove_media(media_id: int) -> MediaView:
    """Forget a file, once no unfinished post carries it; its facts stay for the history,
    and its bytes stay while another account's row keeps them.

    Raises:
        NotFound: no such media.
        Conflict: a post that is not published or cancelled refers to it (named).
    """
    with db.transaction() as s:
        row = s.get(Media, media_id)
        if row is None or row.removed_at is not None:
            raise NotFound(f"no media {media_id}; `herald media list` shows them")
        waiting = list(
            s.execute(
                select(Post.id)
                .join(PostMedia, PostMedia.post_id == Post.id)
                .where(PostMedia.media_id == media_id, Post.status.not_in(_FINISHED))
                .order_by(Post.id)
                .limit(6)
            ).scalars()
        )
        if waiting:
            named = ", ".join(map(str, waiting[:5])) + (" and more" if len(waiting) > 5 else "")
            raise Conflict(
                f"media {media_id} ({row.filename}) is on post(s) {named}, which are not published yet: "
                "cancel them or wait until they are published, then remove it"
            )
        row.removed_at = DatabaseClock(db.engine()).now()
        s.flush()
        view = _view(row)
        digest = row.digest
        shared = _bytes_kept(s, digest)
    if not shared:
        blobs().delete(digest)
    return view


@dataclass(frozen=True)
class AttachmentSpec:
    """One attachment a create asks for: a file (or a kept one, by id) for a part, with its
    alt text."""

    #: 0 for the first part.
    part: int
    path: str
    alt: str | None = None
    #: A file kept already (``add_media``, the API's upload): ``path`` is then ignored.
    media_id: int | None = None


def parse_attachments(media: Sequence[str], alts: Sequence[str]) -> list[AttachmentSpec]:
    """``--media [PART:]FILE`` options with their ``--alt TEXT`` (the n-th ``--alt`` goes with
    the n-th ``--media``; ``--alt ''`` gives one none). A file goes to part 1 unless named
    ``2:FILE`` – except a file whose whole name is such (it exists as written).

    Raises:
        UserError: more ``--alt`` than ``--media``, or a part number below 1.
    """
    if len(alts) > len(media):
        raise UserError(
            f"{len(alts)} --alt for {len(media)} --media: each --alt goes with the --media before it in order"
        )
    specs = []
    for i, item in enumerate(media):
        number, sep, rest = item.partition(":")
        if sep and number.isdigit() and rest and not Path(item).exists():
            if int(number) < 1:
                raise UserError(f"--media {item}: parts are numbered from 1")
            part, path = int(number) - 1, rest
        else:
            part, path = 0, item
        specs.append(AttachmentSpec(part, path, alts[i] if i < len(alts) else None))
    return specs


@dataclass(frozen=True)
class Kept:
    """An attachment whose file is kept: for part ``part``, with the part's own alt text."""

    part: int
    ref: MediaRef
    #: As the person gave it, for messages.
    given: str


def keep(specs: Sequence[AttachmentSpec], account_id: int) -> list[Kept]:
    """Keep each file (``add_media``) for ``account_id``, in order.

    Only the part's own alt text is its own: the file's kept one is used at publish time
    where the platform takes alt text, and left out where it does not.

    Raises:
        UserError: a file ``add_media`` refuses.
        NotFound: a kept file named by id that is not ``account_id``'s (or was removed).
    """
    return [Kept(spec.part, MediaRef(_kept_id(spec, account_id), checked_alt(spec.alt)), spec.path) for spec in specs]


def _kept_id(spec: AttachmentSpec, account_id: int) -> int:
    """The kept file's id: the one named, or the file at the path, kept now for ``account_id``.

    Raises:
        NotFound: no kept media of that id in the account (or it was removed).
    """
    if spec.media_id is None:
        return add_media(spec.path, account_id=account_id).media.id
    with db.reading() as s:
        row = s.get(Media, spec.media_id)
        if row is None or row.account_id != account_id or row.removed_at is not None:
            raise NotFound(f"no media {spec.media_id}: upload the file first (`herald media add FILE`)")
        return row.id


def per_part(kept: Sequence[Kept], parts: int) -> tuple[tuple[MediaRef, ...], ...]:
    """The kept attachments laid out on ``parts`` parts, each part's in order.

    Raises:
        UserError: an attachment for a part the post does not have.
    """
    layout: list[list[MediaRef]] = [[] for _ in range(parts)]
    for k in kept:
        _check_part(k.part, k.given, parts)
        layout[k.part].append(k.ref)
    return tuple(tuple(refs) for refs in layout)


def _check_part(part: int, given: str, parts: int) -> None:
    if not 0 <= part < parts:
        raise UserError(f"--media {part + 1}:{given} names part {part + 1}, and the post has {parts} part(s)")


def attachments(specs: Sequence[AttachmentSpec], parts: int, account_id: int) -> tuple[tuple[MediaRef, ...], ...]:
    """Keep each file for ``account_id`` and lay the attachments out per part
    (:func:`keep`, :func:`per_part`).

    Raises:
        UserError: an attachment for a part the post does not have, or a file
            ``add_media`` refuses.
        NotFound: a kept file named by id that is not the account's.
    """
    for spec in specs:  # before any file is copied in
        _check_part(spec.part, spec.path, parts)
    return per_part(keep(specs, account_id), parts)
