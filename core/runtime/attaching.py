"""A part's attachments on the publish path (§16): uploaded once, processed, then attached.

Before a part with attachments is sent, each one is uploaded to the channel's platform
(unless an earlier attempt recorded its upload), its platform id recorded under the
attempt's fence the moment the platform answers, and the platform asked with growing
pauses until it has processed it. Only then does the part go out, carrying all of them. An
upload's failure is never the post's: nothing of the post was sent, so the part does not
fall in doubt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from core.config import Settings
from core.domain.errors import (
    AdapterError,
    AuthExpired,
    FencedOut,
    MediaNotReady,
    NotSent,
    PublishError,
    RateLimited,
    Rejected,
)
from core.domain.states import Reason
from core.ledger import Claim, DeliveryPlan, PartPlan
from core.ledger.media import Upload, media_files, upload_ready, upload_recorded
from core.plugins.adapter import Adapter, Attachment, PublishContext, UploadContext, Uploaded
from core.runtime.calls import call_adapter
from core.runtime.clock import Clock
from core.runtime.lease import Heartbeat
from core.store.blobs import blobs

T = TypeVar("T")


def uploads_done(adapter: Adapter, part: PartPlan, uploads: dict[int, Upload]) -> bool:
    """Whether every attachment of ``part`` is uploaded and ready: only then can its post
    have been sent (a part without attachments, or whose files go with the post: always)."""
    return not adapter.uploads_first or all(
        (upload := uploads.get(position)) is not None and upload.media_id == ref.media_id and upload.ready
        for position, ref in enumerate(part.media)
    )


class Attaching:
    """The attachments of one delivery's parts, under the claim that sends them."""

    def __init__(self, claim: Claim, plan: DeliveryPlan, cfg: Settings, hb: Heartbeat, clock: Callable[[], Clock]):
        self.claim, self.plan, self.cfg, self.hb, self.clock = claim, plan, cfg, hb, clock

    def attach(
        self, adapter: Adapter, part: PartPlan, ctx: PublishContext, uploads: dict[int, Upload]
    ) -> PublishContext:
        """``ctx`` carrying the part's attachments, each uploaded once and processed.

        An upload is recorded under the fence the moment the platform answers, so a later
        attempt attaches it instead of sending the file again.

        Raises:
            PublishError: an upload failed; as none of it is the post, the post was not sent
                (``Rejected(media_invalid)`` naming the file when the platform refused it).
            MediaNotReady: the platform still processes a file after ``media_wait_seconds``.
        """
        files = media_files(part.media, blobs(), adapter.limits.alt_text)
        if not adapter.uploads_first:  # the files go with the post itself
            return replace(ctx, media=tuple(Attachment("", f.alt, f.mime, f) for f in files))
        attachments = []
        for position, (ref, file) in enumerate(zip(part.media, files, strict=True)):
            upload_ctx = UploadContext(
                settings=ctx.settings,
                client=ctx.client,
                file=file,
                key=f"{part.key}m{position}",
                heartbeat=self.hb.beat,
            )
            upload = uploads.get(position)
            if upload is None or upload.media_id != ref.media_id:
                uploaded: Uploaded = self._call(adapter.upload, upload_ctx)
                upload_recorded(
                    self.claim,
                    self.plan.delivery_id,
                    part.idx,
                    position,
                    ref.media_id,
                    uploaded,
                    self.clock().now(),
                    self.cfg.lease_seconds,
                )
                upload = Upload(position, ref.media_id, uploaded.platform_id, uploaded.ready)
            if not upload.ready:
                self._wait_processed(adapter, upload_ctx, upload.platform_id)
                upload_ready(
                    self.claim, self.plan.delivery_id, part.idx, position, self.clock().now(), self.cfg.lease_seconds
                )
            attachments.append(Attachment(upload.platform_id, file.alt, file.mime, file))
        return replace(ctx, media=tuple(attachments))

    def _wait_processed(self, adapter: Adapter, ctx: UploadContext, platform_id: str) -> None:
        """Ask the platform, with growing pauses, until it has processed an upload.

        Raises:
            MediaNotReady: still processing after ``media_wait_seconds``.
            FencedOut: a newer claim took the post meanwhile.
        """
        wait = self.cfg.media_wait_seconds
        until, pause = time.monotonic() + wait, 0.2
        while not self._call(lambda c: adapter.media_ready(c, platform_id), ctx):
            left = until - time.monotonic()
            if left <= 0:
                raise MediaNotReady(
                    f"{ctx.file.filename} is still being processed by the platform after {wait:g}s; "
                    "the part waits for it and is tried again later"
                )
            if self.hb.fenced.wait(min(pause, left)):
                raise FencedOut("heartbeat saw a newer claim")
            pause = min(pause * 2, 5.0)

    def _call(self, fn: Callable[[UploadContext], T], ctx: UploadContext) -> T:
        """One media call under its deadline; its failure says the post was not sent."""
        name = ctx.file.filename
        try:
            return call_adapter(fn, ctx, self.cfg.call_timeout)
        except (AuthExpired, RateLimited, MediaNotReady):
            raise
        except Rejected as exc:
            reason = exc.reason if exc.reason is Reason.PERMISSION_DENIED else Reason.MEDIA_INVALID
            raise Rejected(reason, f"{name}: {exc}", status=exc.status) from exc
        except AdapterError as exc:
            raise AdapterError(f"uploading {name}: {exc}", sent=False) from exc
        except PublishError as exc:  # NotSent, Ambiguous: an upload, at worst; never the post
            raise NotSent(f"uploading {name}: {type(exc).__name__}: {exc}", status=exc.status) from exc
