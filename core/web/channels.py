"""The channels page (``/channels``): the account's channels with their settings' secrets
masked (``ChannelView``); add, edit, test, reconnect (``core.web.posts``) and remove. A
secret typed into a form is sent once and never shown back.

The edit form offers the settings the channel's adapter declares (and any other the
channel has): a plain setting with its value, a secret with its mask only. A secret's
field left blank keeps the secret; a plain setting's field emptied takes it away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response

from core.domain.errors import UserError
from core.plugins import channel_settings
from core.plugins import manager as plugins
from core.services.channels import (
    ChannelView,
    add_channel,
    check_credentials,
    edit_channel,
    parse_settings,
    remove_channel,
    show_channels,
)
from core.services.scope import own_channel
from core.web.posts import secret_settings
from core.web.rendering import PageRoute, done, render
from core.web.session import ChannelAdmin, Csrf, Supporter, Viewer

router = APIRouter(route_class=PageRoute)


@dataclass(frozen=True)
class SettingField:
    """One setting on a channel's edit form."""

    name: str
    #: What it is, as the adapter declares it ("" for a setting it does not declare).
    description: str
    required: bool
    secret: bool
    #: What the field holds: a plain setting's value; always "" for a secret.
    value: str
    #: A secret's mask (``••••6789``), "" when the channel has none yet.
    masked: str
    #: A valid value, shown while the field is empty.
    example: str


def setting_fields(channel: ChannelView) -> list[SettingField]:
    """The settings ``channel``'s edit form offers: every one its adapter declares, then any
    other the channel has. A secret's value is never read: ``ChannelView`` holds its mask."""
    adapter = plugins.adapter_class(channel.platform)
    declared = channel_settings.declared(adapter) if adapter is not None else None
    fields = []
    for setting in declared or ():
        held = channel.settings.get(setting.name, "")
        fields.append(
            SettingField(
                setting.name,
                setting.description,
                setting.required,
                setting.secret,
                "" if setting.secret else held,
                held if setting.secret else "",
                setting.example,
            )
        )
    offered = {f.name for f in fields}
    for name, held in channel.settings.items():
        if name not in offered:
            secret = channel_settings.is_secret(adapter, name)
            fields.append(SettingField(name, "", False, secret, "" if secret else held, held if secret else "", ""))
    return fields


def _own_channels(account: str) -> list[ChannelView]:
    return [c for c in show_channels() if c.account == account]


@router.get("/channels")
def channels_page(request: Request, who: Viewer) -> Response:
    own = _own_channels(who.account)
    return render(
        request,
        "channels.html",
        who,
        channels=own,
        secrets={c.name: secret_settings(c.platform) for c in own},
        fields={c.name: setting_fields(c) for c in own},
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


@router.post("/channels/{name}/edit", dependencies=[Csrf])
async def edit(request: Request, name: str, who: ChannelAdmin) -> Response:
    own_channel(who.account_id, name)
    (channel,) = [c for c in _own_channels(who.account) if c.name == name]
    form = await request.form()
    given: dict[str, str] = {}
    unset: list[str] = []
    for field in setting_fields(channel):
        sent = form.get(f"setting.{field.name}")
        if not isinstance(sent, str):
            continue  # not on the form: as it is
        sent = sent.strip()
        if field.secret:
            if sent:  # blank: the secret stays as it is
                given[field.name] = sent
        elif sent and sent != field.value:
            given[field.name] = sent
        elif not sent and field.name in channel.settings:
            unset.append(field.name)
    if not given and not unset:
        raise UserError(
            f"nothing changed on channel {name}: change a setting, or type a new secret (a blank secret stays as it is)"
        )
    edited = edit_channel(name, given, unset)
    said = [f"{', '.join(edited.updated_settings)} changed"] if edited.updated_settings else []
    said += [f"{', '.join(edited.removed_settings)} taken away"] if edited.removed_settings else []
    return done(request, "/channels", f"channel {name} edited: {'; '.join(said)}")


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
