"""Every hook herald calls, typed, one docstring each.

Plugins implement them with ``@hookimpl`` and are found through the ``herald`` entry
point group (built-in adapters are loaded the same way as third-party ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    from core.plugins.adapter import Adapter
    from core.plugins.events import AlarmEvent

hookspec = HookspecMarker("herald")
hookimpl = HookimplMarker("herald")

#: The callback handed to ``herald_register_adapters``: pass it an Adapter subclass.
RegisterAdapter = Callable[["type[Adapter]"], None]


@hookspec
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Called once when the plugin manager loads; call ``register(AdapterClass)`` for each
    platform adapter the plugin provides. Which adapters are enabled, and their settings,
    come from ``plugins.toml``."""


@hookspec
def herald_alarm(alarm: AlarmEvent) -> None:
    """Called once when an alarm is raised (``alarm.state == "open"``) and once when its
    condition clears (``"resolved"``). Route it to a person: a log, a webhook, a pager.
    Every implementation is called; one that raises does not stop the others being
    tried on the next raise, and is logged."""
