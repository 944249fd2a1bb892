"""API keys (§15): shown once, stored hashed, scoped to one account and a role, expiring
and revocable; and one-time login links. Real SQL; the CLI as a real process."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa

from core.config import Settings
from core.domain.errors import NotFound, Unauthenticated, UserError
from core.domain.roles import Action, Role, allows
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.keys import (
    authenticate,
    create_key,
    list_keys,
    login_link,
    principal_of,
    redeem_login_link,
    revoke_key,
)
from core.store import db
from tests.integration.test_cli import herald_cmd
from tests.integration.test_secrets import database_bytes

pytestmark = pytest.mark.integration


@pytest.fixture
def accounts(herald: Settings, sandbox_url: str) -> None:
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url}, account="acme")
    add_channel("b1", "sandbox-native", {"base_url": sandbox_url}, account="bravo")


def test_a_key_acts_as_its_account_and_role_and_only_its_hash_is_kept(accounts: None, herald: Settings) -> None:
    made = create_key("acme", Role.SUPPORT, name="the support desk")
    who = authenticate(made.secret)

    assert (who.account, who.role, who.key_id) == ("acme", Role.SUPPORT, made.key.id)
    assert made.secret.startswith(made.key.prefix + "_")
    assert made.secret.encode() not in database_bytes(herald)
    _, _, secret = made.secret.split("_", 2)
    assert secret.encode() not in database_bytes(herald)
    assert [k.name for k in list_keys("acme")] == ["the support desk"] and list_keys("bravo") == []


@pytest.mark.parametrize(
    "given",
    ["", "hk_", "bearer-token", "hk_nosuchprefix_secret", "sk_abc_def"],
)
def test_anything_but_a_known_key_is_unauthenticated(accounts: None, given: str) -> None:
    create_key("acme", Role.ADMIN)
    with pytest.raises(Unauthenticated):
        authenticate(given)


def test_a_right_prefix_with_a_wrong_secret_is_refused(accounts: None) -> None:
    made = create_key("acme", Role.ADMIN)
    with pytest.raises(Unauthenticated, match="unknown API key"):
        authenticate(made.secret[:-2] + ("aa" if not made.secret.endswith("aa") else "bb"))


def test_an_expired_key_and_a_revoked_key_are_refused_saying_which(accounts: None, clock: ManualClock) -> None:
    expiring = create_key("acme", Role.VIEWER, expires_in=timedelta(hours=1), clock=clock)
    revoked = create_key("acme", Role.VIEWER, clock=clock)
    assert authenticate(expiring.secret, clock=clock).role is Role.VIEWER

    clock.advance(3601)
    revoke_key(revoked.key.id, clock=clock)

    with pytest.raises(Unauthenticated, match="expired"):
        authenticate(expiring.secret, clock=clock)
    with pytest.raises(Unauthenticated, match="revoked"):
        authenticate(revoked.secret, clock=clock)
    with pytest.raises(Unauthenticated, match="revoked"):
        principal_of(revoked.key.id, clock=clock)  # a dashboard login made with it ends too


def test_a_key_cannot_revoke_another_accounts_key(accounts: None) -> None:
    theirs = create_key("bravo", Role.ADMIN)
    mine = authenticate(create_key("acme", Role.ADMIN).secret)
    with pytest.raises(NotFound):
        revoke_key(theirs.key.id, account_id=mine.account_id)
    assert authenticate(theirs.secret).account == "bravo"


def test_bad_input_is_refused_in_one_line(accounts: None) -> None:
    with pytest.raises(NotFound, match="no account named 'nobody'"):
        create_key("nobody", Role.ADMIN)
    with pytest.raises(UserError, match="future"):
        create_key("acme", Role.ADMIN, expires_in=timedelta(0))


def test_a_login_link_opens_once_and_only_before_it_expires(accounts: None, clock: ManualClock) -> None:
    key = create_key("acme", Role.MANAGER, clock=clock).key
    token = login_link(key.id, clock=clock)
    assert redeem_login_link(token, clock=clock).key_id == key.id
    with pytest.raises(Unauthenticated, match="used or expired"):
        redeem_login_link(token, clock=clock)

    late = login_link(key.id, clock=clock)
    clock.advance(11 * 60)
    with pytest.raises(Unauthenticated, match="used or expired"):
        redeem_login_link(late, clock=clock)
    with db.engine().connect() as conn:  # only hashes are kept
        kept = conn.execute(sa.text("SELECT token_sha256 FROM login_links")).scalars().all()
    assert token not in kept and late not in kept and len(kept) == 2


def test_roles_allow_what_the_issue_says() -> None:
    assert all(allows(Role.ADMIN, a) for a in Action)
    assert {a for a in Action if allows(Role.MANAGER, a)} == {Action.READ, Action.SCHEDULE}
    assert {a for a in Action if allows(Role.SUPPORT, a)} == {Action.READ, Action.SUPPORT}
    assert {a for a in Action if allows(Role.VIEWER, a)} == {Action.READ}


def test_the_cli_shows_a_key_once_and_never_again(accounts: None) -> None:
    made = herald_cmd("keys", "create", "--account", "acme", "--role", "support", "--expires", "30d")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert authenticate(secret).role is Role.SUPPORT
    assert "shown once" in made.stderr

    listed = herald_cmd("keys", "list", "--json")
    shown = herald_cmd("keys", "list")
    revoked = herald_cmd("keys", "revoke", str(authenticate(secret).key_id))
    assert listed.returncode == shown.returncode == revoked.returncode == 0
    _, _, part = secret.split("_", 2)
    assert part not in listed.stdout + shown.stdout + revoked.stdout
    (row,) = json.loads(listed.stdout)
    assert (row["account"], row["role"], row["revoked_at"]) == ("acme", "support", None)
    assert row["expires_at"] is not None
    with pytest.raises(Unauthenticated):
        authenticate(secret)

    wrong = herald_cmd("keys", "create", "--account", "acme", "--role", "owner")
    assert wrong.returncode == 2 and "no role 'owner'" in wrong.stderr and "Traceback" not in wrong.stderr
