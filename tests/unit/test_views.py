"""The views' one JSON form, secrets masked in channel settings, and slots read by the one clock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest

from core.domain.errors import UserError
from core.domain.states import DeliveryStatus, Reason
from core.runtime.clock import ManualClock
from core.services.channels import is_secret, mask
from core.services.slots import parse_slot
from core.services.views import dumps, jsonable, shown_in


@dataclass(frozen=True)
class _Inner:
    status: DeliveryStatus
    reason: Reason | None


@dataclass(frozen=True)
class _Outer:
    at: datetime
    gap: float | None
    inner: tuple[_Inner, ...]
    settings: MappingProxyType[str, str]


def test_a_view_is_json_of_its_fields_enums_as_values_instants_in_their_zone_to_the_second() -> None:
    instant = datetime(2026, 12, 1, 8, 0, 0, 123456, tzinfo=UTC)
    view = _Outer(
        at=shown_in(instant, "Europe/Paris"),
        gap=0.25,
        inner=(_Inner(DeliveryStatus.HELD, Reason.AUTH_EXPIRED), _Inner(DeliveryStatus.PUBLISHED, None)),
        settings=MappingProxyType({"base_url": "http://x"}),
    )

    assert json.loads(dumps(view)) == {
        "at": "2026-12-01T09:00:00+01:00",
        "gap": 0.25,
        "inner": [{"status": "held", "reason": "auth_expired"}, {"status": "published", "reason": None}],
        "settings": {"base_url": "http://x"},
    }
    assert jsonable([view, view]) == [jsonable(view), jsonable(view)]


def test_a_value_with_no_json_form_is_refused_not_stringified() -> None:
    with pytest.raises(TypeError, match="no JSON form"):
        jsonable(object())


@pytest.mark.parametrize(
    "name",
    ["token", "access_token", "api_key", "apikey", "client_secret", "password", "appPassword", "TOKEN"],
)
def test_settings_named_like_credentials_are_secret(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", ["base_url", "handle", "instance", "username", "server"])
def test_ordinary_settings_are_not_secret(name: str) -> None:
    assert not is_secret(name)


@pytest.mark.parametrize(
    ("value", "masked"),
    [
        ("sk-live-0123456789abcdef", "••••cdef"),  # never more than the last 4
        ("abcdefgh", "••••gh"),  # a short secret shows less: a quarter at most
        ("t-ok", "••••k"),
        ("abc", "••••"),
        ("", ""),
    ],
)
def test_a_secret_is_masked_showing_at_most_its_last_four_characters(value: str, masked: str) -> None:
    assert mask(value) == masked


def test_in_is_read_from_the_injected_clock_not_this_machines() -> None:
    clock = ManualClock(datetime(2030, 1, 1, 12, 0, tzinfo=UTC))
    slot = parse_slot(delay="30s", zone="Europe/Paris", clock=clock)
    assert slot.at == datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)
    assert slot.zone == "Europe/Paris"


def test_at_is_parsed_in_its_zone_and_nothing_given_means_now() -> None:
    slot = parse_slot(at="2026-12-01T09:00", zone="Europe/Paris")
    assert (slot.at, slot.zone) == (datetime(2026, 12, 1, 8, 0, tzinfo=UTC), "Europe/Paris")
    assert parse_slot() == parse_slot(zone=None)
    assert parse_slot().at is None


def test_both_at_and_in_are_refused() -> None:
    with pytest.raises(UserError, match="not both"):
        parse_slot(at="2026-12-01T09:00+01:00", delay="5m", clock=ManualClock())


def test_a_move_needs_a_slot() -> None:
    with pytest.raises(UserError, match="give the new slot"):
        _ = parse_slot().instant
    later = datetime.now(UTC) + timedelta(hours=1)
    assert parse_slot(at=later.isoformat()).instant == later
