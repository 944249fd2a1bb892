"""The Alembic migrations produce exactly the models' schema, on the configured backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect

from core.store import db, schema
from core.store.models import Base
from tests.integration.conftest import _throwaway_postgres

pytestmark = pytest.mark.integration


@pytest.fixture
def empty_engine(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """An empty database on the same backend as the session's."""
    if database_url.startswith("postgresql"):
        for url in _throwaway_postgres(database_url):
            engine = db.make_engine(url)
            yield engine
            engine.dispose()
    else:
        engine = db.make_engine(f"sqlite:///{tmp_path_factory.mktemp('migrations') / 'fresh.db'}")
        yield engine
        engine.dispose()


def test_migrations_produce_exactly_the_models_schema(empty_engine: Engine) -> None:
    schema.upgrade(empty_engine)

    with empty_engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []
    tables = set(inspect(empty_engine).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_upgrading_twice_is_harmless(empty_engine: Engine) -> None:
    schema.upgrade(empty_engine)
    schema.upgrade(empty_engine)
    with empty_engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() is not None
