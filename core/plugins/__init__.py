"""Plugins: hookspecs, the manager, the adapter API, transport, conformance kit, events.

What an adapter author imports lives here, in one stable place::

    from core.plugins import Adapter, Limits, PublishContext, Published, Setting, hookimpl
    from core.plugins import boolean, http_url
    from core.plugins import AuthExpired, Ambiguous, NotSent, RateLimited, Rejected, Reason
"""

from core.domain.errors import Ambiguous, AuthExpired, ConfigError, NotSent, PublishError, RateLimited, Rejected
from core.domain.states import Reason, Strategy
from core.plugins.adapter import Adapter, Limits, PublishContext, Published
from core.plugins.channel_settings import Setting, boolean, http_url
from core.plugins.hookspecs import RegisterAdapter, hookimpl

__all__ = [
    "Adapter",
    "Ambiguous",
    "AuthExpired",
    "ConfigError",
    "Limits",
    "NotSent",
    "PublishContext",
    "PublishError",
    "Published",
    "RateLimited",
    "Reason",
    "RegisterAdapter",
    "Rejected",
    "Setting",
    "Strategy",
    "boolean",
    "hookimpl",
    "http_url",
]
