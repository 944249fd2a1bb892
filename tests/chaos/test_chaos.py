"""The promise, measured: every scenario of ``scenarios.py`` against real processes.

Pass criterion per strategy: nothing lost, nothing unexpected, no copy before its
slot, no duplicate on native_key or none, every duplicated read_back part caught by
herald's duplicate alarm (recall 100%), no none-strategy part in doubt resent, and every
post settled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.report import Report
from tests.chaos.run import Run, run_scenario
from tests.chaos.scenarios import SCENARIOS

pytestmark = pytest.mark.chaos

#: (posts, posts per second) per scenario, for the mixed run and for the scenarios
#: measured on as many posts as it (``Scenario.long``), at each scale.
SCALES = {
    "short": {"single": (25, 8.0), "mixed": (60, 8.0), "long": (25, 8.0)},
    "full": {"single": (500, 15.0), "mixed": (3000, 15.0), "long": (3000, 15.0)},
}


def failures(run: Run) -> list[str]:
    assert run.classified is not None
    found = [] if run.settled else ["not every post settled (published, held or failed) in time"]
    for strategy, t in run.classified.tallies.items():
        for name in ("lost", "unexpected", "stuck", "early"):
            if getattr(t, name):
                found.append(f"{strategy}: {name} = {getattr(t, name)}")
        if strategy != "readback" and t.duplicated:
            found.append(f"{strategy}: duplicated = {t.duplicated}")
        if t.duplicate_parts_alarmed < t.duplicate_parts:
            found.append(
                f"{strategy}: {t.duplicate_parts - t.duplicate_parts_alarmed} duplicated part(s) without an alarm"
            )
        found += [f"{strategy}: {p}" for p in t.problems[:20]]
    return found


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(
    scenario: object, request: pytest.FixtureRequest, chaos_seed: int, chaos_dir: Path, chaos_report: Report
) -> None:
    from tests.chaos.scenarios import Scenario

    assert isinstance(scenario, Scenario)
    scale = SCALES[request.config.getoption("--chaos-scale")]
    posts, rate = scale["mixed" if scenario.name == "mixed" else "long" if scenario.long else "single"]
    run = run_scenario(scenario, seed=chaos_seed, posts=posts, rate=rate, workdir=chaos_dir)
    chaos_report.add(run)
    if run.skip_reason:
        pytest.skip(run.skip_reason)
    found = failures(run)
    assert not found, "\n".join([*found, f"history: {run.history} (seed {chaos_seed})"])
