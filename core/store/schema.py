"""Creating and upgrading the database: always through the Alembic migrations (§2)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine

from core.domain.errors import ConfigError
from core.store import db


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", "core.store:migrations")
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine | None = None) -> None:
    """Bring the database to the newest schema (creating it when empty).

    Raises:
        ConfigError: on SQLite, the migrated rows break a foreign key (nothing is changed).
    """
    engine = engine or db.engine()
    cfg = alembic_config(engine)
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            # SQLite changes a constraint by copying the table and dropping the old one, and
            # with foreign keys enforced that drop fails while another table's rows refer to
            # it (sqlite.org/lang_altertable.html, "other kinds of table schema changes").
            # The pragma is a no-op inside a transaction: it is set on the driver's
            # connection before the migrations' one, and the keys are checked at its end.
            _foreign_keys(conn, on=False)
        try:
            with conn.begin():
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall() if sqlite else []
                if broken:
                    raise ConfigError(
                        f"the migrations left {len(broken)} row(s) that break a foreign key "
                        f"(first: {tuple(broken[0])}): nothing was changed; report it with the database's backup"
                    )
        finally:
            if sqlite:
                _foreign_keys(conn, on=True)


def _foreign_keys(conn: Connection, *, on: bool) -> None:
    driver = conn.connection.driver_connection
    assert driver is not None  # a connection checked out of the pool has its driver's
    cursor = driver.cursor()
    try:
        cursor.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    finally:
        cursor.close()
