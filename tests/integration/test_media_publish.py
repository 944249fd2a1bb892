"""A part is never sent without its attachments (§16): each uploaded once per part and
channel (its platform id recorded under the fence), waited for while the platform
processes it, and a refused file ends ``media_invalid`` naming it. Against the real
sandbox platform over HTTP; uploads are counted on it."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from core import ledger
from core.config import Settings
from core.runtime import job
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock, ManualClock
from core.services.media import AttachmentSpec
from core.services.posts import create_post
from core.services.support import retry_post
from core.store import db
from core.store.models import MediaUpload
from tests.integration.conftest import Sandbox, Workers, drain, post_json, wait_until
from tests.integration.media_files import jpeg, png

pytestmark = pytest.mark.integration


def uploads(platform: Sandbox) -> list[dict[str, Any]]:
    response = httpx.get(f"{platform.url}/sandbox/media")
    response.raise_for_status()
    return list(response.json()["media"])


def recorded_uploads() -> list[tuple[int, str, str]]:
    with db.reading() as s:
        return [(u.position, u.platform_id, u.state) for u in s.query(MediaUpload).order_by(MediaUpload.position)]


def delivery_of(post_id: int) -> dict[str, Any]:
    (only,) = post_json(post_id)["deliveries"]
    return dict(only)


@pytest.fixture
def two_images(tmp_path: Path) -> list[Path]:
    return [png(tmp_path / "kite.png", (30, 20), "red"), jpeg(tmp_path / "ridge.jpg", (20, 30), "green")]


def test_a_post_with_two_images_publishes_both_in_order_with_their_alt_text(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, two_images: list[Path]
) -> None:
    kite, ridge = two_images
    media = [AttachmentSpec(0, str(kite), "a red kite"), AttachmentSpec(0, str(ridge), "the green ridge")]
    post_id = create_post(channels=["n1"], parts=["two pictures"], media=media)

    job.publish_post(post_id)

    assert delivery_of(post_id)["status"] == "published"
    (copy,) = platform.posts("native")
    kept = uploads(platform)
    assert [m["sha256"] for m in kept] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in two_images]
    assert [m["mime"] for m in kept] == ["image/png", "image/jpeg"]
    assert [(m["id"], m["alt"]) for m in copy["media"]] == [
        (kept[0]["id"], "a red kite"),
        (kept[1]["id"], "the green ridge"),
    ]
    # The feed people look at shows both, in order, with their alt text.
    feed = httpx.get(f"{platform.url}/").text
    assert re.findall(r'<img [^>]*alt="([^"]*)"', feed) == ["a red kite", "the green ridge"]
    served = httpx.get(f"{platform.url}/media/{kept[0]['id']}")
    assert served.content == kite.read_bytes() and served.headers["content-type"] == "image/png"
    # herald shows what each attachment became on the platform.
    assert [(u["position"], u["state"]) for u in delivery_of(post_id)["uploads"]] == [(0, "ready"), (1, "ready")]


def test_an_image_still_processing_makes_the_part_wait_and_publish_after_it(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, two_images: list[Path]
) -> None:
    platform.faults(media_processing_seconds=5.0)
    post_id = create_post(channels=["n1"], parts=["wait for it"], media=[AttachmentSpec(0, str(two_images[0]))])

    started = time.monotonic()
    job.publish_post(post_id)
    waited = time.monotonic() - started

    (upload,) = uploads(platform)
    (copy,) = platform.posts("native")
    assert waited >= 5.0
    # Never before: the platform took the post only once it had processed the image.
    processed_at = datetime.fromisoformat(upload["created_at"]) + timedelta(seconds=5)
    assert datetime.fromisoformat(copy["created_at"]) >= processed_at
    assert [m["id"] for m in copy["media"]] == [upload["id"]]
    assert delivery_of(post_id)["status"] == "published"


def test_processing_longer_than_the_wait_parks_the_part_media_not_ready_and_never_uploads_twice(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, herald: Settings, two_images: list[Path]
) -> None:
    from dataclasses import replace

    from core import config

    config.use(replace(herald, media_wait_seconds=0.5))
    platform.faults(media_processing_seconds=2.0)
    post_id = create_post(channels=["n1"], parts=["slow video"], media=[AttachmentSpec(0, str(two_images[0]))])

    job.publish_post(post_id)

    waiting = delivery_of(post_id)
    assert (waiting["status"], waiting["reason"]) == ("retry_wait", "media_not_ready")
    assert "kite.png is still being processed" in waiting["detail"]
    assert waiting["parts"][0]["state"] == "unsent"  # the post was never sent
    assert platform.posts() == []
    assert [state for _, _, state in recorded_uploads()] == ["processing"]

    time.sleep(2.0)  # the platform finishes processing
    clock.advance(120)
    job.publish_post(post_id)

    assert delivery_of(post_id)["status"] == "published"
    assert len(uploads(platform)) == 1  # the recorded upload was attached, not sent again
    assert len(platform.posts()) == 1


def test_a_file_the_platform_refuses_ends_media_invalid_naming_it_and_a_retry_sends_it(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock, two_images: list[Path]
) -> None:
    platform.faults(refuse_media=1.0)
    post_id = create_post(channels=["n1"], parts=["refused"], media=[AttachmentSpec(0, str(two_images[1]))])

    job.publish_post(post_id)

    failed = delivery_of(post_id)
    assert (failed["status"], failed["reason"]) == ("failed", "media_invalid")
    assert "ridge.jpg" in failed["detail"]
    assert failed["parts"][0]["state"] == "unsent"
    assert platform.posts() == []

    platform.faults()  # the file is fine after all (or was replaced)
    retry_post(post_id, clock=clock)
    job.publish_post(post_id)
    assert delivery_of(post_id)["status"] == "published"
    assert len(platform.posts()) == 1


@pytest.mark.parametrize("fault", ["error_before_accept", "drop_after_accept", "error_after_accept", "rate_limit"])
def test_a_failed_upload_is_retried_and_the_post_goes_out_once_with_its_image(
    fault: str, channels: dict[str, str], platform: Sandbox, clock: ManualClock, two_images: list[Path]
) -> None:
    platform.faults(**{fault: 1.0}, times=1, targets=["media"])
    post_id = create_post(channels=["n1"], parts=[f"upload {fault}"], media=[AttachmentSpec(0, str(two_images[0]))])

    job.publish_post(post_id)
    parked = delivery_of(post_id)
    assert parked["status"] == "retry_wait" and parked["parts"][0]["state"] == "unsent"
    assert platform.posts() == []

    clock.advance(120)
    job.publish_post(post_id)

    assert delivery_of(post_id)["status"] == "published"
    (copy,) = platform.posts()
    # The upload whose answer was lost (if the platform kept it) is never attached: the
    # one herald recorded is.
    (recorded,) = recorded_uploads()
    assert [m["id"] for m in copy["media"]] == [recorded[1]]


@pytest.mark.parametrize("strategy", ["native", "readback", "none"])
def test_a_worker_killed_between_the_upload_and_the_post_uploads_nothing_twice_and_publishes_once(
    strategy: str,
    channels: dict[str, str],
    platform: Sandbox,
    workers: Workers,
    herald: Settings,
    clock: ManualClock,
    two_images: list[Path],
) -> None:
    # The platform processes the upload for a while: the worker has recorded it and waits.
    platform.faults(media_processing_seconds=4.0)
    media = [AttachmentSpec(0, str(p)) for p in two_images]
    post_id = create_post(channels=[channels[strategy]], parts=[f"killed mid-media {strategy}"], media=media)
    worker = workers.start()
    wait_until(lambda: len(recorded_uploads()) == 2)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert platform.posts() == [] and len(uploads(platform)) == 2
    assert delivery_of(post_id)["parts"][0]["state"] == "sending"  # claimed, as ever before a call

    killed_at = DatabaseClock(db.engine()).now()
    assert ledger.claim_post(post_id, "early", killed_at, herald.lease_seconds, herald.grace_seconds) is None
    clock.set(killed_at + timedelta(seconds=herald.lease_seconds + herald.grace_seconds + 0.2))
    assert arm(post_id, clock) is not None
    drain()

    # The part's post had never been sent (its uploads were not all processed), so even the
    # strategy that cannot ask the platform sends it, once, with the recorded uploads.
    published = delivery_of(post_id)
    assert published["status"] == "published"
    (copy,) = platform.posts(strategy)
    kept = uploads(platform)
    assert len(kept) == 2
    assert [m["id"] for m in copy["media"]] == [m["id"] for m in kept]
    # The attempts log says so: the re-drive sent the part, it did not resend one in doubt.
    assert [a["action"] for a in post_json(post_id)["attempts"]] == ["send", "send"]
