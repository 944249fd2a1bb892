"""Bad configuration and bad input, as a new user meets them: real ``herald`` processes, one
line that names the problem and the fix, exit code 2, no traceback, and nothing changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from core.config import Settings
from core.domain.states import DeliveryStatus, Reason
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.posts import create_post, show_post
from core.store import db
from core.store.models import Account, Channel, Delivery
from tests.integration.conftest import ROOT, Sandbox

pytestmark = pytest.mark.integration


def herald_cmd(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``herald ARGS`` with ``env`` over the test's environment, in an 80-column terminal:
    a refusal must stay on one line even there."""
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command printed, without its ``error: ``."""
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: "), line
    return line.removeprefix("error: ")


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


def counts() -> dict[str, int]:
    with db.reading() as s:
        return {
            "accounts": s.execute(select(func.count()).select_from(Account)).scalar_one(),
            "channels": s.execute(select(func.count()).select_from(Channel)).scalar_one(),
        }


# -- plugins.toml ---------------------------------------------------------------------------


@pytest.fixture
def plugins_toml(herald: Settings, tmp_path: Path) -> Path:
    return tmp_path / "plugins.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[adapters.sandbox-native]\nenabled = "false"\n',
            'adapters.sandbox-native.enabled = "false" is not a boolean; write enabled = true or enabled = false, '
            "without quotes",
        ),
        (
            "[adapters]\nsandbox-native = true\n",
            "adapters.sandbox-native = true is not a table; write [adapters.sandbox-native] with enabled = true "
            "under it",
        ),
        (
            "adapters = 3\n",
            "adapters = 3 is not a table; write it as [adapters.NAME] tables, e.g. [adapters.sandbox-native]",
        ),
        (
            '[adapters.sandbox-native]\n[alarms.webhook]\nurl = "example.org/hook"\n',
            'alarms.webhook.url = "example.org/hook" is not an http(s) URL; write the full address, '
            'e.g. url = "https://example.org/hooks/herald"',
        ),
    ],
    ids=["enabled-string", "entry-not-a-table", "adapters-not-a-table", "webhook-not-a-url"],
)
def test_a_plugins_toml_mistake_is_one_line_naming_the_file_the_key_and_the_fix(
    plugins_toml: Path, sandbox_url: str, text: str, message: str
) -> None:
    plugins_toml.write_text(text)
    env = {"HERALD_PLUGINS_TOML": str(plugins_toml)}

    assert refusal(herald_cmd("adapters", **env)) == f"{plugins_toml}: {message}"
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "c", "--set", f"base_url={sandbox_url}", **env
    )
    assert refusal(added) == f"{plugins_toml}: {message}"
    assert counts()["channels"] == 0


def test_a_worker_refuses_to_start_on_a_broken_plugins_toml_before_it_takes_a_job(plugins_toml: Path) -> None:
    plugins_toml.write_text('[adapters.sandbox-native]\nenabled = "yes"\n')
    result = herald_cmd("worker", "--burst", "--no-scheduler", HERALD_PLUGINS_TOML=str(plugins_toml))
    assert refusal(result).startswith(f'{plugins_toml}: adapters.sandbox-native.enabled = "yes" is not a boolean')


def test_a_plugins_toml_that_is_named_but_missing_is_an_error_naming_it(plugins_toml: Path) -> None:
    result = herald_cmd("adapters", HERALD_PLUGINS_TOML=str(plugins_toml))
    assert refusal(result) == (
        f"HERALD_PLUGINS_TOML={plugins_toml}: does not exist; point it at your plugins.toml, or unset it to use "
        "./plugins.toml (without one, every adapter is enabled)"
    )


def test_an_unknown_adapter_in_plugins_toml_is_reported_in_one_line_naming_the_loaded_ones(
    plugins_toml: Path,
) -> None:
    plugins_toml.write_text("[adapters.sandbox-nativ]\nenabled = true\n[adapters.sandbox-none]\nenabled = true\n")
    result = herald_cmd("adapters", "--json", HERALD_PLUGINS_TOML=str(plugins_toml))
    listed = {row["name"]: row["enabled"] for row in json.loads(ok(result))}
    assert listed["sandbox-native"] is False and listed["sandbox-none"] is True
    assert [name for name, enabled in listed.items() if enabled] == ["sandbox-none"]
    loaded = ", ".join(sorted(listed))
    (line,) = [line for line in result.stderr.splitlines() if "names no adapter" in line]
    assert line.endswith(
        f"{plugins_toml}: [adapters.sandbox-nativ] names no adapter herald has loaded (loaded: {loaded}); "
        "did you mean [adapters.sandbox-native]? fix the name, or install the "
        "plugin that provides it"
    )


# -- the database URL -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [("mysql://herald:s3cret@db/herald", "mysql://herald:***@db/herald"), ("garbage", "garbage")],
)
@pytest.mark.parametrize("command", [["init"], ["channel", "list"]])
def test_a_database_url_herald_does_not_speak_is_one_line(
    herald: Settings, url: str, shown: str, command: list[str]
) -> None:
    assert refusal(herald_cmd(*command, HERALD_DATABASE_URL=url)) == (
        f"HERALD_DATABASE_URL={shown!r}: herald speaks sqlite:///PATH (e.g. sqlite:///herald.db) and "
        "postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE URLs"
    )


@pytest.mark.parametrize("command", [["init"], ["channel", "list"], ["post", "show", "1"]])
def test_a_sqlite_directory_that_does_not_exist_is_named_with_the_fix_even_by_init(
    herald: Settings, tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    message = refusal(herald_cmd(*command, HERALD_DATABASE_URL=f"sqlite:///{missing}/herald.db"))
    assert message == (
        f"the directory {missing} of the SQLite database {missing}/herald.db does not exist: "
        f"create it (mkdir -p {missing}) or point HERALD_DATABASE_URL elsewhere"
    )
    assert not (tmp_path / "no").exists()


def test_an_empty_database_is_told_to_run_init_and_init_makes_it_ready(herald: Settings, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/fresh.db"
    assert refusal(herald_cmd("channel", "list", HERALD_DATABASE_URL=url)) == (
        f"the database {url} has no herald tables yet: run `herald init`"
    )
    key = Path(herald.home) / "secret.key"
    assert ok(herald_cmd("init", HERALD_DATABASE_URL=url)).split() == [
        *f"database ready: {url}".split(),
        *f"channel settings sealed with the key in {key} (back it up)".split(),
    ]
    assert ok(herald_cmd("channel", "list", "--json", HERALD_DATABASE_URL=url)).strip() == "[]"


@pytest.mark.parametrize("command", [["init"], ["channel", "list"]])
def test_an_unreachable_postgresql_is_named_with_its_password_masked(herald: Settings, command: list[str]) -> None:
    url = "postgresql://herald:s3cret@127.0.0.1:1/herald"  # nothing listens on port 1
    message = refusal(herald_cmd(*command, HERALD_DATABASE_URL=url))
    assert message.startswith("PostgreSQL at postgresql://herald:***@127.0.0.1:1/herald is unreachable (")
    assert message.endswith("): check that the server runs and that HERALD_DATABASE_URL names it")
    assert "s3cret" not in message and "herald init" not in message


@pytest.mark.skipif(
    not os.environ.get("HERALD_DATABASE_URL", "").startswith("postgresql"), reason="needs a PostgreSQL server"
)
def test_a_postgresql_that_refuses_the_database_or_the_user_says_which(herald: Settings) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(herald.database_url).set(database="herald_no_such_db").render_as_string(hide_password=False)
    message = refusal(herald_cmd("init", HERALD_DATABASE_URL=url))
    assert "has no database 'herald_no_such_db': create it (createdb herald_no_such_db)" in message
    stranger = make_url(herald.database_url).set(username="herald_nobody", password="s3cret")
    message = refusal(herald_cmd("init", HERALD_DATABASE_URL=stranger.render_as_string(hide_password=False)))
    assert "herald_nobody:***@" in message and "refused the connection" in message and "s3cret" not in message


# -- accounts -------------------------------------------------------------------------------


def test_account_status_of_an_unknown_account_is_refused_not_created(herald: Settings, sandbox_url: str) -> None:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url}, account="acme")
    before = counts()
    assert refusal(herald_cmd("account", "status", "nosuchaccount", "unpaid")) == (
        "no account named 'nosuchaccount' (accounts: acme); an account is made with its first channel: "
        "`herald channel add --account NAME ...`"
    )
    assert counts() == before
    assert ok(herald_cmd("account", "status", "acme", "unpaid")).strip() == "account acme: unpaid"


# -- channel add ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--set", "token=t"],
            "a sandbox-none channel needs base_url (the sandbox platform's address, where `herald sandbox serve` "
            "listens): add --set base_url=http://127.0.0.1:8025",
        ),
        (
            ["--set", "base_url=http://127.0.0.1:8025", "--set", "tokne=t"],
            "sandbox-none has no channel setting 'tokne'; did you mean token? its settings are base_url, token, "
            "resend_in_doubt, precheck, rate",
        ),
        (
            ["--set", "base_url=127.0.0.1:8025"],
            "--set base_url='127.0.0.1:8025' is not an http(s) URL: the sandbox platform's address, where "
            "`herald sandbox serve` listens; give it as --set base_url=http://127.0.0.1:8025",
        ),
        (
            ["--set", "base_url=http://127.0.0.1:8025", "--set", "resend_in_doubt=maybe"],
            "--set resend_in_doubt='maybe' is not true or false",
        ),
    ],
    ids=["missing-required", "typo", "invalid-url", "invalid-boolean"],
)
def test_channel_add_refuses_settings_the_adapter_cannot_work_with(
    herald: Settings, extra: list[str], message: str
) -> None:
    result = herald_cmd("channel", "add", "--platform", "sandbox-none", "--name", "c1", "--account", "new", *extra)
    assert refusal(result).startswith(message)
    assert counts() == {"accounts": 0, "channels": 0}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "a channel needs a name that is not blank: give --name NAME"),
        ("  ", "a channel needs a name that is not blank: give --name NAME"),
        ("n1 ", "channel name 'n1 ' starts or ends with a space: give --name 'n1'"),
    ],
)
def test_channel_add_refuses_a_blank_name(herald: Settings, sandbox_url: str, name: str, message: str) -> None:
    result = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", name, "--set", f"base_url={sandbox_url}"
    )
    assert refusal(result) == message
    assert counts()["channels"] == 0


# -- channel edit and list: secrets never printed --------------------------------------------


def test_channel_edit_sets_and_unsets_without_printing_a_secret(herald: Settings, sandbox_url: str) -> None:
    secret = "sk-live-9f8e7d6c5b4a"
    add_channel("e1", "sandbox-none", {"base_url": sandbox_url, "resend_in_doubt": "true"})

    edited = herald_cmd("channel", "edit", "e1", "--set", f"token={secret}", "--unset", "resend_in_doubt")
    assert ok(edited).strip() == "channel e1: set token; unset resend_in_doubt"
    as_json = herald_cmd("channel", "edit", "e1", "--set", f"token={secret}", "--json")
    listed = herald_cmd("channel", "list")
    listed_json = herald_cmd("channel", "list", "--json")
    for result in (edited, as_json, listed, listed_json):
        assert secret[:-4] not in ok(result) + result.stderr
    assert json.loads(as_json.stdout)["channel"]["settings"] == {"base_url": sandbox_url, "token": "••••5b4a"}
    assert json.loads(listed_json.stdout)[0]["settings"] == {"base_url": sandbox_url, "token": "••••5b4a"}
    assert "token=••••5b4a" in listed.stdout


def test_channel_edit_refusals_never_echo_a_secret_and_change_nothing(herald: Settings, sandbox_url: str) -> None:
    add_channel("e2", "sandbox-native", {"base_url": sandbox_url, "token": "old-token-1234"})
    assert refusal(herald_cmd("channel", "edit", "e2", "--set", "tokn=new-secret-5678")) == (
        "sandbox-native has no channel setting 'tokn'; did you mean token? its settings are base_url, token, "
        "resend_in_doubt, precheck, rate"
    )
    assert refusal(herald_cmd("channel", "edit", "e2", "--unset", "base_url")).startswith(
        "a sandbox-native channel needs base_url"
    )
    assert refusal(herald_cmd("channel", "edit", "nope", "--set", "token=x")) == (
        "no channel named 'nope'; `herald channel list` shows them"
    )
    with db.reading() as s:
        assert s.execute(select(Channel.settings)).scalar_one() == {"base_url": sandbox_url, "token": "old-token-1234"}


# -- channel remove -------------------------------------------------------------------------


def deliveries_by_status() -> dict[str, int]:
    with db.reading() as s:
        rows = s.execute(select(Delivery.status, func.count()).group_by(Delivery.status)).all()
        return {str(status): n for status, n in rows}


def test_channel_remove_is_refused_with_counts_then_cancel_pending_removes_it(
    herald: Settings, sandbox_url: str, clock: ManualClock
) -> None:
    channel_id = add_channel("r1", "sandbox-native", {"base_url": sandbox_url})
    first = create_post(channels=["r1"], parts=["one"], needs_approval=True)
    job.publish_post(first)  # held: approval_pending
    second = create_post(channels=["r1"], parts=["two"], needs_approval=True)

    assert refusal(herald_cmd("channel", "remove", "r1")) == (
        f"channel r1 has 2 deliveries not finished (1 held, 1 pending; posts {first}, {second}): wait for them, "
        "or cancel them with `herald channel remove r1 --cancel-pending`"
    )
    assert deliveries_by_status() == {"held": 1, "pending": 1} and counts()["channels"] == 1

    removed = herald_cmd("channel", "remove", "r1", "--cancel-pending")
    assert ok(removed).strip() == (
        f"channel r1 removed; cancelled its deliveries of 2 post(s); its posts' history shows it as "
        f"'r1 (removed #{channel_id})'"
    )
    assert deliveries_by_status() == {"cancelled": 2}
    assert str(show_post(first).status) == "cancelled"
    assert json.loads(ok(herald_cmd("channel", "list", "--json"))) == []
    assert refusal(herald_cmd("post", "create", "--channel", "r1", "--text", "x")).startswith("no channel named r1")


def test_channel_remove_of_an_unused_channel_deletes_it(herald: Settings, sandbox_url: str) -> None:
    add_channel("unused", "sandbox-native", {"base_url": sandbox_url})
    assert ok(herald_cmd("channel", "remove", "unused", "--json")) == (
        json.dumps({"name": "unused", "cancelled": [], "kept_as": None}, indent=2) + "\n"
    )
    assert counts()["channels"] == 0


def test_channel_remove_cancel_pending_is_refused_for_an_attempt_in_doubt(
    herald: Settings, sandbox_url: str, clock: ManualClock, platform: Sandbox
) -> None:
    add_channel("doubt", "sandbox-none", {"base_url": sandbox_url})
    post_id = create_post(channels=["doubt"], parts=["may have landed"])
    platform.faults(error_after_accept=1.0, times=1, strategies=["none"])
    job.publish_post(post_id)
    (delivery,) = show_post(post_id).deliveries
    assert delivery.reason is Reason.AMBIGUOUS_OUTCOME

    message = refusal(herald_cmd("channel", "remove", "doubt", "--cancel-pending"))

    assert message.startswith(f"post {post_id} has an attempt in doubt on doubt (a part is 'sending'")
    assert f"`herald post resolve {post_id} --channel doubt landed --url URL`" in message
    assert deliveries_by_status() == {str(DeliveryStatus.HELD): 1} and counts()["channels"] == 1
