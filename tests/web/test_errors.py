"""Errors on the dashboard are pages a person reads; on the API they keep its JSON shape."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.domain.roles import Role
from core.services.keys import create_key
from core.services.posts import create_post
from tests.web.conftest import TestClient, csrf_of

pytestmark = pytest.mark.integration

Browser = Callable[..., TestClient]


def is_page(answer: Any, status: int) -> str:
    """The answer is an HTML page of ``status`` with its sentence and a link back; its sentence."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html"), answer.headers["content-type"]
    assert "<!doctype html>" in answer.text and '{"error"' not in answer.text
    assert 'class="back"' in answer.text
    sentence = answer.text.split('<p class="flash error" role="alert">', 1)[1].split("</p>", 1)[0]
    assert sentence and "{" not in sentence
    return sentence


def is_fragment(answer: Any, status: int) -> str:
    """The answer is the one-sentence fragment htmx shows in the page's problem area."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert (answer.headers["hx-retarget"], answer.headers["hx-reswap"]) == ("#problem", "innerHTML")
    assert answer.text.startswith('<p class="flash error" role="alert">') and "<html" not in answer.text
    return answer.text


def is_api_error(answer: Any, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "fix"}
    assert body["error"]["code"] == code


def test_an_unknown_dashboard_path_is_a_404_page_and_a_fragment_for_htmx(
    browser: Browser, accounts: dict[str, str]
) -> None:
    client = browser(Role.VIEWER)
    said = is_page(client.get("/nowhere/at-all", headers={"referer": "http://dash.test/attention"}), 404)
    assert "no page at /nowhere/at-all" in said
    assert 'href="/attention"' in client.get("/nowhere", headers={"referer": "http://dash.test/attention"}).text
    assert "no page at /nowhere" in is_fragment(client.get("/nowhere", headers={"HX-Request": "true"}), 404)
    # Without a login too, and for a file the static folder does not hold.
    assert "no page at" in is_page(browser(None).get("/nowhere"), 404)
    is_page(client.get("/static/nothing.css"), 404)


def test_a_method_a_page_does_not_take_is_a_405_page(browser: Browser, accounts: dict[str, str]) -> None:
    answer = browser(Role.VIEWER).get("/logout")
    assert "does not take a GET request" in is_page(answer, 405)
    assert answer.headers["allow"] == "POST"


def test_a_bad_form_or_address_on_a_page_is_a_422_page_in_one_sentence(
    browser: Browser, accounts: dict[str, str]
) -> None:
    post_id = create_post(channels=["a1"], parts=["in doubt?"], at=datetime.now(UTC) + timedelta(days=2))
    client = browser(Role.ADMIN)
    token = csrf_of(client.get(f"/posts/{post_id}").text)
    # resolve needs its outcome: a form without it does not match the route.
    said = is_page(client.post(f"/posts/{post_id}/resolve", data={"csrf": token, "channel": "a1"}), 422)
    assert said == "the form has no outcome: fill it in and send it again"
    said = is_page(client.get("/posts/not-a-number"), 422)
    assert said.startswith("the address&#39;s post_id &#39;not-a-number&#39; is not valid (")
    hx = client.post(
        f"/posts/{post_id}/resolve", data={"channel": "a1"}, headers={"HX-Request": "true", "X-CSRF-Token": token}
    )
    assert "the form has no outcome" in is_fragment(hx, 422)


def test_a_refused_form_sent_by_htmx_is_a_fragment_with_its_status(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(Role.MANAGER)
    refused = client.post("/compose/count", data={"part": "x"}, headers={"HX-Request": "true"})
    assert "no valid CSRF token" in is_fragment(refused, 403)
    # The same form without htmx: a page, with the same status.
    assert "no valid CSRF token" in is_page(client.post("/compose/count", data={"part": "x"}), 403)


def test_the_api_keeps_its_json_errors_with_their_closed_codes(browser: Browser, accounts: dict[str, str]) -> None:
    client = browser(None)
    key = {"Authorization": f"Bearer {create_key('a', Role.ADMIN).secret}"}
    is_api_error(client.get("/api/v1/nowhere", headers=key), 404, "not_found")
    is_api_error(client.get("/api/v2/posts", headers=key), 404, "not_found")
    is_api_error(client.get("/api", headers=key), 404, "not_found")
    is_api_error(client.get("/api/v1/posts/not-a-number", headers=key), 422, "invalid_request")
    is_api_error(client.post("/api/v1/posts", headers=key, json={"channels": "a1"}), 422, "invalid_request")
    is_api_error(client.post("/metrics"), 405, "method_not_allowed")
    is_api_error(client.post("/openapi.json"), 405, "method_not_allowed")
    # Even from a browser logged in to the dashboard, or from htmx.
    logged_in = browser(Role.ADMIN)
    is_api_error(logged_in.get("/api/v1/nowhere", headers={"HX-Request": "true"}), 404, "not_found")


def test_an_unexpected_failure_is_a_500_page_without_its_details_and_json_on_the_api(
    browser: Browser, accounts: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("the secret inner workings")

    monkeypatch.setattr("core.web.panels.health", broken)
    monkeypatch.setattr("core.api.watch.health", broken)
    client = browser(Role.VIEWER, raise_server_exceptions=False)
    said = is_page(client.get("/health"), 500)
    assert "herald could not do this" in said
    assert "inner workings" not in client.get("/health").text
    assert "herald could not do this" in is_fragment(
        client.get("/health?fragment=true", headers={"HX-Request": "true"}), 500
    )
    key = {"Authorization": f"Bearer {create_key('a', Role.VIEWER).secret}"}
    is_api_error(client.get("/api/v1/health", headers=key), 500, "internal")
