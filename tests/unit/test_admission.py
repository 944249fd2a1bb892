"""Admission (§8): one pure decision over unsaved rows; holds first, then the embargo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.domain.admission import Admit, Hold, Wait, admit, media_ready
from core.domain.states import Reason
from core.store.models import Account, AccountStatus, Approval, Channel, Post

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _post(
    *,
    approval: Approval = Approval.NOT_REQUIRED,
    parts: list[dict[str, Any]] | None = None,
    not_before: datetime | None = None,
) -> Post:
    return Post(
        approval=approval,
        parts=parts if parts is not None else [{"text": "hello", "media": []}],
        not_before=not_before,
    )


def _channel(*, connected: bool = True) -> Channel:
    return Channel(connected=connected)


def _account(*, status: AccountStatus = AccountStatus.ACTIVE, emergency_stop: bool = False) -> Account:
    return Account(status=status, emergency_stop=emergency_stop)


def _admit(
    post: Post | None = None,
    channel: Channel | None = None,
    account: Account | None = None,
    *,
    global_stop: bool = False,
) -> Admit | Wait | Hold:
    return admit(post or _post(), channel or _channel(), account or _account(), global_stop=global_stop, now=NOW)


def test_a_post_with_nothing_in_the_way_is_admitted() -> None:
    assert _admit() == Admit()


def test_global_emergency_stop_holds() -> None:
    assert _admit(global_stop=True) == Hold(Reason.EMERGENCY_STOP)


def test_account_emergency_stop_holds() -> None:
    assert _admit(account=_account(emergency_stop=True)) == Hold(Reason.EMERGENCY_STOP)


def test_unpaid_account_holds() -> None:
    assert _admit(account=_account(status=AccountStatus.UNPAID)) == Hold(Reason.ACCOUNT_UNPAID)


def test_suspended_account_holds() -> None:
    assert _admit(account=_account(status=AccountStatus.SUSPENDED)) == Hold(Reason.ACCOUNT_SUSPENDED)


def test_pending_approval_holds() -> None:
    assert _admit(_post(approval=Approval.PENDING)) == Hold(Reason.APPROVAL_PENDING)


def test_approved_post_is_admitted() -> None:
    assert _admit(_post(approval=Approval.APPROVED)) == Admit()


def test_media_not_ready_holds() -> None:
    post = _post(parts=[{"text": "x", "media": [{"url": "u", "ready": False}]}])
    assert _admit(post) == Hold(Reason.MEDIA_NOT_READY)


def test_media_not_ready_in_a_later_part_of_a_thread_holds() -> None:
    post = _post(
        parts=[
            {"text": "one", "media": [{"url": "a", "ready": True}]},
            {"text": "two", "media": [{"url": "b", "ready": True}, {"url": "c", "ready": False}]},
        ]
    )
    assert _admit(post) == Hold(Reason.MEDIA_NOT_READY)


def test_ready_media_and_parts_without_media_are_admitted() -> None:
    post = _post(parts=[{"text": "one", "media": [{"url": "a", "ready": True}]}, {"text": "two"}])
    assert _admit(post) == Admit()
    assert media_ready([])


def test_disconnected_channel_holds() -> None:
    assert _admit(channel=_channel(connected=False)) == Hold(Reason.CHANNEL_DISCONNECTED)


def test_embargo_in_the_future_waits_until_it_lifts() -> None:
    until = NOW + timedelta(hours=1)
    assert _admit(_post(not_before=until)) == Wait(until)


def test_embargo_in_the_past_is_admitted() -> None:
    assert _admit(_post(not_before=NOW - timedelta(seconds=1))) == Admit()


def test_embargo_lifting_exactly_now_is_admitted() -> None:
    assert _admit(_post(not_before=NOW)) == Admit()


@pytest.mark.parametrize(
    ("post_kw", "channel_kw", "account_kw", "global_stop", "reason"),
    [
        ({}, {}, {}, True, Reason.EMERGENCY_STOP),
        ({}, {}, {"status": AccountStatus.UNPAID}, False, Reason.ACCOUNT_UNPAID),
        ({"approval": Approval.PENDING}, {}, {}, False, Reason.APPROVAL_PENDING),
        ({"parts": [{"text": "x", "media": [{"url": "u", "ready": False}]}]}, {}, {}, False, Reason.MEDIA_NOT_READY),
        ({}, {"connected": False}, {}, False, Reason.CHANNEL_DISCONNECTED),
    ],
    ids=["global_stop", "unpaid", "approval", "media", "channel"],
)
def test_holds_win_over_an_embargo(
    post_kw: dict[str, Any],
    channel_kw: dict[str, Any],
    account_kw: dict[str, Any],
    global_stop: bool,
    reason: Reason,
) -> None:
    post = _post(**post_kw, not_before=NOW + timedelta(days=1))
    decision = _admit(post, _channel(**channel_kw), _account(**account_kw), global_stop=global_stop)
    assert decision == Hold(reason)


def test_emergency_stop_wins_over_every_other_hold() -> None:
    post = _post(approval=Approval.PENDING, parts=[{"text": "x", "media": [{"url": "u", "ready": False}]}])
    decision = _admit(post, _channel(connected=False), _account(status=AccountStatus.SUSPENDED, emergency_stop=True))
    assert decision == Hold(Reason.EMERGENCY_STOP)


def test_account_hold_comes_before_the_workflow_hold() -> None:
    post = _post(approval=Approval.PENDING)
    assert _admit(post, account=_account(status=AccountStatus.SUSPENDED)) == Hold(Reason.ACCOUNT_SUSPENDED)
