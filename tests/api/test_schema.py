"""schemathesis against the app's own OpenAPI document: for every route, authenticated
with an admin key of the account that owns the rows, no answer is a 5xx and none breaks
the schema it documents."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import checks

from core.api.app import create_app
from core.domain.roles import Role
from tests.api.conftest import World

pytestmark = pytest.mark.integration

#: No 5xx, and every answer as documented (status, content type, headers, body). Not
#: schemathesis's "schema-valid data is accepted": a slot in the past or nothing to retry is
#: schema-valid and still refused (400 ``refused``), as it should be.
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]

SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", create_app())
OPERATIONS = {op.label: op for op in (result.ok() for result in SCHEMA.get_all_operations())}


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_the_api_keeps_to_its_schema(label: str, world: World) -> None:
    headers = world.auth(Role.ADMIN)

    @given(data=st.data())
    # The same examples on every run (derandomize), so CI's verdict is the code's, not the
    # draw's; HERALD_FUZZ_EXAMPLES=N (and a new draw each run) fuzzes deeper by hand.
    @settings(
        max_examples=int(os.environ.get("HERALD_FUZZ_EXAMPLES", "8")),
        derandomize="HERALD_FUZZ_EXAMPLES" not in os.environ,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(data: st.DataObject) -> None:
        case = data.draw(OPERATIONS[label].as_strategy())
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()
