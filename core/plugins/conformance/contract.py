"""The contract itself: what an author describes (``respond_*``, the declarations) and the
tests the kit runs against the adapter, each failing with the fix."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from core.domain.errors import Ambiguous, AuthExpired, ConfigError, NotSent, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import Adapter, Published
from core.plugins.channel_settings import check_settings, declared, is_secret
from core.plugins.conformance.answers import FAILED_SEARCHES, STATUS_FAMILIES, TRANSPORT_FAILURES, UNCONFIRMED, Answer
from core.plugins.conformance.calls import TIMEOUT, Call, fail, run
from core.plugins.conformance.parts import KEY, MEDIA_PART, REPLY_TO, ROOT, TEXT_PART, THREAD_PART, refused_part
from core.plugins.conformance.requests import KEY_PLACE, bodies, carries_attachment, key_place_holds, key_places, raw

if TYPE_CHECKING:
    import respx

#: The reasons a refusal for good may have, as :attr:`AdapterContract.refusals` lists them.
REFUSALS = (Reason.CONTENT_REJECTED, Reason.PERMISSION_DENIED, Reason.MEDIA_INVALID, Reason.THREAD_PARENT_MISSING)
#: The shortest secret the kit can look for in messages without mistaking a common word for it.
MIN_SECRET_CHARS = 8


class AdapterContract:
    """Subclass it (named ``Test...``) to run the contract against one adapter."""

    #: The adapter under test.
    adapter_class: ClassVar[type[Adapter]]
    #: Channel settings the adapter needs (base URL, token...); a secret one at least 8 characters long.
    settings: ClassVar[dict[str, str]] = {}
    #: Adapter-wide settings, as ``plugins.toml`` gives them to the adapter's constructor.
    config: ClassVar[dict[str, Any]] = {}
    #: The refusals for good :meth:`respond_rejected` can describe (of :data:`REFUSALS`).
    refusals: ClassVar[tuple[Reason, ...]] = (Reason.CONTENT_REJECTED,)
    #: Statuses the platform documents as storing nothing (a resend is safe), each with where
    #: its docs say so: ``{503: "https://docs.example.test/errors#503"}``. The kit then takes
    #: NotSent for them; every other 5xx must be Ambiguous.
    not_stored: ClassVar[dict[int, str]] = {}
    #: Where the platform documents that a 2xx without an id confirms the post (herald then
    #: records the key as its id); None: a 2xx without the post's id must be Ambiguous.
    confirms_without_id: ClassVar[str | None] = None
    #: Whether the platform's replies name the thread's first post as well (``ctx.root``).
    replies_name_the_root: ClassVar[bool] = False

    # -- what the author describes: the platform's answers, as respx routes ----------------

    def respond_published(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform accepts the post and answers with its id and URL.

        Answer every request a publish makes: a sign-in, a look-up of the post replied to
        (:data:`REPLY_TO`, :data:`ROOT`), the post itself. Where there are several, return the
        post's own route: the kit gives its own answers there (bare statuses, an HTML page...)
        and reads the key, the reply target, the attachments and the retries in what reached
        it. None: every route it sets up (right where it sets up one). Every ``respond_*`` may
        return its post's route the same way.
        """
        raise NotImplementedError

    def respond_published_with_media(self, router: respx.MockRouter) -> respx.Route | None:
        """The same for a part with attachments. An adapter that uploads first
        (``uploads_first``) has each one uploaded by the kit, as herald does, before the part
        is published: answer those uploads (and ``media_ready``'s looks) too. By default
        :meth:`respond_published`."""
        return self.respond_published(router)

    def respond_auth_expired(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform refuses the credentials."""
        raise NotImplementedError

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> respx.Route | None:
        """The platform asks to be called again in ``retry_after`` seconds."""
        raise NotImplementedError

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> respx.Route | None:
        """The platform refuses this post for good, for ``reason`` (one of :attr:`refusals`).

        The part carries attachments for ``MEDIA_INVALID`` (the refusal may be an upload's)
        and replies to :data:`REPLY_TO` for ``THREAD_PARENT_MISSING`` (it may be the look-up's).
        """
        raise NotImplementedError

    def respond_server_error(self, router: respx.MockRouter) -> respx.Route | None:
        """The platform fails in a way after which the post may have been stored."""
        raise NotImplementedError

    def respond_search(self, router: respx.MockRouter, found: bool) -> respx.Route | None:
        """``read_back`` adapters: the platform's search finds the post by key, or not. Where
        it sets up several routes, return the search's own: the kit fails it there."""
        raise NotImplementedError

    # -- declarations ------------------------------------------------------------------------

    @pytest.fixture
    def adapter(self) -> Adapter:
        return self.adapter_class(dict(self.config))

    @pytest.fixture(autouse=True)
    def _httpx_patched(self) -> Iterator[None]:
        """respx's patches, on for the whole test: each call's own router then starts without
        patching httpx again. This router answers nothing, so every request falls to the call's."""
        import respx

        with respx.mock(assert_all_called=False, assert_all_mocked=True):
            yield

    def test_declares_a_name_a_strategy_and_limits(self, adapter: Adapter) -> None:
        assert isinstance(adapter.name, str) and adapter.name
        assert adapter.strategy in Strategy
        assert adapter.limits.max_chars > 0
        if adapter.strategy is Strategy.NATIVE_KEY and adapter.key_ttl is not None and not adapter.key_ttl > 0:
            # None is "remembered for good" (a key that is the post's own record key): core then
            # resends with it at any age (core/runtime/job.py, _key_remembered).
            fail(
                f"{_name(adapter)} declares key_ttl = {adapter.key_ttl!r}: a native_key adapter says for how many "
                "seconds the platform remembers a key, or None where it remembers it for good"
            )
        if adapter.strategy is Strategy.READ_BACK:
            assert adapter.can_find, "read_back adapters implement find()"
        if adapter.key_in is not None and not KEY_PLACE.fullmatch(adapter.key_in):
            fail(
                f"{_name(adapter)} declares key_in = {adapter.key_in!r}: say where the key goes as "
                "'header:NAME', 'query:NAME', 'body:FIELD' (dotted for a nested one) or 'path'"
            )

    def test_an_adapter_taking_media_can_upload_it_and_says_which(self, adapter: Adapter) -> None:
        limits = adapter.limits
        if limits.max_media == 0:
            pytest.skip("takes no attachments (max_media=0): herald refuses them when a post is written")
        assert not adapter.uploads_first or type(adapter).upload is not Adapter.upload, (
            f"{_name(adapter)} declares max_media={limits.max_media} but does not implement upload(): "
            "implement it, set uploads_first = False if the files go with the post, or leave max_media at 0"
        )
        assert limits.media_types, "an adapter taking media lists the MIME types it takes (Limits.media_types)"
        assert all("/" in t for t in limits.media_types), f"media_types are MIME types: {sorted(limits.media_types)}"

    def test_declares_its_channel_settings_and_the_kits_settings_pass_them(self, adapter: Adapter) -> None:
        cls = type(adapter)
        assert cls.settings is not None, (
            f"{cls.__name__} declares no channel settings: set settings = (Setting('base_url', "
            "'the platform's address', required=True, check=http_url), ...) so `herald channel add` "
            "can refuse a channel that cannot work"
        )
        try:
            check_settings(cls, self.settings)
        except ConfigError as exc:
            fail(f"the kit's settings are not valid channel settings of {cls.__name__}: {exc}")
        for name, value in self._secrets(adapter).items():
            if len(value) < MIN_SECRET_CHARS:
                fail(
                    f"the contract's value of the secret setting {name!r} is {len(value)} characters long: give "
                    f"it one of at least {MIN_SECRET_CHARS}, so the kit can tell it in a message that leaks it"
                )

    def test_it_reads_only_the_channel_settings_it_declares(self, adapter: Adapter) -> None:
        read = set().union(*(call.read for call in self._confirmed(adapter)))
        if adapter.can_find:
            read |= self._run(adapter, lambda router: self.respond_search(router, True), find=True).read
        known = {s.name for s in declared(type(adapter)) or ()}
        undeclared = sorted(read - known)
        if undeclared:
            fail(
                f"{_name(adapter)} reads channel settings it does not declare: {', '.join(undeclared)}; "
                "add a Setting for each to its settings, so `herald channel add` checks them"
            )

    # -- a confirmed post, and the requests that made it ---------------------------------------

    def test_a_confirmed_post_returns_the_platforms_id_and_url(self, adapter: Adapter) -> None:
        for call in self._confirmed(adapter):
            result = call.result
            if not isinstance(result, Published) or not result.platform_id or not result.url:
                fail(
                    f"{call.said()}: return Published(platform_id=..., url=...) with the id "
                    "and the address the platform's answer gives"
                )

    def test_it_calls_the_platform_through_the_client_it_is_given(self, adapter: Adapter) -> None:
        expected = TIMEOUT.as_dict()
        for call in self._confirmed(adapter):
            bypassed = len(call.requests) - call.through_client
            if bypassed > 0:
                fail(
                    f"{bypassed} of the {len(call.requests)} requests of {call.what} did not go through "
                    "ctx.client: the adapter built its own httpx client (httpx.Client(), httpx.post(), one "
                    "kept on the adapter); make every request with ctx.client, herald's one long-lived "
                    "client, whose deadline bounds the call"
                )
            for n, request in enumerate(call.requests, 1):
                timeout = request.extensions.get("timeout")
                if timeout != expected:
                    fail(
                        f"request {n} of {call.what} ({request.method} {request.url}) ran with the timeout "
                        f"{timeout} instead of ctx.client's {expected}: pass no timeout= and leave ctx.client's "
                        "alone; herald's deadline keeps every call shorter than the lease"
                    )

    def test_it_never_retries_inside_publish(self, adapter: Adapter) -> None:
        calls = [*self._confirmed(adapter), self._run(adapter, self.respond_server_error)]
        calls += [self._run(adapter, self.respond_published, answer=STATUS_FAMILIES[s]) for s in (500, 502, 503, 504)]
        calls += [self._run(adapter, self.respond_published, answer=exc) for exc, _ in TRANSPORT_FAILURES.values()]
        for call in calls:
            if call.to_one_route > 1:
                fail(
                    f"{call.what}: one publish() sent {call.to_one_route} requests to the platform's route; the "
                    "adapter retries inside publish(). Raise the outcome and let herald retry: it backs off, "
                    "honours Retry-After and keeps a part in doubt from being sent twice"
                )

    def test_the_key_travels_where_the_adapter_declares_it(self, adapter: Adapter) -> None:
        place = adapter.key_in
        if place is None and adapter.strategy is Strategy.NONE:
            pytest.skip("a none adapter that declares no key_in: nothing to deduplicate or find by")
        wire = adapter.key_on_wire(KEY)
        sent = "ctx.key" if wire == KEY else f"adapter.key_on_wire(ctx.key) ({wire!r})"
        for call in self._confirmed(adapter):
            if place is None:
                if not any(wire.encode() in raw(request) for request in call.posted):
                    fail(
                        f"no request of {call.what} carries the delivery key ({sent}): a {adapter.strategy} "
                        "adapter must send it, and should say where with key_in = 'header:Idempotency-Key' "
                        "(or 'body:FIELD', 'query:NAME', 'path')"
                    )
                continue
            for n, request in enumerate(call.posted, 1):
                found = key_places(request, wire)
                if not key_place_holds(place, found):
                    where = f"at {', '.join(found)}" if found else "nowhere"
                    instead = f" (key_in = {found[0]!r})" if found else ""
                    transformed = (
                        ""
                        if wire != KEY or found
                        else "; if the platform takes it transformed, say how with Adapter.key_on_wire"
                    )
                    fail(
                        f"{_name(adapter)} declares key_in = {place!r}, but request {n} of {call.what} "
                        f"({request.method} {request.url}) carries the key {where}: send {sent} exactly "
                        f"there, where the platform looks for it, or declare where it goes{instead}{transformed}"
                    )

    def test_a_thread_part_names_the_part_it_replies_to(self, adapter: Adapter) -> None:
        if not adapter.limits.threads:
            pytest.skip("posts no threads (Limits.threads=False)")
        call = self._run(adapter, self.respond_published, part=THREAD_PART)
        targets = [("ctx.reply_to", REPLY_TO)] + ([("ctx.root", ROOT)] if self.replies_name_the_root else [])
        for name, value in targets:
            if not any(value.encode() in raw(request) for request in call.posted):
                fail(
                    f"{call.what} dropped {name} ({value!r}): no request carries it, so the part would not "
                    f"reply to the thread; send it as the platform's reply target"
                    + (" (the contract says its replies name the root too)" if name == "ctx.root" else "")
                )

    def test_every_attachment_and_its_alt_text_travel(self, adapter: Adapter) -> None:
        limits = adapter.limits
        if limits.max_media == 0:
            pytest.skip("takes no attachments (max_media=0)")
        call = self._run(adapter, self.respond_published_with_media, part=MEDIA_PART)
        if call.error is not None:
            fail(
                f"{call.said()}: answered as respond_published_with_media describes, the part must be published; "
                "describe every request a part with attachments makes (its uploads too, for an adapter that "
                "uploads first)"
            )
        posted = b"".join(raw(request) for request in call.posted)
        documents = [document for request in call.posted for document in bodies(request)]
        sent = b"".join(raw(request) for request in call.requests)  # alt text may go with the upload
        media = call.media
        for n, attachment in enumerate(media, 1):
            if not carries_attachment(posted, documents, attachment, adapter.uploads_first):
                what = (
                    f"platform id {attachment.platform_id!r}"
                    if adapter.uploads_first
                    else f"file's bytes ({attachment.file.filename if attachment.file else '?'}, raw or base64)"
                )
                fail(
                    f"{_name(adapter)} declares max_media={limits.max_media}, but {call.what} sent no request "
                    f"with attachment {n} of {len(media)} (its {what}): send every one of ctx.media, in order"
                )
            if limits.alt_text and attachment.alt and attachment.alt.encode() not in sent:
                fail(
                    f"{_name(adapter)} declares alt_text=True, but {call.what} dropped attachment {n}'s alt text "
                    f"({attachment.alt!r}): send ctx.media[i].alt with each attachment, or declare alt_text=False"
                )

    # -- the platform's answers -----------------------------------------------------------------

    def test_refused_credentials_are_auth_expired(self, adapter: Adapter) -> None:
        call = self._run(adapter, self.respond_auth_expired)
        if not call.raised(AuthExpired):
            fail(
                f"{call.what} answered as respond_auth_expired describes, {call.outcome()}: raise AuthExpired, "
                "so herald holds the channel until a person reconnects it"
            )

    def test_a_rate_limit_is_rate_limited_with_the_platforms_retry_after(self, adapter: Adapter) -> None:
        call = self._run(adapter, lambda router: self.respond_rate_limited(router, 7))
        if not isinstance(call.error, RateLimited) or call.error.retry_after != 7:
            fail(
                f"{call.what} answered as respond_rate_limited(router, 7) describes, {call.outcome()}: raise "
                "RateLimited(retry_after=7.0), the seconds the platform asked for"
            )

    def test_each_refusal_is_rejected_with_the_reason_it_means(self, adapter: Adapter) -> None:
        if len(inspect.signature(self.respond_rejected).parameters) < 2:
            fail(
                "respond_rejected takes the reason of the refusal it describes: def respond_rejected(self, router, "
                "reason), with the reasons it can describe listed in refusals = (Reason.CONTENT_REJECTED, ...)"
            )
        for reason in self.refusals:
            if reason not in REFUSALS:
                fail(f"refusals lists {reason}, which is not a refusal for good: list some of {list(REFUSALS)}")
            part = refused_part(adapter, reason)
            if part is None:
                continue
            call = self._run(adapter, self._refusal(reason), part=part)
            got = call.rejected()
            if got is reason:
                continue
            said = f"the platform's {reason} refusal (respond_rejected(router, Reason.{reason.name}))"
            fix = f"map that answer to Rejected(Reason.{reason.name}, ...)"
            if got is not None:
                fail(
                    f"{said} of {call.what} came back as Rejected({got}): {fix}. The reason is what support staff "
                    f"act on, and {got}'s advice ('{got.action}') would not fix this post"
                )
            fail(f"{said} of {call.said()}: {fix}; it will never succeed if sent again")

    def test_a_server_error_after_which_the_post_may_exist_is_ambiguous_not_not_sent(self, adapter: Adapter) -> None:
        call = self._run(adapter, self.respond_server_error)
        if not call.raised(Ambiguous):
            fail(
                f"{call.what} answered as respond_server_error describes, {call.outcome()}: the platform may have "
                "stored the post before it failed; raise Ambiguous"
            )

    @pytest.mark.parametrize("status", list(STATUS_FAMILIES), ids=str)
    def test_a_bare_answer_of_each_status_family_is_mapped(self, adapter: Adapter, status: int) -> None:
        answer = STATUS_FAMILIES[status]
        call = self._run(adapter, self.respond_published, answer=answer)
        said = call.said()
        if status == 401 and not call.raised(AuthExpired):
            fail(f"{said}: a 401 refuses the credentials; raise AuthExpired, so herald holds the channel")
        if status == 403 and not (call.raised(AuthExpired) or call.rejected() is Reason.PERMISSION_DENIED):
            fail(
                f"{said}: a 403 refuses the account, not the text; raise Rejected(Reason.PERMISSION_DENIED, ...) "
                "(or AuthExpired where the platform answers a bad token with 403)"
            )
        if status == 429 and not call.raised(RateLimited):
            fail(f"{said}: a 429 asks herald to slow down; raise RateLimited (retry_after=None when none is given)")
        if status == 418 and not call.raised(Rejected, Ambiguous):
            fix = "raise Rejected(Reason.CONTENT_REJECTED, ...) for a 4xx the adapter does not know (or Ambiguous)"
            fix += call.mapping_fix()
            if call.raised(NotSent):
                fix += "; NotSent would send a post the platform refused again on every attempt"
            fail(f"{said}: {fix}")
        if status >= 500:
            self._judge_server_failure(call, status)

    def _judge_server_failure(self, call: Call, status: int) -> None:
        if call.raised(Ambiguous) or (status in self.not_stored and call.raised(NotSent)):
            return
        said = call.said()
        if call.raised(Rejected):
            fail(
                f"{said}: a {status} is the platform failing, not refusing the post; raise Ambiguous (Rejected "
                "gives up on a post that may be up, or would go through on the next attempt)"
            )
        if call.raised(NotSent):
            gateway = " comes from a gateway that may have passed the post on, and" if status in (502, 503, 504) else ""
            fail(
                f"{said}: a {status}{gateway} may come after the platform stored the post; raise Ambiguous "
                f"(NotSent only where the platform documents that a {status} stores nothing: declare it in the "
                f"contract, not_stored = {{{status}: 'where its docs say so'}})"
            )
        fail(f"{said}: after a {status} the post may exist; raise Ambiguous{call.mapping_fix()}")

    @pytest.mark.parametrize("answer", list(UNCONFIRMED))
    def test_a_success_without_the_posts_id_is_not_a_confirmation(self, adapter: Adapter, answer: str) -> None:
        given = UNCONFIRMED[answer]
        call = self._run(adapter, self.respond_published, answer=given)
        if call.raised(Ambiguous):
            return
        said = call.said()
        declared_success = self.confirms_without_id is not None and answer in ("json-without-id", "empty")
        if declared_success and isinstance(call.result, Published) and call.result.platform_id == KEY:
            return
        if isinstance(call.result, Published) and declared_success:
            fail(
                f"{said}: the contract says a 2xx without an id confirms the post ({self.confirms_without_id}), "
                f"with the key as its id: return Published(platform_id=ctx.key, ...), or raise Ambiguous"
            )
        if isinstance(call.result, Published):
            fail(
                f"{said}: a success that does not name the post confirms nothing herald can record (it records "
                "Published for good); raise Ambiguous – the post may exist, and a read-back or a person settles it"
            )
        fail(f"{said}: the platform said yes to something, so the post may exist; raise Ambiguous{call.mapping_fix()}")

    @pytest.mark.parametrize("failure", list(TRANSPORT_FAILURES))
    def test_transport_errors_are_left_to_herald(self, adapter: Adapter, failure: str) -> None:
        exc, outcome = TRANSPORT_FAILURES[failure]
        call = self._run(adapter, self.respond_published, answer=exc)
        if not call.raised(outcome):
            fail(
                f"{call.said()}, where herald makes it {outcome.__name__}: let httpx's transport "
                "errors out of publish() – herald maps them once, for every adapter"
            )

    def test_no_message_repeats_a_secret_setting(self, adapter: Adapter) -> None:
        secrets = self._secrets(adapter)
        if not secrets:
            pytest.skip("declares no secret settings")
        for call in self._failures(adapter):
            message = str(call.error)
            for name, value in secrets.items():
                if len(value) >= MIN_SECRET_CHARS and value in message:  # a shorter one fails the settings test
                    fail(
                        f"{call.said(call.outcome().split('(')[0])} whose message repeats the secret setting "
                        f"{name!r} ({message.replace(value, '••••')[:300]!r}): leave secrets out of messages; "
                        "herald shows them to support staff and writes them to logs"
                    )

    # -- read-back --------------------------------------------------------------------------------

    def test_read_back_finds_the_post_by_its_key(self, adapter: Adapter) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        call = self._run(adapter, lambda router: self.respond_search(router, True), find=True)
        if not isinstance(call.result, Published) or not call.result.platform_id:
            fail(f"{call.what} for a post that is there {call.outcome()}: return it as Published")

    def test_read_back_says_none_when_the_post_is_not_there(self, adapter: Adapter) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        call = self._run(adapter, lambda router: self.respond_search(router, False), find=True)
        if call.result is not None or call.error is not None:
            fail(f"{call.what} for a post that is not there {call.outcome()}: return None")

    @pytest.mark.parametrize("answer", list(FAILED_SEARCHES))
    def test_a_failed_search_raises_rather_than_saying_not_found(self, adapter: Adapter, answer: str) -> None:
        if not adapter.can_find:
            pytest.skip(f"{adapter.strategy} adapter without find()")
        search = FAILED_SEARCHES[answer]
        call = self._run(adapter, lambda router: self.respond_search(router, False), answer=search, find=True)
        if call.error is None or call.crashed:
            fail(
                f"{call.said()}: a search that failed says nothing of whether the post is there, "
                "and 'not there' makes herald send it again – a second copy. Raise Ambiguous from the search's "
                "answer mapping"
            )

    # -- how the kit calls the adapter ------------------------------------------------------------

    def _run(
        self,
        adapter: Adapter,
        respond: Callable[[respx.MockRouter], respx.Route | None],
        *,
        part: str = TEXT_PART,
        answer: Answer | Exception | None = None,
        find: bool = False,
    ) -> Call:
        """One call of ``adapter`` with this contract's settings (:func:`calls.run`)."""
        return run(adapter, self.settings, respond, part=part, answer=answer, find=find)

    def _confirmed(self, adapter: Adapter) -> list[Call]:
        """Publish each kind of part the adapter takes, confirmed by the platform."""
        calls = [self._run(adapter, self.respond_published)]
        if adapter.limits.threads:
            calls.append(self._run(adapter, self.respond_published, part=THREAD_PART))
        if adapter.limits.max_media > 0:
            calls.append(self._run(adapter, self.respond_published_with_media, part=MEDIA_PART))
        return calls

    def _failures(self, adapter: Adapter) -> Iterator[Call]:
        """Every call the kit makes that ends in an error."""
        yield self._run(adapter, self.respond_auth_expired)
        yield self._run(adapter, lambda router: self.respond_rate_limited(router, 7))
        yield self._run(adapter, self.respond_server_error)
        for reason in self.refusals:
            part = refused_part(adapter, reason)
            if part is not None:
                yield self._run(adapter, self._refusal(reason), part=part)
        for answer in [*STATUS_FAMILIES.values(), *UNCONFIRMED.values()]:
            yield self._run(adapter, self.respond_published, answer=answer)
        for exc, _ in TRANSPORT_FAILURES.values():
            yield self._run(adapter, self.respond_published, answer=exc)
        if adapter.can_find:
            for answer in FAILED_SEARCHES.values():
                yield self._run(adapter, lambda router: self.respond_search(router, False), answer=answer, find=True)

    def _refusal(self, reason: Reason) -> Callable[[respx.MockRouter], respx.Route | None]:
        return lambda router: self.respond_rejected(router, reason)

    def _secrets(self, adapter: Adapter) -> dict[str, str]:
        """The contract's values of the adapter's secret settings."""
        return {name: value for name, value in self.settings.items() if is_secret(type(adapter), name)}


def _name(adapter: Adapter) -> str:
    return type(adapter).__name__
