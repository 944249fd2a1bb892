"""``/api/v1/channels``: list, add (with its platform's declared settings), show, test,
edit, reconnect, remove, posting slots – each the call `herald channel ...` makes.
Secrets are masked in every answer, as `herald channel list` masks them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from core.api.auth import ChannelAdmin, Reader, Scheduler, Supporter
from core.api.models import ChannelChange, ChannelCreate, PostingSlotsChange, Reconnect
from core.domain.errors import NotFound
from core.domain.posting_slots import slots_of
from core.services import scope
from core.services.channels import (
    ChannelView,
    Edited,
    Reconnected,
    Removed,
    Tested,
    add_channel,
    check_credentials,
    edit_channel,
    reconnect_channel,
    remove_channel,
    show_channels,
)
from core.services.posting_slots import PostingSlotsView, change_posting_slots, show_posting_slots
from core.services.views import Json, jsonable

router = APIRouter(prefix="/channels", tags=["channels"])


def _view(account: str, name: str) -> ChannelView:
    for view in show_channels():
        if view.account == account and view.name == name:
            return view
    raise NotFound(f"no channel named {name!r}")


@router.get("", response_model=list[ChannelView])
def channels(who: Reader) -> Json:
    """The account's channels with their connection and settings (secrets masked)."""
    return jsonable([view for view in show_channels() if view.account == who.account])


@router.post("", response_model=ChannelView, status_code=201)
def add(body: ChannelCreate, who: ChannelAdmin) -> Json:
    """Add a channel to the key's account; its settings are checked against its platform's."""
    add_channel(body.name, body.platform, body.settings, who.account)
    return jsonable(_view(who.account, body.name))


@router.get("/{name}", response_model=ChannelView)
def show(name: str, who: Reader) -> Json:
    scope.own_channel(who.account_id, name)
    return jsonable(_view(who.account, name))


@router.post("/{name}/test", response_model=Tested)
def test(name: str, who: Supporter) -> Json:
    """Check the channel's credentials with one read-only call to its platform."""
    scope.own_channel(who.account_id, name)
    return jsonable(check_credentials(name))


@router.patch("/{name}", response_model=Edited)
def edit(name: str, body: ChannelChange, who: ChannelAdmin) -> Json:
    """Change the channel's settings (checked against its platform's)."""
    scope.own_channel(who.account_id, name)
    return jsonable(edit_channel(name, body.settings, body.unset))


@router.post("/{name}/reconnect", response_model=Reconnected)
def reconnect(name: str, body: Reconnect, who: Supporter) -> Json:
    """Mark the channel connected again (with new credentials); its held deliveries go out."""
    scope.own_channel(who.account_id, name)
    return jsonable(reconnect_channel(name, body.settings))


@router.delete("/{name}", response_model=Removed)
def remove(
    name: str,
    who: ChannelAdmin,
    cancel_pending: Annotated[bool, Query(description="First cancel its unfinished deliveries.")] = False,
) -> Json:
    """Remove the channel; refused while it has unfinished deliveries, unless cancel_pending."""
    scope.own_channel(who.account_id, name)
    return jsonable(remove_channel(name, cancel_pending=cancel_pending))


@router.get("/{name}/slots", response_model=PostingSlotsView)
def slots(name: str, who: Reader) -> Json:
    """The channel's posting slots, and the next free ones (`"queue": true` takes the first)."""
    scope.own_channel(who.account_id, name)
    return jsonable(show_posting_slots(name))


@router.put("/{name}/slots", response_model=PostingSlotsView)
def set_slots(name: str, body: PostingSlotsChange, who: Scheduler) -> Json:
    """Replace the channel's posting slots: days × local times in one IANA zone."""
    scope.own_channel(who.account_id, name)
    wanted = [slot for rule in body.slots for slot in slots_of(rule.days, rule.times)]
    return jsonable(change_posting_slots(name, add=wanted, clear=True, zone=body.zone))
