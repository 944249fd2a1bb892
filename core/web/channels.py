"""The channels page (``/channels``): the account's channels with their settings' secrets
masked (``ChannelView``); add, test, reconnect (``core.web.posts``) and remove. A secret
typed into a form is sent once and never shown back."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request, Response

from core.plugins import manager as plugins
from core.services.channels import add_channel, check_credentials, parse_settings, remove_channel, show_channels
from core.services.scope import own_channel
from core.web.posts import secret_settings
from core.web.rendering import PageRoute, done, render
from core.web.session import ChannelAdmin, Csrf, Supporter, Viewer

router = APIRouter(route_class=PageRoute)


@router.get("/channels")
def channels_page(request: Request, who: Viewer) -> Response:
    own = [c for c in show_channels() if c.account == who.account]
    return render(
        request,
        "channels.html",
        who,
        channels=own,
        secrets={c.name: secret_settings(c.platform) for c in own},
        platforms=sorted(plugins.registered()),
    )


@router.post("/channels", dependencies=[Csrf])
def add(
    request: Request,
    who: ChannelAdmin,
    name: Annotated[str, Form()],
    platform: Annotated[str, Form()],
    settings: Annotated[str, Form(description="key=value, one a line")] = "",
) -> Response:
    given = parse_settings([line for line in settings.splitlines() if line.strip()])
    add_channel(name, platform, given, account=who.account)
    return done(request, "/channels", f"channel {name} added")


@router.post("/channels/{name}/test", dependencies=[Csrf])
def test(request: Request, name: str, who: Supporter) -> Response:
    own_channel(who.account_id, name)
    tested = check_credentials(name)
    return done(request, "/channels", f"{tested.platform} took {name}'s credentials ({tested.who})")


@router.post("/channels/{name}/remove", dependencies=[Csrf])
def remove(request: Request, name: str, who: ChannelAdmin, cancel_pending: Annotated[str, Form()] = "") -> Response:
    own_channel(who.account_id, name)
    removed = remove_channel(name, cancel_pending=cancel_pending == "on")
    cancelled = f"; posts {', '.join(map(str, removed.cancelled))} cancelled on it" if removed.cancelled else ""
    return done(request, "/channels", f"channel {name} removed{cancelled}")
