"""Built-in alarm route: every alarm goes to the log, at WARNING when raised."""

from __future__ import annotations

import logging

from core.plugins.events import AlarmEvent
from core.plugins.hookspecs import hookimpl

log = logging.getLogger("herald.alarms")


@hookimpl
def herald_alarm(alarm: AlarmEvent) -> None:
    log.log(logging.WARNING if alarm.state == "open" else logging.INFO, alarm.summary())
