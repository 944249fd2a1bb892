"""The plugin manager: adapters found through the ``herald`` entry point group.

Built-in adapters are listed in ``DEFAULT_PLUGINS`` and registered exactly like
third-party ones; ``plugins.toml`` says which are enabled and holds their settings.
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pluggy

from core.config import settings
from core.domain.errors import ConfigError, NotFound
from core.plugins import hookspecs
from core.plugins.adapter import Adapter

#: Modules shipped with herald that are plugins like any other.
DEFAULT_PLUGINS = ("adapters.sandbox", "reconciler.alarm_log", "reconciler.webhook")


@cache
def plugin_manager() -> pluggy.PluginManager:
    """Every plugin loaded: the built-in ones, then the ``herald`` entry points."""
    pm = pluggy.PluginManager("herald")
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    pm.load_setuptools_entrypoints("herald")
    pm.check_pending()
    return pm


def read_plugins_toml(path: Path, section: str = "adapters") -> dict[str, dict[str, Any]]:
    """The ``[SECTION.NAME]`` tables of plugins.toml; empty when the file is absent.

    Raises:
        ConfigError: the file is not valid TOML.
    """
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the line it names.") from None
    tables = data.get(section, {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [{section}] must be a table of [{section}.NAME] tables.")
    return tables


@dataclass(frozen=True)
class AdapterInfo:
    name: str
    version: str
    strategy: str
    key_ttl: float | None
    plugin: str
    enabled: bool


def registered() -> dict[str, tuple[type[Adapter], str]]:
    """Every adapter class any plugin registered, with the plugin that did."""
    pm = plugin_manager()
    found: dict[str, tuple[type[Adapter], str]] = {}
    for impl in pm.hook.herald_register_adapters.get_hookimpls():
        plugin = pm.get_name(impl.plugin) or str(impl.plugin)

        def register(cls: type[Adapter], plugin: str = plugin) -> None:
            if cls.name in found:
                raise ConfigError(f"two plugins register an adapter named {cls.name!r}: {found[cls.name][1]}, {plugin}")
            found[cls.name] = (cls, plugin)

        impl.function(register=register)
    return found


def describe() -> list[AdapterInfo]:
    """What ``herald adapters`` lists."""
    config = read_plugins_toml(Path(settings().plugins_toml))
    return [
        AdapterInfo(name, cls.version, str(cls.strategy), cls.key_ttl, plugin, _enabled(config, name))
        for name, (cls, plugin) in sorted(registered().items())
    ]


def _enabled(config: dict[str, dict[str, Any]], name: str) -> bool:
    # Without a plugins.toml every registered adapter is on; with one, the ones it lists.
    if not config:
        return True
    return name in config and bool(config[name].get("enabled", True))


@cache
def _instances(toml_path: str) -> dict[str, Adapter]:
    config = read_plugins_toml(Path(toml_path))
    return {
        name: cls({k: v for k, v in config.get(name, {}).items() if k != "enabled"})
        for name, (cls, _plugin) in registered().items()
        if _enabled(config, name)
    }


def adapter(name: str) -> Adapter:
    """The enabled adapter called ``name`` (one instance per process).

    Raises:
        NotFound: no enabled adapter has that name.
    """
    instances = _instances(settings().plugins_toml)
    if name not in instances:
        known = ", ".join(sorted(instances)) or "none"
        raise NotFound(f"no enabled adapter {name!r} (enabled: {known}); see `herald adapters` and plugins.toml")
    return instances[name]
