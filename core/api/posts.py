"""``/api/v1/posts``: create, list, show, edit, schedule, reschedule, cancel, approve,
retry, resolve, and the timeline – each the call `herald post ...` makes.

A post of another account is not found (``core.services.scope``); so is a channel of
another account named in a create or an edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from fastapi import APIRouter, Header, Query

from core.api.auth import Reader, Scheduler, Supporter
from core.api.models import PathId, PostChange, PostCreate, Reschedule, Resolve, Retry
from core.domain.errors import UserError
from core.services import scope
from core.services.editing import EditResult, PostEdit, ScheduledDraft, edit_post, schedule_draft
from core.services.finding import PostPage, list_posts, parse_query
from core.services.posts import (
    CancelView,
    Created,
    PostView,
    approve_post,
    cancel_post,
    reschedule_post,
    show_post,
    submit_post,
)
from core.services.slots import parse_slot
from core.services.support import (
    Adopt,
    Landed,
    Resolution,
    ResolveOutcome,
    RetryResult,
    SendAgain,
    resolve_post,
    retry_post,
)
from core.services.timeline import Timeline, timeline
from core.services.views import Json, jsonable

router = APIRouter(prefix="/posts", tags=["posts"])

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Repeating a create with this key and the same body answers with the first post; "
        "another body is refused (422), and a repeat while the first runs answers 409.",
    ),
]


def _own_channels(account_id: int, names: Iterable[str]) -> None:
    for name in dict.fromkeys(names):
        scope.own_channel(account_id, name)


@router.post("", response_model=Created, status_code=201)
def create(body: PostCreate, who: Scheduler, idempotency_key: IdempotencyKey = None) -> Json:
    """Schedule a post (now, at a slot, or as a draft). A repeat with the same
    ``Idempotency-Key`` and body answers with the first post (``existed`` true)."""
    _own_channels(who.account_id, [*body.channels, *body.channel_texts])
    slot = parse_slot(
        at=body.at, delay=body.delay, now=body.now, zone=body.zone, fold=body.fold, not_before=body.not_before
    )
    asked = {**body.model_dump(mode="json"), "channels": sorted(set(body.channels))}
    if not body.queue:  # as a body was kept before add-to-queue: its repeat still matches
        del asked["queue"]
    created = submit_post(
        channels=body.channels,
        parts=body.parts,
        at=slot.at,
        # Queued: shown in the zone given, else in the channel's slots' own.
        zone=body.zone if body.queue else slot.zone,
        not_before=slot.not_before,
        needs_approval=body.needs_approval,
        channel_texts=body.channel_texts,
        draft=body.draft,
        idempotency_key=idempotency_key,
        media=[a.spec() for a in body.media],
        queue=body.queue,
        # A repeat is the same request when its body is: channel order aside.
        asked=asked,
    )
    return jsonable(created)


@router.get("", response_model=PostPage)
def find(
    who: Reader,
    status: Annotated[str | None, Query(description="A post status, or needs-attention.")] = None,
    needs_attention: Annotated[bool, Query(description="Only posts with a delivery held or failed.")] = False,
    channel: Annotated[str | None, Query(description="Only posts going to this channel.")] = None,
    start: Annotated[str | None, Query(alias="from", description="First slot (ISO 8601, or local with zone).")] = None,
    end: Annotated[str | None, Query(alias="to", description="Slots before this instant.")] = None,
    zone: Annotated[str | None, Query(description="IANA zone of a local from/to, and of week.")] = None,
    week: Annotated[bool, Query(description="This week, Monday to Monday in zone.")] = False,
    search: Annotated[str | None, Query(description="Text any part contains (case-insensitive).")] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="Posts per page.")] = 50,
    cursor: Annotated[str | None, Query(description="The previous page's next_cursor.")] = None,
) -> Json:
    """The account's posts in slot order, a page at a time (`herald post list`)."""
    if channel is not None:
        scope.own_channel(who.account_id, channel)
    query = parse_query(
        status=status,
        needs_attention=needs_attention,
        channel=channel,
        account=who.account,
        start=start,
        end=end,
        tz=zone,
        week=week,
        search=search,
        limit=limit,
        cursor=cursor,
    )
    return jsonable(list_posts(query))


@router.get("/{post_id}", response_model=PostView)
def show(post_id: PathId, who: Reader) -> Json:
    """A post: every part, each delivery's state with its reason's explanation and fix."""
    scope.own_post(who.account_id, post_id)
    return jsonable(show_post(post_id))


@router.patch("/{post_id}", response_model=EditResult)
def edit(post_id: PathId, body: PostChange, who: Scheduler) -> Json:
    """Edit a post against the revision it was read at (409 ``stale_revision`` when it
    changed since). Once it has published somewhere, give ``mode``."""
    scope.own_post(who.account_id, post_id)
    _own_channels(who.account_id, [*(body.channels or ()), *body.channel_texts])
    slot = parse_slot(at=body.at, delay=body.delay, zone=body.zone, fold=body.fold) if body.at or body.delay else None
    change = PostEdit(
        parts=tuple(body.parts) if body.parts is not None else None,
        channels=tuple(body.channels) if body.channels is not None else None,
        channel_texts={name: tuple(texts) for name, texts in body.channel_texts.items()},
        at=slot.at if slot else None,
        zone=body.zone,
        media=tuple(a.spec() for a in body.media) if body.media is not None else None,
    )
    return jsonable(edit_post(post_id, change, mode=body.mode, revision=body.revision))


@router.post("/{post_id}/schedule", response_model=ScheduledDraft)
def schedule(post_id: PathId, body: Reschedule, who: Scheduler) -> Json:
    """Schedule a draft: at the slot given, else at its own (now if that has passed)."""
    scope.own_post(who.account_id, post_id)
    slot = parse_slot(at=body.at, delay=body.delay, zone=body.zone, fold=body.fold) if body.at or body.delay else None
    return jsonable(schedule_draft(post_id, slot.at if slot else None, body.zone))


@router.post("/{post_id}/reschedule", response_model=PostView)
def reschedule(post_id: PathId, body: Reschedule, who: Scheduler) -> Json:
    """Move a post that has not started publishing to a new slot."""
    scope.own_post(who.account_id, post_id)
    slot = parse_slot(at=body.at, delay=body.delay, now=body.now, zone=body.zone, fold=body.fold, required=True)
    reschedule_post(post_id, slot.at, slot.zone)
    return jsonable(show_post(post_id))


@router.post("/{post_id}/cancel", response_model=CancelView)
def cancel(post_id: PathId, who: Scheduler) -> Json:
    """Cancel what has not been published yet (on a partly published post, the rest)."""
    scope.own_post(who.account_id, post_id)
    return jsonable(cancel_post(post_id))


@router.post("/{post_id}/approve", response_model=PostView)
def approve(post_id: PathId, who: Scheduler) -> Json:
    """Approve a post held for approval."""
    scope.own_post(who.account_id, post_id)
    approve_post(post_id)
    return jsonable(show_post(post_id))


@router.post("/{post_id}/retry", response_model=RetryResult)
def retry(post_id: PathId, body: Retry, who: Supporter) -> Json:
    """Send again what failed or was held for a reason a retry fixes; never what published."""
    scope.own_post(who.account_id, post_id)
    return jsonable(retry_post(post_id, body.channel))


@router.post("/{post_id}/resolve", response_model=Resolution)
def resolve(post_id: PathId, body: Resolve, who: Supporter) -> Json:
    """Resolve an attempt in doubt: ``landed`` at ``url``, or ``send_again``; a copy found
    before the first send (held ``duplicate_suspected``): ``adopt`` it, or ``send_again``
    to publish anyway."""
    scope.own_post(who.account_id, post_id)
    decided: ResolveOutcome
    if body.outcome == "landed":
        if not body.url:
            raise UserError("landed needs the post's address: give url (and platform_id if it is not in it)")
        decided = Landed(body.url, body.platform_id)
    else:
        if body.url or body.platform_id:
            raise UserError(f"url and platform_id go with landed; {body.outcome} takes neither")
        decided = Adopt() if body.outcome == "adopt" else SendAgain()
    return jsonable(resolve_post(post_id, body.channel, decided))


@router.get("/{post_id}/timeline", response_model=Timeline)
def post_timeline(post_id: PathId, who: Reader) -> Json:
    """Per delivery: slot, claimed, confirmed, first seen, the gaps, and every attempt."""
    scope.own_post(who.account_id, post_id)
    return jsonable(timeline(post_id))
