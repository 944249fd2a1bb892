"""Channel credentials sealed at rest (§9): a token given at `channel add` is nowhere in
clear – not in the database, its files, `channel list --json` or a worker's output – and the
key can be rotated. Real SQL, a real worker process, the sandbox over HTTP."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from cryptography.fernet import Fernet, InvalidToken

from core.config import Settings
from core.domain.errors import ConfigError
from core.services.channels import add_channel, show_channels
from core.services.posts import create_post
from core.services.secrets import rotate
from core.store import db, schema, sealing
from tests.integration.conftest import Sandbox, Workers, post_json, wait_until
from tests.integration.test_cli import herald_cmd
from tests.integration.test_migrations import empty_engine  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration

TOKEN = "tok-sealed-0123456789abcdef"


def stored_settings() -> list[str]:
    """The channels' settings as the database holds them."""
    raw = sa.table("channels", sa.column("settings", sa.Text()))
    with db.engine().connect() as conn:
        return [row.settings for row in conn.execute(sa.select(raw.c.settings))]


def database_bytes(herald: Settings) -> bytes:
    """Every byte the database keeps: the SQLite files, or PostgreSQL's rows as text."""
    if herald.database_url.startswith("sqlite"):
        path = Path(herald.database_url.removeprefix("sqlite:///"))
        # Read by another process: closing a descriptor of the database file in this one
        # would drop every POSIX lock SQLite holds on it here (sqlite.org/howtocorrupt.html).
        files = [str(p) for p in path.parent.glob(path.name + "*")]
        return subprocess.run(["cat", *files], capture_output=True, check=True).stdout
    with db.engine().connect() as conn:
        tables = [t for t in sa.inspect(conn).get_table_names()]
        return "".join(
            str(row) for table in tables for row in conn.execute(sa.text(f'SELECT t::text FROM "{table}" t'))
        ).encode()


def test_a_token_given_at_channel_add_is_nowhere_in_clear(
    herald: Settings, sandbox_url: str, platform: Sandbox, workers: Workers
) -> None:
    added = herald_cmd(
        "channel",
        "add",
        "--platform",
        "sandbox-native",
        "--name",
        "s1",
        "--set",
        f"base_url={sandbox_url}",
        "--set",
        f"token={TOKEN}",
    )
    assert added.returncode == 0, added.stderr
    post_id = create_post(channels=["s1"], parts=["sealed"])
    workers.start()
    wait_until(lambda: post_json(post_id)["status"] == "published")
    assert platform.posts()[0]["token"] == TOKEN  # the platform got it: herald opened it to post

    listed = herald_cmd("channel", "list", "--json")
    shown = herald_cmd("channel", "list")
    assert TOKEN not in listed.stdout + shown.stdout + added.stdout + added.stderr
    assert json.loads(listed.stdout)[0]["settings"]["token"].startswith(sealing_mask())
    assert TOKEN.encode() not in database_bytes(herald)
    assert all(s.startswith("gAAAA") for s in stored_settings())  # Fernet tokens
    logs = b"".join(p.read_bytes() for p in Path(herald.home).glob("*.log"))
    assert logs and TOKEN.encode() not in logs


def sealing_mask() -> str:
    from core.services.channels import MASK

    return MASK


def test_the_key_file_is_made_owner_only_and_init_says_where(herald: Settings) -> None:
    done = herald_cmd("init")
    assert done.returncode == 0, done.stderr
    path = Path(herald.home) / "secret.key"
    assert f"sealed with the key in {path}" in done.stdout.replace("\n", "")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_rotating_the_key_seals_every_channel_again_and_drops_the_old_key(herald: Settings, sandbox_url: str) -> None:
    add_channel("s1", "sandbox-native", {"base_url": sandbox_url, "token": TOKEN})
    old_key = sealing.key_file().read_text().strip()
    (before,) = stored_settings()

    done = rotate()

    new_key = sealing.key_file().read_text().strip()
    (after,) = stored_settings()
    assert done.channels == 1 and new_key != old_key and "\n" not in new_key
    assert after != before
    with pytest.raises(InvalidToken):
        Fernet(old_key.encode()).decrypt(after.encode())  # the old key opens nothing now
    assert show_channels()[0].settings["base_url"] == sandbox_url  # read with the new one


def test_keys_from_the_environment_and_a_wrong_key_said_plainly(
    herald: Settings, sandbox_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Fernet.generate_key().decode()
    monkeypatch.setenv(sealing.ENV, first)
    add_channel("s1", "sandbox-native", {"base_url": sandbox_url, "token": TOKEN})
    assert not sealing.key_file().exists()  # the variable's key, no file
    with pytest.raises(ConfigError, match="holds one key: put a new one first"):
        rotate()

    monkeypatch.setenv(sealing.ENV, Fernet.generate_key().decode())  # not the one they were sealed with
    with pytest.raises(ConfigError, match="sealed with another secret key than this one"):
        show_channels()
    refused = herald_cmd("channel", "list")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr

    newer = Fernet.generate_key().decode()
    monkeypatch.setenv(sealing.ENV, f"{newer},{first}")
    done = rotate()
    assert done.where == sealing.ENV and "drop the others" in (done.then or "")
    monkeypatch.setenv(sealing.ENV, newer)
    assert show_channels()[0].settings["base_url"] == sandbox_url


def test_the_migration_seals_channels_stored_in_clear(empty_engine: sa.Engine, herald: Settings) -> None:  # noqa: F811
    cfg = schema.alembic_config(empty_engine)
    with empty_engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")
        conn.execute(
            sa.text(
                "INSERT INTO accounts (name, status, emergency_stop, created_at) "
                "VALUES ('a', 'active', false, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO channels (account_id, name, platform, settings, connected, created_at) "
                "VALUES (1, 'old', 'sandbox-native', :s, true, CURRENT_TIMESTAMP)"
            ),
            {"s": json.dumps({"base_url": "http://127.0.0.1:1", "token": TOKEN})},
        )
    schema.upgrade(empty_engine)
    with empty_engine.connect() as conn:
        (stored,) = conn.execute(sa.text("SELECT settings FROM channels")).scalars()
    assert TOKEN not in stored
    assert sealing.unseal(stored) == {"base_url": "http://127.0.0.1:1", "token": TOKEN}
