"""The dashboard in a real browser: Playwright driving the machine's Chromium (Debian's
``chromium``; ``.ci/run`` installs it, never a browser download) against a real
``herald api`` (uvicorn over loopback), a real worker and the sandbox platform."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from core.config import Settings
from core.domain.roles import Role
from core.services.keys import create_key, login_link
from tests.integration.conftest import (  # noqa: F401  (fixtures of the browser tests)
    Sandbox,
    Workers,
    database_url,
    herald,
    migrated,
    platform,
    redis_url,
    sandbox,
    sandbox_url,
    wait_until,
    workers,
)
from tests.integration.test_cli_input import free_port

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    path = shutil.which("chromium") or CHROMIUM
    if not shutil.which(path):
        pytest.skip("no Chromium at /usr/bin/chromium: `apt-get install -y chromium` (.ci/run does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def dashboard(herald: Settings, workers: Workers) -> str:  # noqa: F811
    """A real ``herald api`` and a worker for this test: the dashboard's base URL."""
    port = free_port()
    workers.spawn("api", "--port", str(port))
    workers.start()
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{base}/login", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(up, timeout=30)
    return base


@pytest.fixture
def login(chromium: Browser, dashboard: str) -> Iterator[Callable[[Role, str], Page]]:
    """``login(role, account)``: a fresh browser page logged in through a one-time link."""
    contexts = []

    def logged_in(role: Role, account: str = "a") -> Page:
        context = chromium.new_context(base_url=dashboard)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"/login/{login_link(create_key(account, role).key.id)}")
        return page

    yield logged_in
    for context in contexts:
        context.close()
