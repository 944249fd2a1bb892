"""Who may do what: the roles an API key (and a dashboard login made with it) carries.

A key belongs to one account and sees only that account's posts, channels, media and
alarms. Its role says which actions it may take there; :data:`ALLOWED` is the one table
the API and the dashboard both ask (``allows``), so the two never disagree.
"""

from __future__ import annotations

import enum

from core.domain.errors import Forbidden


class Role(enum.StrEnum):
    #: Everything, keys and the account's emergency stop included.
    ADMIN = "admin"
    #: Schedules, edits, reschedules, cancels and approves posts; adds media; sets channels'
    #: posting slots.
    MANAGER = "manager"
    #: Fixes what is held or failed: retry, resolve, reconnect, lift holds, alarms.
    SUPPORT = "support"
    #: Reads everything its account has; changes nothing.
    VIEWER = "viewer"


class Action(enum.StrEnum):
    #: See posts, channels (secrets masked), media, the timeline, health and alarms.
    READ = "read"
    #: Create, edit, reschedule, cancel, approve and schedule drafts; add media; set a
    #: channel's posting slots (what add-to-queue fills).
    SCHEDULE = "schedule"
    #: Retry failed channels, resolve an attempt in doubt, reconnect a channel, lift holds,
    #: resolve alarms, test a channel's credentials.
    SUPPORT = "support"
    #: Add, edit and remove channels.
    CHANNELS = "channels"
    #: Turn the account's emergency stop on or off; create and revoke keys.
    ADMINISTER = "administer"


ALLOWED: dict[Role, frozenset[Action]] = {
    Role.ADMIN: frozenset(Action),
    Role.MANAGER: frozenset({Action.READ, Action.SCHEDULE}),
    Role.SUPPORT: frozenset({Action.READ, Action.SUPPORT}),
    Role.VIEWER: frozenset({Action.READ}),
}


def allows(role: Role, action: Action) -> bool:
    return action in ALLOWED[role]


def require(role: Role, action: Action, what: str = "key") -> None:
    """Raises: Forbidden: ``role`` does not allow ``action``; the message names the roles that do."""
    if not allows(role, action):
        needed = " or ".join(sorted(r.value for r in Role if allows(r, action)))
        raise Forbidden(f"a {role.value} {what} cannot {action.value}: it takes a key of role {needed}")
