"""Creating and upgrading the database: always through the Alembic migrations (§2)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from core.store import db


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", "core.store:migrations")
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine | None = None) -> None:
    """Bring the database to the newest schema (creating it when empty)."""
    engine = engine or db.engine()
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
