"""The sandbox speaking Mastodon's REST API, under ``/mastodon``.

A Mastodon channel's ``base_url`` is ``http://127.0.0.1:PORT/mastodon``, or the sandbox's
address alone, as the API answers at the root too (``/api/v1``, ``/api/v2``), where an
instance serves it and where the Mastodon adapter's check of ``base_url`` wants it. The shapes come
from the official docs (github.com/mastodon/documentation, ``content/en/``) and, where
they are silent, from Mastodon's own code; each route names its page:

* ``GET /api/v1/accounts/verify_credentials``: the token's CredentialAccount
  (methods/accounts.md#verify_credentials).
* ``POST /api/v1/statuses``: a new Status, the parameters as JSON or as a form
  (``status``, ``media_ids[]``, ``in_reply_to_id``, ``visibility``; methods/statuses.md#create).
  ``Idempotency-Key`` is kept for an hour per account, and is stored only after the
  status is created (Mastodon's PostStatusService checks the key, creates the status,
  then ``redis.setex``): two requests with one key at the same moment both post, and a
  repeat returns the first status even if its body differs. ``mastodon_status_seconds``
  (a fault setting) widens that window for tests.
* ``GET /api/v1/statuses/:id`` and ``GET /api/v1/accounts/:id/statuses`` (``limit``
  20, at most 40; ``max_id``, ``since_id``, ``min_id``), newest first, with a ``Link``
  header (methods/statuses.md#get, methods/accounts.md#statuses).
* ``POST /api/v2/media`` (multipart ``file``, ``description``): 200 with the
  MediaAttachment when processed, 202 with ``url`` null while processing – always for
  video and GIFs (4.0.0: "Larger media formats ... return 202"), for images only under the
  fault ``media_processing_seconds``; ``GET /api/v1/media/:id``: 206 while processing, 200
  when done, 422 when processing failed (methods/media.md). A status attaching unprocessed
  media is refused 422 "Cannot attach files that have not finished processing. Try again
  in a moment!".
* ``GET /api/v2/instance``: the configuration (500 characters, 23 per URL, 4 attachments,
  the media limits; methods/instance.md#v2).

Errors are Mastodon's ``{"error": "..."}`` (entities/Error.md): a missing or unknown token
401 "The access token is invalid", a revoked one 401 "The access token was revoked"
(Doorkeeper's wording, which Mastodon passes on), a forbidden one 403 "This action is
outside the authorized scopes"; a rate limit 429 with ``X-RateLimit-Limit``,
``-Remaining`` and ``-Reset`` (an ISO 8601 timestamp; api/rate-limits.md).

The entities it answers are built in ``mastodon_entities.py``. Text is counted as
Mastodon counts it: grapheme clusters, every URL as 23. Polls, scheduled statuses, spoiler
text and quotes are refused (422) rather than half done.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from adapters.sandbox.exchange import Answer, Exchange
from adapters.sandbox.faults import Fault
from adapters.sandbox.forms import Form, parse_form
from adapters.sandbox.mastodon_entities import (
    CHARACTERS_RESERVED_PER_URL,
    DESCRIPTION_LIMIT,
    LIMITS,
    MAX_CHARACTERS,
    MAX_MEDIA_ATTACHMENTS,
    PREFIX,
    Account,
    Views,
    attachment_type,
    instance,
)
from adapters.sandbox.media import (
    MediaState,
    PostMedia,
    StoredMedia,
    upload_problem,
)
from adapters.sandbox.store import MEDIA_COUNTER, Refusal, StoredPost, StoreWriter
from adapters.sandbox.text import graphemes

#: "Idempotency keys are stored for up to 1 hour" (methods/statuses.md#create).
IDEMPOTENCY_TTL = 3600.0
#: "All endpoints and methods can be called 300 times within 5 minutes" (api/rate-limits.md).
RATE_LIMIT = 300
VISIBILITIES = ("public", "unlisted", "private", "direct")
#: Parameters of a new status the sandbox does not implement: refused, not half done.
UNSUPPORTED = ("poll", "scheduled_at", "spoiler_text", "quoted_status_id")
_URL = re.compile(r"https?://\S+")

INVALID_TOKEN = "The access token is invalid"
NOT_FOUND = "Record not found"
NOT_READY = "Cannot attach files that have not finished processing. Try again in a moment!"
INVALID_FILE = "Validation failed: File content type is invalid, File is invalid"


def error(status: int, message: str) -> Refusal:
    """A refusal in Mastodon's words: ``{"error": message}``."""
    return Refusal(status, message, body={"error": message})


class MastodonAnswers:
    """How Mastodon words the faults' answers."""

    def rate_limited(self, retry_after: int) -> Answer:
        reset = datetime.now(UTC) + timedelta(seconds=retry_after)
        headers = {
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": "0",
            # As Mastodon writes it: ``(request_time + period).iso8601(6)``.
            "X-RateLimit-Reset": reset.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        return Answer(429, {"error": "Too many requests"}, headers)

    def unavailable(self) -> Answer:
        return Answer(503, {"error": "There was a temporary problem serving your request, please try again"})

    def internal_error(self) -> Answer:
        return Answer(500, {"error": "We're sorry, but something went wrong on our end."})


WORDING = MastodonAnswers()


def answer_mastodon(exchange: Exchange) -> None:
    """Answer a request under ``/mastodon``.

    Raises:
        Refusal: the answer is an error, in Mastodon's words.
    """
    method, parts = exchange.method, exchange.parts[1:]
    if method == "GET" and parts == ["api", "v1", "accounts", "verify_credentials"]:
        token = _authorized(exchange)
        exchange.send_json(200, Views(exchange).account(token, credential=True))
    elif method == "GET" and len(parts) == 5 and parts[:3] == ["api", "v1", "accounts"] and parts[4] == "statuses":
        _account_statuses(exchange, parts[3])
    elif method == "POST" and parts == ["api", "v1", "statuses"]:
        _create_status(exchange)
    elif method == "GET" and len(parts) == 4 and parts[:3] == ["api", "v1", "statuses"]:
        viewer = _viewer(exchange)
        post = exchange.store.get(parts[3])
        if post is None or post.strategy != PREFIX or not _visible(post, viewer):
            raise error(404, NOT_FOUND)
        exchange.send_json(200, Views(exchange).status(post))
    elif method == "POST" and parts == ["api", "v2", "media"]:
        _upload_media(exchange)
    elif method == "GET" and len(parts) == 4 and parts[:3] == ["api", "v1", "media"]:
        _media_state(exchange, parts[3])
    elif method == "GET" and parts == ["api", "v2", "instance"]:
        exchange.send_json(200, instance(exchange))
    else:
        raise error(404, f"The sandbox's Mastodon API has no route {method} /{'/'.join(parts)}")


# -- tokens ---------------------------------------------------------------------------


def _authorized(exchange: Exchange) -> str:
    """The request's token, refused as Mastodon refuses it.

    Raises:
        Refusal: 401 missing or revoked, 403 forbidden.
    """
    token = exchange.bearer()
    if not token:
        raise error(401, INVALID_TOKEN)
    state = exchange.store.token_state(token)
    if state == "revoked":
        raise error(401, "The access token was revoked")
    if state == "forbidden":
        raise error(403, "This action is outside the authorized scopes")
    return token


def _viewer(exchange: Exchange) -> str | None:
    """Who reads a public route: the token's account when one is sent (and checked), else nobody."""
    return _authorized(exchange) if exchange.bearer() else None


def _visible(post: StoredPost, viewer: str | None) -> bool:
    """Private and direct statuses are shown to their author only (the sandbox has no followers)."""
    return post.visibility in (None, "public", "unlisted") or (
        viewer is not None and Account.of(viewer).id == Account.of(post.token).id
    )


# -- statuses -------------------------------------------------------------------------


@dataclass(frozen=True)
class _StatusParams:
    status: str
    media_ids: list[str]
    in_reply_to_id: str | None
    visibility: str


def _status_params(exchange: Exchange) -> _StatusParams:
    """A new status's parameters, sent as JSON, as a URL-encoded form or as a multipart form.

    Raises:
        Refusal: 400 the body cannot be read; 422 a parameter the sandbox does not take.
    """
    content_type = exchange.headers.get("Content-Type") or ""
    values: dict[str, Any]
    if exchange.content_type() == "application/json":
        try:
            values = json.loads(exchange.raw or b"{}")
        except ValueError:
            raise error(400, "Error occurred while parsing request parameters") from None
        if not isinstance(values, dict):
            raise error(400, "Error occurred while parsing request parameters")
    elif not exchange.raw:
        values = {}
    else:
        form = parse_form(content_type, exchange.raw)
        if form is None:
            raise error(400, "Error occurred while parsing request parameters")
        values = _form_values(form)
    for name in UNSUPPORTED:
        if values.get(name) not in (None, "", [], {}):
            raise error(422, f"The sandbox does not take {name}: leave it out")
    media_ids = values.get("media_ids") or []
    if not isinstance(media_ids, list):
        media_ids = [media_ids]
    reply_to = values.get("in_reply_to_id")
    visibility = values.get("visibility") or "public"
    if visibility not in VISIBILITIES:
        raise error(422, f"Validation failed: Visibility '{visibility}' is not a valid visibility")
    status = values.get("status")
    return _StatusParams(
        status="" if status is None else str(status),
        media_ids=[str(media_id) for media_id in media_ids],
        in_reply_to_id=str(reply_to) if reply_to not in (None, "") else None,
        visibility=str(visibility),
    )


def _form_values(form: Form) -> dict[str, Any]:
    """A form's fields as Rails reads them: ``name[]`` is a list, any other name its last value."""
    values: dict[str, Any] = {}
    for name, given in form.fields.items():
        if name.endswith("[]"):
            values[name[:-2]] = given
        elif "[" in name:
            values[name.partition("[")[0]] = given  # poll[options][] and the like: present
        else:
            values[name] = given[-1]
    return values


def _create_status(exchange: Exchange) -> None:
    faults = exchange.faults
    config = faults.config
    fault = faults.choose(PREFIX, "posts").fault
    if exchange.refused_before_accept(fault, config, WORDING):
        return
    token = _authorized(exchange)
    if exchange.over_rate(token, WORDING):
        return
    params = _status_params(exchange)
    store = exchange.store
    if params.in_reply_to_id is not None:
        parent = store.get(params.in_reply_to_id)
        if parent is None or parent.strategy != PREFIX or not _visible(parent, token):
            raise error(404, "The post you are trying to reply to does not appear to exist.")
    key = exchange.headers.get("Idempotency-Key") or ""
    keyed = bool(key.strip())  # Rails' `present?`
    scope = (PREFIX, token, key)
    listed = PREFIX in config.strategies
    ttl = IDEMPOTENCY_TTL
    if listed and config.forget_keys_after is not None:
        ttl = min(ttl, config.forget_keys_after)
    if keyed:
        # Checked first and on its own, as Mastodon reads Redis: nothing holds the key
        # while the status is made, so a second request meanwhile finds none.
        earlier = store.keyed_post(scope, ttl)
        if earlier is not None:
            body = Views(exchange).status(earlier)
            exchange.answer_accepted(fault, config, earlier.id, Answer(200, body), WORDING)
            return
    with store.writing() as writer:
        media = _attachable(writer, token, params.media_ids)
        _check_text(params.status, media)
        post = StoredPost(
            id=str(writer.next_number(PREFIX)),
            strategy=PREFIX,
            key=key if keyed else None,
            idempotency_key=key if keyed else None,
            text=params.status,
            reply_to=params.in_reply_to_id,
            root=None,
            token=token,
            created_at=datetime.now(UTC).isoformat(),
            accepted_at=writer.now,
            media=media,
            visibility=params.visibility,
        )
        writer.add(post)
    if keyed:
        if listed and config.mastodon_status_seconds > 0:
            time.sleep(config.mastodon_status_seconds)  # distributing the status, the key not yet kept
        store.remember_key(scope, post.id)
    exchange.answer_accepted(fault, config, post.id, Answer(200, Views(exchange).status(post)), WORDING)


def _attachable(writer: StoreWriter, token: str, media_ids: list[str]) -> tuple[PostMedia, ...]:
    """The uploads a new status attaches, checked as PostStatusService#validate_media! does.

    Raises:
        Refusal: 422 too many, not this account's (or attached already), a video with
            others, or not processed yet.
    """
    if not media_ids:
        return ()
    if len(media_ids) > MAX_MEDIA_ATTACHMENTS:
        raise error(422, f"Cannot attach more than {MAX_MEDIA_ATTACHMENTS} files")
    found: list[StoredMedia] = []
    missing: list[str] = []
    for media_id in media_ids:
        media = writer.media(media_id)
        if media is None or media.strategy != PREFIX or media.token != token or writer.attached(media_id):
            missing.append(media_id)
        else:
            found.append(media)
    if missing:
        # Mastodon 4.3's media_attachments.validations.not_found, worded as best known.
        raise error(422, f"Media {', '.join(missing)} not found or already attached to another post")
    if len(found) > 1 and any(attachment_type(media.mime) == "video" for media in found):  # audio_or_video?
        raise error(422, "Cannot attach a video to a post that already contains images")
    states = [media.state(writer.now) for media in found]
    if any(state is not MediaState.READY for state in states):
        raise error(422, NOT_READY)
    return tuple(PostMedia(id=media.id, alt=media.description, mime=media.mime) for media in found)


def _check_text(text: str, media: tuple[PostMedia, ...]) -> None:
    """Raises: Refusal: 422 blank without media, or longer than Mastodon counts 500."""
    if not text.strip() and not media:
        raise error(422, "Validation failed: Text can't be blank")
    if countable_length(text) > MAX_CHARACTERS:
        raise error(422, f"Validation failed: Text character limit of {MAX_CHARACTERS} exceeded")


def countable_length(text: str) -> int:
    """The length Mastodon's StatusLengthValidator counts: grapheme clusters, a URL as 23."""
    countable = _URL.sub("x" * CHARACTERS_RESERVED_PER_URL, text)
    return len(graphemes(countable))


def _account_statuses(exchange: Exchange, account_id: str) -> None:
    viewer = _viewer(exchange)
    if not account_id.isdigit():
        raise error(404, NOT_FOUND)
    query = exchange.query
    try:
        limit = min(abs(int(query.get("limit", 20))), 40)
    except ValueError:
        limit = 20
    posts = [
        post
        for post in exchange.store.posts(PREFIX)
        if Account.of(post.token).id == account_id and _visible(post, viewer)
    ]
    numbers = sorted(((int(post.id), post) for post in posts), key=lambda pair: pair[0])  # oldest first
    if query.get("max_id", "").isdigit():
        numbers = [(n, post) for n, post in numbers if n < int(query["max_id"])]
    if query.get("since_id", "").isdigit():
        numbers = [(n, post) for n, post in numbers if n > int(query["since_id"])]
    if query.get("min_id", "").isdigit():
        # "Returns results immediately newer than this ID": the oldest ones past it.
        bound = int(query["min_id"])
        page = [post for n, post in numbers if n > bound][:limit][::-1]
    else:
        page = [post for _, post in numbers][::-1][:limit]
    views = Views(exchange)
    headers = {}
    if page:
        here = f"{exchange.base_url()}/{PREFIX}/api/v1/accounts/{account_id}/statuses"
        older = f"{here}?{urlencode({'limit': limit, 'max_id': page[-1].id})}"
        newer = f"{here}?{urlencode({'limit': limit, 'min_id': page[0].id})}"
        headers["Link"] = f'<{older}>; rel="next", <{newer}>; rel="prev"'
    exchange.send_json(200, [views.status(post) for post in page], headers)


# -- media ----------------------------------------------------------------------------


def _upload_media(exchange: Exchange) -> None:
    faults = exchange.faults
    config = faults.config
    decision = faults.choose(PREFIX, "media")
    if exchange.refused_before_accept(decision.fault, config, WORDING):
        return
    token = _authorized(exchange)
    if decision.fault is Fault.REFUSE_MEDIA:
        raise error(422, INVALID_FILE)
    form = parse_form(exchange.headers.get("Content-Type") or "", exchange.raw)
    file = form.files.get("file") if form is not None else None
    if form is None or file is None:
        raise error(422, "Validation failed: File can't be blank")
    description = form.value("description") or None
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        raise error(422, f"Validation failed: Description is too long (maximum is {DESCRIPTION_LIMIT} characters)")
    mime = file.content_type.lower()
    problem = upload_problem(file.data, mime, LIMITS)
    if problem is not None:
        raise Refusal(422, INVALID_FILE, body={"error": INVALID_FILE, "error_description": problem})
    processing = config.media_processing_seconds if PREFIX in config.strategies else 0.0
    with exchange.store.writing() as writer:
        media = StoredMedia(
            id=str(writer.next_number(MEDIA_COUNTER)),
            strategy=PREFIX,
            mime=mime,
            size=len(file.data),
            sha256=hashlib.sha256(file.data).hexdigest(),
            token=token,
            created_at=datetime.now(UTC).isoformat(),
            processing_seconds=processing,
            fails=decision.processing_fails,
            accepted_at=writer.now,
            description=description,
        )
        writer.add_media(media, file.data)
    views = Views(exchange)
    if attachment_type(mime) in ("video", "gifv") or processing > 0:
        # Processed in the background: the answer says so, whatever the state by now.
        answer = Answer(202, views.media(media, processed=False))
    elif media.state() is MediaState.FAILED:
        answer = Answer(500, {"error": "Error processing thumbnail for uploaded media"})
    else:
        answer = Answer(200, views.media(media, processed=True))
    exchange.answer_accepted(decision.fault, config, media.id, answer, WORDING)


def _media_state(exchange: Exchange, media_id: str) -> None:
    token = _authorized(exchange)
    store = exchange.store
    media = store.media(media_id)
    # "MediaAttachment is not owned by you or does not exist"; attached ones are no longer found.
    if media is None or media.strategy != PREFIX or media.token != token or store.attached(media_id):
        raise error(404, NOT_FOUND)
    state = media.state()
    if state is MediaState.FAILED:
        raise error(422, INVALID_FILE)
    processed = state is MediaState.READY
    exchange.send_json(200 if processed else 206, Views(exchange).media(media, processed=processed))
