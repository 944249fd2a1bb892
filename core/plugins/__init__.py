"""Plugins: hookspecs, the manager, the adapter API, transport, conformance kit, events.

What an adapter author imports lives here, in one stable place::

    from core.plugins import Adapter, Limits, PublishContext, Published, Setting, hookimpl
    from core.plugins import Attachment, MediaFile, UploadContext, Uploaded, IMAGE_TYPES
    from core.plugins import boolean, http_url, Rate, RateScope
    from core.plugins import AuthExpired, Ambiguous, MediaNotReady, NotSent, RateLimited, Rejected, Reason
"""

from core.domain.errors import (
    Ambiguous,
    AuthExpired,
    ConfigError,
    MediaNotReady,
    NotSent,
    PublishError,
    RateLimited,
    Rejected,
)
from core.domain.states import Reason, Strategy
from core.plugins.adapter import (
    IMAGE_TYPES,
    MB,
    Adapter,
    Attachment,
    Limits,
    MediaFile,
    PublishContext,
    Published,
    UploadContext,
    Uploaded,
    VerifyContext,
    text_length,
)
from core.plugins.channel_settings import Setting, boolean, http_url
from core.plugins.hookspecs import RegisterAdapter, hookimpl
from core.plugins.rates import Rate, RateScope

__all__ = [
    "IMAGE_TYPES",
    "MB",
    "Adapter",
    "Ambiguous",
    "Attachment",
    "AuthExpired",
    "ConfigError",
    "Limits",
    "MediaFile",
    "MediaNotReady",
    "NotSent",
    "PublishContext",
    "PublishError",
    "Published",
    "Rate",
    "RateLimited",
    "RateScope",
    "Reason",
    "RegisterAdapter",
    "Rejected",
    "Setting",
    "Strategy",
    "UploadContext",
    "Uploaded",
    "VerifyContext",
    "boolean",
    "hookimpl",
    "http_url",
    "text_length",
]
