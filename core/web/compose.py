"""The composer (``/compose``): text or thread parts, channels, per-channel text, a live
count per channel limit, media with alt text, a slot in a zone or the channels' next free
posting slot ("add to queue"), draft, approval. It creates through
``core.services.posts.submit_post``, which checks everything again."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response, UploadFile
from sqlalchemy import select
from starlette.datastructures import FormData

from core import config
from core.domain.errors import UserError
from core.plugins.adapter import text_length
from core.services.content import channel_limits
from core.services.media import AttachmentSpec
from core.services.posts import submit_post
from core.services.scope import own_channel
from core.services.slots import parse_slot
from core.store import db
from core.store.models import Channel
from core.web.rendering import PageRoute, done, render
from core.web.session import Csrf, Scheduler

router = APIRouter(route_class=PageRoute)


@dataclass(frozen=True)
class ChannelLimit:
    """What one of the account's channels takes, as the composer shows it."""

    name: str
    platform: str
    max_chars: int
    unit: str
    url_chars: int | None
    threads: bool


@dataclass(frozen=True)
class PartCount:
    """How long a part is on a channel, counted as its platform counts."""

    channel: str
    part: int
    length: int
    limit: int
    unit: str
    over: bool


def account_channels(account_id: int) -> list[ChannelLimit]:
    """The account's live channels, by name, with their limits (the create check's)."""
    with db.reading() as s:
        rows = s.execute(
            select(Channel).where(Channel.account_id == account_id, Channel.removed_at.is_(None)).order_by(Channel.name)
        ).scalars()
        shown = []
        for channel in rows:
            limits = channel_limits(channel)
            shown.append(
                ChannelLimit(
                    channel.name,
                    channel.platform,
                    limits.max_chars,
                    limits.text_unit,
                    limits.url_chars,
                    limits.threads,
                )
            )
    return shown


def _parts(form: FormData) -> list[str]:
    given = [str(v) for v in form.getlist("part")]
    kept = [text for text in given if text.strip()]
    return kept or given[:1]


def _channel_texts(form: FormData, channels: list[str]) -> dict[str, list[str]]:
    own = {}
    for name in channels:
        text = str(form.get(f"text.{name}", "") or "")
        if text.strip():
            own[name] = [text]
    return own


def counts(limits: list[ChannelLimit], form: FormData) -> list[PartCount]:
    """Each chosen channel's parts counted against its limit: the same count as the create check's."""
    chosen = set(form.getlist("channel"))
    parts = _parts(form)
    out = []
    for channel in limits:
        if channel.name not in chosen:
            continue
        texts = _channel_texts(form, [channel.name]).get(channel.name) or parts
        for i, text in enumerate(texts, 1):
            length = text_length(text, channel.unit, channel.url_chars)
            out.append(PartCount(channel.name, i, length, channel.max_chars, channel.unit, length > channel.max_chars))
    return out


@router.get("/compose")
def compose_page(request: Request, who: Scheduler) -> Response:
    return render(request, "compose.html", who, channels=account_channels(who.account_id))


@router.post("/compose/count", dependencies=[Csrf])
async def count(request: Request, who: Scheduler) -> Response:
    form = await request.form()
    return render(request, "count.html", who, counts=counts(account_channels(who.account_id), form))


@router.post("/compose", dependencies=[Csrf])
async def create(request: Request, who: Scheduler) -> Response:
    form = await request.form()
    channels = [str(name) for name in form.getlist("channel")]
    for name in channels:
        own_channel(who.account_id, name)
    zone = str(form.get("zone") or request.session.get("tz") or "UTC")
    when = str(form.get("when") or "now")
    at = str(form.get("at") or "").strip()
    if when == "at" and not at:
        raise UserError("give the slot's date and time, or choose 'now' or 'draft'")
    slot = parse_slot(at=at if when in ("at", "draft") and at else None, zone=zone)
    parts = _parts(form)
    with tempfile.TemporaryDirectory(dir=_uploads()) as scratch:
        media = await _attachments(form, Path(scratch))
        created = submit_post(
            channels=channels,
            parts=parts,
            at=slot.at,
            zone=slot.zone,
            needs_approval=form.get("needs_approval") == "on",
            channel_texts=_channel_texts(form, channels),
            draft=when == "draft",
            media=media,
            queue=when == "queue",
        )
    kind = "draft" if when == "draft" else "post"
    return done(request, f"/posts/{created.post_id}", f"{kind} {created.post_id} created")


def _uploads() -> Path:
    where = config.settings().home_path / "uploads"
    where.mkdir(parents=True, exist_ok=True)
    return where


async def _attachments(form: FormData, scratch: Path) -> list[AttachmentSpec]:
    """The uploaded files, each for part 1 with its alt text; written where ``add_media``
    reads them (it keeps a copy of its own)."""
    files = [f for f in form.getlist("media") if isinstance(f, UploadFile) and f.filename]
    alts = [str(a) for a in form.getlist("alt")]
    specs = []
    for i, upload in enumerate(files):
        name = Path(upload.filename or f"upload-{i}").name
        path = scratch / str(i) / name
        path.parent.mkdir()
        path.write_bytes(await upload.read())
        alt = alts[i].strip() if i < len(alts) and alts[i].strip() else None
        specs.append(AttachmentSpec(0, str(path), alt))
    return specs
