"""plugins.toml: which adapters are enabled, their adapter-wide settings, the alarm webhook.

Read and checked here, in one place, so every mistake is refused the same way: one line
naming the file, the key and the fix. ``HERALD_PLUGINS_TOML`` names the file; unset, it
is ``plugins.toml`` in the working directory when there is one, and without one every
registered adapter is enabled::

    [adapters.sandbox-native]
    enabled = true          # a boolean; any other key reaches the adapter as self.config

    [alarms.webhook]
    url = "https://example.org/hooks/herald"

    [plugins.some-plugin]   # an installed plugin (its entry point's name) ...
    enabled = false         # ... that herald does not even import
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from core.domain.errors import ConfigError
from core.plugins.channel_settings import http_url

#: Read when ``HERALD_PLUGINS_TOML`` is not set, if it exists.
DEFAULT_PATH = Path("plugins.toml")


@dataclass(frozen=True)
class AdapterEntry:
    """One ``[adapters.NAME]`` table."""

    enabled: bool
    #: Every key but ``enabled``: the adapter's own settings (``Adapter.config``).
    config: Mapping[str, Any]


@dataclass(frozen=True)
class PluginsToml:
    """What plugins.toml says, checked."""

    #: The file read; None when none was named and the working directory has none.
    path: Path | None
    #: The ``[adapters.NAME]`` tables, by name.
    adapters: Mapping[str, AdapterEntry]
    #: Where the built-in webhook route POSTs alarms (``[alarms.webhook] url``).
    webhook_url: str | None
    #: Installed plugins (entry point names) that ``[plugins.NAME] enabled = false`` keeps
    #: from being imported at all.
    plugins_off: frozenset[str]
    #: The whole file, for the sections other plugins read themselves.
    data: Mapping[str, Any]

    def enabled(self, adapter: str) -> bool:
        """Whether the adapter called ``adapter`` is on: every one when the file lists none."""
        if not self.adapters:
            return True
        entry = self.adapters.get(adapter)
        return entry is not None and entry.enabled

    def config(self, adapter: str) -> Mapping[str, Any]:
        """The adapter-wide settings of ``adapter`` (empty when it has no table)."""
        entry = self.adapters.get(adapter)
        return entry.config if entry is not None else MappingProxyType({})

    def unknown(self, registered: Collection[str]) -> list[str]:
        """The adapter tables that name no adapter in ``registered`` (a typo, or a plugin not installed)."""
        return sorted(set(self.adapters) - set(registered))


NOTHING = PluginsToml(
    path=None, adapters=MappingProxyType({}), webhook_url=None, plugins_off=frozenset(), data=MappingProxyType({})
)


def read(given: str) -> PluginsToml:
    """plugins.toml, checked.

    Args:
        given: ``HERALD_PLUGINS_TOML``; empty for ``./plugins.toml`` when there is one.

    Raises:
        ConfigError: a named file that does not exist, a file that is not TOML, or an
            entry of the wrong shape, each naming the file, the key and the fix.
    """
    if not given:
        if not DEFAULT_PATH.is_file():
            return NOTHING
        path = DEFAULT_PATH
    else:
        path = Path(given)
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise ConfigError(
                f"HERALD_PLUGINS_TOML={given}: {what}; point it at your plugins.toml, "
                "or unset it to use ./plugins.toml (without one, every adapter is enabled)"
            )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the line it names.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); check the file and HERALD_PLUGINS_TOML") from None
    return PluginsToml(
        path=path,
        adapters=MappingProxyType(_adapters(path, data)),
        webhook_url=_webhook_url(path, data),
        plugins_off=_plugins_off(path, data),
        data=MappingProxyType(data),
    )


def _adapters(path: Path, data: Mapping[str, Any]) -> dict[str, AdapterEntry]:
    tables = _table(path, data, "adapters", "[adapters.NAME] tables, e.g. [adapters.sandbox-native]")
    entries: dict[str, AdapterEntry] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: adapters.{name} = {_toml(table)} is not a table; "
                f"write [adapters.{name}] with enabled = true under it"
            )
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(
                f"{path}: adapters.{name}.enabled = {_toml(enabled)} is not a boolean; "
                "write enabled = true or enabled = false, without quotes"
            )
        config = {key: value for key, value in table.items() if key != "enabled"}
        entries[name] = AdapterEntry(enabled=enabled, config=MappingProxyType(config))
    return entries


def _plugins_off(path: Path, data: Mapping[str, Any]) -> frozenset[str]:
    tables = _table(path, data, "plugins", "[plugins.NAME] tables, e.g. [plugins.my-plugin]")
    off = set()
    for name, table in tables.items():
        enabled = table.get("enabled", True) if isinstance(table, dict) else table
        if not isinstance(enabled, bool):
            raise ConfigError(
                f"{path}: plugins.{name} must be a table with enabled = true or enabled = false (a boolean, "
                "without quotes)"
            )
        if not enabled:
            off.add(name)
    return frozenset(off)


def _webhook_url(path: Path, data: Mapping[str, Any]) -> str | None:
    routes = _table(path, data, "alarms", "[alarms.ROUTE] tables, e.g. [alarms.webhook]")
    webhook = routes.get("webhook", {})
    if not isinstance(webhook, dict):
        raise ConfigError(
            f"{path}: alarms.webhook = {_toml(webhook)} is not a table; write [alarms.webhook] with url = ..."
        )
    url = webhook.get("url")
    if url is None or url == "":
        return None
    if not isinstance(url, str) or http_url(url):
        raise ConfigError(
            f"{path}: alarms.webhook.url = {_toml(url)} is not an http(s) URL; "
            'write the full address, e.g. url = "https://example.org/hooks/herald"'
        )
    return url


def _table(path: Path, data: Mapping[str, Any], key: str, shape: str) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {key} = {_toml(table)} is not a table; write it as {shape}")
    return table


def _toml(value: object) -> str:
    """``value`` as it reads in the file: strings quoted, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)
    return type(value).__name__
