"""``python -m tests.chaos.entry ARGS``: the herald CLI with a chaos run's process tweaks.

* ``HERALD_CHAOS_NATIVE_KEY_TTL``: the native_key adapters whose platform forgets keys
  declare their window as a class constant and have no setting for it (sandbox-native
  24 h, Mastodon 1 h, as Mastodon's docs promise), so a run cannot outlive it. The
  forgotten-keys scenario starts its workers with this many seconds instead for both,
  and tells the sandbox (its native API and its Mastodon personality) to forget keys just
  after that: herald must stop trusting a key the platform no longer remembers (§6: hold,
  as neither adapter can search). Bluesky's record keys are never forgotten
  (``key_ttl`` None): nothing to shorten.
* ``HERALD_CHAOS_CLOCK_SKEW``: seconds (signed) by which this process's wall clock is
  shifted, through ``time_machine``: ``time.time``, ``datetime.now`` and everything built
  on them (rq's scheduler, its child process included) read the shifted clock, while
  ``time.monotonic`` and the database's clock do not move. Every deadline herald keeps
  must still come out right (§2: one clock, the database's).
* ``HERALD_CHAOS_RATE``: the rate (``COUNT/SECONDS``) the Mastodon and Bluesky adapters keep
  to instead of their declared ones. Those are windows of hours (Mastodon 300 posts in 3 h,
  Bluesky's points an hour and a day), which a full run's thousands of posts in minutes
  would exhaust at once and then wait out for hours. Every worker of a run keeps this one
  (``cluster.CHAOS_RATE``): a window of a run's time scale, which the retries and re-drives
  after a fault still reach, so the pacer works under the faults too.
"""

from __future__ import annotations

import os
import time

from adapters.bluesky import Bluesky
from adapters.mastodon import Mastodon
from adapters.sandbox.adapters import SandboxNative
from core.cli import main
from core.plugins import Rate

#: The adapters whose key window ``HERALD_CHAOS_NATIVE_KEY_TTL`` shortens.
FORGETFUL = (SandboxNative, Mastodon)

#: The adapters whose declared rates ``HERALD_CHAOS_RATE`` replaces.
PACED = (Mastodon, Bluesky)


def skew_clock(seconds: float) -> None:
    """Shift this process's wall clock by ``seconds`` from now on; it keeps ticking."""
    import time_machine

    time_machine.travel(time.time() + seconds, tick=True).start()
    # The shifted clock starts ticking at its first reading: read it now, so the offset
    # from the real clock is ``seconds`` and not ``seconds`` minus the wait until then.
    time.time()


if __name__ == "__main__":
    ttl = os.environ.get("HERALD_CHAOS_NATIVE_KEY_TTL")
    if ttl:
        for adapter in FORGETFUL:
            adapter.key_ttl = float(ttl)
    rate = os.environ.get("HERALD_CHAOS_RATE")
    if rate:
        for paced in PACED:
            paced.rates = (Rate.parse(rate),)
    skew = os.environ.get("HERALD_CHAOS_CLOCK_SKEW")
    if skew:
        skew_clock(float(skew))
    main()
