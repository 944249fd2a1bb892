"""The composer (``/compose``): text or thread parts, channels, per-channel text, a live
count per channel limit, media with alt text, a slot in a zone or the channels' next free
posting slot ("add to queue"), draft, approval. It creates through
``core.services.posts.submit_post``, which checks everything again.

Each part's box has its files beside it (``media.N``, each with its ``alt.N``, N the box's
number from 1), kept by the media service (``add_media``) and attached to that part; a
channel's own text may be a thread of its own (its boxes ``text.NAME``, one per part), and
the live count counts those parts on that channel.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response
from sqlalchemy import select
from starlette.datastructures import FormData, UploadFile

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
    #: The part is the channel's own text, not the post's.
    own: bool = False


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


def _boxes(form: FormData) -> list[str]:
    """The text of each part's box, in order, blank ones too."""
    return [str(v) for v in form.getlist("part")]


def _parts(form: FormData) -> list[str]:
    given = _boxes(form)
    kept = [text for text in given if text.strip()]
    return kept or given[:1]


def _channel_texts(form: FormData, channels: list[str]) -> dict[str, list[str]]:
    """Each channel's own parts (its boxes ``text.NAME``, the blank ones left out)."""
    own = {}
    for name in channels:
        texts = [str(v) for v in form.getlist(f"text.{name}") if str(v).strip()]
        if texts:
            own[name] = texts
    return own


def counts(limits: list[ChannelLimit], form: FormData) -> list[PartCount]:
    """Each chosen channel's parts counted against its limit: the same count as the create check's."""
    chosen = set(form.getlist("channel"))
    parts = _parts(form)
    out = []
    for channel in limits:
        if channel.name not in chosen:
            continue
        own = _channel_texts(form, [channel.name]).get(channel.name)
        for i, text in enumerate(own or parts, 1):
            length = text_length(text, channel.unit, channel.url_chars)
            over = length > channel.max_chars
            out.append(PartCount(channel.name, i, length, channel.max_chars, channel.unit, over, own is not None))
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
    """Each part's files (``media.N``, the N-th box) with their alt texts (``alt.N``, in the
    same order), written where ``add_media`` reads them (it keeps a copy of its own), each
    for the part its box became once the blank boxes are left out.

    Raises:
        UserError: a file beside a box with no text (or no box), or alt text with no file.
    """
    boxes = _boxes(form)
    strays = sorted(
        {key for key, value in form.multi_items() if key.startswith("media.") and _is_file(value)}
        - {f"media.{number}" for number in range(1, len(boxes) + 1)}
    )
    if strays:
        raise UserError(f"{', '.join(strays)} names no part of this post: attach each file beside its part's text")
    specs = []
    part = 0
    for number, text in enumerate(boxes, 1):
        files = form.getlist(f"media.{number}")
        alts = [str(a).strip() for a in form.getlist(f"alt.{number}")]
        for i in range(max(len(files), len(alts))):
            upload = files[i] if i < len(files) else None
            alt = alts[i] if i < len(alts) else ""
            if not isinstance(upload, UploadFile) or not _is_file(upload):
                if alt:
                    raise UserError(
                        f"part {number} has alt text {alt[:40]!r} but no file: choose the file, or clear it"
                    )
                continue
            name = _file_name(upload.filename or "", f"upload-{number}-{i + 1}")
            if not text.strip():
                raise UserError(f"part {number} has no text but carries {name}: give it text, or take the file off")
            path = scratch / f"{number}-{i}" / name
            path.parent.mkdir()
            path.write_bytes(await upload.read())
            specs.append(AttachmentSpec(part, str(path), alt or None))
        if text.strip():
            part += 1
    return specs


def _is_file(value: object) -> bool:
    """Whether a form's value is a file that was chosen (an empty file field sends no name).
    Starlette's ``UploadFile``: its form parser makes those (FastAPI's is a subclass)."""
    return isinstance(value, UploadFile) and bool(value.filename)


def _file_name(given: str, fallback: str) -> str:
    """An uploaded file's name as herald keeps it: its last path segment, no NUL, at most
    200 bytes (a file system's limit is 255), the end (its extension) kept."""
    name = Path(given.replace("\x00", "")).name
    while len(name.encode()) > 200:
        name = name[1:]
    return name or fallback
