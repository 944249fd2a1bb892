"""The ``mastodon`` adapter: an account posts statuses to its own instance, deduplicated by Idempotency-Key.

Post a new status (``POST /api/v1/statuses``, content/en/methods/statuses.md) takes an
``Idempotency-Key`` header, "to prevent duplicate submissions of the same status ...
Idempotency keys are stored for up to 1 hour". herald's delivery key is the same on every
retry, so a resend within that hour returns the status the first attempt made. (Mastodon
keeps the key per account, from the moment the status is made, and returns that first
status whatever a repeat's body says: mastodon/mastodon ``app/services/post_status_service.rb``.)

There is no read-back (``find``). A status carries nothing of the key; its ``content`` is
HTML made from the text, and the plain text only comes back per status
(``GET /api/v1/statuses/:id/source``). Matching the text would need the time the attempt
started, which herald does not give an adapter, to bound the search: without it, a recurring
post with the same words would be adopted for this one, or a status not on the first pages
taken for absent and sent twice. Past the hour herald holds an attempt in doubt for a person
(``ambiguous_outcome``) rather than guess.

Attachments are uploaded first (``POST /api/v2/media``, content/en/methods/media.md, with
the alt text as ``description``), looked at until processed (``GET /api/v1/media/:id``), then
named in the status's ``media_ids``. A thread is a chain of replies (``in_reply_to_id``).

Every answer goes through :func:`adapters.mastodon.answers.raise_for_answer`; httpx transport
errors are left to herald.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

from adapters.mastodon.answers import entity, published_status, raise_for_answer
from adapters.mastodon.limits import DEFAULT_LIMITS, instance_limits
from core.plugins import (
    Adapter,
    Ambiguous,
    Attachment,
    ConfigError,
    Limits,
    PublishContext,
    Published,
    Rate,
    Reason,
    Rejected,
    Setting,
    Strategy,
    UploadContext,
    Uploaded,
    VerifyContext,
    channel_settings,
    http_url,
)

#: "Idempotency keys are stored for up to 1 hour" (content/en/methods/statuses.md). herald
#: counts the hour from the attempt's start, before Mastodon made the status and stored the
#: key, so the real window is a little longer still.
KEY_TTL = 3600.0

#: Post a new status, ``visibility``: "Sets the visibility of the posted status to
#: ``public``, ``unlisted``, ``private``, ``direct``" (content/en/methods/statuses.md).
VISIBILITIES = ("public", "unlisted", "private", "direct")
DEFAULT_VISIBILITY = "public"

STATUSES = "/api/v1/statuses"
MEDIA_V2 = "/api/v2/media"
MEDIA_V1 = "/api/v1/media"
VERIFY_CREDENTIALS = "/api/v1/accounts/verify_credentials"
INSTANCE_V2 = "/api/v2/instance"


def instance_url(value: str) -> str | None:
    """A check: ``value`` is an instance's own address (``https://mastodon.social``).

    Mastodon serves its API from the root of its domain (``/api/v1/...``), so a path – a
    profile's link, an API URL pasted whole – would send every request to the wrong place.
    """
    problem = http_url(value)
    if problem is not None:
        return problem
    parts = urlsplit(value)
    if parts.path.strip("/") or parts.query or parts.fragment:
        return "has a path: give the instance's address alone, such as https://mastodon.social"
    return None


def access_token(value: str) -> str | None:
    """A check: ``value`` looks like an access token alone (herald adds ``Bearer `` itself)."""
    if value.lower().startswith("bearer "):
        return "starts with 'Bearer ': give the token alone, herald sends it as 'Bearer TOKEN'"
    if any(c.isspace() for c in value):
        return "has spaces in it: copy the access token again, alone"
    return None


def visibility(value: str) -> str | None:
    """A check: ``value`` is one of Mastodon's visibilities."""
    if value not in VISIBILITIES:
        return f"is not a Mastodon visibility ({', '.join(VISIBILITIES)})"
    return None


class Mastodon(Adapter):
    """One Mastodon account posting statuses, replying for threads, with images or a video."""

    name: ClassVar[str] = "mastodon"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = KEY_TTL
    key_in: ClassVar[str | None] = "header:Idempotency-Key"
    limits: ClassVar[Limits] = DEFAULT_LIMITS
    uploads_first: ClassVar[bool] = True
    # Mastodon's docs (content/en/api/rate-limits.md) allow an account 300 requests of any
    # kind in 5 minutes; the statuses it may post are held tighter, 300 in 3 hours
    # (mastodon/mastodon app/lib/rate_limiter.rb, family ``statuses``, which
    # PostStatusService checks for statuses made through the API). 300 in 3 hours keeps both.
    rates: ClassVar[tuple[Rate, ...]] = (Rate(300, 3 * 60 * 60),)
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "base_url",
            "the address of the account's Mastodon instance",
            required=True,
            check=instance_url,
            example="https://mastodon.social",
        ),
        Setting(
            "token",
            "the account's access token, with the scopes write:statuses write:media read:accounts "
            "(Preferences → Development → New application)",
            required=True,
            secret=True,
            check=access_token,
            example="TOKEN",
        ),
        Setting(
            "visibility",
            f"who sees the statuses: {', '.join(VISIBILITIES)} ({DEFAULT_VISIBILITY} when left out)",
            check=visibility,
            example="unlisted",
        ),
    )

    def publish(self, ctx: PublishContext) -> Published:
        """Post the part as a status, with its key as ``Idempotency-Key``, replying to the
        part before it in a thread and carrying its uploaded attachments in order."""
        body: dict[str, Any] = {"status": ctx.text, "visibility": _visibility(ctx.settings)}
        if ctx.reply_to is not None:
            # "in_reply_to_id: ID of the status being replied to, if status is a reply."
            body["in_reply_to_id"] = ctx.reply_to
        if ctx.media:
            # "media_ids[]: Include Attachment IDs to be attached as media. If provided,
            # status becomes optional" – in this order, the order Mastodon shows them.
            body["media_ids"] = _media_ids(ctx.media)
        headers = {**_authorization(ctx.settings), "Idempotency-Key": ctx.key}
        # JSON, which the API understands as it does form data (content/en/client/intro.md,
        # "Providing parameters").
        response = ctx.client.post(_url(ctx.settings, STATUSES), json=body, headers=headers)
        raise_for_answer(response, missing=Reason.THREAD_PARENT_MISSING if ctx.reply_to is not None else None)
        return published_status(response)

    def upload(self, ctx: UploadContext) -> Uploaded:
        """Upload one attachment (``POST /api/v2/media``) with its alt text as ``description``.

        "200: MediaAttachment was created successfully, and the full-size file was processed
        synchronously"; "202: ... the full-size file is still processing. Note that the
        MediaAttachment's url will still be null" (content/en/methods/media.md).
        """
        file = ctx.file
        fields = {"description": file.alt} if file.alt else {}
        response = ctx.client.post(
            _url(ctx.settings, MEDIA_V2),
            headers=_authorization(ctx.settings),
            data=fields,
            # "file: The file to be attached, encoded using multipart form data. The file
            # must have a MIME type."
            files={"file": (file.filename, file.read(), file.mime)},
        )
        raise_for_answer(response, upload=True)
        media = entity(response, f"the upload of {file.filename}")
        return Uploaded(platform_id=media["id"], ready=response.status_code == 200 and media.get("url") is not None)

    def media_ready(self, ctx: UploadContext, platform_id: str) -> bool:
        """Get media attachment (``GET /api/v1/media/:id``): "206: Partial content – The media
        attachment is still being processed"; 200 once "a url to the processed media is
        available"; 422 "There was an error processing the media attachment"."""
        url = _url(ctx.settings, f"{MEDIA_V1}/{quote(platform_id, safe='')}")
        response = ctx.client.get(url, headers=_authorization(ctx.settings))
        if response.status_code == 206:
            return False
        # 404 "MediaAttachment is not owned by you or does not exist": the upload is gone.
        raise_for_answer(response, missing=Reason.MEDIA_INVALID, upload=True)
        entity(response, f"a look at the upload of {ctx.file.filename}")
        return True

    def verify(self, ctx: VerifyContext) -> str:
        """Verify account credentials (``GET /api/v1/accounts/verify_credentials``, "Test to
        make sure that the user token works", content/en/methods/accounts.md): ``@acct@instance``."""
        response = ctx.client.get(_url(ctx.settings, VERIFY_CREDENTIALS), headers=_authorization(ctx.settings))
        raise_for_answer(response)
        acct = entity(response, "verify_credentials").get("acct")
        if not isinstance(acct, str) or not acct:
            raise Ambiguous(f"Mastodon answered verify_credentials without the account's acct: {response.text[:200]!r}")
        # A local account's ``acct`` is its username alone ("Equal to username for local
        # users", content/en/entities/Account.md); the instance is the channel's.
        return f"@{acct}" if "@" in acct else f"@{acct}@{_host(ctx.settings)}"

    def channel_limits(self, ctx: VerifyContext) -> Limits | None:
        """The instance's own limits (``GET /api/v2/instance``, "View server information",
        content/en/methods/instance.md: "4.0.0 - added"); None when it answers 404, as an
        instance older than 4.0 does, so the defaults hold. It is public; the token goes
        along for an instance that lets only its users read its API.

        Raises:
            Ambiguous: a 2xx that is not an Instance: the limits could not be read.
        """
        response = ctx.client.get(_url(ctx.settings, INSTANCE_V2), headers=_authorization(ctx.settings))
        if response.status_code == 404:
            return None
        raise_for_answer(response)
        try:
            instance = response.json()
        except ValueError:
            instance = None
        if not isinstance(instance, Mapping):
            raise Ambiguous(f"Mastodon answered {response.status_code} to /api/v2/instance without an Instance")
        return instance_limits(instance)


def _setting(settings: Mapping[str, str], name: str) -> str:
    return channel_settings.required(Mastodon, settings, name)


def _url(settings: Mapping[str, str], path: str) -> str:
    return _setting(settings, "base_url").rstrip("/") + path


def _host(settings: Mapping[str, str]) -> str:
    return urlsplit(_setting(settings, "base_url")).hostname or _setting(settings, "base_url")


def _authorization(settings: Mapping[str, str]) -> dict[str, str]:
    """``Authorization: Bearer <user_token>``, as every method used here asks."""
    return {"Authorization": f"Bearer {_setting(settings, 'token')}"}


def _visibility(settings: Mapping[str, str]) -> str:
    value = (settings.get("visibility") or "").strip() or DEFAULT_VISIBILITY
    if visibility(value) is not None:
        raise ConfigError(
            f"the mastodon channel's visibility {value!r} is not one of {', '.join(VISIBILITIES)}; fix it with "
            "`herald channel reconnect NAME --set visibility=public`"
        )
    return value


def _media_ids(media: tuple[Attachment, ...]) -> list[str]:
    """The attachments' upload ids, checked against the rule herald's limits cannot say.

    Raises:
        Rejected: ``media_invalid`` before any request: a video goes alone ("Only one video
            can be attached, per post", content/en/user/posting.md; 422 "Cannot attach a
            video to a post that already contains images"), or an attachment has no upload id.
    """
    if len(media) > 1 and any(attachment.mime.startswith("video/") for attachment in media):
        raise Rejected(
            Reason.MEDIA_INVALID,
            f"the part has {len(media)} attachments and one is a video: Mastodon takes one video alone, "
            "or up to 4 images",
        )
    missing = [position + 1 for position, attachment in enumerate(media) if not attachment.platform_id]
    if missing:
        raise Rejected(Reason.MEDIA_INVALID, f"attachment {missing[0]} was not uploaded to Mastodon before the post")
    return [attachment.platform_id for attachment in media]
