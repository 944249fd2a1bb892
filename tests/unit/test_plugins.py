"""Adapters are plugins: found, listed, enabled by plugins.toml; every hook documented and tested."""

from __future__ import annotations

import inspect
import logging
import types
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core import config
from core.config import Settings
from core.domain.errors import ConfigError, NotFound
from core.domain.states import Strategy
from core.plugins import hookspecs
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, PublishContext, Published
from core.plugins.events import AlarmEvent
from reconciler.alarms import notify

ROOT = Path(__file__).resolve().parents[2]


def hook_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("herald_")]


def test_every_hook_is_documented_in_the_module_and_in_the_plugin_guide() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    assert hook_names()
    for name in hook_names():
        assert (getattr(hookspecs, name).__doc__ or "").strip(), name
        assert f"### `{name}(" in guide, f"{name} is missing from docs/plugins.md"


@pytest.fixture
def toml(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "plugins.toml"
    path.write_text("")  # empty: every adapter enabled, until a test writes its own
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


def alarm_event() -> AlarmEvent:
    at = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    return AlarmEvent(7, "missed_slot", "open", 42, "n1", at, "180s past its slot", at)


def test_an_alarm_is_handed_to_every_herald_alarm_route_even_after_one_that_raises(
    toml: Path, caplog: pytest.LogCaptureFixture
) -> None:
    received: list[AlarmEvent] = []

    class Broken:
        @hookspecs.hookimpl
        def herald_alarm(self, alarm: AlarmEvent) -> None:
            raise RuntimeError("pager down")

    class Route:
        @hookspecs.hookimpl
        def herald_alarm(self, alarm: AlarmEvent) -> None:
            received.append(alarm)

    pm = plugins.plugin_manager()
    event = alarm_event()
    route = Route()
    pm.register(route)
    try:
        with caplog.at_level(logging.INFO):
            notify(event)
        assert received == [event]
        assert event.summary() in caplog.text  # the built-in route, reconciler.alarm_log

        broken = Broken()
        pm.register(broken)  # pluggy calls the last registered first: the broken one comes first
        caplog.clear()
        with caplog.at_level(logging.INFO):
            notify(event)
            notify(event)  # the broken route does not stop the next alarm
        pm.unregister(broken)
    finally:
        pm.unregister(route)
    assert received == [event, event, event]  # the routes after the broken one were still called
    assert caplog.text.count(event.summary()) == 2  # and so was the built-in log route, each time
    assert caplog.text.count("routing alarm 7 through") == 2  # logged, never raised to the reconciler


#: For each hook, the test above that implements it in a plugin and observes what herald
#: does with it. A hook added to hookspecs without an entry fails ``test_every_hook_has_a_test``.
HOOK_TESTS: dict[str, Callable[..., None]] = {
    "herald_register_adapters": test_a_third_party_plugin_registers_an_adapter_like_the_builtin_ones,
    "herald_alarm": test_an_alarm_is_handed_to_every_herald_alarm_route_even_after_one_that_raises,
}


class HookSpy:
    """A plugin implementing every hook by counting the calls herald makes to it."""

    def __init__(self, names: list[str]) -> None:
        self.calls: Counter[str] = Counter()
        for name in names:
            # Keyword-only: pluggy passes none, and herald's direct calls
            # (``impl.function(register=...)``) land in ``given``.
            def record(*, _name: str = name, **given: Any) -> None:
                self.calls[_name] += 1

            setattr(self, name, hookspecs.hookimpl(record))


def assert_exercises(name: str, test: Callable[..., None], toml: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Run ``test`` under a :class:`HookSpy` and check that herald called hook ``name`` meanwhile."""
    spy = HookSpy(hook_names())
    pm = plugins.plugin_manager()
    pm.register(spy, name="hook-spy")
    try:
        arguments = {"toml": toml, "caplog": caplog}
        test(**{p: arguments[p] for p in inspect.signature(test).parameters})
    finally:
        pm.unregister(spy)
    assert spy.calls[name], f"{test.__name__} never makes herald call {name}"


@pytest.mark.parametrize("name", hook_names())
def test_every_hook_has_a_test(name: str, toml: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Each hook has a test that implements it and observes its effect, and running that
    test makes herald itself call the hook (a test that only names it does not count)."""
    assert name in HOOK_TESTS, f"no test exercises {name}: write one and list it in HOOK_TESTS"
    assert_exercises(name, HOOK_TESTS[name], toml, caplog)


def test_hook_tests_lists_only_hooks_and_catches_a_test_that_never_reaches_the_hook(
    toml: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert set(HOOK_TESTS) <= set(hook_names())

    def names_the_hook_only(toml: Path) -> None:
        assert "herald_alarm" in hook_names()

    with pytest.raises(AssertionError, match="never makes herald call herald_alarm"):
        assert_exercises("herald_alarm", names_the_hook_only, toml, caplog)


def test_text_is_counted_as_the_platform_counts_it() -> None:
    from core.plugins import text_length

    family, accented = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", "e\u0301te\u0301"
    assert (text_length(family, "characters"), text_length(family, "graphemes")) == (7, 1)
    assert (text_length(accented, "characters"), text_length(accented, "graphemes")) == (5, 3)
    assert text_length("plain", "graphemes") == 5


def test_a_link_counts_its_fixed_length_where_the_platform_says_so() -> None:
    from core.plugins import text_length

    text = "read https://example.com/" + "a" * 200 + " and http://x.io now"
    assert text_length(text, "characters") == len(text)
    # Each link, up to the next space, counts 23 (Mastodon's characters_reserved_per_url).
    assert text_length(text, "graphemes", 23) == len("read ") + 23 + len(" and ") + 23 + len(" now")
    assert text_length("no links, ftp://not.one", "characters", 23) == len("no links, ftp://not.one")
