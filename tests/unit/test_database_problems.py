"""When the database refuses, the answer says what is wrong and which setting fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.store.db import make_engine
from core.store.diagnosis import database_problem


def failure(url: str) -> DBAPIError:
    engine = make_engine(url)
    try:
        with pytest.raises(DBAPIError) as caught, engine.connect() as conn:
            conn.execute(text("SELECT id FROM channels"))
    finally:
        engine.dispose()
    return caught.value


def test_a_sqlite_file_in_a_directory_that_does_not_exist_says_so_and_how_to_fix_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nowhere/herald.db"
    expected = (
        f"the directory {tmp_path}/nowhere of the SQLite database {tmp_path}/nowhere/herald.db does not exist: "
        f"create it (mkdir -p {tmp_path}/nowhere) or point HERALD_DATABASE_URL elsewhere"
    )
    assert database_problem(failure(url), url) == expected
    assert database_problem(failure(url), url, initialising=True) == expected


def test_a_database_without_herald_tables_is_told_to_run_init_but_init_itself_is_not(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/empty.db"
    exc = failure(url)
    assert database_problem(exc, url) == f"the database {url} has no herald tables yet: run `herald init`"
    assert "herald init" not in database_problem(exc, url, initialising=True)


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database, only some text that is long enough" * 20)
    url = f"sqlite:///{tmp_path}/notes.txt"
    assert database_problem(failure(url), url) == (
        f"{tmp_path}/notes.txt is not a SQLite database: point HERALD_DATABASE_URL at herald's database, "
        "or at a new file"
    )


def test_an_unreachable_postgresql_is_named_with_its_password_masked() -> None:
    url = "postgresql://herald:s3cret@127.0.0.1:1/herald"  # port 1: nothing listens
    message = database_problem(failure(url), url)
    assert message.startswith("PostgreSQL at postgresql://herald:***@127.0.0.1:1/herald is unreachable (")
    assert message.endswith("): check that the server runs and that HERALD_DATABASE_URL names it")
    assert "s3cret" not in message and "herald init" not in message and "\n" not in message
