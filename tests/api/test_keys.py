"""Key management over HTTP (§15), for an account's admins: its keys listed without their
secrets, a key made with its secret answered once, a key revoked – itself too – and never
another account's. A key's secret, once shown, is in no later answer, log line or row."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from core.cli.logs import TEXT, JsonLines
from core.domain.roles import Role
from core.runtime.clock import DatabaseClock
from core.services.keys import list_keys
from core.store import db
from core.store.models import ApiKey
from tests.api.conftest import TestClient, World

pytestmark = pytest.mark.integration

#: What a listed key carries; never ``secret`` nor ``secret_sha256``.
KEY_FIELDS = {"id", "account", "role", "name", "prefix", "created_at", "expires_at", "revoked_at", "last_used_at"}


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _code(answer: Any) -> str:
    return str(answer.json()["error"]["code"])


def test_an_admin_lists_its_accounts_keys_without_their_secrets(world: World, client: TestClient) -> None:
    listed = client.get("/api/v1/keys", headers=world.auth(Role.ADMIN))
    assert listed.status_code == 200, listed.text
    keys = listed.json()
    assert {k["account"] for k in keys} == {"alpha"}
    assert len(keys) == len(list_keys("alpha")) == len(Role) + 1  # beta's key is not listed
    assert all(set(k) == KEY_FIELDS for k in keys)
    assert all(k["prefix"].startswith("hk_") for k in keys)
    for secret in world.keys.values():
        assert secret.split("_", 2)[2] not in listed.text
    for role in (Role.MANAGER, Role.SUPPORT, Role.VIEWER):
        assert _code(client.get("/api/v1/keys", headers=world.auth(role))) == "forbidden"


def test_an_admin_makes_a_key_for_its_own_account_only(world: World, client: TestClient) -> None:
    admin = world.auth(Role.ADMIN)
    made = client.post("/api/v1/keys", headers=admin, json={"role": "support", "name": "on call", "expires": "30d"})
    assert made.status_code == 201, made.text
    assert made.headers["Cache-Control"] == "no-store"
    body = made.json()
    key, secret = body["key"], body["secret"]
    assert (key["account"], key["role"], key["name"]) == ("alpha", "support", "on call")
    assert secret.startswith(key["prefix"] + "_")
    expires = DatabaseClock(db.engine()).now() + timedelta(days=30)
    assert abs((expires - datetime.fromisoformat(key["expires_at"])).total_seconds()) < 60

    # It works, as the role it was made with.
    assert client.get("/api/v1/health", headers=_bearer(secret)).status_code == 200
    assert _code(client.post("/api/v1/account/stop", headers=_bearer(secret))) == "forbidden"
    assert key["id"] in [k["id"] for k in client.get("/api/v1/keys", headers=admin).json()]

    # There is no account to name: a body naming one is refused, and beta gets no key.
    beta_keys = len(list_keys("beta"))
    refused = client.post("/api/v1/keys", headers=admin, json={"role": "admin", "account": "beta"})
    assert (refused.status_code, _code(refused)) == (422, "invalid_request"), refused.text
    assert len(list_keys("beta")) == beta_keys
    for expires_in in ("0s", "soon", "99999999999d"):
        bad = client.post("/api/v1/keys", headers=admin, json={"role": "viewer", "expires": expires_in})
        assert (bad.status_code, _code(bad)) == (400, "refused"), bad.text
    assert _code(client.post("/api/v1/keys", headers=admin, json={"role": "owner"})) == "invalid_request"


def test_revoking_another_accounts_key_is_not_found_and_leaves_it_working(world: World, client: TestClient) -> None:
    answer = client.delete(f"/api/v1/keys/{world.other.key}", headers=world.auth(Role.ADMIN))
    assert (answer.status_code, _code(answer)) == (404, "not_found"), answer.text
    assert [k.revoked_at for k in list_keys("beta")] == [None]


def test_a_key_revoking_itself_is_refused_from_its_next_request(world: World, client: TestClient) -> None:
    made = client.post("/api/v1/keys", headers=world.auth(Role.ADMIN), json={"role": "admin"}).json()
    own = _bearer(made["secret"])
    revoked = client.delete(f"/api/v1/keys/{made['key']['id']}", headers=own)
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["revoked_at"] is not None
    after = client.get("/api/v1/keys", headers=own)
    assert (after.status_code, _code(after)) == (401, "unauthenticated")
    assert "was revoked" in after.json()["error"]["message"]
    assert client.get("/api/v1/keys", headers=world.auth(Role.ADMIN)).status_code == 200  # the others still work


def test_a_keys_secret_is_answered_once_and_never_again_nor_logged(
    world: World, client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    admin = world.auth(Role.ADMIN)
    made = client.post("/api/v1/keys", headers=admin, json={"role": "admin", "name": "shown once"})
    whole = made.json()["secret"]
    secret = whole.split("_", 2)[2]  # the part herald keeps only the hash of
    assert secret in made.text  # the once

    key_id = made.json()["key"]["id"]
    own = _bearer(whole)
    later = [
        client.get("/api/v1/keys", headers=admin),
        client.get("/api/v1/keys", headers=own),
        client.get("/api/v1/health", headers=own),
        client.get("/api/v1/keys/nowhere", headers=own),
        client.get("/api/v1/keys", headers=_bearer(whole[:-1] + ("A" if whole[-1] != "A" else "B"))),
        client.delete(f"/api/v1/keys/{key_id}", headers=own),
        client.get("/api/v1/keys", headers=own),  # revoked: 401
        client.post("/api/v1/keys", headers=own, json={"role": "viewer"}),
    ]
    assert [a.status_code for a in later] == [200, 200, 200, 405, 401, 200, 401, 401]
    for answer in later:
        assert secret not in answer.text
        assert secret not in str(answer.headers)
    lines = [
        formatter.format(record) for record in caplog.records for formatter in (JsonLines(), logging.Formatter(TEXT))
    ]
    assert lines  # herald and its libraries logged something meanwhile
    assert not [line for line in lines if secret in line]
    with db.reading() as s:
        row = s.execute(select(ApiKey).where(ApiKey.id == key_id)).scalar_one()
        stored = [str(getattr(row, column.key)) for column in ApiKey.__table__.columns]
    assert not [value for value in stored if secret in value]
