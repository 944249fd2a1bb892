"""Which holds `herald post retry` lifts: exactly those whose fix, as shown to people, is a retry."""

from __future__ import annotations

from core.domain.states import ADMISSION_HOLDS, RETRY_LIFTS, Reason


def test_retry_lifts_exactly_the_holds_whose_action_ends_in_a_retry() -> None:
    assert {r for r in Reason if ", then retry" in r.action} == RETRY_LIFTS


def test_retry_never_lifts_an_attempt_in_doubt_or_a_hold_admission_lifts() -> None:
    assert Reason.AMBIGUOUS_OUTCOME not in RETRY_LIFTS
    assert not RETRY_LIFTS & ADMISSION_HOLDS
