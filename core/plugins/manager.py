"""The plugin manager: adapters found through the ``herald`` entry point group.

Built-in adapters are listed in ``DEFAULT_PLUGINS`` and registered exactly like
third-party ones; ``plugins.toml`` says which are enabled and holds their settings.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from dataclasses import dataclass
from functools import cache

import pluggy

from core.config import settings
from core.domain.errors import ConfigError, NotFound
from core.plugins import hookspecs
from core.plugins.adapter import Adapter
from core.plugins.plugins_toml import PluginsToml
from core.plugins.plugins_toml import read as read_plugins_toml

log = logging.getLogger(__name__)

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


def plugins_toml() -> PluginsToml:
    """plugins.toml as the settings name it, checked; an adapter table naming no loaded
    adapter is reported once, in one line (a typo, or a plugin that is not installed).

    Raises:
        ConfigError: the file is missing, not TOML, or an entry has the wrong shape.
    """
    loaded = read_plugins_toml(settings().plugins_toml)
    names = registered()
    for name in loaded.unknown(names):
        _report_unknown(str(loaded.path), name, tuple(sorted(names)))
    return loaded


@cache
def _report_unknown(path: str, name: str, known: tuple[str, ...]) -> None:
    close = difflib.get_close_matches(name, known, n=1)
    guess = f"did you mean [adapters.{close[0]}]? " if close else ""
    log.warning(
        "%s: [adapters.%s] names no adapter herald has loaded (loaded: %s); %s"
        "fix the name, or install the plugin that provides it",
        path,
        name,
        ", ".join(known) or "none",
        guess,
    )


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
    config = plugins_toml()
    return [
        AdapterInfo(name, cls.version, str(cls.strategy), cls.key_ttl, plugin, config.enabled(name))
        for name, (cls, plugin) in sorted(registered().items())
    ]


def adapter_class(name: str) -> type[Adapter] | None:
    """The class of the adapter called ``name``, enabled or not; None when no plugin registers it."""
    found = registered().get(name)
    return found[0] if found is not None else None


@cache
def _instances(toml_path: str) -> dict[str, Adapter]:
    config = plugins_toml()
    return {
        name: cls(dict(config.config(name))) for name, (cls, _plugin) in registered().items() if config.enabled(name)
    }


def load() -> None:
    """Load the enabled adapters now (a worker before its first job): a broken
    plugins.toml is refused at start, not in the middle of a publish.

    Raises:
        ConfigError: plugins.toml cannot work.
    """
    _instances(settings().plugins_toml)


def adapter(name: str) -> Adapter:
    """The enabled adapter called ``name`` (one instance per process).

    Raises:
        NotFound: no enabled adapter has that name.
    """
    instances = _instances(settings().plugins_toml)
    if name not in instances:
        known = ", ".join(sorted(instances)) or "none"
        if name in registered():
            path = plugins_toml().path
            raise NotFound(
                f"no enabled adapter {name!r} (enabled: {known}): {path} leaves it off; "
                f"set enabled = true under [adapters.{name}]"
            )
        raise NotFound(f"no enabled adapter {name!r} (enabled: {known}); see `herald adapters` and plugins.toml")
    return instances[name]
