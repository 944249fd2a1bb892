"""The harness's own rules: the scenarios fault every channel of a run, and the oracle names copies right."""

from __future__ import annotations

import pytest

from adapters.sandbox.faults import APIS, FaultConfig
from tests.chaos.cluster import CHANNELS
from tests.chaos.oracle import STRATEGY_NAME, STRATEGY_OF, _names
from tests.chaos.scenarios import SCENARIOS, Scenario


def test_every_channel_of_the_cluster_is_an_api_the_sandbox_faults_and_the_oracle_counts() -> None:
    assert set(CHANNELS) <= set(APIS)
    assert {STRATEGY_OF[platform] for _, platform in CHANNELS.values()} == set(CHANNELS) == set(STRATEGY_NAME)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_scenarios_platform_faults_reach_the_mastodon_and_bluesky_channels(scenario: Scenario) -> None:
    config = FaultConfig.from_json(scenario.sandbox)

    assert {"mastodon", "bluesky"} <= set(config.strategies)


URI = "at://did:plc:abc/app.bsky.feed.post/3kabcdefghij2"
COPY = {"id": URI, "cid": "bafyone"}


@pytest.mark.parametrize(
    ("platform_id", "names"),
    [
        (f"{URI}|bafyone", True),  # what the adapter records: uri|cid
        (URI, True),  # an AT URI alone (a post resolved by hand): no CID to compare
        ("3kabcdefghij2", True),  # a bare record key names a post of the copy's repo
        (f"{URI}|bafytwo", False),  # the same record key, another record
        ("at://did:plc:abc/app.bsky.feed.post/3kabcdefghij3|bafyone", False),
        ("not a post", False),
        (None, False),
    ],
)
def test_herald_s_bluesky_platform_id_is_compared_with_the_copy_s_uri_and_cid(
    platform_id: str | None, names: bool
) -> None:
    assert _names("bluesky", platform_id, COPY) is names


def test_another_platform_s_id_is_the_copy_s_id_itself() -> None:
    assert _names("mastodon", "17", {"id": "17"}) and not _names("mastodon", "17|x", {"id": "17"})
