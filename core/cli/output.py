"""How the commands print: rich for people, the views' one JSON form for scripts."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console

from core.services.views import dumps

out = Console()
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def print_json(view: object) -> None:
    """Print a view (or a list of views) as JSON on stdout."""
    sys.stdout.write(dumps(view) + "\n")


def shown(value: object) -> str:
    """A table cell: empty for nothing, an instant as ISO 8601 to the second (as in the
    JSON), the text of anything else (an enum's value)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)
