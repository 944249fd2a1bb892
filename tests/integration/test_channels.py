"""Channels through the services: settings checked against the adapter's declaration (§9),
edit, remove (refused under unfinished deliveries, or cancelling them first), and accounts
that only exist once a channel made them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import selectinload

from core.config import Settings
from core.domain.errors import Conflict, NotFound, UserError
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import add_channel, edit_channel, reconnect_channel, remove_channel, show_channels
from core.services.controls import set_account_status
from core.services.posts import create_post, show_post
from core.store import db
from core.store.models import Account, AccountStatus, Channel, Delivery, DeliveryPart
from tests.integration.conftest import Sandbox, channels_json
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def table_counts() -> dict[str, int]:
    with db.reading() as s:
        return {
            "accounts": s.execute(select(func.count()).select_from(Account)).scalar_one(),
            "channels": s.execute(select(func.count()).select_from(Channel)).scalar_one(),
        }


def stored_settings(name: str) -> dict[str, Any]:
    with db.reading() as s:
        return dict(s.execute(select(Channel.settings).where(Channel.name == name)).scalar_one())


def delivery_of(post_id: int, channel: str) -> Delivery:
    """The post's delivery on the channel named ``channel`` (or once named so: removed ones are renamed)."""
    with db.reading() as s:
        query = (
            select(Delivery)
            .join(Channel, Channel.id == Delivery.channel_id)
            .where(Delivery.post_id == post_id, Channel.name.startswith(channel))
            .options(selectinload(Delivery.parts))
        )
        return s.execute(query).scalar_one()


# -- add ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"token": "t"}, "a sandbox-native channel needs base_url ("),
        ({"base_url": "127.0.0.1:8025"}, "--set base_url='127.0.0.1:8025' is not an http(s) URL"),
        ({"base_url": "http://h", "tokn": "t"}, "has no channel setting 'tokn'; did you mean token?"),
    ],
)
def test_add_refuses_settings_the_adapter_cannot_work_with_and_creates_nothing(
    herald: Settings, settings: dict[str, str], message: str
) -> None:
    before = table_counts()
    with pytest.raises(UserError, match=re.escape(message)):
        add_channel("c1", "sandbox-native", settings, account="fresh")
    assert table_counts() == before  # neither the channel nor its account


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "a channel needs a name that is not blank: give --name NAME"),
        ("   ", "a channel needs a name that is not blank: give --name NAME"),
        (" n1", "channel name ' n1' starts or ends with a space: give --name 'n1'"),
        ("x" * 121, "has 121 characters; give --name a shorter one"),
    ],
)
def test_add_refuses_a_blank_or_padded_name(herald: Settings, sandbox_url: str, name: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        add_channel(name, "sandbox-native", {"base_url": sandbox_url})
    assert message in str(caught.value)
    assert table_counts()["channels"] == 0


def test_add_takes_declared_settings_and_list_masks_the_declared_secret(herald: Settings, sandbox_url: str) -> None:
    add_channel(
        "n1", "sandbox-none", {"base_url": sandbox_url, "token": "sk-live-0123456789", "resend_in_doubt": "yes"}
    )
    (view,) = show_channels()
    assert dict(view.settings) == {"base_url": sandbox_url, "resend_in_doubt": "yes", "token": "••••6789"}


# -- edit -----------------------------------------------------------------------------------


def test_edit_sets_and_unsets_settings_and_shows_no_secret(herald: Settings, sandbox_url: str) -> None:
    add_channel("e1", "sandbox-none", {"base_url": sandbox_url, "resend_in_doubt": "true"})
    done = edit_channel("e1", {"token": "sk-live-abcdef123456"}, ["resend_in_doubt"])
    assert (done.updated_settings, done.removed_settings) == (("token",), ("resend_in_doubt",))
    assert dict(done.channel.settings) == {"base_url": sandbox_url, "token": "••••3456"}
    assert stored_settings("e1") == {"base_url": sandbox_url, "token": "sk-live-abcdef123456"}


@pytest.mark.parametrize(
    ("given", "unset", "message"),
    [
        ({"base_url": "nope"}, [], "--set base_url='nope' is not an http(s) URL"),
        ({"tokn": "x"}, [], "did you mean token?"),
        ({}, ["base_url"], "a sandbox-none channel needs base_url"),
        ({}, ["token"], "--unset token: channel e2 has no such setting (it has: base_url)"),
        ({}, [], "nothing to change: give --set KEY=VALUE or --unset KEY"),
        ({"token": "a"}, ["token"], "token: both --set and --unset; give one of them"),
    ],
)
def test_edit_refusals_name_the_fix_and_change_nothing(
    herald: Settings, sandbox_url: str, given: dict[str, str], unset: list[str], message: str
) -> None:
    add_channel("e2", "sandbox-none", {"base_url": sandbox_url})
    with pytest.raises(UserError) as caught:
        edit_channel("e2", given, unset)
    assert message in str(caught.value)
    assert stored_settings("e2") == {"base_url": sandbox_url}


def test_edit_and_reconnect_of_an_unknown_channel_are_not_found(herald: Settings) -> None:
    with pytest.raises(NotFound, match="no channel named 'ghost'; `herald channel list` shows them"):
        edit_channel("ghost", {"token": "t"})
    with pytest.raises(NotFound, match="no channel named 'ghost'"):
        reconnect_channel("ghost")


def test_reconnect_checks_its_new_settings_against_the_declaration(herald: Settings, sandbox_url: str) -> None:
    add_channel("rc", "sandbox-native", {"base_url": sandbox_url})
    with pytest.raises(UserError, match="did you mean token"):
        reconnect_channel("rc", {"toekn": "t"})
    assert stored_settings("rc") == {"base_url": sandbox_url}


# -- remove ---------------------------------------------------------------------------------


def test_a_channel_nothing_refers_to_is_deleted_and_its_name_is_free(herald: Settings, sandbox_url: str) -> None:
    add_channel("typo", "sandbox-native", {"base_url": sandbox_url})
    done = remove_channel("typo")
    assert (done.name, done.cancelled, done.kept_as) == ("typo", (), None)
    assert table_counts()["channels"] == 0
    add_channel("typo", "sandbox-native", {"base_url": sandbox_url})  # the name is free again


def test_a_removed_channel_with_history_keeps_it_under_a_new_name_and_frees_its_own(
    herald: Settings, sandbox_url: str, clock: ManualClock, platform: Sandbox
) -> None:
    add_channel("n1", "sandbox-native", {"base_url": sandbox_url})
    post_id = create_post(channels=["n1"], parts=["published before the removal"])
    job.publish_post(post_id)

    done = remove_channel("n1")

    with db.reading() as s:
        channel_id = s.execute(select(Channel.id)).scalar_one()
    assert done.kept_as == f"n1 (removed #{channel_id})"
    assert show_channels() == []
    post = show_post(post_id)  # the history is whole: delivery, platform id, attempts
    assert post.status is PostStatus.PUBLISHED
    (delivery,) = post.deliveries
    assert delivery.channel == done.kept_as and delivery.platform_id == platform.posts()[0]["id"]
    with pytest.raises(NotFound, match="no channel named n1"):
        create_post(channels=["n1"], parts=["to a removed channel"])
    with pytest.raises(NotFound):
        create_post(channels=[done.kept_as], parts=["to its history name"])
    with pytest.raises(NotFound):
        reconnect_channel(done.kept_as)
    with db.reading() as s:
        assert s.execute(select(Channel.connected)).scalar_one() is False  # nothing is ever sent to it

    add_channel("n1", "sandbox-native", {"base_url": sandbox_url})  # a new channel under the old name
    assert [v.name for v in show_channels()] == ["n1"]


def test_remove_is_refused_while_deliveries_are_not_finished_with_their_counts(
    herald: Settings, sandbox_url: str, clock: ManualClock, platform: Sandbox
) -> None:
    add_channel("busy", "sandbox-native", {"base_url": sandbox_url})
    later = create_post(channels=["busy"], parts=["later"], at=datetime.now(UTC) + timedelta(hours=1))
    held = create_post(channels=["busy"], parts=["awaits approval"], needs_approval=True)
    job.publish_post(held)
    assert delivery_of(held, "busy").reason is Reason.APPROVAL_PENDING

    with pytest.raises(Conflict) as caught:
        remove_channel("busy")

    assert str(caught.value) == (
        f"channel busy has 2 deliveries not finished (1 held, 1 pending; posts {later}, {held}): wait for them, "
        "or cancel them with `herald channel remove busy --cancel-pending`"
    )
    assert [v.name for v in show_channels()] == ["busy"]
    assert delivery_of(later, "busy").status is DeliveryStatus.PENDING


def test_cancel_pending_cancels_this_channels_unfinished_deliveries_only_then_removes_it(
    herald: Settings, sandbox_url: str, clock: ManualClock, platform: Sandbox
) -> None:
    add_channel("gone", "sandbox-native", {"base_url": sandbox_url})
    add_channel("stays", "sandbox-readback", {"base_url": sandbox_url})
    both = create_post(channels=["gone", "stays"], parts=["to both"], at=datetime.now(UTC) + timedelta(hours=1))
    platform.faults(error_before_accept=1.0, times=1, strategies=["native"])
    waiting = create_post(channels=["gone"], parts=["waits to retry"])
    job.publish_post(waiting)
    assert delivery_of(waiting, "gone").status is DeliveryStatus.RETRY_WAIT

    done = remove_channel("gone", cancel_pending=True)

    assert done.cancelled == (both, waiting) and done.kept_as is not None
    cancelled = delivery_of(both, "gone")
    assert (cancelled.status, cancelled.detail) == (DeliveryStatus.CANCELLED, "cancelled: channel gone was removed")
    assert delivery_of(waiting, "gone").status is DeliveryStatus.CANCELLED
    assert show_post(waiting).status is PostStatus.CANCELLED
    assert delivery_of(both, "stays").status is DeliveryStatus.PENDING  # the other channel still publishes
    assert show_post(both).status is PostStatus.SCHEDULED
    clock.advance(2 * 3600)
    job.publish_post(both)
    assert show_post(both).status is PostStatus.PARTIALLY_PUBLISHED  # published on one channel, cancelled on one
    assert [p["text"] for p in platform.posts()] == ["to both"]  # on "stays" only, once


def test_cancel_pending_is_refused_for_an_attempt_in_doubt_with_the_fix(
    herald: Settings, sandbox_url: str, clock: ManualClock, platform: Sandbox
) -> None:
    add_channel("doubt", "sandbox-none", {"base_url": sandbox_url})
    post_id = create_post(channels=["doubt"], parts=["may have landed"])
    platform.faults(error_after_accept=1.0, times=1, strategies=["none"])
    job.publish_post(post_id)
    assert delivery_of(post_id, "doubt").reason is Reason.AMBIGUOUS_OUTCOME

    with pytest.raises(Conflict) as caught:
        remove_channel("doubt", cancel_pending=True)

    assert str(caught.value) == (
        f"post {post_id} has an attempt in doubt on doubt (a part is 'sending', it may be on the platform): "
        f"cancelling cannot take it back; resolve it first: `herald post resolve {post_id} --channel doubt landed "
        "--url URL` if it is on the platform, else `send-again`, then remove the channel"
    )
    ended = delivery_of(post_id, "doubt")
    assert (ended.status, ended.parts[0].state) == (DeliveryStatus.HELD, PartState.SENDING)
    assert [v.name for v in show_channels()] == ["doubt"]


def test_cancel_pending_is_refused_while_a_worker_sends(herald: Settings, sandbox_url: str) -> None:
    add_channel("live", "sandbox-native", {"base_url": sandbox_url})
    post_id = create_post(channels=["live"], parts=["in flight"], at=datetime.now(UTC) + timedelta(hours=1))
    with db.transaction() as s:  # as a claim leaves it while the platform call runs
        s.execute(update(Delivery).values(status=DeliveryStatus.SENDING))
        s.execute(update(DeliveryPart).values(state=PartState.SENDING))

    with pytest.raises(Conflict, match=rf"post {post_id} is being sent on live right now; wait for it to finish"):
        remove_channel("live", cancel_pending=True)
    assert delivery_of(post_id, "live").status is DeliveryStatus.SENDING


def test_remove_of_an_unknown_channel_is_not_found(herald: Settings) -> None:
    with pytest.raises(NotFound, match="no channel named 'ghost'"):
        remove_channel("ghost", cancel_pending=True)


# -- accounts -------------------------------------------------------------------------------


def test_account_status_of_an_unknown_account_is_refused_and_creates_nothing(
    herald: Settings, sandbox_url: str
) -> None:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url}, account="acme")
    before = table_counts()
    with pytest.raises(NotFound) as caught:
        set_account_status("acmee", AccountStatus.UNPAID)
    assert str(caught.value) == (
        "no account named 'acmee' (accounts: acme); an account is made with its first channel: "
        "`herald channel add --account NAME ...`"
    )
    assert table_counts() == before


def test_channel_test_checks_the_credentials_with_a_read_only_call(channels: dict[str, str], platform: Sandbox) -> None:
    from core.services.channels import check_credentials

    before = platform.posts()
    assert check_credentials("n1").who == f"the sandbox platform (native) at {platform.url} takes the token"
    platform.token("t-ok", "revoked")
    with pytest.raises(UserError, match=r"sandbox-native refused n1's credentials .*`herald channel reconnect n1"):
        check_credentials("n1")
    assert platform.posts() == before  # nothing was posted
    assert channels_json()[0]["connected"]  # and nothing changed: a test is not an outage
    refused = herald_cmd("channel", "test", "n1")
    assert refused.returncode == 2 and "refused n1's credentials" in refused.stderr


def test_a_channels_own_limits_are_asked_when_it_is_added_and_checked_for_its_posts(
    herald: Settings, sandbox_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from adapters.sandbox.adapters import SandboxNative
    from core.domain.errors import Ambiguous
    from core.plugins import Limits

    asked: list[str] = []

    def instance_limits(self: SandboxNative, ctx: Any) -> Limits:
        asked.append(ctx.settings["token"])
        return Limits(max_chars=20)

    monkeypatch.setattr(SandboxNative, "channel_limits", instance_limits)
    add_channel("small", "sandbox-native", {"base_url": sandbox_url, "token": "t-small"})
    assert asked == ["t-small"]
    with pytest.raises(UserError, match="part 1 for small has 21 characters; sandbox-native allows 20"):
        create_post(channels=["small"], parts=["x" * 21])
    assert create_post(channels=["small"], parts=["x" * 20]) > 0

    def unreachable(self: SandboxNative, ctx: Any) -> Limits:
        raise Ambiguous("the instance did not answer")

    monkeypatch.setattr(SandboxNative, "channel_limits", unreachable)
    with caplog.at_level("WARNING"):
        reconnect_channel("small")
    assert "did not tell its limits" in caplog.text
    assert create_post(channels=["small"], parts=["x" * 21]) > 0  # the adapter's limits hold now
