"""Channel settings: what an adapter declares it reads, and the check `herald channel add` makes.

An adapter lists its channel settings in ``settings`` (§9)::

    settings = (
        Setting("base_url", "the platform's address", required=True, check=http_url, example="https://api.example.org"),
        Setting("token", "the account's access token", secret=True),
    )

``herald channel add``, ``edit`` and ``reconnect`` refuse a missing required setting, a
name the adapter does not declare (with the closest one it does) and a value its check
refuses, so a channel that cannot work is refused when it is made rather than held
``channel_misconfigured`` at its first publish. That hold stays, for channels made before.

An adapter that declares nothing (``settings = None``, the default) is not checked: its
channels take any setting, and secrets are told by their names (:func:`looks_secret`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from core.domain.errors import ConfigError
from core.plugins.rates import rate_text

if TYPE_CHECKING:
    from core.plugins.adapter import Adapter

#: What in an undeclared setting's name makes its value a secret (``token``, ``api_key``,
#: ``client_secret``, ``appPassword``...), matched anywhere in the name so ``apikey`` and
#: ``accesstoken`` count too; masking a harmless setting by mistake costs nothing.
_SECRET = re.compile(r"token|passw|secret|key|credential|auth|cookie", re.IGNORECASE)

_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")


def http_url(value: str) -> str | None:
    """A check: ``value`` is an absolute http(s) URL with a host."""
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed [IPv6] host, say
        return "is not an http(s) URL"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "is not an http(s) URL"
    return None


def boolean(value: str) -> str | None:
    """A check: ``value`` is true or false (also yes/no, 1/0)."""
    if value.lower() not in (*_TRUE, *_FALSE):
        return "is not true or false"
    return None


def is_true(value: object) -> bool:
    """Whether a :func:`boolean` setting's value says yes."""
    return str(value).lower() in _TRUE


@dataclass(frozen=True)
class Setting:
    """One channel setting an adapter reads (``herald channel add --set NAME=VALUE``)."""

    name: str
    #: What it is, in a few words, shown when it is missing or wrong.
    description: str
    #: A channel without it cannot publish.
    required: bool = False
    #: A credential: encrypted at rest, never printed whole, never logged.
    secret: bool = False
    #: Returns what is wrong with a value (a phrase: "is not an http(s) URL"), None when it is fine.
    check: Callable[[str], str | None] | None = None
    #: A valid value, for the messages that name the fix.
    example: str = ""

    def hint(self) -> str:
        """``--set NAME=EXAMPLE``: how to give this setting."""
        return f"--set {self.name}={self.example or 'VALUE'}"


#: Channel settings herald itself reads, whatever the platform: accepted on every channel.
HERALD_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "resend_in_doubt",
        "send again an attempt in doubt on a platform that cannot be asked (strategy none), "
        "accepting that a second copy may appear",
        check=boolean,
        example="true",
    ),
    Setting(
        "precheck",
        "look for the post on the platform before its first send (read_back channels; on by "
        "default where the adapter's search is cheap), holding it duplicate_suspected if a copy is there",
        check=boolean,
        example="false",
    ),
    Setting(
        "rate",
        "the most posts herald sends to this channel in a window, COUNT/SECONDS, on top of "
        "the rates its platform declares (a stricter instance, or a test)",
        check=rate_text,
        example="10/3",
    ),
)


def precheck_on(adapter: Adapter, settings: Mapping[str, object]) -> bool:
    """Whether a channel on ``adapter`` looks for a part before its first send
    (``core.domain.precheck``): as its ``precheck`` setting says, else where the adapter
    declares its ``find`` cheap. Only ``read_back`` channels are ever checked."""
    given = str(settings.get("precheck", "")).strip()
    return is_true(given) if given else adapter.cheap_find


def declared(adapter: type[Adapter]) -> tuple[Setting, ...] | None:
    """Every channel setting a channel of ``adapter`` may have; None when it declares none."""
    if adapter.settings is None:
        return None
    return (*adapter.settings, *HERALD_SETTINGS)


def looks_secret(name: str) -> bool:
    """Whether an undeclared setting called ``name`` looks like a credential."""
    return _SECRET.search(name) is not None


def is_secret(adapter: type[Adapter] | None, name: str) -> bool:
    """Whether the setting ``name`` of a channel on ``adapter`` holds a credential: as the
    adapter declares it, else by its name (undeclared settings, unknown adapters)."""
    known = {s.name: s for s in declared(adapter) or ()} if adapter is not None else {}
    return known[name].secret if name in known else looks_secret(name)


def check_values(adapter: type[Adapter], values: Mapping[str, str]) -> None:
    """Refuse a setting ``adapter`` does not declare, and a value its check refuses.

    Raises:
        ConfigError: naming the setting and the fix (a secret's value is never repeated).
    """
    settings = declared(adapter)
    if settings is None:
        return
    known = {s.name: s for s in settings}
    for name, value in values.items():
        setting = known.get(name)
        if setting is None:
            raise ConfigError(_unknown(adapter.name, name, known))
        shown = f"{name}=••••" if setting.secret else f"{name}={value!r}"
        if not value.strip():
            raise ConfigError(f"--set {name}= has no value: give one ({setting.hint()}) or leave it out")
        problem = setting.check(value) if setting.check is not None else None
        if problem:
            raise ConfigError(f"--set {shown} {problem}: {setting.description}; give it as {setting.hint()}")


def check_complete(adapter: type[Adapter], values: Mapping[str, object]) -> None:
    """Refuse settings that lack one ``adapter`` requires.

    Raises:
        ConfigError: naming each missing setting and how to give it.
    """
    missing = [s for s in declared(adapter) or () if s.required and not str(values.get(s.name, "")).strip()]
    if missing:
        what = "; ".join(f"{s.name} ({s.description})" for s in missing)
        fix = " ".join(s.hint() for s in missing)
        raise ConfigError(f"a {adapter.name} channel needs {what}: add {fix}")


def check_settings(adapter: type[Adapter], values: Mapping[str, str]) -> None:
    """Refuse the settings of a new channel on ``adapter`` that cannot work.

    Raises:
        ConfigError: an unknown setting, a refused value, or a missing required one.
    """
    check_values(adapter, values)
    check_complete(adapter, values)


def _unknown(platform: str, name: str, known: Mapping[str, Setting]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    guess = f"did you mean {close[0]}? " if close else ""
    return f"{platform} has no channel setting {name!r}; {guess}its settings are {', '.join(known)}"


def required(adapter: type[Adapter], settings: Mapping[str, str], name: str) -> str:
    """A required setting's value, for a channel made before ``adapter`` declared it.

    Raises:
        ConfigError: it is missing, naming how to set it.
    """
    value = (settings.get(name) or "").strip()
    if not value:
        example = next((s.example for s in adapter.settings or () if s.name == name), None) or "..."
        raise ConfigError(
            f"the {adapter.name} channel has no {name} setting; give it with "
            f"`herald channel reconnect CHANNEL --set {name}={example}`"
        )
    return value
