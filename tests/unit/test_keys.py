"""The delivery key (§4): natural, short, and the same wherever the slot was given."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from core.domain.keys import KEY_LENGTH, delivery_key

SLOT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
ARGS = (7, 3, SLOT, 1, 0)


def test_key_is_the_same_in_every_process_and_release() -> None:
    # A retry after a restart or an upgrade recomputes this key: if it changed, a
    # native_key platform would take the resend as a new post.
    assert delivery_key(*ARGS) == "fcsmtslykd5r9jgei6ocjlt7n"


def test_key_is_25_lowercase_base36_characters() -> None:
    key = delivery_key(*ARGS)
    assert KEY_LENGTH == 25
    assert re.fullmatch(r"[a-z0-9]{25}", key)


def test_key_keeps_its_shape_for_large_ids_and_revisions() -> None:
    key = delivery_key(2**62, 2**40, SLOT, 10**9, 999)
    assert re.fullmatch(r"[a-z0-9]{25}", key)


def test_key_is_the_same_for_the_same_slot_given_in_another_zone() -> None:
    paris = SLOT.astimezone(ZoneInfo("Europe/Paris"))
    tokyo = SLOT.astimezone(ZoneInfo("Asia/Tokyo"))
    fixed = SLOT.astimezone(timezone(timedelta(hours=-5, minutes=-30)))
    expected = delivery_key(*ARGS)
    assert delivery_key(7, 3, paris, 1, 0) == expected
    assert delivery_key(7, 3, tokyo, 1, 0) == expected
    assert delivery_key(7, 3, fixed, 1, 0) == expected


def test_key_differs_for_another_post() -> None:
    assert delivery_key(8, 3, SLOT, 1, 0) != delivery_key(*ARGS)


def test_key_differs_for_another_channel() -> None:
    assert delivery_key(7, 4, SLOT, 1, 0) != delivery_key(*ARGS)


def test_key_differs_for_another_slot() -> None:
    assert delivery_key(7, 3, SLOT + timedelta(minutes=1), 1, 0) != delivery_key(*ARGS)


def test_key_differs_for_a_slot_one_microsecond_apart() -> None:
    assert delivery_key(7, 3, SLOT + timedelta(microseconds=1), 1, 0) != delivery_key(*ARGS)


def test_key_differs_for_another_revision() -> None:
    assert delivery_key(7, 3, SLOT, 2, 0) != delivery_key(*ARGS)


def test_key_differs_for_another_part() -> None:
    assert delivery_key(7, 3, SLOT, 1, 1) != delivery_key(*ARGS)


def test_key_does_not_confuse_fields_whose_digits_run_together() -> None:
    # post 1 channel 23 must not collide with post 12 channel 3
    assert delivery_key(1, 23, SLOT, 1, 0) != delivery_key(12, 3, SLOT, 1, 0)


def test_naive_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        delivery_key(7, 3, SLOT.replace(tzinfo=None), 1, 0)
