"""What the API's requests carry: explicit models, one per body, so /openapi.json says
exactly what each route takes. Answers are the services' own views (``core.services``).

The fields are the CLI's options under the same names, read by the same parsing helpers
(``parse_slot``, ``parse_query``...): a slot is ``at`` (ISO 8601 with an offset, or a
local time with ``zone``), ``delay`` (from now: ``30s``, ``5m``, ``2h``, ``1d``) or ``now``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.api.errors import ApiError, ErrorCode
from core.domain.roles import Role
from core.services.editing import EditMode
from core.services.media import AttachmentSpec
from core.store.models import NAME_LENGTH

#: The largest id a row has (the columns are SQL INTEGER); a bigger one is refused as
#: invalid, never sent to the database.
MAX_ID = 2**31 - 1

#: A post, media or alarm id in a path.
PathId = Annotated[int, Path(ge=1, le=MAX_ID)]


def without_nul(value: Any, where: str = "body") -> None:
    """Refuse a NUL character anywhere in ``value`` (its strings, keys and items): no text
    herald keeps may hold one (PostgreSQL's text cannot).

    Raises:
        ValueError: there is one.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where} holds a NUL character (\\u0000), which no text may")
    elif isinstance(value, dict):
        for key, item in value.items():
            without_nul(key, where)
            without_nul(item, where)
    elif isinstance(value, list | tuple):
        for item in value:
            without_nul(item, where)


def refuse_nul(value: Any, where: str) -> None:
    """:func:`without_nul` for what no model reads (paths, queries, form fields).

    Raises:
        ApiError: ``invalid_request``.
    """
    try:
        without_nul(value, where)
    except ValueError as exc:
        raise ApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None


class Body(BaseModel):
    """A request body: a field the route does not know is refused, not ignored; no text
    in it may hold a NUL character."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        without_nul(data)
        return data


class Attachment(Body):
    """A kept file (``POST /api/v1/media``) on one part."""

    media_id: int = Field(ge=1, le=MAX_ID, description="The id `POST /api/v1/media` answered.")
    part: int = Field(1, ge=1, description="The part it goes on, from 1.")
    alt: str | None = Field(None, description="Alt text; the file's own when left out.")

    def spec(self) -> AttachmentSpec:
        return AttachmentSpec(self.part - 1, f"media {self.media_id}", self.alt, media_id=self.media_id)


class Slot(Body):
    """When: ``at``, ``delay`` or ``now`` (at most one), shown in ``zone``."""

    at: str | None = Field(None, description="ISO 8601 with an offset, or a local time in `zone`.")
    delay: str | None = Field(None, description="From now: 30s, 5m, 2h, 1d.")
    zone: str | None = Field(None, description="The IANA zone of a local `at`, and to show the post in.")
    fold: int | None = Field(None, ge=0, le=1, description="0 or 1: which of a repeated local time.")


class PostCreate(Slot):
    """A new post: one part, or a thread of several; published now unless a slot is given."""

    channels: list[str] = Field(min_length=1, description="Channel names; `GET /api/v1/channels` lists them.")
    parts: list[str] = Field(min_length=1, description="The text of each part, in order; several make a thread.")
    channel_texts: dict[str, list[str]] = Field(
        default_factory=dict, description="Channel name → that channel's own text of each part, instead of `parts`."
    )
    media: list[Attachment] = Field(default_factory=list, description="Attachments, in order.")
    now: bool = Field(False, description="Publish at once (the default when no slot is given).")
    not_before: str | None = Field(None, description="Embargo: never before this instant.")
    needs_approval: bool = Field(False, description="Hold until `POST /api/v1/posts/{id}/approve`.")
    draft: bool = Field(False, description="Save a draft, never sent until `POST /api/v1/posts/{id}/schedule`.")
    queue: bool = Field(
        False,
        description="Add to queue: the first instant that is a free posting slot on every channel "
        "(`PUT /api/v1/channels/{name}/slots`); not with `at`, `delay`, `now` or `draft`. "
        "Shown in `zone`, else in the first channel's slots' zone.",
    )

    @model_validator(mode="after")
    def _queue_alone(self) -> PostCreate:
        given = [name for name in ("at", "delay", "now", "draft") if getattr(self, name)]
        if self.queue and given:
            raise ValueError(f"queue takes the channels' next free posting slot: send it without {', '.join(given)}")
        return self


class PostChange(Slot):
    """An edit, made against the revision the editor read (`GET /api/v1/posts/{id}`)."""

    revision: int = Field(
        ge=0, le=MAX_ID, description="The post's revision the edit was made against; a newer one answers 409."
    )
    parts: list[str] | None = Field(None, min_length=1, description="The new text of each part.")
    channels: list[str] | None = Field(
        None, min_length=1, description="The channels after the edit; those left out are taken off."
    )
    channel_texts: dict[str, list[str]] = Field(
        default_factory=dict, description="Channel name → its own text of each part; [] puts it back on the post's."
    )
    media: list[Attachment] | None = Field(None, description="The attachments after the edit; [] takes them all off.")
    mode: EditMode | None = Field(None, description="For a post that has published: correct or republish.")


class Reschedule(Slot):
    """A new slot for a post that has not started publishing."""

    now: bool = Field(False, description="Publish at once.")


class Retry(Body):
    channel: str | None = Field(None, description="Only this channel's delivery.")


class Resolve(Body):
    """How an attempt in doubt ended: ``landed`` (with its URL) or ``send_again``. For a
    copy found before the first send (``duplicate_suspected``): ``adopt`` it as herald's,
    or ``send_again`` to publish anyway."""

    channel: str = Field(description="The channel whose delivery is held.")
    outcome: Literal["landed", "send_again", "adopt"]
    url: str | None = Field(None, description="landed: the post's address on the platform.")
    platform_id: str | None = Field(None, description="landed: the platform's id (default: the URL's last segment).")


class ChannelCreate(Body):
    """A new channel on one of the adapters' platforms, with its declared settings."""

    name: str = Field(description="A unique name for the channel.")
    platform: str = Field(description="The adapter's name, e.g. sandbox-native, mastodon, bluesky.")
    settings: dict[str, str] = Field(default_factory=dict, description="The platform's declared settings.")


class ChannelChange(Body):
    settings: dict[str, str] = Field(default_factory=dict, description="Settings to give or change.")
    unset: list[str] = Field(default_factory=list, description="Settings to take away.")


class Reconnect(Body):
    settings: dict[str, str] = Field(default_factory=dict, description="New credentials or settings.")


# -- API keys (``/api/v1/keys``) -------------------------------------------------------------------


class KeyCreate(Body):
    """A new key for the requesting key's own account: there is no account to name, an
    admin makes keys for its account only (a body naming one is refused)."""

    role: Role = Field(description="admin, manager (schedule, edit), support (retry, resolve), viewer (read).")
    name: str = Field("", max_length=NAME_LENGTH, description="What the key is for.")
    expires: str | None = Field(None, description="Expire after this long (30d, 12h); left out: never.")


class SlotRule(Body):
    """Days × local times: every one of ``times`` on every one of ``days``."""

    days: str = Field(description="mon … sun, a range (mon-fri), a list (mon,wed), daily, weekdays or weekends.")
    times: list[str] = Field(min_length=1, description="Local times of day, HH:MM (24-hour).")


class PostingSlotsChange(Body):
    """A channel's posting slots, all of them: what the channel had is replaced."""

    zone: str | None = Field(None, description="The IANA zone of the times; left out, the channel's current one (UTC).")
    slots: list[SlotRule] = Field(description="Every slot the channel has after this; [] takes them all away.")
