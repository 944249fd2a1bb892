"""httpx transport errors become NotSent (nothing left the machine) or Ambiguous (it may have landed),
mapped once for every adapter; under a call's deadline, what the call wrote decides."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import respx

from core.domain.errors import Ambiguous, NotSent, PublishError
from core.plugins.deadline import Deadline
from core.plugins.transport import call_platform, transport_outcome

URL = "https://platform.test/posts"
REQUEST = httpx.Request("POST", URL)


def _raising(exc: Exception) -> Callable[[], None]:
    def call() -> None:
        raise exc

    return call


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("refused", request=REQUEST),
        httpx.ConnectTimeout("timed out connecting", request=REQUEST),
        httpx.PoolTimeout("no connection free", request=REQUEST),
    ],
    ids=lambda e: type(e).__name__,
)
def test_failure_before_connecting_is_not_sent(exc: Exception) -> None:
    with pytest.raises(NotSent):
        call_platform(_raising(exc))


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("no answer", request=REQUEST),
        httpx.RemoteProtocolError("peer closed", request=REQUEST),
        httpx.WriteError("broken pipe", request=REQUEST),
        httpx.WriteTimeout("write stalled", request=REQUEST),
        httpx.ReadError("reset", request=REQUEST),
    ],
    ids=lambda e: type(e).__name__,
)
def test_failure_after_the_request_may_have_been_written_is_ambiguous(exc: Exception) -> None:
    with pytest.raises(Ambiguous):
        call_platform(_raising(exc))


@pytest.mark.parametrize(
    "exc",
    [httpx.ConnectError("refused", request=REQUEST), httpx.ReadTimeout("no answer", request=REQUEST)],
    ids=lambda e: type(e).__name__,
)
def test_original_exception_is_chained(exc: Exception) -> None:
    with pytest.raises(PublishError) as info:
        call_platform(_raising(exc))
    assert info.value.__cause__ is exc


def test_value_of_a_successful_call_is_returned() -> None:
    assert call_platform(lambda: 42) == 42


def test_errors_that_are_not_transport_errors_pass_through_unchanged() -> None:
    boom = RuntimeError("adapter bug")
    with pytest.raises(RuntimeError) as info:
        call_platform(_raising(boom))
    assert info.value is boom


def test_refused_connection_through_respx_is_not_sent() -> None:
    with respx.mock, httpx.Client() as client:
        respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(NotSent) as info:
            call_platform(lambda: client.post(URL, json={"text": "hi"}))
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_read_timeout_through_respx_is_ambiguous() -> None:
    with respx.mock, httpx.Client() as client:
        respx.post(URL).mock(side_effect=httpx.ReadTimeout("no answer"))
        with pytest.raises(Ambiguous) as info:
            call_platform(lambda: client.post(URL, json={"text": "hi"}))
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


def test_an_http_answer_is_returned_not_mapped() -> None:
    with respx.mock, httpx.Client() as client:
        respx.post(URL).mock(return_value=httpx.Response(503))
        response = call_platform(lambda: client.post(URL, json={"text": "hi"}))
    assert response.status_code == 503


# -- under a call's deadline (core.plugins.deadline) ---------------------------------------


@pytest.mark.parametrize(
    "exc",
    [httpx.ConnectError("refused", request=REQUEST), httpx.PoolTimeout("no connection free", request=REQUEST)],
    ids=lambda e: type(e).__name__,
)
def test_a_failure_to_connect_after_the_call_wrote_a_request_is_ambiguous(exc: httpx.TransportError) -> None:
    # The call's first request may have created the post before its second failed.
    assert isinstance(transport_outcome(exc, Deadline(at=0.0, sent=True)), Ambiguous)
    assert isinstance(transport_outcome(exc, Deadline(at=0.0, sent=False)), NotSent)


@pytest.mark.parametrize(("sent", "outcome"), [(False, NotSent), (True, Ambiguous)])
def test_a_cut_by_the_deadline_is_not_sent_until_a_request_byte_was_written(sent: bool, outcome: type) -> None:
    cut = Deadline(at=0.0, sent=sent, cut=True)

    assert type(transport_outcome(httpx.WriteTimeout("deadline", request=REQUEST), cut)) is outcome
    assert type(transport_outcome(httpx.ReadTimeout("deadline", request=REQUEST), cut)) is outcome


def test_a_read_timeout_not_of_the_deadlines_making_stays_ambiguous() -> None:
    # A client that is not herald's writes nothing the deadline sees: its timeouts say the truth.
    outcome = transport_outcome(httpx.ReadTimeout("no answer", request=REQUEST), Deadline(at=0.0))

    assert isinstance(outcome, Ambiguous)
