"""A platform's posting rate as an adapter declares it, and as a channel's ``rate`` setting
gives one more (``core.plugins.rates``); the pacer that keeps to them is tested in
tests/integration/test_pacing.py."""

from __future__ import annotations

from typing import ClassVar

import pytest

from adapters.sandbox.adapters import SandboxNative
from core.domain.errors import ConfigError
from core.plugins import Adapter, Rate, RateScope
from core.plugins.channel_settings import check_settings
from core.plugins.rates import rate_text


@pytest.mark.parametrize(
    ("text", "rate"),
    [("10/3", Rate(10, 3)), (" 300 / 10800s ", Rate(300, 10800)), ("1/0.5", Rate(1, 0.5))],
)
def test_a_rate_is_written_count_slash_seconds(text: str, rate: Rate) -> None:
    assert Rate.parse(text) == rate
    assert rate_text(text) is None


@pytest.mark.parametrize("text", ["fast", "10", "10/", "/3", "0/3", "10/0", "-1/3", "10/3m", "ten/3"])
def test_a_rate_that_is_no_rate_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Rate.parse(text)
    assert "\n" not in str(refused.value)
    assert rate_text(text) == "is not a rate COUNT/SECONDS (10/3: ten posts in any 3 seconds)"


@pytest.mark.parametrize(("count", "per"), [(0, 1.0), (True, 1.0), (2.5, 1.0), (1, 0.0), (1, float("inf")), (1, -3)])
def test_a_declared_rate_must_count_posts_in_a_positive_window(count: object, per: object) -> None:
    with pytest.raises(ConfigError, match="a rate's"):
        Rate(count, per)  # type: ignore[arg-type]


class _Paced(Adapter):
    name: ClassVar[str] = "paced"
    rates: ClassVar[tuple[Rate, ...]] = (Rate(30, 60), Rate(1000, 3600, RateScope.PLATFORM))


def test_a_channel_keeps_to_its_adapters_rates_and_its_own_rate_setting_on_top() -> None:
    adapter = _Paced()
    assert adapter.channel_rates({}) == _Paced.rates
    assert adapter.channel_rates({"rate": "10/3"}) == (*_Paced.rates, Rate(10, 3))
    assert SandboxNative().channel_rates({"base_url": "http://127.0.0.1:1"}) == ()
    with pytest.raises(ConfigError, match="not COUNT/SECONDS"):
        adapter.channel_rates({"rate": "often"})


def test_herald_channel_add_refuses_a_rate_setting_that_is_no_rate() -> None:
    settings = {"base_url": "http://127.0.0.1:8025", "token": "t"}
    check_settings(SandboxNative, {**settings, "rate": "10/3"})
    with pytest.raises(ConfigError, match=r"--set rate='10 a second' is not a rate COUNT/SECONDS"):
        check_settings(SandboxNative, {**settings, "rate": "10 a second"})
