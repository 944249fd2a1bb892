"""The services' typed views (§15): what `post show`, `timeline`, `alarms`, `health` and
`channel list` show, read through the services with real SQL, Redis and the sandbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from redis import Redis
from sqlalchemy import select, update

from core.config import Settings
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason
from core.ledger.channels import set_connected
from core.runtime.clock import ManualClock
from core.services.alarms import list_alarms
from core.services.channels import add_channel, reconnect_channel, show_channels
from core.services.health import health
from core.services.posts import create_post, show_post
from core.services.timeline import timeline
from core.store import db
from core.store.models import AlarmKind, Approval, Channel, Tick
from reconciler.tick import tick
from tests.integration.channels_made_before import add_unchecked_channel
from tests.integration.conftest import Sandbox, drain, post_json

pytestmark = pytest.mark.integration

TOKYO = timedelta(hours=9)

#: The keys `herald post show --json` printed before it had a view type; scripts read them.
POST_KEYS = {"id", "status", "account", "scheduled_at", "zone", "revision", "not_before", "approval"}
POST_KEYS |= {"texts", "deliveries", "attempts", "media", "channel_texts", "imported_at"}
DELIVERY_KEYS = {"channel", "platform", "status", "reason", "explanation", "action", "detail", "next_attempt_at"}
DELIVERY_KEYS |= {"attempts", "progress", "platform_id", "url", "parts", "uploads"}
PART_KEYS = {"index", "text", "state", "key", "platform_id", "url", "published_at"}
ATTEMPT_KEYS = {"delivery", "part", "fence", "worker", "action", "started_at", "outcome", "error"}


def test_a_published_post_shows_typed_states_and_every_instant_in_its_zone(
    channels: dict[str, str], platform: Sandbox
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["one", "two"], zone="Asia/Tokyo")
    drain()

    post = show_post(post_id)

    assert post.status is PostStatus.PUBLISHED
    assert post.approval is Approval.NOT_REQUIRED
    assert post.scheduled_at.utcoffset() == TOKYO
    (delivery,) = post.deliveries
    assert delivery.status is DeliveryStatus.PUBLISHED
    assert delivery.reason is None and delivery.next_attempt_at is None
    assert delivery.progress == "2/2"
    assert [p.state for p in delivery.parts] == [PartState.PUBLISHED, PartState.PUBLISHED]
    assert [p.platform_id for p in delivery.parts] == [p["id"] for p in platform.posts()]
    assert all(p.published_at is not None and p.published_at.utcoffset() == TOKYO for p in delivery.parts)
    assert [(a.part, a.outcome) for a in post.attempts] == [(0, "published"), (1, "published")]
    assert all(a.started_at.utcoffset() == TOKYO for a in post.attempts)


def test_the_json_form_keeps_the_keys_scripts_read(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["keys"])
    drain()

    data = post_json(post_id)

    assert set(data) == POST_KEYS
    assert set(data["deliveries"][0]) == DELIVERY_KEYS
    assert set(data["deliveries"][0]["parts"][0]) == PART_KEYS
    assert set(data["attempts"][0]) == ATTEMPT_KEYS
    assert data["status"] == "published" and data["approval"] == "not_required"
    assert datetime.fromisoformat(data["scheduled_at"]).utcoffset() == timedelta(0)


def test_a_held_delivery_shows_its_reason_explanation_and_action(channels: dict[str, str], platform: Sandbox) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("gone", "sandbox-readback", {"base_url": platform.url, "token": "t-revoked"})
    post_id = create_post(channels=["gone"], parts=["refused"])
    drain()

    (delivery,) = show_post(post_id).deliveries

    assert delivery.status is DeliveryStatus.HELD
    assert delivery.reason is Reason.AUTH_EXPIRED
    assert (delivery.explanation, delivery.action) == (Reason.AUTH_EXPIRED.explanation, Reason.AUTH_EXPIRED.action)


def test_the_timeline_is_four_instants_in_the_posts_zone_and_the_gaps_between_them(
    channels: dict[str, str], platform: Sandbox
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["watch"], zone="Asia/Tokyo")
    drain()
    tick()  # the read-back sweep sees it

    line = timeline(post_id)

    assert (line.post, line.status, line.zone) == (post_id, PostStatus.PUBLISHED, "Asia/Tokyo")
    (d,) = line.deliveries
    assert d.claimed is not None and d.confirmed is not None and d.first_seen is not None
    assert d.slot <= d.claimed <= d.confirmed <= d.first_seen
    assert {i.utcoffset() for i in (d.slot, d.claimed, d.confirmed, d.first_seen)} == {TOKYO}
    assert d.slot_to_claimed == round((d.claimed - d.slot).total_seconds(), 3)
    assert d.claimed_to_confirmed is not None and d.claimed_to_confirmed >= 0
    assert d.confirmed_to_first_seen is not None and d.confirmed_to_first_seen >= 0
    assert [(a.fence, a.outcome) for a in d.attempts] == [(1, "published")]
    assert d.attempts[0].ended is not None and d.attempts[0].ended >= d.attempts[0].started
    assert [p.state for p in d.parts] == [PartState.PUBLISHED]


def test_a_missed_slot_alarm_is_listed_while_open_and_with_the_resolved_once_cleared(
    channels: dict[str, str], herald: Settings
) -> None:
    slot = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=3)
    # Created three minutes ago for then (a slot in the past is refused now).
    post_id = create_post(
        channels=[channels["native"]], parts=["late"], at=slot, zone="Asia/Tokyo", clock=ManualClock(slot)
    )
    Redis.from_url(herald.redis_url).flushdb()  # nothing ran it
    tick()

    (alarm,) = list_alarms()
    assert (alarm.kind, alarm.state, alarm.post_id, alarm.channel) == (
        AlarmKind.MISSED_SLOT,
        "open",
        post_id,
        channels["native"],
    )
    assert alarm.slot == slot and alarm.slot.utcoffset() == TOKYO
    assert "past its slot" in alarm.detail
    assert alarm.resolved_at is None

    drain()  # the tick armed it
    tick()
    assert list_alarms() == []
    (resolved,) = list_alarms(include_resolved=True)
    assert resolved.id == alarm.id and resolved.state == "resolved"
    assert resolved.resolved_at is not None and resolved.resolved_at >= resolved.opened_at


def test_health_names_every_problem_until_the_reconciler_runs(channels: dict[str, str]) -> None:
    before = health()
    assert before.healthy is False
    assert before.last_tick_at is None and before.last_tick_age is None
    assert any("never run" in p for p in before.problems)

    create_post(channels=[channels["native"]], parts=["later"], at=datetime.now(UTC) + timedelta(hours=1))
    tick()
    after = health()
    assert after.healthy is True and after.problems == ()
    assert after.last_tick_at is not None and after.last_tick_at <= after.now
    assert (after.queued, after.scheduled, after.open_alarms) == (0, 1, 0)


def test_channel_views_mask_secrets_and_show_other_settings_whole(sandbox_url: str, herald: Settings) -> None:
    # api_key: a setting the adapter does not declare, on a channel made before it declared
    # its settings: masked by its name.
    add_unchecked_channel(
        "m1", "sandbox-native", {"base_url": sandbox_url, "token": "sk-live-0123456789", "api_key": "k9"}
    )

    (view,) = show_channels()

    assert (view.name, view.platform, view.account, view.connected) == ("m1", "sandbox-native", "default", True)
    assert dict(view.settings) == {"api_key": "••••", "base_url": sandbox_url, "token": "••••6789"}
    with db.reading() as s:  # masked in the view only: the channel still posts with its token
        assert s.execute(select(Channel.settings)).scalar_one()["token"] == "sk-live-0123456789"


def test_set_connected_is_what_channel_list_shows(channels: dict[str, str]) -> None:
    with db.transaction() as s:
        channel_id = s.execute(select(Channel.id).where(Channel.name == channels["none"])).scalar_one()
        set_connected(s, channel_id, connected=False)
    assert {v.name: v.connected for v in show_channels()}[channels["none"]] is False
    with db.engine().begin() as conn:  # a Core connection works as well as a session
        set_connected(conn, channel_id, connected=True)
    assert {v.name: v.connected for v in show_channels()}[channels["none"]] is True


def test_reconnecting_a_channel_re_admits_what_its_refused_credentials_and_disconnection_held(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("revoked", "sandbox-readback", {"base_url": sandbox_url, "token": "t-revoked"})
    refused = create_post(channels=["revoked"], parts=["refused"])
    drain()  # the 401 disconnects the channel
    waiting = create_post(channels=["revoked"], parts=["waits for the reconnect"])
    drain()
    assert show_post(waiting).deliveries[0].reason is Reason.CHANNEL_DISCONNECTED

    done = reconnect_channel("revoked", {"token": "t-fresh-token-42"})

    assert done.channel.connected is True
    assert done.channel.settings["token"] == "••••n-42"
    assert done.updated_settings == ("token",)
    assert done.armed == (refused, waiting)  # the 401's own delivery too: nothing else is needed
    drain()
    assert show_post(waiting).status is PostStatus.PUBLISHED
    assert show_post(refused).status is PostStatus.PUBLISHED
    assert sorted(p["text"] for p in platform.posts("readback")) == ["refused", "waits for the reconnect"]


def test_health_names_a_read_back_sweep_that_stopped_running(channels: dict[str, str], clock: ManualClock) -> None:
    tick(clock)  # a repair pass and a sweep
    fresh = health(clock)
    assert fresh.last_sweep_age == 0.0 and fresh.healthy

    with db.transaction() as s:  # the repair loop goes on; the sweep's loop has been stuck since
        s.execute(update(Tick).where(Tick.name == "readback").values(at=clock.now() - timedelta(minutes=10)))
    stuck = health(clock)

    assert stuck.last_sweep_age == 600.0
    assert [p for p in stuck.problems if "read-back sweep last ran 600s ago" in p]
    assert stuck.healthy is False
