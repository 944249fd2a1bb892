"""Retry delays: exponential, jittered in the upper half of the step, capped, honouring Retry-After."""

from __future__ import annotations

import random

import pytest

from core.domain.backoff import retry_delay

BASE = 2.0
CAP = 600.0


def _delays(attempts: int, *, seed: int = 1, n: int = 200, retry_after: float | None = None) -> list[float]:
    rng = random.Random(seed)
    return [retry_delay(attempts, base=BASE, cap=CAP, retry_after=retry_after, rng=rng) for _ in range(n)]


@pytest.mark.parametrize("attempts", [1, 2, 3, 4, 5, 6, 7, 8])
def test_delay_lies_in_the_upper_half_of_the_exponential_step(attempts: int) -> None:
    step = min(CAP, BASE * 2 ** (attempts - 1))
    for delay in _delays(attempts):
        assert step / 2 <= delay <= step


def test_delay_grows_exponentially_with_attempts() -> None:
    # The lowest delay of attempt n+1 is at least the highest of attempt n: the ranges never overlap downwards.
    for attempts in range(1, 8):
        assert min(_delays(attempts + 1)) >= max(_delays(attempts)) - 1e-9
    assert max(_delays(1)) <= BASE
    assert min(_delays(6)) >= BASE * 2**5 / 2


def test_delay_is_reproducible_with_a_seeded_random_whatever_the_global_one() -> None:
    random.seed(1)
    first = _delays(3, seed=42)
    random.seed(2)
    assert _delays(3, seed=42) == first  # only the given random is drawn from
    assert _delays(3, seed=43) != first


def test_jitter_actually_spreads_the_delays() -> None:
    assert len(set(_delays(4))) > 1


def test_delay_is_capped() -> None:
    for attempts in (10, 20, 50, 200):
        for delay in _delays(attempts):
            assert CAP / 2 <= delay <= CAP


def test_delay_is_capped_even_after_very_many_attempts() -> None:
    delay = retry_delay(2000, base=BASE, cap=CAP, rng=random.Random(0))
    assert CAP / 2 <= delay <= CAP


def test_delay_is_never_below_retry_after() -> None:
    for delay in _delays(1, retry_after=120.0):
        assert delay >= 120.0


def test_retry_after_longer_than_the_cap_is_still_honoured() -> None:
    assert retry_delay(3, base=BASE, cap=CAP, retry_after=3600.0, rng=random.Random(0)) == 3600.0


def test_short_retry_after_does_not_shorten_the_backoff() -> None:
    for delay in _delays(5, retry_after=0.5):
        assert delay >= BASE * 2**4 / 2


def test_delay_is_never_zero() -> None:
    class Lowest(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return a

    for attempts in (0, 1, 2, 10):
        assert retry_delay(attempts, base=BASE, cap=CAP, rng=Lowest()) > 0
    assert retry_delay(1, base=BASE, cap=CAP, retry_after=0.0, rng=Lowest()) > 0


def test_attempt_zero_is_treated_as_the_first_step() -> None:
    for delay in _delays(0):
        assert BASE / 2 <= delay <= BASE
