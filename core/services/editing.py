"""Editing a post, and drafts (§13).

Before any channel has published, an edit rewrites the post: the revision goes up, so
every delivery key changes with it (§4), every delivery gets the new text, channels taken
off go away and channels added get a pending delivery; the post is armed again. Once a
channel has published, what is on the platform cannot be taken back, so the caller
chooses:

* ``correct`` fixes the record: the authoring copy and every delivery not yet published
  change; a published copy stays as the platform has it (no adapter can edit one yet, and
  the answer says so, channel by channel);
* ``republish`` makes a new post, with its own id and keys, from the edited content: it
  may legitimately appear twice. The old post stays as it is.

No edit is made while an attempt is in doubt (a part ``sending``): the platform may
have its copy, and the edit would change the key a resend or a read-back looks for.

A draft is a post that is never armed until ``schedule_draft``; it is edited freely
(its revision goes up too, one rule for every saved edit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound, StaleRevision, UserError
from core.domain.states import DeliveryStatus, PartState, PostStatus
from core.domain.timing import zone as named_zone
from core.ledger import authoring
from core.plugins import manager as plugins
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock
from core.services.content import Content, Placed, checked_texts, place
from core.services.media import AttachmentSpec, Kept, keep, per_part
from core.services.slots import refuse_past
from core.services.views import shown_in
from core.store import db
from core.store.models import Approval, Delivery, Post


class EditMode(StrEnum):
    """What an edit of a post that has published does (§13)."""

    #: Fix the record; what a platform has stays as it is, unless the platform can edit it.
    CORRECT = "correct"
    #: A new post with its own keys from the edited content; the old one stays as it is.
    REPUBLISH = "republish"


@dataclass(frozen=True)
class PostEdit:
    """What an edit changes; what it leaves as None (or empty) stays as it is."""

    #: The text of each part: the authoring copy, which every channel without its own gets.
    parts: tuple[str, ...] | None = None
    #: The channels the post goes to after the edit: those not named are taken off, new ones added.
    channels: tuple[str, ...] | None = None
    #: Channel name → the text of each of its own parts; an empty tuple puts the channel
    #: back on the authoring copy.
    channel_texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The new slot, an aware instant.
    at: datetime | None = None
    #: The IANA zone to show the post in.
    zone: str | None = None
    #: The attachments after the edit, replacing all the post's own; () takes them all off.
    media: tuple[AttachmentSpec, ...] | None = None

    @property
    def empty(self) -> bool:
        given = (self.parts, self.channels, self.at, self.zone, self.media)
        return all(value is None for value in given) and not self.channel_texts


@dataclass(frozen=True)
class PlatformCopy:
    """A copy on a platform that an edit did not change."""

    channel: str
    platform: str
    url: str | None
    #: Why, in a sentence: "the platform copy was not edited: sandbox-native cannot edit".
    note: str


@dataclass(frozen=True)
class EditResult:
    """What `herald post edit` did."""

    #: The post holding the edited content: the edited one, or the new one for ``republish``.
    post_id: int
    #: None for a post that had published nowhere (nothing to choose).
    mode: EditMode | None
    #: That post's revision: the edited post's new one, or the new post's first.
    revision: int
    status: PostStatus
    #: For ``republish``: the post the content was taken from, left as it was.
    republished_from: int | None
    #: Channels added, taken off (gone: never tried) and cancelled (tried; attempts kept).
    added: tuple[str, ...]
    removed: tuple[str, ...]
    cancelled: tuple[str, ...]
    #: Copies already on a platform that stay as they are.
    unchanged_copies: tuple[PlatformCopy, ...]


@dataclass(frozen=True)
class ScheduledDraft:
    """A draft turned into a scheduled post."""

    post_id: int
    status: PostStatus
    #: In the post's zone.
    scheduled_at: datetime
    zone: str


def _now() -> datetime:
    return DatabaseClock(db.engine()).now()


def edit_post(
    post_id: int, change: PostEdit, *, mode: EditMode | None = None, revision: int | None = None
) -> EditResult:
    """Edit a post's text, parts, channels, per-channel text or slot.

    Args:
        post_id: the post.
        change: what to change.
        mode: for a post that has published somewhere, ``correct`` or ``republish``.
        revision: the revision the edit was made against (an editor's form, the API);
            refused when the post has been edited since. None: whatever it is now.

    Raises:
        NotFound: no such post, or an unknown channel.
        StaleRevision: the post was edited since ``revision``.
        Conflict: the post is cancelled or has an attempt in doubt; it has published and no
            mode was given; ``republish`` for a post that has published nowhere; a move of
            the slot of a post that has published.
        UserError: nothing to change, or content a channel refuses (checked as at create).
    """
    if change.empty:
        raise UserError(
            "nothing to change: give --text or --part, --channel, --channel-text, --at or --in, --zone, "
            "or --media (--no-media)"
        )
    if change.zone is not None:
        named_zone(change.zone)  # an unknown one is refused here, not when the post is shown
    if change.parts is not None:
        checked_texts(change.parts, f"post {post_id}'s new text")
    for name, texts in change.channel_texts.items():
        if texts:
            checked_texts(texts, f"the text for {name}")
    # Files are kept for the post's account, before the post's transaction (as at create).
    kept = keep(change.media, _account_of(post_id)) if change.media is not None else None
    with db.transaction() as s:
        now = _now()
        post = authoring.post_for_edit(s, post_id)
        if change.at is not None:
            refuse_past(change.at, now, change.zone or post.zone)
        if revision is not None and revision != post.revision:
            raise StaleRevision(
                f"post {post_id} was edited since revision {revision} (it is at {post.revision}); "
                f"look at `herald post show {post_id}` and make the edit again"
            )
        published = [d for d in post.deliveries if any(p.state is PartState.PUBLISHED for p in d.parts)]
        if mode is EditMode.REPUBLISH and not published:
            raise Conflict(
                f"post {post_id} has not published anywhere: edit it without --republish "
                f"(or make a second post with `herald post create`)"
            )
        if published and mode is None:
            on = ", ".join(d.channel.name for d in published)
            raise Conflict(
                f"post {post_id} has published on {on}: choose --correct (fix the record; the copy on the platform "
                f"stays as it is unless the platform can edit it) or --republish (a new post with its own keys, "
                f"which may appear twice)"
            )
        content = _edited(post, change, kept)
        if mode is EditMode.REPUBLISH:
            made = _republish(s, post, content, change, now)
            result = EditResult(made.id, mode, made.revision, made.status, post_id, (), (), (), _copies(published))
        else:
            if published and change.at is not None:
                raise Conflict(
                    f"post {post_id} has published: its slot cannot be moved; --republish makes a new post "
                    f"at the new slot"
                )
            result = _revise(s, post, content, change, now, mode if published else None, published)
    arm(result.post_id)
    return result


def _account_of(post_id: int) -> int:
    """Raises: NotFound: no such post."""
    with db.reading() as s:
        account_id = s.execute(select(Post.account_id).where(Post.id == post_id)).scalar_one_or_none()
    if account_id is None:
        raise NotFound(f"no post {post_id}; `herald post list` shows the posts")
    return account_id


def _edited(post: Post, change: PostEdit, kept: Sequence[Kept] | None = None) -> Content:
    """The post's content with ``change`` applied (channels on which it was cancelled are
    not its own); ``kept``: the attachments replacing the post's own, if any."""
    live = [d for d in post.deliveries if d.status is not DeliveryStatus.CANCELLED]
    names = {d.channel_id: d.channel.name for d in post.deliveries}
    if change.channels is not None:
        channels = tuple(dict.fromkeys(change.channels))
    else:
        channels = tuple(names[d.channel_id] for d in live)
    own = {names[int(cid)]: tuple(texts) for cid, texts in (post.channel_texts or {}).items() if int(cid) in names}
    for name, texts in change.channel_texts.items():
        if name not in channels:
            raise UserError(
                f"--channel-text names {name}, which post {post.id} does not go to "
                f"(its channels: {', '.join(channels)}); add it with --channel, or drop its --channel-text"
            )
        own[name] = texts
    parts = change.parts if change.parts is not None else tuple(p["text"] for p in post.parts)
    return Content(
        channels=channels,
        parts=parts,
        channel_texts={name: texts for name, texts in own.items() if texts and name in channels},
        media=per_part(kept, len(parts)) if kept is not None else None,
    )


def _placed(s: Session, post: Post, content: Content) -> Placed:
    """The edited content checked like a create's, within the post's own account."""
    placed = place(s, content, post.parts)
    if placed.account_id != post.account_id:
        raise UserError(
            f"the channels of post {post.id} must belong to its account; `herald channel list` shows their accounts"
        )
    return placed


def _revise(
    s: Session,
    post: Post,
    content: Content,
    change: PostEdit,
    now: datetime,
    mode: EditMode | None,
    published: list[Delivery],
) -> EditResult:
    placed = _placed(s, post, content)
    names = placed.names | {d.channel_id: d.channel.name for d in post.deliveries}
    revised = authoring.revise_post(
        s,
        post,
        authoring.Revision(
            parts=placed.parts,
            channel_texts=placed.channel_texts,
            deliveries=placed.deliveries,
            scheduled_at=change.at or post.scheduled_at,
            zone=change.zone or post.zone,
        ),
        now,
    )
    return EditResult(
        post_id=post.id,
        mode=mode,
        revision=revised.revision,
        status=revised.status,
        republished_from=None,
        added=tuple(names[c] for c in revised.added),
        removed=tuple(names[c] for c in revised.removed),
        cancelled=tuple(names[c] for c in revised.cancelled),
        unchanged_copies=_copies(published),
    )


def _republish(s: Session, post: Post, content: Content, change: PostEdit, now: datetime) -> Post:
    """A new post from the edited content: at the new slot, or now; the old post's embargo
    and approval requirement carry over (the edited content is approved afresh)."""
    placed = _placed(s, post, content)
    return authoring.insert_post(
        s,
        account_id=placed.account_id,
        channel_ids=placed.channel_ids,
        parts=placed.parts,
        scheduled_at=change.at or now,
        zone=change.zone or post.zone,
        not_before=post.not_before,
        approval=Approval.NOT_REQUIRED if post.approval is Approval.NOT_REQUIRED else Approval.PENDING,
        now=now,
        own_parts=placed.deliveries,
        channel_texts=placed.channel_texts,
    )


def _copies(published: list[Delivery]) -> tuple[PlatformCopy, ...]:
    """What stays as it is on the platforms: herald edits no published copy yet."""
    copies = []
    for d in published:
        channel = d.channel
        try:
            can_edit = plugins.adapter(channel.platform).limits.edit
        except NotFound:  # the platform's adapter is no longer enabled
            can_edit = False
        why = "herald does not edit published posts yet" if can_edit else f"{channel.platform} cannot edit"
        first = d.parts[0] if d.parts else None
        copies.append(
            PlatformCopy(
                channel=channel.name,
                platform=channel.platform,
                url=first.url if first is not None else None,
                note=f"the platform copy was not edited: {why}",
            )
        )
    return tuple(copies)


def schedule_draft(post_id: int, at: datetime | None = None, zone: str | None = None) -> ScheduledDraft:
    """Turn a draft into a scheduled post and arm it; admission still decides at the claim.

    Args:
        at: the slot; None keeps the draft's own, or publishes now if that has passed.
        zone: the IANA zone to show it in; None keeps the draft's.

    Raises:
        NotFound: no such post.
        Conflict: the post is not a draft.
        UserError: an unknown zone.
    """
    if zone is not None:
        named_zone(zone)
    with db.transaction() as s:
        now = _now()
        if at is not None:
            refuse_past(at, now, zone or "UTC")
        post = authoring.schedule_draft(s, post_id, at, zone, now)
        view = ScheduledDraft(post.id, post.status, shown_in(post.scheduled_at, post.zone), post.zone)
    arm(post_id)
    return view
