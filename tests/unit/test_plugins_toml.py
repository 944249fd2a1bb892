"""plugins.toml is checked in one place: every mistake is one line naming the file, the key and the fix."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import config
from core.config import Settings
from core.domain.errors import ConfigError, NotFound
from core.plugins import manager as plugins
from core.plugins import plugins_toml


@pytest.fixture
def toml(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "plugins.toml"
    config.use(Settings(plugins_toml=str(path)))
    plugins._instances.cache_clear()
    plugins._report_unknown.cache_clear()
    yield path
    config.use(None)
    plugins._instances.cache_clear()


def refused(path: Path, text: str) -> str:
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        plugins_toml.read(str(path))
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message  # names the file
    return message


def test_enabled_as_a_string_is_refused_not_taken_for_true(toml: Path) -> None:
    message = refused(toml, '[adapters.sandbox-native]\nenabled = "false"\n')
    assert message.endswith(
        'adapters.sandbox-native.enabled = "false" is not a boolean; write enabled = true or enabled = false, '
        "without quotes"
    )
    with pytest.raises(ConfigError):  # and nothing loads the adapter meanwhile
        plugins.adapter("sandbox-native")


def test_an_adapter_entry_that_is_not_a_table_is_refused_with_the_table_to_write(toml: Path) -> None:
    message = refused(toml, "[adapters]\nsandbox-native = true\n")
    assert message.endswith(
        "adapters.sandbox-native = true is not a table; write [adapters.sandbox-native] with enabled = true under it"
    )


def test_adapters_that_is_not_a_table_is_refused_readably(toml: Path) -> None:
    message = refused(toml, "adapters = 3\n")
    assert message.endswith(
        "adapters = 3 is not a table; write it as [adapters.NAME] tables, e.g. [adapters.sandbox-native]"
    )


@pytest.mark.parametrize(
    ("url", "shown"), [("not a url", '"not a url"'), ("ftp://example.org/x", '"ftp://example.org/x"'), ("7", '"7"')]
)
def test_a_webhook_url_that_is_not_http_is_refused(toml: Path, url: str, shown: str) -> None:
    message = refused(toml, f'[alarms.webhook]\nurl = "{url}"\n')
    assert message.endswith(
        f"alarms.webhook.url = {shown} is not an http(s) URL; write the full address, "
        'e.g. url = "https://example.org/hooks/herald"'
    )


def test_a_webhook_url_of_the_wrong_type_is_refused(toml: Path) -> None:
    assert "alarms.webhook.url = 7 is not an http(s) URL" in refused(toml, "[alarms.webhook]\nurl = 7\n")
    assert "alarms.webhook = true is not a table" in refused(toml, "[alarms]\nwebhook = true\n")


def test_a_good_file_is_read_with_its_adapter_settings_and_webhook(toml: Path) -> None:
    toml.write_text(
        "[adapters.sandbox-native]\nenabled = true\nregion = 'eu'\n"
        "[adapters.sandbox-none]\nenabled = false\n"
        "[adapters.sandbox-readback]\n"
        "[alarms.webhook]\nurl = 'https://example.org/hooks/herald'\n"
    )
    read = plugins_toml.read(str(toml))
    assert read.path == toml
    assert (read.enabled("sandbox-native"), read.enabled("sandbox-none"), read.enabled("sandbox-readback")) == (
        True,
        False,
        True,  # a table without `enabled` is on
    )
    assert read.enabled("elsewhere") is False  # the file lists adapters: the others are off
    assert dict(read.config("sandbox-native")) == {"region": "eu"}
    assert read.webhook_url == "https://example.org/hooks/herald"


def test_a_named_file_that_does_not_exist_is_an_error_naming_it_not_everything_enabled(toml: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        plugins_toml.read(str(toml))
    assert str(caught.value) == (
        f"HERALD_PLUGINS_TOML={toml}: does not exist; point it at your plugins.toml, or unset it to use "
        "./plugins.toml (without one, every adapter is enabled)"
    )
    with pytest.raises(ConfigError, match="does not exist"):
        plugins.describe()


def test_without_a_named_file_or_a_local_one_every_adapter_is_enabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert plugins_toml.read("") is plugins_toml.NOTHING
    assert plugins_toml.NOTHING.enabled("sandbox-native")
    (tmp_path / "plugins.toml").write_text("[adapters.sandbox-none]\n")
    local = plugins_toml.read("")
    assert local.path == Path("plugins.toml") and not local.enabled("sandbox-native")


def test_an_unknown_adapter_name_is_reported_once_naming_the_loaded_ones(
    toml: Path, caplog: pytest.LogCaptureFixture
) -> None:
    toml.write_text("[adapters.sandbox-nativ]\nenabled = true\n[adapters.sandbox-none]\n")
    with caplog.at_level(logging.WARNING):
        listed = {info.name: info.enabled for info in plugins.describe()}
        plugins.describe()
    assert listed["sandbox-none"] is True and listed["sandbox-native"] is False
    (record,) = [r for r in caplog.records if "names no adapter" in r.getMessage()]
    assert record.getMessage() == (
        f"{toml}: [adapters.sandbox-nativ] names no adapter herald has loaded (loaded: bluesky, discord, "
        "discord-webhook, mastodon, sandbox-native, sandbox-none, sandbox-readback, telegram, webhook); did you mean "
        "[adapters.sandbox-native]? fix the name, or install the plugin that provides it"
    )


def test_an_adapter_the_file_leaves_off_is_named_with_the_line_that_turns_it_on(toml: Path) -> None:
    toml.write_text("[adapters.sandbox-native]\n[adapters.sandbox-none]\nenabled = false\n")
    with pytest.raises(NotFound) as caught:
        plugins.adapter("sandbox-none")
    assert str(caught.value) == (
        f"no enabled adapter 'sandbox-none' (enabled: sandbox-native): {toml} leaves it off; "
        "set enabled = true under [adapters.sandbox-none]"
    )


def test_a_plugin_turned_off_is_read_and_a_wrong_switch_refused(toml: Path) -> None:
    message = refused(toml, '[plugins.broken]\nenabled = "no"\n')
    assert message.endswith(
        "plugins.broken must be a table with enabled = true or enabled = false (a boolean, without quotes)"
    )
    toml.write_text("[plugins.broken]\nenabled = false\n\n[plugins.fine]\nenabled = true\n")
    assert plugins_toml.read(str(toml)).plugins_off == frozenset({"broken"})
