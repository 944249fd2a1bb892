"""Post status as a summary of its deliveries, delivery transitions, and the closed list of reasons."""

from __future__ import annotations

import pytest

from core.domain.errors import Conflict
from core.domain.states import (
    ADMISSION_HOLDS,
    DELIVERY_TRANSITIONS,
    REASONS,
    DeliveryState,
    DeliveryStatus,
    PostStatus,
    Reason,
    check_transition,
    summarize,
)

D = DeliveryStatus


def deliveries(*statuses: DeliveryStatus) -> list[DeliveryState]:
    """Deliveries with these statuses, none of which published a part on its own."""
    return [DeliveryState(status, 3 if status is D.PUBLISHED else 0) for status in statuses]


def test_all_published_is_published() -> None:
    assert summarize(deliveries(D.PUBLISHED, D.PUBLISHED), claimed=True) is PostStatus.PUBLISHED


def test_some_published_and_some_failed_is_partially_published() -> None:
    assert summarize(deliveries(D.PUBLISHED, D.FAILED), claimed=True) is PostStatus.PARTIALLY_PUBLISHED


def test_some_published_and_some_cancelled_is_partially_published() -> None:
    assert summarize(deliveries(D.PUBLISHED, D.CANCELLED), claimed=True) is PostStatus.PARTIALLY_PUBLISHED


@pytest.mark.parametrize(
    "statuses",
    [[D.HELD], [D.HELD, D.PUBLISHED], [D.HELD, D.FAILED], [D.HELD, D.CANCELLED], [D.PUBLISHED, D.FAILED, D.HELD]],
)
def test_any_held_delivery_among_finished_ones_makes_the_post_held(statuses: list[DeliveryStatus]) -> None:
    assert summarize(deliveries(*statuses), claimed=True) is PostStatus.HELD
    assert summarize(deliveries(*statuses), claimed=False) is PostStatus.HELD


@pytest.mark.parametrize("active", [D.PENDING, D.RETRY_WAIT, D.SENDING])
def test_active_unclaimed_post_is_scheduled(active: DeliveryStatus) -> None:
    assert summarize(deliveries(active, D.PUBLISHED), claimed=False) is PostStatus.SCHEDULED


@pytest.mark.parametrize("active", [D.PENDING, D.RETRY_WAIT, D.SENDING])
def test_active_claimed_post_is_publishing(active: DeliveryStatus) -> None:
    assert summarize(deliveries(active, D.PUBLISHED), claimed=True) is PostStatus.PUBLISHING


def test_held_delivery_does_not_hide_a_delivery_still_to_be_sent() -> None:
    # Current behaviour: work still to do on one channel wins over a hold on another.
    assert summarize(deliveries(D.HELD, D.PENDING), claimed=False) is PostStatus.SCHEDULED
    assert summarize(deliveries(D.HELD, D.RETRY_WAIT), claimed=True) is PostStatus.PUBLISHING


def test_all_cancelled_is_cancelled() -> None:
    assert summarize(deliveries(D.CANCELLED, D.CANCELLED), claimed=False) is PostStatus.CANCELLED


def test_all_failed_is_failed() -> None:
    assert summarize(deliveries(D.FAILED, D.FAILED), claimed=True) is PostStatus.FAILED


def test_failed_and_cancelled_without_any_published_is_failed() -> None:
    assert summarize(deliveries(D.FAILED, D.CANCELLED), claimed=True) is PostStatus.FAILED


def test_a_thread_that_failed_after_some_parts_published_is_partially_published() -> None:
    # §10: a thread stopped at part 3 of 5 shows how far it got, not a plain failure.
    assert summarize([DeliveryState(D.FAILED, 2)], claimed=True) is PostStatus.PARTIALLY_PUBLISHED
    assert summarize([DeliveryState(D.FAILED, 2), DeliveryState(D.FAILED, 0)], claimed=True) is (
        PostStatus.PARTIALLY_PUBLISHED
    )


def test_a_thread_cancelled_after_some_parts_published_is_partially_published() -> None:
    assert summarize([DeliveryState(D.CANCELLED, 1)], claimed=True) is PostStatus.PARTIALLY_PUBLISHED


def test_a_held_thread_with_published_parts_stays_held() -> None:
    # A person must act; how far it got is the delivery's progress, not the post's status.
    assert summarize([DeliveryState(D.HELD, 2)], claimed=True) is PostStatus.HELD
    assert summarize([DeliveryState(D.HELD, 2), DeliveryState(D.FAILED, 1)], claimed=True) is PostStatus.HELD


def test_a_thread_still_retrying_after_some_parts_published_is_publishing() -> None:
    assert summarize([DeliveryState(D.RETRY_WAIT, 2)], claimed=True) is PostStatus.PUBLISHING


def test_a_delivery_without_its_parts_counted_defaults_to_none_published() -> None:
    assert summarize([DeliveryState(D.FAILED)], claimed=True) is PostStatus.FAILED


def test_summarize_accepts_a_generator() -> None:
    assert summarize((s for s in deliveries(D.PUBLISHED)), claimed=True) is PostStatus.PUBLISHED


@pytest.mark.parametrize("new", [D.SENDING, D.PENDING, D.RETRY_WAIT, D.HELD, D.FAILED, D.CANCELLED])
def test_published_delivery_cannot_move_again(new: DeliveryStatus) -> None:
    with pytest.raises(Conflict, match="cannot go from published"):
        check_transition(D.PUBLISHED, new, Reason.AMBIGUOUS_OUTCOME)


def test_cancelled_delivery_cannot_be_sent() -> None:
    with pytest.raises(Conflict):
        check_transition(D.CANCELLED, D.SENDING)


def test_pending_delivery_cannot_jump_to_published() -> None:
    with pytest.raises(Conflict):
        check_transition(D.PENDING, D.PUBLISHED)


def test_held_without_a_reason_is_refused() -> None:
    with pytest.raises(Conflict, match="needs a reason"):
        check_transition(D.SENDING, D.HELD)


def test_failed_without_a_reason_is_refused() -> None:
    with pytest.raises(Conflict, match="needs a reason"):
        check_transition(D.SENDING, D.FAILED)


def test_held_with_a_reason_is_allowed() -> None:
    check_transition(D.PENDING, D.HELD, Reason.APPROVAL_PENDING)


def test_ordinary_path_to_published_is_allowed() -> None:
    check_transition(D.PENDING, D.SENDING)
    check_transition(D.SENDING, D.RETRY_WAIT)
    check_transition(D.RETRY_WAIT, D.SENDING)
    check_transition(D.SENDING, D.PUBLISHED)


def test_every_delivery_status_has_its_transitions_listed() -> None:
    assert set(DELIVERY_TRANSITIONS) == set(DeliveryStatus)


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_has_an_explanation_and_an_action(reason: Reason) -> None:
    assert reason in REASONS
    assert reason.explanation.strip()
    assert reason.action.strip()
    assert reason.info is REASONS[reason]


def test_reasons_include_every_one_the_design_lists() -> None:
    listed = {
        "auth_expired",
        "permission_denied",
        "content_rejected",
        "media_invalid",
        "rate_limited",
        "platform_unavailable",
        "ambiguous_outcome",
        "duplicate_suspected",
        "thread_parent_missing",
        "approval_pending",
        "emergency_stop",
        "account_unpaid",
        "account_suspended",
        "media_not_ready",
        "channel_disconnected",
        "embargoed",
    }
    assert listed <= {r.value for r in Reason}


def test_rate_limited_is_transient() -> None:
    assert Reason.RATE_LIMITED.info.transient


def test_admission_holds_are_reasons_with_explanations() -> None:
    assert ADMISSION_HOLDS.issubset(REASONS)
