"""A post's page (``/posts/{id}``) and needs attention (``/attention``): per channel its
state, the reason's explanation, and the one action that fixes it as a button – retry this
channel, reconnect, mark landed with the URL or send again, adopt a copy found before the
first send or publish anyway, approve – each one service call (``core.services.support``,
``channels``, ``posts``); and the post's timeline (§14).

The post's page edits its text too (``core.services.editing``, §13): its parts and each
channel's own parts, against the revision the page showed (an edit since → refused, the
page shows the post as it is now). Once it has published somewhere the form asks
``correct`` or ``republish``; while an attempt is in doubt it is not offered at all.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response

from core.domain.errors import Conflict, StaleRevision, UserError
from core.domain.roles import Action
from core.domain.states import RETRY_LIFTS, DeliveryStatus, PartState, PostStatus, Reason
from core.plugins import channel_settings
from core.plugins import manager as plugins
from core.services.attention import needing_attention
from core.services.channels import CHANNEL_HOLDS, reconnect_channel, show_channels
from core.services.editing import EditMode, PostEdit, edit_post
from core.services.posts import PostView, approve_post, cancel_post, show_post
from core.services.scope import own_channel, own_post
from core.services.support import Adopt, Landed, ResolveOutcome, SendAgain, resolve_post, retry_post
from core.services.timeline import timeline
from core.web.rendering import PageRoute, back_to, done, render
from core.web.session import Csrf, Scheduler, Supporter, Viewer

router = APIRouter(route_class=PageRoute)


class Fix(enum.StrEnum):
    """The one button that fixes a delivery waiting for a person."""

    RETRY = "retry"
    RECONNECT = "reconnect"
    RESOLVE = "resolve"
    #: A copy found before the first send: adopt it, or publish anyway.
    RESOLVE_COPY = "resolve_copy"
    APPROVE = "approve"


#: The role's action each button takes.
FIX_ACTION = {
    Fix.RETRY: Action.SUPPORT,
    Fix.RECONNECT: Action.SUPPORT,
    Fix.RESOLVE: Action.SUPPORT,
    Fix.RESOLVE_COPY: Action.SUPPORT,
    Fix.APPROVE: Action.SCHEDULE,
}


def fix_of(status: DeliveryStatus, reason: Reason | None, connected: bool) -> Fix | None:
    """The button for a delivery; None where no button fixes it (the reason's action says what does)."""
    if status not in (DeliveryStatus.HELD, DeliveryStatus.FAILED):
        return None
    # Retry refuses these holds: new credentials (a reconnect) lift them and re-arm the post.
    if reason in CHANNEL_HOLDS and (status is DeliveryStatus.HELD or not connected):
        return Fix.RECONNECT
    if reason is Reason.AMBIGUOUS_OUTCOME:
        return Fix.RESOLVE
    if reason is Reason.DUPLICATE_SUSPECTED:
        return Fix.RESOLVE_COPY
    if reason is Reason.APPROVAL_PENDING:
        return Fix.APPROVE
    if status is DeliveryStatus.FAILED or reason in RETRY_LIFTS:
        return Fix.RETRY
    return None


def secret_settings(platform: str) -> list[str]:
    """The settings a reconnect asks for: the platform's credentials."""
    adapter = plugins.adapter_class(platform)
    declared = channel_settings.declared(adapter) if adapter is not None else None
    return [s.name for s in declared or () if s.secret] or ["token"]


def edit_refusal(post: PostView) -> str | None:
    """Why the post's page cannot edit ``post`` now, in the page's words; None when it can.
    (``edit_post`` refuses the same in its own transaction; this is what the page says.)"""
    if post.status is PostStatus.CANCELLED:
        return f"post {post.id} is cancelled and cannot be edited: compose a new post instead"
    for d in post.deliveries:
        if d.status is DeliveryStatus.SENDING:
            return (
                f"post {post.id} is being sent to {d.channel} right now: reload the page when the attempt ends, "
                "then edit"
            )
        if any(part.state is PartState.SENDING for part in d.parts):
            return (
                f"post {post.id} has an attempt in doubt on {d.channel} (it may be on the platform) and cannot be "
                "edited until it is resolved: mark it landed or send it again, then edit"
            )
    return None


def published_on(post: PostView) -> list[str]:
    """The channels where a part of ``post`` has published: an edit then asks correct or republish."""
    return [d.channel for d in post.deliveries if any(part.state is PartState.PUBLISHED for part in d.parts)]


def _texts(values: Sequence[object]) -> tuple[str, ...]:
    """A form's text boxes, the blank ones left out."""
    return tuple(text for text in (v.strip() for v in values if isinstance(v, str)) if text)


@router.get("/posts/{post_id}")
def post_page(request: Request, post_id: int, who: Viewer) -> Response:
    own_post(who.account_id, post_id)
    post = show_post(post_id)
    connected = {c.name: c.connected for c in show_channels() if c.account == who.account}
    fixes = {d.channel: fix_of(d.status, d.reason, connected.get(d.channel, True)) for d in post.deliveries}
    secrets = {d.channel: secret_settings(d.platform) for d in post.deliveries}
    return render(
        request,
        "post.html",
        who,
        post=post,
        timeline=timeline(post_id),
        fixes=fixes,
        fix_action=FIX_ACTION,
        secrets=secrets,
        cancellable=post.status not in (PostStatus.CANCELLED, PostStatus.PUBLISHED, PostStatus.FAILED),
        edit_refusal=edit_refusal(post),
        published_on=published_on(post),
        own_channels=[d.channel for d in post.deliveries if d.status is not DeliveryStatus.CANCELLED],
    )


@router.post("/posts/{post_id}/edit", dependencies=[Csrf])
async def edit(
    request: Request,
    post_id: int,
    who: Scheduler,
    revision: Annotated[int, Form(description="the revision the page showed")],
    mode: Annotated[str, Form(description="correct or republish, once the post has published")] = "",
) -> Response:
    own_post(who.account_id, post_id)
    post = show_post(post_id)
    refusal = edit_refusal(post)
    if refusal is not None:
        raise Conflict(refusal)
    if revision != post.revision:
        raise _stale(post_id, revision)
    form = await request.form()
    parts = _texts(form.getlist("part"))
    if not parts:
        raise UserError(f"post {post_id} needs some text: give part 1 its text, then save")
    own = {}
    for name in (d.channel for d in post.deliveries if d.status is not DeliveryStatus.CANCELLED):
        if f"text.{name}" in form:
            given = _texts(form.getlist(f"text.{name}"))
            if given != post.channel_texts.get(name, ()):
                own[name] = given  # () puts the channel back on the post's text
    change = PostEdit(parts=parts if parts != post.texts else None, channel_texts=own)
    if change.empty:
        raise UserError(f"nothing changed in post {post_id}: change a part's text or a channel's own text, then save")
    published = published_on(post)
    if mode not in ("", *EditMode):
        raise UserError(f"no edit mode {mode!r}: choose correct or republish")
    if published and not mode:
        raise Conflict(
            f"post {post_id} has published on {', '.join(published)}: choose 'correct' (fix herald's record; the "
            "copy on the platform stays as it is) or 'republish' (a new post, which may appear twice), then save"
        )
    try:
        result = edit_post(post_id, change, mode=EditMode(mode) if mode else None, revision=revision)
    except StaleRevision:  # edited in between: the same answer
        raise _stale(post_id, revision) from None
    if result.mode is EditMode.REPUBLISH:
        said = f"post {post_id} republished as post {result.post_id} (it may appear twice)"
        return done(request, f"/posts/{result.post_id}", said)
    copies = "".join(f"; on {c.channel}, {c.note}" for c in result.unchanged_copies)
    return done(request, f"/posts/{post_id}", f"post {post_id} saved (revision {result.revision}){copies}")


def _stale(post_id: int, revision: int) -> StaleRevision:
    return StaleRevision(
        f"post {post_id} was edited elsewhere since this page showed it (revision {revision}): nothing was saved; "
        "here it is as it is now, make your edit again"
    )


@router.post("/posts/{post_id}/retry", dependencies=[Csrf])
def retry(request: Request, post_id: int, who: Supporter, channel: Annotated[str, Form()] = "") -> Response:
    own_post(who.account_id, post_id)
    result = retry_post(post_id, channel or None)
    again = ", ".join(r.channel for r in result.retried)
    return done(request, back_to(request), f"post {post_id}: retrying {again}")


@router.post("/posts/{post_id}/resolve", dependencies=[Csrf])
def resolve(
    request: Request,
    post_id: int,
    who: Supporter,
    channel: Annotated[str, Form()],
    outcome: Annotated[str, Form()],
    url: Annotated[str, Form()] = "",
) -> Response:
    own_post(who.account_id, post_id)
    chosen: ResolveOutcome = SendAgain()
    if outcome == "landed":
        chosen = Landed(url.strip())
    elif outcome == "adopt":
        chosen = Adopt()
    result = resolve_post(post_id, channel, chosen)
    said = {"landed": f"landed at {result.url}", "adopt": f"adopted at {result.url}"}.get(result.outcome, "sent again")
    return done(request, back_to(request), f"post {post_id} on {channel}: {said}")


@router.post("/posts/{post_id}/approve", dependencies=[Csrf])
def approve(request: Request, post_id: int, who: Scheduler) -> Response:
    own_post(who.account_id, post_id)
    approve_post(post_id)
    return done(request, back_to(request), f"post {post_id} approved")


@router.post("/posts/{post_id}/cancel", dependencies=[Csrf])
def cancel(request: Request, post_id: int, who: Scheduler) -> Response:
    own_post(who.account_id, post_id)
    view = cancel_post(post_id)
    return done(request, back_to(request), f"post {post_id} cancelled on {', '.join(view.cancelled) or 'nothing'}")


@router.post("/channels/{name}/reconnect", dependencies=[Csrf])
async def reconnect(request: Request, name: str, who: Supporter) -> Response:
    own_channel(who.account_id, name)
    form = await request.form()
    given = {
        str(key).removeprefix("setting."): str(value).strip()
        for key, value in form.items()
        if str(key).startswith("setting.") and isinstance(value, str) and value.strip()
    }
    result = reconnect_channel(name, given or None)
    armed = f"; posts {', '.join(map(str, result.armed))} go out again" if result.armed else ""
    return done(request, back_to(request), f"channel {name} reconnected{armed}")


@router.get("/attention")
def attention_page(request: Request, who: Viewer) -> Response:
    rows = needing_attention(who.account_id)
    fixes = [fix_of(row.status, row.reason, row.connected) for row in rows]
    platforms = {c.name: c.platform for c in show_channels() if c.account == who.account}
    secrets = {name: secret_settings(platform) for name, platform in platforms.items()}
    return render(
        request, "attention.html", who, rows=list(zip(rows, fixes, strict=True)), fix_action=FIX_ACTION, secrets=secrets
    )
