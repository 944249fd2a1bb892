"""Every error herald raises, under one root.

::

    HeraldError
    ├── UserError                 bad input or a refused request; shown to people as is
    │   ├── NotFound              no such post, channel, account, adapter
    │   ├── Conflict              the request contradicts the row's state (edit while in doubt)
    │   │   ├── StaleRevision     an edit made against an older revision of the post
    │   │   ├── IdempotencyMismatch   an idempotency key used before for other content
    │   │   └── IdempotencyInProgress the first create with the key has not finished
    │   ├── ConfigError           a setting or plugins.toml entry that cannot work
    │   ├── Unauthenticated       no API key or login, or one unknown, expired or revoked
    │   ├── Forbidden             the key's role does not allow the action
    │   └── TooManyAttempts       too many logins from one address: wait, then try again
    ├── PublishError              the outcome of one platform call that did not confirm a post
    │   ├── NotSent               provably never reached the platform: safe to send again
    │   │   └── MediaNotReady     an attachment is still processing on the platform: not sent
    │   ├── Ambiguous             may have landed: the part stays ``sending``
    │   ├── RateLimited           the platform asked us to wait ``retry_after`` seconds
    │   ├── Rejected              terminal refusal, with one ``Reason``
    │   ├── AuthExpired           the channel's credentials no longer work
    │   └── AdapterError          the adapter failed outside this contract (a bug); ``sent`` says
    │                             whether any request had been written when it did
    └── FencedOut                 a newer claim superseded this attempt (internal)

Adapters raise the ``PublishError`` family from one mapping function each; transport
errors from httpx are mapped once, in ``core.plugins.transport``, for every adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.domain.states import Reason


class HeraldError(Exception):
    """Root of every herald error."""


class UserError(HeraldError):
    """A request herald refuses; the message names the problem and the fix."""


class NotFound(UserError):
    """The named post, channel, account or adapter does not exist."""


class Conflict(UserError):
    """The request contradicts the current state of the row."""


class StaleRevision(Conflict):
    """An edit made against a revision of the post older than its current one."""


class IdempotencyMismatch(Conflict):
    """An idempotency key used before, for a create with other content."""


class IdempotencyInProgress(Conflict):
    """The first create with this idempotency key has not finished yet."""


class ConfigError(UserError):
    """A setting that cannot work as given."""


class Unauthenticated(UserError):
    """No API key or dashboard login was given, or it is unknown, expired or revoked."""


class Forbidden(UserError):
    """The key's role does not allow this action (``core.domain.roles``)."""


class TooManyAttempts(UserError):
    """Too many attempts (dashboard logins) from one client in a short time."""


class PublishError(HeraldError):
    """A platform call that did not end in a confirmed post."""

    def __init__(self, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message or type(self).__name__)
        #: HTTP status of the platform's answer, when there was one.
        self.status = status


class NotSent(PublishError):
    """The request provably never reached the platform; sending again is safe."""


class MediaNotReady(NotSent):
    """The platform has not finished processing an attachment, so the part was not sent:
    it waits (``media_not_ready``) and is sent with it later, never without it."""


class Ambiguous(PublishError):
    """The request may have reached the platform; its outcome is unknown."""


class RateLimited(PublishError):
    """The platform refused for now and asked to be called again later."""

    def __init__(self, message: str = "", *, retry_after: float | None = None, status: int | None = 429) -> None:
        super().__init__(message, status=status)
        #: Seconds the platform asked us to wait, when it said.
        self.retry_after = retry_after


class Rejected(PublishError):
    """The platform refused the post for good; sending it again will not help."""

    def __init__(self, reason: Reason, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message or str(reason), status=status)
        self.reason = reason


class AuthExpired(PublishError):
    """The channel's credentials were refused: a person must reconnect it."""


class AdapterError(PublishError):
    """The adapter raised something that is not a publish outcome: a bug in the adapter.

    It is still an outcome (§6 step 8): it counts toward the attempt budget and ends with
    ``adapter_error``. ``sent`` tells whether a request had been written before it failed,
    so a part is kept in doubt only when a copy may really exist.
    """

    def __init__(self, message: str = "", *, sent: bool) -> None:
        super().__init__(message)
        #: Whether any bytes of a request had reached the network when the adapter failed.
        self.sent = sent


class FencedOut(HeraldError):
    """A newer claim superseded this attempt: it must stop and record nothing."""
