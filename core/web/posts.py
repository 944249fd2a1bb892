"""A post's page (``/posts/{id}``) and needs attention (``/attention``): per channel its
state, the reason's explanation, and the one action that fixes it as a button – retry this
channel, reconnect, mark landed with the URL or send again, adopt a copy found before the
first send or publish anyway, approve – each one service call
(``core.services.support``, ``channels``, ``posts``); and the post's timeline (§14)."""

from __future__ import annotations

import enum
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response

from core.domain.roles import Action
from core.domain.states import RETRY_LIFTS, DeliveryStatus, PostStatus, Reason
from core.plugins import channel_settings
from core.plugins import manager as plugins
from core.services.attention import needing_attention
from core.services.channels import CHANNEL_HOLDS, reconnect_channel, show_channels
from core.services.posts import approve_post, cancel_post, show_post
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
