"""Admission: the one question every path asks before anything is sent (§8).

``admit`` is pure: the caller loads the rows, admission only decides. Publish-now, the
publish job, arming and the reconciler all ask it, so a hold means the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from core.domain.states import Reason
from core.store.models import AccountStatus, Approval


class PostFacts(Protocol):
    """What admission reads of a post (a loaded row, or the claim's own read of it)."""

    @property
    def approval(self) -> Approval: ...
    @property
    def parts(self) -> list[dict[str, Any]]: ...
    @property
    def not_before(self) -> datetime | None: ...


class ChannelFacts(Protocol):
    @property
    def connected(self) -> bool: ...


class AccountFacts(Protocol):
    @property
    def status(self) -> AccountStatus: ...
    @property
    def emergency_stop(self) -> bool: ...


@dataclass(frozen=True)
class Admit:
    """Go ahead."""


@dataclass(frozen=True)
class Wait:
    """Not yet: nothing may be sent before ``until`` (an embargo)."""

    until: datetime


@dataclass(frozen=True)
class Hold:
    """No: the delivery is held with ``reason`` until a person or the cause lifts it."""

    reason: Reason


Decision = Admit | Wait | Hold


def media_ready(parts: list[dict[str, Any]]) -> bool:
    """Whether every attachment of the whole bundle has finished processing."""
    return all(item.get("ready", True) for part in parts for item in part.get("media", []))


def admit(
    post: PostFacts,
    channel: ChannelFacts,
    account: AccountFacts,
    *,
    global_stop: bool,
    now: datetime,
) -> Decision:
    """Decide whether a delivery of ``post`` to ``channel`` may be sent at ``now``.

    Holds come first (a held post stays held whatever its embargo says), in the order a
    person would fix them: stops, the account, the workflow, the media, the channel.
    """
    if global_stop or account.emergency_stop:
        return Hold(Reason.EMERGENCY_STOP)
    if account.status is AccountStatus.UNPAID:
        return Hold(Reason.ACCOUNT_UNPAID)
    if account.status is AccountStatus.SUSPENDED:
        return Hold(Reason.ACCOUNT_SUSPENDED)
    if post.approval is Approval.PENDING:
        return Hold(Reason.APPROVAL_PENDING)
    if not media_ready(post.parts):
        return Hold(Reason.MEDIA_NOT_READY)
    if not channel.connected:
        return Hold(Reason.CHANNEL_DISCONNECTED)
    if post.not_before is not None and post.not_before > now:
        return Wait(post.not_before)
    return Admit()
