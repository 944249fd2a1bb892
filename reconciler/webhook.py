"""Built-in alarm route: POST each alarm as JSON to the URL set in plugins.toml.

```toml
[alarms.webhook]
url = "https://example.org/hooks/herald"
```

Without a URL it does nothing.
"""

from __future__ import annotations

import logging

import httpx

from core.plugins.events import AlarmEvent
from core.plugins.hookspecs import hookimpl
from core.plugins.manager import plugins_toml

log = logging.getLogger(__name__)


def webhook_url() -> str | None:
    """``[alarms.webhook] url``, checked to be an http(s) URL (``core.plugins.plugins_toml``)."""
    return plugins_toml().webhook_url


@hookimpl
def herald_alarm(alarm: AlarmEvent) -> None:
    url = webhook_url()
    if url is None:
        return
    try:
        httpx.post(url, json={"text": alarm.summary(), "alarm": alarm.as_json()}, timeout=5.0).raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("alarm webhook %s failed: %s", url, exc)
