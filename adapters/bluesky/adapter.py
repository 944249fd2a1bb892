"""The ``bluesky`` adapter: one post per part, at a record key the part's delivery key fixes.

How a resend stays one post (``native_key``, remembered for good)
----------------------------------------------------------------
A post is the record ``app.bsky.feed.post/RKEY`` of the account's repository, and herald
chooses RKEY: a TID computed from the part's delivery key (``adapters.bluesky.tid``), the
same on every attempt. It writes with ``com.atproto.repo.putRecord`` and ``"swapRecord":
null``: putRecord is "Write a repository record, creating or updating it as needed"
(lexicons/com/atproto/repo/putRecord.json), and its swap, "Compare and swap with the
previous record by CID", set to null says there must be none. The reference PDS
(packages/pds/src/api/com/atproto/repo/putRecord.ts, with packages/pds/src/actor-store/
repo/transactor.ts) then

* creates the post when the key is free;
* answers the same ``uri`` and ``cid`` without writing when the record there is the one
  sent (the same CID: "no-op");
* refuses with 400 ``InvalidSwap`` when another record is there: an earlier attempt made
  it. herald reads it (``getRecord``) and confirms that post, without a second one.

So the record need not be byte-identical from one attempt to the next, and ``createdAt``
– which the Bluesky App View sorts feeds by, as the earlier of it and the time it indexed
the post (bsky-docs, docs/advanced-guides/timestamps.md, ``sortAt``) – is the real time of
the attempt that made the post. Deriving it from the key instead, as a retry-proof value,
would put posts at random instants: the 53 "timestamp" bits of a hashed TID span 1970 to
2255. A PDS that ignored the null swap would update the post at the same key: still one
post, with the later ``createdAt``.

The key is remembered for as long as the post exists (``key_ttl`` None), and ``find`` reads
the record by its key (``getRecord``), for the read-back sweep.

An attempt refused for its access token alone (401, or 400 ``ExpiredToken``/``InvalidToken``)
did nothing – "``400 Bad Request``: Request was invalid, and was not processed" (xrpc spec)
and the token is checked before the handler runs (packages/pds/src/auth-verifier.ts) – so
the session is renewed and the request sent once more, as the official client does; this is
the sign-in's business, not a retry of the post.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import httpx

from adapters.bluesky.answers import (
    GET_RECORD,
    PUT_RECORD,
    RESOLVE_HANDLE,
    UPLOAD_BLOB,
    XrpcError,
    needs_new_session,
    raise_for_answer,
)
from adapters.bluesky.facets import HANDLE_SYNTAX, Resolve, facets_of
from adapters.bluesky.record import (
    MAX_IMAGE_BYTES,
    POST,
    POST_LIMITS,
    PostRef,
    check_text,
    created_at,
    image_entry,
    is_blob,
    post_record,
    read_post,
    ref_of,
)
from adapters.bluesky.session import Account, Session, Sessions
from adapters.bluesky.tid import tid_for
from core.plugins import (
    Adapter,
    Ambiguous,
    AuthExpired,
    ConfigError,
    Limits,
    NotSent,
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
    http_url,
)

#: Where an account signs in when the channel names no PDS: Bluesky's own, whose entryway
#: serves every account it hosts (bsky-docs, docs/advanced-guides/entryway.md).
DEFAULT_SERVICE = "https://bsky.social"

#: The DID spec's "reasonable starting-point regex for DIDs" (https://atproto.com/specs/did).
DID_SYNTAX = re.compile(r"^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$")

#: "App passwords usually have the form ``xxxx-xxxx-xxxx-xxxx``, and clients can check
#: against this format to prevent accidental logins with primary passwords" (xrpc spec,
#: "App Passwords"); the reference PDS makes them of base32 characters
#: (packages/pds/src/account-manager/helpers/password.ts).
APP_PASSWORD = re.compile(r"^[a-zA-Z0-9]{4}(-[a-zA-Z0-9]{4}){3}$")

WHERE_APP_PASSWORDS_ARE = "bsky.app → Settings → Privacy and security → App passwords → Add App Password"


def account_name(value: str) -> str | None:
    """A check: ``value`` is a handle (``alice.bsky.social``) or a DID (``did:plc:...``)."""
    if value.startswith("@"):
        return "starts with '@': give the handle without it (alice.bsky.social)"
    if value.startswith(("http://", "https://")):
        return "is a link: give the handle alone (alice.bsky.social), as shown under the name on the profile"
    if DID_SYNTAX.match(value) or HANDLE_SYNTAX.match(value):
        return None
    return "is neither a Bluesky handle (alice.bsky.social) nor a DID (did:plc:...)"


def app_password(value: str) -> str | None:
    """A check: ``value`` has the form of an app password, never the account's own password."""
    if APP_PASSWORD.match(value):
        return None
    # The setting's own description, said after this, tells where app passwords are made.
    return (
        "is not an app password (four groups of four letters and digits); herald never takes the account's own password"
    )


class Bluesky(Adapter):
    """A Bluesky account posting through its PDS with an app password; threads are replies."""

    name: ClassVar[str] = "bluesky"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    # The record key is the account's for good: a resend finds the post however late it comes.
    key_ttl: ClassVar[float | None] = None
    # putRecord's ``rkey``: the key as a TID (:meth:`key_on_wire`), never the key as it is.
    key_in: ClassVar[str | None] = "body:rkey"
    limits: ClassVar[Limits] = POST_LIMITS
    # Bluesky's PDS counts an account's record writes in points, 5,000 an hour and 35,000 a
    # day, a create costing 3: "an account may create at most 1,666 records per hour and
    # 11,666 records per day" (docs.bsky.app, advanced-guides/rate-limits). Both windows hold.
    rates: ClassVar[tuple[Rate, ...]] = (Rate(5000 // 3, 60 * 60), Rate(35000 // 3, 24 * 60 * 60))
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "handle",
            "the account's handle, as shown under its name (or its DID)",
            required=True,
            check=account_name,
            example="alice.bsky.social",
        ),
        Setting(
            "app_password",
            f"an app password of the account ({WHERE_APP_PASSWORDS_ARE})",
            required=True,
            secret=True,
            check=app_password,
            example="xxxx-xxxx-xxxx-xxxx",
        ),
        Setting(
            "service",
            f"the address of the account's PDS, for an account not hosted by Bluesky ({DEFAULT_SERVICE} when left out)",
            check=http_url,
            example=DEFAULT_SERVICE,
        ),
    )

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        #: The UNIX clock of ``createdAt`` and of ``RateLimit-Reset`` (tests set their own).
        self.clock: Callable[[], float] = time.time
        #: Each account's session, kept for as long as this adapter lives.
        self.sessions = Sessions(now=lambda: self.clock())

    # -- publishing ----------------------------------------------------------------------

    def key_on_wire(self, key: str) -> str:
        """The post's record key: a TID computed from the delivery key, as a post's key must be a
        TID (lexicons/app/bsky/feed/post.json, ``"key": "tid"``), the same on every attempt."""
        return tid_for(key)

    def publish(self, ctx: PublishContext) -> Published:
        """Write the part's post at the record key its delivery key gives, replying in a thread."""
        account, actor = _account(ctx.settings), _actor(ctx.settings)
        check_text(ctx.text)
        session = self.sessions.current(ctx.client, account)
        did, pds = session.did, session.pds
        reply = self._reply_refs(ctx, pds, did)
        facets = facets_of(ctx.text, self._resolver(ctx.client, pds))
        created, rkey = created_at(self.clock()), self.key_on_wire(ctx.key)

        def put(images: list[dict[str, Any]]) -> httpx.Response:
            record = post_record(ctx.text, created=created, facets=facets, reply=reply, images=images)
            return self._put(ctx.client, account, rkey, record)

        images = [image_entry(a) for a in ctx.media]
        response = put(images)
        if _error(response) == "BlobNotFound" and (again := self._upload_again(ctx, account, images)):
            # The PDS deletes an upload no record took up within its grace time ("at least one
            # hour", atproto-website guides/blob-lifecycle/en.mdx): an attempt long after the
            # upload finds it gone. Nothing was written (a 400); the same bytes upload to the
            # same blob, and the post goes once more with them.
            response = put(again)
        if _error(response) == "InvalidSwap":
            return self._made_earlier(ctx.client, pds, did, rkey, actor)
        raise_for_answer(response, PUT_RECORD, now=self.clock)
        return read_post(response, actor)

    def find(self, ctx: PublishContext) -> Published | None:
        """The part's post, read by its record key (``com.atproto.repo.getRecord``, which
        "Does not require auth"); None when the account holds none there. It asks the
        channel's service, which needs no session to know where the repository is (the
        entryway forwards it), so the read-back sweep never signs in."""
        service, actor = _service(ctx.settings), _actor(ctx.settings)
        response = _get_record(ctx.client, service, actor, self.key_on_wire(ctx.key))
        if _record_not_found(response):
            return None
        raise_for_answer(response, GET_RECORD, now=self.clock)
        return read_post(response, actor, needs_cid=False)

    def upload(self, ctx: UploadContext) -> Uploaded:
        """Upload one image (``com.atproto.repo.uploadBlob``, the file's bytes as the body);
        its platform id is the blob the PDS answered, as JSON, which the post embeds."""
        blob = self._upload_blob(ctx.client, _account(ctx.settings), ctx.file.mime, ctx.file.read())
        return Uploaded(platform_id=json.dumps(blob, sort_keys=True, separators=(",", ":")))

    def verify(self, ctx: VerifyContext) -> str:
        """Sign in with the app password (``com.atproto.server.createSession``): whose account it is."""
        session = self.sessions.sign_in(ctx.client, _account(ctx.settings))
        if not session.active:
            # createSession.json: "If active=false, this optional field indicates a possible
            # reason for why the account is not active" (takendown, suspended, deactivated).
            raise AuthExpired(
                f"@{session.handle} signs in but cannot post: the account is {session.status or 'not active'} "
                "(a deactivated account is reactivated by signing in on bsky.app); once it is active, "
                "`herald channel reconnect NAME`"
            )
        return f"the Bluesky account @{session.handle} ({session.did})"

    # -- the steps -----------------------------------------------------------------------

    def _put(self, client: httpx.Client, account: Account, rkey: str, record: dict[str, Any]) -> httpx.Response:
        """putRecord of the post at ``rkey``, only where there is none yet (``swapRecord: null``)."""
        return self._authed(
            client,
            account,
            lambda s: client.post(
                f"{s.pds}/xrpc/{PUT_RECORD}",
                headers=s.bearer,
                json={"repo": s.did, "collection": POST, "rkey": rkey, "record": record, "swapRecord": None},
            ),
        )

    def _made_earlier(self, client: httpx.Client, pds: str, did: str, rkey: str, actor: str) -> Published:
        """The post an earlier attempt made at ``rkey``, which the PDS said is there.

        Raises:
            Ambiguous: it could not be read: the post exists, herald cannot name it yet.
        """
        response = _get_record(client, pds, did, rkey)
        if not 200 <= response.status_code < 300:
            said = XrpcError.of(response).describe(GET_RECORD, response.status_code)
            raise Ambiguous(f"an earlier attempt made this part's post ({rkey}), but reading it failed: {said}")
        return read_post(response, actor, needs_cid=False)

    def _reply_refs(self, ctx: PublishContext, pds: str, own_repo: str) -> tuple[PostRef, PostRef] | None:
        """``(root, parent)`` of a part that replies, each with its CID: a reply holds both
        (post.json, ``replyRef``). An id without its CID (a post a person resolved by its
        link) is looked up first.

        Raises:
            Rejected: THREAD_PARENT_MISSING, the post replied to is not there.
        """
        if ctx.reply_to is None:
            return None
        parent = PostRef.parse(ctx.reply_to, own_repo)
        root = PostRef.parse(ctx.root, own_repo) if ctx.root is not None else parent
        return self._with_cid(ctx.client, pds, root), self._with_cid(ctx.client, pds, parent)

    def _with_cid(self, client: httpx.Client, pds: str, ref: PostRef) -> PostRef:
        if ref.cid:
            return ref
        response = _get_record(client, pds, ref.repo, ref.rkey)
        if _record_not_found(response):
            raise Rejected(
                Reason.THREAD_PARENT_MISSING, f"{ref.uri} is not on Bluesky any more: the reply has no parent"
            )
        raise_for_answer(response, GET_RECORD, now=self.clock)
        found = ref_of(response)
        if found is None or found.cid is None:
            raise NotSent(f"Bluesky answered {GET_RECORD} for {ref.uri} without its CID, which a reply needs")
        return found

    def _resolver(self, client: httpx.Client, pds: str) -> Resolve:
        """Handles to DIDs with ``com.atproto.identity.resolveHandle``, each asked once per post."""
        known: dict[str, str | None] = {}

        def resolve(handle: str) -> str | None:
            if handle not in known:
                response = client.get(f"{pds}/xrpc/{RESOLVE_HANDLE}", params={"handle": handle})
                if response.status_code == 400:
                    # HandleNotFound (resolveHandle.json) or not a handle at all: plain text.
                    known[handle] = None
                else:
                    raise_for_answer(response, RESOLVE_HANDLE, now=self.clock)
                    known[handle] = _did_of(response)
            return known[handle]

        return resolve

    def _upload_blob(self, client: httpx.Client, account: Account, mime: str, data: bytes) -> dict[str, Any]:
        """uploadBlob of ``data``: "Blob restrictions (mimetype, size, etc) are enforced when the
        reference is created" (uploadBlob.json), so the blob answered is checked against the
        images embed here, before a post refers to it.

        Raises:
            Rejected: MEDIA_INVALID, the PDS refused the file or read it as no image, or too big.
            Ambiguous: it answered 2xx without a blob.
        """
        response = self._authed(
            client,
            account,
            # "Clients should set the HTTP Content-Type header" (guides/blob-lifecycle/en.mdx).
            lambda s: client.post(
                f"{s.pds}/xrpc/{UPLOAD_BLOB}", headers={**s.bearer, "Content-Type": mime}, content=data
            ),
        )
        raise_for_answer(response, UPLOAD_BLOB, now=self.clock)
        try:
            body = response.json()
        except ValueError:
            body = None
        blob = body.get("blob") if isinstance(body, dict) else None
        if not is_blob(blob):
            raise Ambiguous(f"Bluesky answered {UPLOAD_BLOB} with {response.status_code} but no blob: {body!r}"[:500])
        # "The server may implement content type sniffing at the upload step and return a MIME
        # type different from any Content-Type header provided" (xrpc spec).
        if not blob["mimeType"].startswith("image/"):
            raise Rejected(Reason.MEDIA_INVALID, f"Bluesky read the file as {blob['mimeType']}, not as an image")
        if blob["size"] > MAX_IMAGE_BYTES:
            raise Rejected(
                Reason.MEDIA_INVALID,
                f"the image is {blob['size']} bytes; a Bluesky post takes {MAX_IMAGE_BYTES} at most",
            )
        return dict(blob)

    def _upload_again(
        self, ctx: PublishContext, account: Account, images: list[dict[str, Any]]
    ) -> list[dict[str, Any]] | None:
        """``images`` with each file uploaded anew; None when a file is not at hand."""
        files = [a.file for a in ctx.media if a.file is not None]
        if not files or len(files) != len(ctx.media):
            return None
        again = [
            {**entry, "image": self._upload_blob(ctx.client, account, f.mime, f.read())}
            for entry, f in zip(images, files, strict=True)
        ]
        ctx.heartbeat()
        return again

    def _authed(
        self, client: httpx.Client, account: Account, send: Callable[[Session], httpx.Response]
    ) -> httpx.Response:
        """``send`` with the account's session, and once more with a new one if only its
        access token was refused."""
        session = self.sessions.current(client, account)
        response = send(session)
        if needs_new_session(response):
            response = send(self.sessions.renew(client, account, session))
        return response


def _get_record(client: httpx.Client, host: str, repo: str, rkey: str) -> httpx.Response:
    """``com.atproto.repo.getRecord`` of a post (lexicons/com/atproto/repo/getRecord.json)."""
    return client.get(f"{host}/xrpc/{GET_RECORD}", params={"repo": repo, "collection": POST, "rkey": rkey})


def _record_not_found(response: httpx.Response) -> bool:
    """getRecord's "RecordNotFound" (getRecord.json's errors), a 400 (docs.bsky.app,
    docs/api/com-atproto-repo-get-record.api.mdx)."""
    return _error(response) == "RecordNotFound"


def _error(response: httpx.Response) -> str | None:
    """The XRPC error name of a 400, None for any other answer."""
    return XrpcError.of(response).error if response.status_code == 400 else None


def _did_of(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    did = body.get("did") if isinstance(body, dict) else None
    return did if isinstance(did, str) and DID_SYNTAX.match(did) else None


def _service(settings: Mapping[str, str]) -> str:
    return (settings.get("service") or DEFAULT_SERVICE).strip().rstrip("/")


def _actor(settings: Mapping[str, str]) -> str:
    """The account as the channel names it, for links and reads: a handle (lower case, as
    "Handles ... should be normalized to lowercase", specs/handle) or a DID.

    Raises:
        ConfigError: it names none (a channel made before settings were checked).
    """
    value = settings.get("handle", "").strip()
    if not value or account_name(value) is not None:
        raise ConfigError(
            "the bluesky channel has no valid handle setting; give the account's handle with "
            "`herald channel reconnect NAME --set handle=alice.bsky.social`"
        )
    return value if value.startswith("did:") else value.lower()


def _account(settings: Mapping[str, str]) -> Account:
    """Who signs in, with what, where.

    Raises:
        ConfigError: the handle or the app password is missing.
    """
    identifier = _actor(settings)
    password = settings.get("app_password", "").strip()
    if not password:
        raise ConfigError(
            "the bluesky channel has no app_password setting; make one in "
            f"{WHERE_APP_PASSWORDS_ARE} and give it with "
            "`herald channel reconnect NAME --set app_password=xxxx-xxxx-xxxx-xxxx`"
        )
    return Account(_service(settings), identifier, password)
