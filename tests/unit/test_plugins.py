"""Adapters are plugins: found, listed, enabled by plugins.toml; every hook documented and tested."""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import config
from core.config import Settings
from core.domain.errors import ConfigError, NotFound
from core.domain.states import Strategy
from core.plugins import hookspecs
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, PublishContext, Published

ROOT = Path(__file__).resolve().parents[2]


def hook_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("herald_")]


def test_every_hook_is_documented_in_the_module_and_in_the_plugin_guide() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    assert hook_names()
    for name in hook_names():
        assert (getattr(hookspecs, name).__doc__ or "").strip(), name
        assert f"### `{name}(" in guide, f"{name} is missing from docs/plugins.md"


def test_every_hook_has_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    for name in hook_names():
        # Counting this file's own mention would make the test pass by itself.
        assert tests.count(name) > 1, f"no test exercises {name}"


@pytest.fixture
def toml(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "plugins.toml"
    config.use(Settings(plugins_toml=str(path)))
    plugins._instances.cache_clear()
    yield path
    config.use(None)
    plugins._instances.cache_clear()


def test_builtin_sandbox_adapters_are_registered_through_herald_register_adapters(toml: Path) -> None:
    listed = {info.name: info for info in plugins.describe()}
    assert {"sandbox-native", "sandbox-readback", "sandbox-none"} <= set(listed)
    assert listed["sandbox-native"].strategy == "native_key"
    assert listed["sandbox-native"].key_ttl == 24 * 3600
    assert listed["sandbox-readback"].strategy == "read_back"
    assert listed["sandbox-none"].strategy == "none"
    assert {info.plugin for name, info in listed.items() if name.startswith("sandbox")} == {"adapters.sandbox"}


def test_plugins_toml_decides_which_adapters_are_enabled(toml: Path) -> None:
    toml.write_text("[adapters.sandbox-native]\nenabled = true\n[adapters.sandbox-none]\nenabled = false\n")
    assert plugins.adapter("sandbox-native").name == "sandbox-native"
    with pytest.raises(NotFound, match="sandbox-none"):
        plugins.adapter("sandbox-none")
    with pytest.raises(NotFound, match="sandbox-native"):  # not listed: off, and the error names what is on
        plugins.adapter("sandbox-readback")


def test_plugins_toml_settings_reach_the_adapter(toml: Path) -> None:
    toml.write_text('[adapters.sandbox-native]\nregion = "eu"\n')
    assert plugins.adapter("sandbox-native").config == {"region": "eu"}


def test_a_broken_plugins_toml_is_a_clear_error(toml: Path) -> None:
    toml.write_text("[adapters.sandbox-native\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        plugins.adapter("sandbox-native")


class Echo(Adapter):
    name = "echo-test"
    version = "9"
    strategy = Strategy.NONE

    def publish(self, ctx: PublishContext) -> Published:
        return Published(ctx.key, f"echo://{ctx.key}")


def test_a_third_party_plugin_registers_an_adapter_like_the_builtin_ones(toml: Path) -> None:
    module = types.ModuleType("herald_echo")

    @hookspecs.hookimpl
    def herald_register_adapters(register: hookspecs.RegisterAdapter) -> None:
        register(Echo)

    module.herald_register_adapters = herald_register_adapters  # type: ignore[attr-defined]
    pm = plugins.plugin_manager()
    pm.register(module, name="herald_echo")
    try:
        listed = {info.name: info for info in plugins.describe()}
        assert listed["echo-test"].plugin == "herald_echo"
        assert listed["echo-test"].version == "9"
        assert isinstance(plugins.adapter("echo-test"), Echo)
    finally:
        pm.unregister(module)
