"""Adapters declare their channel settings (§9); a channel that cannot work is refused when it is made."""

from __future__ import annotations

from typing import ClassVar

import pytest

from adapters.sandbox.adapters import SandboxNative, SandboxNone, SandboxReadback
from core.domain.errors import ConfigError
from core.domain.states import Strategy
from core.plugins import Adapter, PublishContext, Published, Setting, boolean, http_url
from core.plugins.channel_settings import check_complete, check_settings, check_values, declared, is_secret
from core.plugins.rates import rate_text
from tests.unit import test_sandbox_conformance as sandbox_kit

URL = "http://127.0.0.1:8025"


def refusal(adapter: type[Adapter], values: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        check_settings(adapter, values)
    return str(caught.value)


def test_http_url_and_boolean_checks() -> None:
    assert http_url("http://127.0.0.1:8025") is None and http_url("https://example.org/x") is None
    for bad in ("127.0.0.1:8025", "localhost", "ftp://example.org", "http://", "", "http://[::1"):
        assert http_url(bad) == "is not an http(s) URL", bad
    for good in ("true", "False", "yes", "no", "1", "0"):
        assert boolean(good) is None
    assert boolean("maybe") == "is not true or false"


@pytest.mark.parametrize("adapter", [SandboxNative, SandboxReadback, SandboxNone])
def test_the_sandbox_adapters_declare_base_url_required_and_token_secret(adapter: type[Adapter]) -> None:
    settings = {s.name: s for s in declared(adapter) or ()}
    assert set(settings) == {"base_url", "token", "resend_in_doubt", "precheck", "rate"}
    assert settings["base_url"].required and settings["base_url"].check is http_url
    assert settings["token"].secret and not settings["token"].required
    for herald_own in ("resend_in_doubt", "precheck"):
        assert settings[herald_own].check is boolean and not settings[herald_own].required
    assert settings["rate"].check is rate_text and not settings["rate"].required
    check_settings(
        adapter, {"base_url": URL, "token": "t", "resend_in_doubt": "true", "precheck": "false", "rate": "10/3"}
    )


def test_a_missing_required_setting_is_refused_with_the_option_that_gives_it() -> None:
    assert refusal(SandboxNone, {"token": "t"}) == (
        "a sandbox-none channel needs base_url (the sandbox platform's address, where `herald sandbox serve` "
        "listens): add --set base_url=http://127.0.0.1:8025"
    )
    assert refusal(SandboxNone, {"base_url": "  "}).startswith("--set base_url= has no value: give one")


def test_a_typo_in_a_setting_name_is_refused_with_the_closest_known_name() -> None:
    assert refusal(SandboxNative, {"base_ur": URL}) == (
        "sandbox-native has no channel setting 'base_ur'; did you mean base_url? "
        "its settings are base_url, token, resend_in_doubt, precheck, rate"
    )
    assert "did you mean" not in refusal(SandboxNative, {"base_url": URL, "colour": "red"})


def test_an_invalid_value_is_refused_with_the_fix_and_a_secret_is_never_repeated() -> None:
    assert refusal(SandboxNative, {"base_url": "127.0.0.1:8025"}) == (
        "--set base_url='127.0.0.1:8025' is not an http(s) URL: the sandbox platform's address, where "
        "`herald sandbox serve` listens; give it as --set base_url=http://127.0.0.1:8025"
    )
    assert "is not true or false" in refusal(SandboxNone, {"base_url": URL, "resend_in_doubt": "sometimes"})
    blank_secret = refusal(SandboxNative, {"base_url": URL, "token": " "})
    assert blank_secret == "--set token= has no value: give one (--set token=VALUE) or leave it out"


class Checked(Adapter):
    name = "checked-test"
    strategy = Strategy.NONE
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting("pin", "a four-digit pin", secret=True, check=lambda v: None if v.isdigit() else "is not digits"),
    )


def test_a_refused_secret_value_is_masked_in_the_message() -> None:
    message = refusal(Checked, {"pin": "hunter2"})
    assert message.startswith("--set pin=•••• is not digits") and "hunter2" not in message


def test_edits_check_the_given_values_and_the_result_separately() -> None:
    check_values(SandboxNative, {"token": "t2"})  # the change alone: fine
    with pytest.raises(ConfigError, match="needs base_url"):
        check_complete(SandboxNative, {"token": "t2"})  # but the channel would lack base_url


class Undeclared(Adapter):
    name = "undeclared-test"
    strategy = Strategy.NONE


def test_an_adapter_that_declares_nothing_is_not_checked_and_secrets_go_by_name() -> None:
    check_settings(Undeclared, {"anything": "goes", "api_key": "k"})
    assert is_secret(Undeclared, "api_key") and is_secret(Undeclared, "appPassword")
    assert not is_secret(Undeclared, "base_url")
    assert is_secret(None, "token")  # a channel whose adapter is not loaded


def test_a_declaration_decides_what_is_secret_before_the_name() -> None:
    assert is_secret(SandboxNative, "token")
    assert is_secret(Checked, "pin")  # no secret-looking word in it, declared secret
    assert not is_secret(SandboxNative, "base_url")
    assert is_secret(SandboxNative, "api_key")  # undeclared (a channel made before): by its name


class ReadsARegion(SandboxNone):
    """Reads a channel setting it does not declare."""

    def publish(self, ctx: PublishContext) -> Published:
        region = ctx.settings.get("region", "eu")
        answer = ctx.client.post(self.posts_url(ctx), json={**self.body(ctx), "region": region})
        return Published(str(answer.json()["id"]), f"{sandbox_kit.BASE}/p/{region}")


def test_the_conformance_kit_fails_an_adapter_that_reads_a_setting_it_does_not_declare() -> None:
    contract = sandbox_kit.TestSandboxNoneConforms()
    with pytest.raises(AssertionError) as caught:
        contract.test_it_reads_only_the_channel_settings_it_declares(ReadsARegion())
    assert "ReadsARegion reads channel settings it does not declare: region;" in str(caught.value)


def test_the_conformance_kit_fails_an_adapter_without_a_declaration() -> None:
    class Bare(SandboxNone):
        settings = None

    with pytest.raises(AssertionError, match="Bare declares no channel settings"):
        sandbox_kit.TestSandboxNoneConforms().test_declares_its_channel_settings_and_the_kits_settings_pass_them(Bare())


def test_the_conformance_kit_fails_settings_the_declaration_refuses() -> None:
    class Wrong(sandbox_kit.TestSandboxNoneConforms):
        settings: ClassVar[dict[str, str]] = {"base_url": "sandbox.test"}

    with pytest.raises(AssertionError, match="not valid channel settings of SandboxNone: --set base_url="):
        Wrong().test_declares_its_channel_settings_and_the_kits_settings_pass_them(SandboxNone())
