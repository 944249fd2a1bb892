"""What people and scripts read: frozen dataclass views, and their one JSON form.

Each concept's views live in its service module (``posts``, ``timeline``, ``channels``,
``health``, ``alarms``). Every front door shows those same objects: the CLI renders them
as tables and ``--json`` dumps them through :func:`jsonable`, so what a person sees and
what a script parses never disagree.

The JSON form: a dataclass is an object of its fields, an enum its value, an instant
ISO 8601 to the second with the offset it carries (services hand out instants already in
the zone they are shown in, the post's for a post), a tuple or list an array.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import TypeAlias

from core.domain.timing import zone as named_zone

Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"


def jsonable(view: object) -> Json:
    """``view`` (a view, or a list of them) as plain JSON data.

    Raises:
        TypeError: a value with no JSON form (a view must hold only the types above).
    """
    if dataclasses.is_dataclass(view) and not isinstance(view, type):
        return {field.name: jsonable(getattr(view, field.name)) for field in dataclasses.fields(view)}
    # Before str: a StrEnum is a str too, and its value is the plain string.
    if isinstance(view, Enum):
        return jsonable(view.value)
    if isinstance(view, datetime):
        return view.isoformat(timespec="seconds")
    if isinstance(view, Mapping):
        return {str(key): jsonable(value) for key, value in view.items()}
    if isinstance(view, list | tuple):
        return [jsonable(item) for item in view]
    if view is None or isinstance(view, bool | int | float | str):
        return view
    raise TypeError(f"{type(view).__name__} has no JSON form; a view holds dataclasses, enums, instants and scalars")


def dumps(view: object) -> str:
    """The JSON text ``--json`` prints for ``view``."""
    return json.dumps(jsonable(view), indent=2)


def shown_in(instant: datetime, tz: str) -> datetime:
    """``instant`` as it is shown: in the zone ``tz`` (the post's), same instant."""
    return instant.astimezone(named_zone(tz))


def maybe_shown_in(instant: datetime | None, tz: str) -> datetime | None:
    """:func:`shown_in` for an instant that may not have happened yet."""
    return None if instant is None else shown_in(instant, tz)
