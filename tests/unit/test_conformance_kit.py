"""The conformance kit fails the mistakes adapter authors really make, each with the fix.

``Toy`` is a correct adapter of a made-up platform and passes the whole kit
(``TestToyConforms``). Each class below it makes one mistake; the kit is run on it as an
author's suite runs it (pytest's ``pytester``, in process) and must fail the contract test
that catches that mistake, with a message that names the fix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import count
from typing import Any, ClassVar

import httpx
import pytest
import respx

from core.plugins import (
    IMAGE_TYPES,
    Adapter,
    Ambiguous,
    AuthExpired,
    Limits,
    NotSent,
    PublishContext,
    Published,
    RateLimited,
    Reason,
    Rejected,
    Setting,
    Strategy,
    UploadContext,
    Uploaded,
    http_url,
)
from core.plugins.conformance import KEY, AdapterContract

pytest_plugins = ["pytester"]

BASE = "https://toy.test"
TOKEN = "toy-conformance-token"


class Toy(Adapter):
    """A read_back platform: the key rides in the body, replies name the part and the root,
    uploads come first and the post lists them with their alt text."""

    name: ClassVar[str] = "toy"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.READ_BACK
    key_in: ClassVar[str | None] = "body:key"
    limits: ClassVar[Limits] = Limits(max_chars=500, max_media=4, media_types=IMAGE_TYPES, alt_text=True)
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting("base_url", "the toy platform's address", required=True, check=http_url),
        Setting("token", "the account's token", required=True, secret=True),
    )

    def publish(self, ctx: PublishContext) -> Published:
        response = ctx.client.post(f"{self.base(ctx.settings)}/posts", json=self.body(ctx), headers=self.auth(ctx))
        self.raise_for_answer(response)
        return self.published(response)

    def find(self, ctx: PublishContext) -> Published | None:
        response = ctx.client.get(f"{self.base(ctx.settings)}/posts", params={"key": ctx.key}, headers=self.auth(ctx))
        self.raise_for_answer(response)
        posts = self.json(response).get("posts")
        if not isinstance(posts, list):
            raise Ambiguous(f"toy searched without a list of posts: {response.text[:100]!r}")
        return self.post_of(posts[0]) if posts else None

    def upload(self, ctx: UploadContext) -> Uploaded:
        response = ctx.client.post(f"{self.base(ctx.settings)}/media", content=ctx.file.read(), headers=self.auth(ctx))
        self.raise_for_answer(response)
        return Uploaded(str(self.json(response).get("id")))

    def base(self, settings: Mapping[str, str]) -> str:
        return settings["base_url"].rstrip("/")

    def auth(self, ctx: PublishContext | UploadContext) -> dict[str, str]:
        return {"Authorization": f"Bearer {ctx.settings['token']}"}

    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {
            "text": ctx.text,
            "key": ctx.key,
            "reply_to": ctx.reply_to,
            "root": ctx.root,
            "media": [{"id": attachment.platform_id, "alt": attachment.alt} for attachment in ctx.media],
        }

    def raise_for_answer(self, response: httpx.Response) -> None:
        """The one mapping of the toy platform's answers; a 2xx returns."""
        status = response.status_code
        if 200 <= status < 300:
            return
        error = self.json(response).get("error") if response.headers.get("Content-Type") == "application/json" else None
        message = f"toy answered {status} {error or ''}".strip()
        if status == 401:
            raise AuthExpired(message, status=status)
        if status == 403:
            raise Rejected(Reason.PERMISSION_DENIED, message, status=status)
        if status == 429:
            raise RateLimited(message, retry_after=float(response.headers.get("Retry-After", 0)) or None)
        if 400 <= status < 500:
            named = {r.value: r for r in (Reason.MEDIA_INVALID, Reason.THREAD_PARENT_MISSING)}
            raise Rejected(named.get(str(error), Reason.CONTENT_REJECTED), message, status=status)
        raise Ambiguous(message, status=status)

    def published(self, response: httpx.Response) -> Published:
        return self.post_of(self.json(response))

    def json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise Ambiguous(f"toy answered {response.status_code} with something other than JSON") from None
        if not isinstance(body, dict):
            raise Ambiguous(f"toy answered {response.status_code} with JSON that is not an object")
        return body

    def post_of(self, body: dict[str, Any]) -> Published:
        if not isinstance(body.get("id"), str) or not isinstance(body.get("url"), str):
            raise Ambiguous(f"toy confirmed a post without its id and url: {body!r}")
        return Published(body["id"], body["url"])


class ToyAnswers(AdapterContract):
    """How the toy platform answers."""

    adapter_class: ClassVar[type[Adapter]] = Toy
    settings: ClassVar[dict[str, str]] = {"base_url": BASE, "token": TOKEN}
    refusals: ClassVar[tuple[Reason, ...]] = (
        Reason.CONTENT_REJECTED,
        Reason.PERMISSION_DENIED,
        Reason.MEDIA_INVALID,
        Reason.THREAD_PARENT_MISSING,
    )
    replies_name_the_root = True

    def posts(self, router: respx.MockRouter) -> respx.Route:
        return router.post(f"{BASE}/posts")

    def uploads(self, router: respx.MockRouter) -> None:
        """Each upload answered with an id of its own: toy-media-1, toy-media-2..."""
        ids = count(1)
        router.post(f"{BASE}/media").mock(
            side_effect=lambda _: httpx.Response(201, json={"id": f"toy-media-{next(ids)}"})
        )

    def respond_published(self, router: respx.MockRouter) -> respx.Route:
        return self.posts(router).respond(201, json={"id": "toy-1", "url": f"{BASE}/p/toy-1"})

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route:
        self.uploads(router)
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(401, json={"error": "token_revoked"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        self.posts(router).respond(429, json={"error": "slow_down"}, headers={"Retry-After": str(retry_after)})

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        if reason is Reason.MEDIA_INVALID:
            self.uploads(router)  # the files are taken; the post naming them is refused
        status = 403 if reason is Reason.PERMISSION_DENIED else 422
        self.posts(router).respond(status, json={"error": reason.value})

    def respond_server_error(self, router: respx.MockRouter) -> None:
        self.posts(router).respond(500, json={"error": "internal"})

    def respond_search(self, router: respx.MockRouter, found: bool) -> respx.Route | None:
        hits = [{"id": "toy-1", "url": f"{BASE}/p/toy-1"}] if found else []
        return router.get(f"{BASE}/posts", params={"key": KEY}).respond(200, json={"posts": hits})


class TestToyConforms(ToyAnswers):
    """The correct toy adapter passes every contract test."""


class RecordToy(Toy):
    """A native_key platform that keys each post by a record key of its own syntax, derived
    from the delivery key and held for good (as Bluesky's TID): it signs in before each post,
    and an upload answers a blob, which the post embeds as an object."""

    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = None
    key_in: ClassVar[str | None] = "body:rkey"

    def key_on_wire(self, key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()[:13]

    def publish(self, ctx: PublishContext) -> Published:
        session = self.sign_in(ctx)
        body = {
            **self.body(ctx),
            "key": None,
            "rkey": self.key_on_wire(ctx.key),
            "media": [{"blob": json.loads(a.platform_id), "alt": a.alt} for a in ctx.media],
        }
        response = ctx.client.post(f"{self.base(ctx.settings)}/records", json=body, headers=session)
        self.raise_for_answer(response)
        return self.published(response)

    def find(self, ctx: PublishContext) -> Published | None:
        url = f"{self.base(ctx.settings)}/records/{self.key_on_wire(ctx.key)}"
        response = ctx.client.get(url, headers=self.auth(ctx))
        if response.status_code == 404:
            return None
        self.raise_for_answer(response)
        return self.published(response)

    def upload(self, ctx: UploadContext) -> Uploaded:
        response = ctx.client.post(f"{self.base(ctx.settings)}/blobs", content=ctx.file.read(), headers=self.auth(ctx))
        self.raise_for_answer(response)
        # Kept as JSON of its own spelling (spaces after separators), not as the request will carry it.
        return Uploaded(json.dumps(self.json(response).get("blob")))

    def sign_in(self, ctx: PublishContext) -> dict[str, str]:
        """A session for one post. Signing in makes no post, so its failures are NotSent."""
        response = ctx.client.post(f"{self.base(ctx.settings)}/session", headers=self.auth(ctx))
        if response.status_code == 401:
            raise AuthExpired("toy refused the token")
        session = self.json(response).get("session") if 200 <= response.status_code < 300 else None
        if not isinstance(session, str):
            raise NotSent(f"toy answered the sign-in with {response.status_code}: no post was made")
        return {"Authorization": f"Session {session}"}


class TestRecordToyConforms(ToyAnswers):
    """A sign-in before the post, a key sent transformed and remembered for good, blob ids: the
    kit answers and reads the post's own route, and passes the correct adapter."""

    adapter_class: ClassVar[type[Adapter]] = RecordToy

    def posts(self, router: respx.MockRouter) -> respx.Route:
        router.post(f"{BASE}/session").respond(200, json={"session": "s-1"})
        return router.post(f"{BASE}/records")

    def uploads(self, router: respx.MockRouter) -> None:
        blobs = count(1)
        router.post(f"{BASE}/blobs").mock(
            side_effect=lambda _: httpx.Response(200, json={"blob": {"ref": f"blob-{next(blobs)}", "size": 70}})
        )

    def respond_search(self, router: respx.MockRouter, found: bool) -> respx.Route | None:
        route = router.get(f"{BASE}/records/{RecordToy().key_on_wire(KEY)}")
        if found:
            return route.respond(200, json={"id": "toy-1", "url": f"{BASE}/p/toy-1"})
        return route.respond(404)


# -- one mistake each -----------------------------------------------------------------------


class NotSentOnGatewayErrors(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code in (502, 503, 504):
            raise NotSent("the gateway failed")
        super().raise_for_answer(response)


class NotSentOnUnknown4xx(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code not in (401, 403, 422, 429) and 400 <= response.status_code < 500:
            raise NotSent("refused for a reason we do not know")
        super().raise_for_answer(response)


class RateLimitedOnUnknownAnswers(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code == 418:
            raise RateLimited("try again later")
        super().raise_for_answer(response)


class RejectedOnServerErrors(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code >= 500:
            raise Rejected(Reason.CONTENT_REJECTED, "the platform failed")
        super().raise_for_answer(response)


class PermissionForContent(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code == 422:
            raise Rejected(Reason.PERMISSION_DENIED, "refused")
        super().raise_for_answer(response)


class ContentForPermission(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code == 403:
            raise Rejected(Reason.CONTENT_REJECTED, "refused")
        super().raise_for_answer(response)


class KeyInAHeader(Toy):
    """Declares the key in the body, sends it in a header."""

    def publish(self, ctx: PublishContext) -> Published:
        response = ctx.client.post(
            f"{self.base(ctx.settings)}/posts",
            json={**self.body(ctx), "key": None},
            headers={**self.auth(ctx), "Idempotency-Key": ctx.key},
        )
        self.raise_for_answer(response)
        return self.published(response)


class KeyPlaceMisspelt(Toy):
    key_in = "json-field:key"


class OwnClient(Toy):
    """Keeps a client of its own (with its own timeout), rather than herald's."""

    client: ClassVar[httpx.Client] = httpx.Client(timeout=30.0)

    def publish(self, ctx: PublishContext) -> Published:
        url = f"{self.base(ctx.settings)}/posts"
        response = self.client.post(url, json=self.body(ctx), headers=self.auth(ctx))
        self.raise_for_answer(response)
        return self.published(response)


class OwnTimeout(Toy):
    def publish(self, ctx: PublishContext) -> Published:
        url = f"{self.base(ctx.settings)}/posts"
        response = ctx.client.post(url, json=self.body(ctx), headers=self.auth(ctx), timeout=30.0)
        self.raise_for_answer(response)
        return self.published(response)


class RetriesInternally(Toy):
    def publish(self, ctx: PublishContext) -> Published:
        for _ in range(3):
            try:
                return super().publish(ctx)
            except (Ambiguous, httpx.TransportError):
                continue
        raise Ambiguous("three attempts failed")


class DropsReplyTarget(Toy):
    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "reply_to": None}


class DropsRoot(Toy):
    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "root": None}


class SearchSwallowsErrors(Toy):
    def find(self, ctx: PublishContext) -> Published | None:
        try:
            return super().find(ctx)
        except Ambiguous:
            return None


class ConfirmsWithoutId(Toy):
    def published(self, response: httpx.Response) -> Published:
        body = self.json(response)
        return Published(str(body.get("id", "")), str(body.get("url", "")))


class NotSentOnAnHtmlSuccess(Toy):
    def published(self, response: httpx.Response) -> Published:
        if "json" not in response.headers.get("Content-Type", ""):
            raise NotSent("the platform answered garbage")
        return super().published(response)


class ReadsAnUndeclaredSetting(Toy):
    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "region": ctx.settings.get("region", "eu")}


class LeaksTheToken(Toy):
    def raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code == 401:
            raise AuthExpired(f"toy refused the token {response.request.headers['Authorization']}")
        super().raise_for_answer(response)


class DropsAttachments(Toy):
    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "media": [{"id": a.platform_id, "alt": a.alt} for a in ctx.media[:1]]}


class DropsAltText(Toy):
    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "media": [{"id": a.platform_id} for a in ctx.media]}


class CrashesOnAnUnreadableSuccess(Toy):
    """Reads a success's body without asking whether it is JSON."""

    def published(self, response: httpx.Response) -> Published:
        return self.post_of(response.json())


class CrashesOnAnUnreadableSearch(Toy):
    def find(self, ctx: PublishContext) -> Published | None:
        response = ctx.client.get(f"{self.base(ctx.settings)}/posts", params={"key": ctx.key}, headers=self.auth(ctx))
        self.raise_for_answer(response)
        posts = response.json()["posts"]
        return self.post_of(posts[0]) if posts else None


class KeyTransformedUndeclared(Toy):
    """Sends the key as the platform's own syntax (upper case) without saying so."""

    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "key": ctx.key.upper()}


class KeyForgottenAtOnce(Toy):
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = 0.0


@dataclass(frozen=True)
class Mistake:
    """A wrong adapter, and each contract test that must fail it (a parametrized one by its
    id) with what its failure must say."""

    adapter: type[Toy]
    failures: dict[str, str]


STATUS = "test_a_bare_answer_of_each_status_family_is_mapped"
UNCONFIRMED = "test_a_success_without_the_posts_id_is_not_a_confirmation"
SEARCH = "test_a_failed_search_raises_rather_than_saying_not_found"

MISTAKES = [
    Mistake(
        NotSentOnGatewayErrors,
        {
            f"{STATUS}[502]": "answered a 502 (a proxy's HTML page), raised NotSent('the gateway failed'): a 502 "
            "comes from a gateway that may have passed the post on, and may come after the platform stored the "
            "post; raise Ambiguous",
            f"{STATUS}[503]": "NotSent only where the platform documents that a 503 stores nothing: declare it in "
            "the contract, not_stored = {503: 'where its docs say so'}",
            f"{STATUS}[504]": "a 504 comes from a gateway that may have passed the post on",
        },
    ),
    Mistake(
        NotSentOnUnknown4xx,
        {
            f"{STATUS}[418]": "raise Rejected(Reason.CONTENT_REJECTED, ...) for a 4xx the adapter does not know (or "
            "Ambiguous); NotSent would send a post the platform refused again on every attempt",
        },
    ),
    Mistake(
        RateLimitedOnUnknownAnswers,
        {
            f"{STATUS}[418]": "answered a 418, a status the adapter cannot know, raised RateLimited('try again "
            "later'): raise Rejected(Reason.CONTENT_REJECTED, ...)",
        },
    ),
    Mistake(
        RejectedOnServerErrors,
        {
            f"{STATUS}[500]": "a 500 is the platform failing, not refusing the post; raise Ambiguous",
            f"{STATUS}[503]": "a 503 is the platform failing, not refusing the post; raise Ambiguous",
            "test_a_server_error_after_which_the_post_may_exist_is_ambiguous_not_not_sent": "answered as "
            "respond_server_error describes, raised Rejected('the platform failed'): the platform may have stored "
            "the post before it failed; raise Ambiguous",
        },
    ),
    Mistake(
        PermissionForContent,
        {
            "test_each_refusal_is_rejected_with_the_reason_it_means": "the platform's content_rejected refusal "
            "(respond_rejected(router, Reason.CONTENT_REJECTED)) of publish() of a text part came back as "
            "Rejected(permission_denied): map that answer to Rejected(Reason.CONTENT_REJECTED, ...)",
        },
    ),
    Mistake(
        ContentForPermission,
        {
            "test_each_refusal_is_rejected_with_the_reason_it_means": "the platform's permission_denied refusal "
            "(respond_rejected(router, Reason.PERMISSION_DENIED)) of publish() of a text part came back as "
            "Rejected(content_rejected): map that answer to Rejected(Reason.PERMISSION_DENIED, ...)",
            f"{STATUS}[403]": "a 403 refuses the account, not the text; raise Rejected(Reason.PERMISSION_DENIED, ...)",
        },
    ),
    Mistake(
        KeyInAHeader,
        {
            "test_the_key_travels_where_the_adapter_declares_it": "KeyInAHeader declares key_in = 'body:key', but "
            "request 1 of publish() of a text part (POST https://toy.test/posts) carries the key at "
            "header:Idempotency-Key: send ctx.key exactly there, where the platform looks for it, or declare "
            "where it goes (key_in = 'header:Idempotency-Key')",
        },
    ),
    Mistake(
        KeyPlaceMisspelt,
        {
            "test_declares_a_name_a_strategy_and_limits": "KeyPlaceMisspelt declares key_in = 'json-field:key': say "
            "where the key goes as 'header:NAME', 'query:NAME', 'body:FIELD' (dotted for a nested one) or 'path'",
            "test_the_key_travels_where_the_adapter_declares_it": "carries the key at body:key",
        },
    ),
    Mistake(
        OwnClient,
        {
            "test_it_calls_the_platform_through_the_client_it_is_given": "1 of the 1 requests of publish() of a "
            "text part did not go through ctx.client: the adapter built its own httpx client",
        },
    ),
    Mistake(
        OwnTimeout,
        {
            "test_it_calls_the_platform_through_the_client_it_is_given": "request 1 of publish() of a text part "
            "(POST https://toy.test/posts) ran with the timeout {'connect': 30.0, 'read': 30.0, 'write': 30.0, "
            "'pool': 30.0} instead of ctx.client's {'connect': 8.5, 'read': 8.5, 'write': 8.5, 'pool': 8.5}: "
            "pass no timeout= and leave ctx.client's alone",
        },
    ),
    Mistake(
        RetriesInternally,
        {
            "test_it_never_retries_inside_publish": "publish() of a text part: one publish() sent 3 requests to the "
            "platform's route; the adapter retries inside publish(). Raise the outcome and let herald retry",
            # It swallows the failed connection too, and answers it Ambiguous.
            "test_transport_errors_are_left_to_herald[connect-error]": "let httpx's transport errors out of publish()",
        },
    ),
    Mistake(
        DropsReplyTarget,
        {
            "test_a_thread_part_names_the_part_it_replies_to": "dropped ctx.reply_to ('4242424242424242001'): no "
            "request carries it, so the part would not reply to the thread; send it as the platform's reply target",
        },
    ),
    Mistake(
        DropsRoot,
        {
            "test_a_thread_part_names_the_part_it_replies_to": "dropped ctx.root ('4242424242424242000'): no "
            "request carries it",
        },
    ),
    Mistake(
        SearchSwallowsErrors,
        {
            f"{SEARCH}[500]": "find() of a text part, answered a bare 500, returned None: a search that failed says "
            "nothing of whether the post is there, and 'not there' makes herald send it again – a second copy. "
            "Raise Ambiguous",
            f"{SEARCH}[truncated-json]": "find() of a text part, answered a 200 with JSON cut short, returned None",
        },
    ),
    Mistake(
        ConfirmsWithoutId,
        {
            f"{UNCONFIRMED}[json-without-id]": "answered a 200 whose JSON names no id, returned "
            "Published(platform_id='', url=''): a success that does not name the post confirms nothing herald "
            "can record",
        },
    ),
    Mistake(
        NotSentOnAnHtmlSuccess,
        {
            f"{UNCONFIRMED}[html]": "answered a 200 with an HTML page, raised NotSent('the platform answered "
            "garbage'): the platform said yes to something, so the post may exist; raise Ambiguous",
        },
    ),
    Mistake(
        CrashesOnAnUnreadableSuccess,
        {
            f"{UNCONFIRMED}[html]": "answered a 200 with an HTML page, crashed with JSONDecodeError('Expecting value: "
            "line 1 column 1 (char 0)'): the platform said yes to something, so the post may exist; raise Ambiguous "
            "from the adapter's one answer mapping",
            f"{UNCONFIRMED}[truncated-json]": "answered a 200 with JSON cut short, crashed with JSONDecodeError",
            f"{UNCONFIRMED}[empty]": "answered a 204 with no body, crashed with JSONDecodeError",
        },
    ),
    Mistake(
        CrashesOnAnUnreadableSearch,
        {
            f"{SEARCH}[html]": "find() of a text part, answered a 200 with an HTML page, crashed with "
            "JSONDecodeError('Expecting value: line 1 column 1 (char 0)'): a search that failed says nothing of "
            "whether the post is there",
            f"{SEARCH}[truncated-json]": "find() of a text part, answered a 200 with JSON cut short, crashed with",
        },
    ),
    Mistake(
        KeyTransformedUndeclared,
        {
            "test_the_key_travels_where_the_adapter_declares_it": "KeyTransformedUndeclared declares key_in = "
            "'body:key', but request 1 of publish() of a text part (POST https://toy.test/posts) carries the key "
            "nowhere: send ctx.key exactly there, where the platform looks for it, or declare where it goes; if the "
            "platform takes it transformed, say how with Adapter.key_on_wire",
        },
    ),
    Mistake(
        KeyForgottenAtOnce,
        {
            "test_declares_a_name_a_strategy_and_limits": "KeyForgottenAtOnce declares key_ttl = 0.0: a native_key "
            "adapter says for how many seconds the platform remembers a key, or None where it remembers it for good",
        },
    ),
    Mistake(
        ReadsAnUndeclaredSetting,
        {
            "test_it_reads_only_the_channel_settings_it_declares": "ReadsAnUndeclaredSetting reads channel settings "
            "it does not declare: region; add a Setting for each",
        },
    ),
    Mistake(
        LeaksTheToken,
        {
            "test_no_message_repeats_a_secret_setting": "publish() of a text part raised AuthExpired whose message "
            "repeats the secret setting 'token' ('toy refused the token Bearer ••••'): leave secrets out of "
            "messages",
        },
    ),
    Mistake(
        DropsAttachments,
        {
            "test_every_attachment_and_its_alt_text_travel": "DropsAttachments declares max_media=4, but publish() "
            "of a part with attachments sent no request with attachment 2 of 2 (its platform id "
            "'toy-media-2'): send every one of ctx.media",
        },
    ),
    Mistake(
        DropsAltText,
        {
            "test_every_attachment_and_its_alt_text_travel": "DropsAltText declares alt_text=True, but publish() of "
            "a part with attachments dropped attachment 1's alt text ('conformance-alt-1'): send ctx.media[i].alt "
            "with each attachment",
        },
    ),
]


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda mistake: mistake.adapter.__name__)
def test_the_kit_fails_the_mistake_with_a_message_naming_the_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mistake: Mistake
) -> None:
    # The run needs no plugin but pytester's own; loading every installed one takes longer than the tests.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    wrong = mistake.adapter.__name__
    pytester.makepyfile(
        test_wrong=f"""
        from tests.unit.test_conformance_kit import ToyAnswers, {wrong}

        class TestWrong(ToyAnswers):
            adapter_class = {wrong}
        """
    )
    reports = pytester.inline_run("-p", "no:cacheprovider").getreports("pytest_runtest_logreport")
    failed = {report.nodeid.split("::")[-1]: report for report in reports if report.failed}
    for test, message in mistake.failures.items():
        assert test in failed, f"the kit let {wrong} through {test}"
        assert message in failed[test].longreprtext
    # Only the tests its mistake belongs to: the kit blames the right thing.
    assert {test.split("[")[0] for test in failed} == {test.split("[")[0] for test in mistake.failures}
