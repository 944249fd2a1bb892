"""The dashboard through FastAPI's TestClient: real SQL, Redis and sandbox underneath
(the integration fixtures), the pages and forms as a browser sends them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from core.config import Settings
from core.domain.roles import Role
from core.services.channels import add_channel
from core.services.keys import create_key
from tests.integration.conftest import (  # noqa: F401  (fixtures of the dashboard's tests)
    Sandbox,
    clock,
    database_url,
    herald,
    migrated,
    platform,
    redis_url,
    sandbox,
    sandbox_url,
)

SECRET = "t-ok-never-shown-0123456789"


@pytest.fixture
def accounts(herald: Settings, sandbox_url: str, platform: Sandbox) -> dict[str, str]:  # noqa: F811
    """Two accounts, a channel each; account a's channel token is :data:`SECRET`."""
    platform.token(SECRET, "ok")
    add_channel("a1", "sandbox-native", {"base_url": sandbox_url, "token": SECRET}, account="a")
    add_channel("b1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"}, account="b")
    return {"a": "a1", "b": "b1"}


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no CSRF field"
    return found.group(1)


@pytest.fixture
def browser(herald: Settings) -> Iterator[Callable[..., TestClient]]:  # noqa: F811
    """``browser(role, account)``: a client logged in to the dashboard with a new key
    (``raise_server_exceptions=False``: a server error is answered, as to a browser)."""
    from core.api.app import create_app

    app = create_app()
    clients: list[TestClient] = []

    def logged_in(
        role: Role | None = Role.ADMIN, account: str = "a", *, raise_server_exceptions: bool = True
    ) -> TestClient:
        client = TestClient(
            app, base_url="http://dash.test", follow_redirects=False, raise_server_exceptions=raise_server_exceptions
        )
        clients.append(client)
        if role is not None:
            key = create_key(account, role).secret
            form = client.get("/login")
            answer = client.post("/login", data={"csrf": csrf_of(form.text), "key": key})
            assert answer.status_code == 303, answer.text
        return client

    yield logged_in
    for client in clients:
        client.close()
