"""What is wrong when the database refuses, in one line that names the fix.

A driver's error says what failed ("unable to open database file", "connection refused");
people need to know which of their settings to change. Only a database that answers
but has no herald tables is told to run ``herald init``: a missing directory or an
unreachable server would only fail the same way there.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from core.config import masked_url

#: PostgreSQL's SQLSTATE for a table that does not exist.
_UNDEFINED_TABLE = "42P01"


def database_problem(exc: DBAPIError, url: str, *, initialising: bool = False) -> str:
    """One line saying what is wrong with the database at ``url`` and how to fix it.

    Args:
        exc: what the driver raised.
        url: the configured database URL (its password is never shown).
        initialising: the error came from ``herald init`` itself, which is never told to
            run ``herald init``.
    """
    shown = masked_url(url)
    said = _first_line(exc.orig)
    if not initialising and _no_tables(exc):
        return f"the database {shown} has no herald tables yet: run `herald init`"
    if url.startswith("sqlite"):
        return _sqlite_problem(url, shown, said)
    if exc.connection_invalidated or _connecting(said):
        database = _database_name(url)
        if database and f'database "{database}" does not exist' in said:
            return (
                f"PostgreSQL at {shown} has no database {database!r}: create it (createdb {database}) "
                "or point HERALD_DATABASE_URL at one that exists"
            )
        if "FATAL:" in said:  # the server answered, and refused (credentials, role, access)
            return f"PostgreSQL at {shown} refused the connection ({said}): fix HERALD_DATABASE_URL"
        return (
            f"PostgreSQL at {shown} is unreachable ({said}): check that the server runs and that "
            "HERALD_DATABASE_URL names it"
        )
    return f"the database {shown} refused: {said}"


def _sqlite_problem(url: str, shown: str, said: str) -> str:
    path = _database_name(url)
    if path and not Path(path).parent.is_dir():
        directory = Path(path).parent
        return (
            f"the directory {directory} of the SQLite database {path} does not exist: "
            f"create it (mkdir -p {directory}) or point HERALD_DATABASE_URL elsewhere"
        )
    if "unable to open database file" in said:
        return (
            f"cannot open the SQLite database {path or shown} ({said}): it must be a file herald may write, "
            "in a directory it may write; or point HERALD_DATABASE_URL elsewhere"
        )
    if "file is not a database" in said:
        return f"{path} is not a SQLite database: point HERALD_DATABASE_URL at herald's database, or at a new file"
    return f"the SQLite database {path or shown} refused: {said}"


def _no_tables(exc: DBAPIError) -> bool:
    if getattr(exc.orig, "sqlstate", None) == _UNDEFINED_TABLE:
        return True
    return "no such table" in str(exc.orig)


def _connecting(said: str) -> bool:
    return said.startswith(("connection failed", "connection to server")) or "could not connect" in said


def _database_name(url: str) -> str | None:
    try:
        return make_url(url).database
    except ArgumentError:
        return None


def _first_line(error: BaseException | None) -> str:
    text = str(error or "").strip()
    first = text.splitlines()[0] if text else "no detail"
    return first.removeprefix("connection failed: ")
