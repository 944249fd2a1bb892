"""An import file as ``herald import`` reads it (docs/imports.md): CSV or JSON, in UTF-8.

A row is one post: one another system published (``status`` published), or one to
schedule (``status`` scheduled). This module only reads: it turns the file into rows of
text fields, and names what is wrong with the file's shape (an unknown column, a value of
the wrong JSON type, a row with more cells than the header); ``core.services.imports``
checks what the rows say.

Row numbers are the ones a person finds the row by. In a CSV file the header is row 1
and the first post is row 2, as a spreadsheet numbers them (a quoted text with line
breaks is still one row; an empty row is counted and skipped). In a JSON file, an array
of objects, the first object is row 1.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.domain.errors import UserError


class Format(StrEnum):
    #: Comma-separated, a header row naming the columns.
    CSV = "csv"
    #: An array of objects with the same names as keys.
    JSON = "json"


#: Every column (CSV) or key (JSON) a row may have, in the order docs/imports.md gives them.
FIELDS = ("status", "channel", "text", "at", "zone", "fold", "url", "platform_id", "not_before", "needs_approval")
#: The columns a CSV file must have.
REQUIRED = ("status", "channel", "text", "at")
#: JSON only: a list in place of a one-value field (several channels, a thread's parts).
LISTS = {"channels": "channel", "parts": "text"}


@dataclass(frozen=True)
class RowProblem:
    """One thing wrong with one row: its number, the field, and why (with the fix)."""

    row: int
    field: str
    why: str


@dataclass(frozen=True)
class Row:
    """One row's fields as text: ``""`` where a field is empty or not given."""

    number: int
    #: Every field of :data:`FIELDS` but ``channel`` and ``text``; padding stripped.
    values: Mapping[str, str]
    #: ``channel`` (or JSON's ``channels``), each name stripped.
    channels: tuple[str, ...]
    #: ``text`` (or JSON's ``parts``), as written.
    parts: tuple[str, ...]
    #: The names the row gave them by, for its problems: ``channel`` or ``channels``...
    channel_field: str = "channel"
    text_field: str = "text"

    def value(self, name: str) -> str:
        return self.values.get(name, "")


@dataclass(frozen=True)
class ImportFile:
    """What a file holds: its rows, and the problems of its shape (those rows are left out)."""

    path: Path
    format: Format
    #: The rows whose shape is right.
    rows: tuple[Row, ...]
    problems: tuple[RowProblem, ...]
    #: Every row the file holds, empty rows not counted.
    count: int


def format_of(path: Path, given: Format | None = None) -> Format:
    """The file's format: ``given``, else its extension's.

    Raises:
        UserError: neither says.
    """
    if given is not None:
        return given
    try:
        return Format(path.suffix.lower().removeprefix("."))
    except ValueError:
        raise UserError(
            f"{path} is neither .csv nor .json: give its format with --format csv or --format json"
        ) from None


def read_import_file(path: Path, fmt: Format | None = None) -> ImportFile:
    """Read ``path``'s rows.

    Raises:
        UserError: the file cannot be read, is not UTF-8, is not CSV or JSON of the
            documented shape (the line or position named), or holds no row.
    """
    fmt = format_of(path, fmt)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's "CSV UTF-8" starts with a BOM
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path} is not UTF-8 (byte {exc.start + 1} is not UTF-8 text): save it as UTF-8 "
            '(a spreadsheet\'s "CSV UTF-8")'
        ) from None
    rows, problems, count = _csv_rows(path, text) if fmt is Format.CSV else _json_rows(path, text)
    if not count:
        raise UserError(f"{path} holds no rows to import (docs/imports.md shows the format)")
    return ImportFile(path, fmt, tuple(rows), tuple(problems), count)


def _row(number: int, fields: Mapping[str, Any], problems: list[RowProblem]) -> Row | None:
    """A row from its fields as given (CSV: text; JSON: text, lists, a number, true/false),
    or None with its problems added."""
    before = len(problems)

    def bad(field: str, why: str) -> None:
        problems.append(RowProblem(number, field, why))

    values: dict[str, str] = {}
    lists: dict[str, tuple[str, ...]] = {}
    for name, value in fields.items():
        if name in LISTS:
            single = LISTS[name]
            if fields.get(single) not in (None, ""):
                bad(name, f"give {single} or {name}, not both")
            elif not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                bad(name, f"must be a list of strings, e.g. {_example(name)}")
            else:
                lists[name] = tuple(value)
            continue
        if name not in FIELDS:
            bad(name, f"unknown field; a row has {', '.join(FIELDS)} (and in JSON channels, parts)")
            continue
        if value is None:
            continue
        if name == "fold" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        elif name == "needs_approval" and isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str):
            bad(name, "must be a string" + (", or 0 or 1" if name == "fold" else ""))
            continue
        values[name] = value
    for name, value in [*values.items(), *((n, item) for n, items in lists.items() for item in items)]:
        if "\x00" in value:
            bad(name, "holds a NUL character (\\u0000), which no text may")
    if len(problems) > before:
        return None
    channels = lists.get("channels") or ((values["channel"],) if values.get("channel", "").strip() else ())
    parts = lists.get("parts") or ((values["text"],) if "text" in values else ())
    return Row(
        number=number,
        values={k: v.strip() for k, v in values.items() if k not in ("channel", "text")},
        channels=tuple(name.strip() for name in channels),
        parts=parts,
        channel_field="channels" if "channels" in lists else "channel",
        text_field="parts" if "parts" in lists else "text",
    )


def _example(name: str) -> str:
    return '["n1", "x1"]' if name == "channels" else '["part 1", "part 2"]'


def _csv_rows(path: Path, text: str) -> tuple[list[Row], list[RowProblem], int]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        records = list(reader)
    except csv.Error as exc:
        raise UserError(f"{path}, line {reader.line_num}: {exc} (docs/imports.md shows the format)") from None
    if not records:
        raise UserError(f"{path} is empty: its first row names the columns ({', '.join(REQUIRED)}...)")
    header = [name.strip().lower() for name in records[0]]
    filled = [(number, cells) for number, cells in enumerate(records[1:], 2) if any(cell.strip() for cell in cells)]
    problems = _header_problems(header)
    if problems:
        return [], problems, len(filled)  # every row would be read wrong
    rows: list[Row] = []
    for number, cells in filled:  # an empty row, as spreadsheets leave them, is skipped
        extra = cells[len(header) :]
        if any(cell.strip() for cell in extra):
            problems.append(
                RowProblem(
                    number,
                    "row",
                    f"has {len(cells)} cells, the header {len(header)} columns: put a text that holds a comma "
                    'in double quotes ("like, this")',
                )
            )
            continue
        fields = dict(zip(header, cells, strict=False))
        row = _row(number, fields, problems)
        if row is not None:
            rows.append(row)
    return rows, problems, len(filled)


def _header_problems(header: Sequence[str]) -> list[RowProblem]:
    problems = []
    for i, name in enumerate(header):
        if name not in FIELDS:
            shown = name or f"column {i + 1}"
            problems.append(RowProblem(1, shown, f"unknown column; the columns are {', '.join(FIELDS)}"))
        elif name in header[:i]:
            problems.append(RowProblem(1, name, "is named twice: keep one such column"))
    for name in REQUIRED:
        if name not in header:
            problems.append(RowProblem(1, name, f"missing column: the header needs {', '.join(REQUIRED)}"))
    return problems


def _json_rows(path: Path, text: str) -> tuple[list[Row], list[RowProblem], int]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    if not isinstance(data, list):
        raise UserError(f"{path}: an import is a JSON array of objects, one per post (docs/imports.md)")
    rows: list[Row] = []
    problems: list[RowProblem] = []
    for number, item in enumerate(data, 1):
        if not isinstance(item, dict):
            problems.append(RowProblem(number, "row", 'is not an object: write each post as {"status": ...}'))
            continue
        row = _row(number, item, problems)
        if row is not None:
            rows.append(row)
    return rows, problems, len(data)
