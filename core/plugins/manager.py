"""The plugin manager: adapters found through the ``herald`` entry point group.

Built-in adapters are listed in ``DEFAULT_PLUGINS`` and registered exactly like
third-party ones; ``plugins.toml`` says which are enabled and holds their settings.

A plugin that fails – to import, or in its ``herald_register_adapters`` – is reported in
one line (its name and the error) and left out; herald goes on with the others. One that
``[plugins.NAME] enabled = false`` turns off is not imported at all.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
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
DEFAULT_PLUGINS = (
    "adapters.sandbox",
    "adapters.mastodon",
    "adapters.bluesky",
    "adapters.discord",
    "adapters.telegram",
    "adapters.webhook",
    "reconciler.alarm_log",
    "reconciler.webhook",
)


@dataclass(frozen=True)
class PluginProblem:
    """A plugin herald left out, and why."""

    name: str
    #: ``import``, ``register`` (its adapters could not be registered) or ``off`` (plugins.toml).
    stage: str
    error: str


#: The plugins left out of this process, in the order they were found.
_problems: list[PluginProblem] = []


def _left_out(problem: PluginProblem) -> None:
    if problem not in _problems:
        _problems.append(problem)
        if problem.stage != "off":
            log.warning("plugin %s left out (%s): %s", problem.name, problem.stage, problem.error)


@cache
def plugin_manager() -> pluggy.PluginManager:
    """Every plugin loaded: the built-in ones, then the ``herald`` entry points that import."""
    pm = pluggy.PluginManager("herald")
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    off = read_plugins_toml(settings().plugins_toml).plugins_off
    for entry in importlib.metadata.entry_points(group="herald"):
        if entry.name in off:
            _left_out(PluginProblem(entry.name, "off", "[plugins] enabled = false in plugins.toml"))
            continue
        if pm.get_plugin(entry.name) is not None or pm.is_blocked(entry.name):
            continue
        try:
            module = entry.load()
            pm.register(module, name=entry.name)
        except Exception as exc:  # a plugin's bug is its own: herald goes on without it
            _left_out(PluginProblem(entry.name, "import", f"{type(exc).__name__}: {exc}"))
    pm.check_pending()
    return pm


def problems() -> list[PluginProblem]:
    """The plugins left out of this process (after :func:`registered` has run once)."""
    registered()
    return list(_problems)


@dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin and the hooks it implements (``herald adapters``)."""

    name: str
    hooks: tuple[str, ...]


def plugins() -> list[PluginInfo]:
    """Every loaded plugin, with the hooks it implements, by name."""
    pm = plugin_manager()
    found = []
    for name, plugin in sorted(pm.list_name_plugin(), key=lambda pair: pair[0]):
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        found.append(PluginInfo(name, hooks))
    return found


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
    """Every adapter class any plugin registered, with the plugin that did; a plugin whose
    registration fails is left out whole (none of its adapters)."""
    pm = plugin_manager()
    found: dict[str, tuple[type[Adapter], str]] = {}
    for impl in pm.hook.herald_register_adapters.get_hookimpls():
        plugin = pm.get_name(impl.plugin) or str(impl.plugin)
        mine: dict[str, type[Adapter]] = {}

        def register(cls: type[Adapter], plugin: str = plugin, mine: dict[str, type[Adapter]] = mine) -> None:
            if cls.name in found or cls.name in mine:
                other = found[cls.name][1] if cls.name in found else plugin
                raise ConfigError(f"two plugins register an adapter named {cls.name!r}: {other}, {plugin}")
            mine[cls.name] = cls

        try:
            impl.function(register=register)
        except ConfigError:
            raise  # two plugins claiming one name: a person must choose
        except Exception as exc:
            _left_out(PluginProblem(plugin, "register", f"{type(exc).__name__}: {exc}"))
            continue
        found.update((name, (cls, plugin)) for name, cls in mine.items())
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
