"""The text of a post's parts as one SQL expression, for searching it in the database.

``posts.parts`` holds the authoring copy as JSON (``[{"text": ..., "media": [...]}, ...]``).
Searching the JSON's own text would match its keys and miss every non-ASCII letter (the
serializer writes ``é`` as ``\\u00e9``), so the expression unpacks the array with the
database's JSON functions and joins the parts' texts, one line each. It is one construct
compiled once per dialect, so the query that uses it is written once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement


class parts_text(FunctionElement[str]):
    """``parts_text(Post.parts)``: every part's text, joined by newlines (NULL for no parts)."""

    type = Text()
    inherit_cache = True


@compiles(parts_text, "sqlite")
def _sqlite(element: parts_text, compiler: SQLCompiler, **kw: Any) -> str:
    (column,) = element.clauses
    return (
        "(SELECT group_concat(json_extract(part.value, '$.text'), char(10)) "
        f"FROM json_each({compiler.process(column, **kw)}) AS part)"
    )


@compiles(parts_text, "postgresql")
def _postgresql(element: parts_text, compiler: SQLCompiler, **kw: Any) -> str:
    (column,) = element.clauses
    return (
        "(SELECT string_agg(part ->> 'text', chr(10)) "
        f"FROM json_array_elements({compiler.process(column, **kw)}) AS part)"
    )
