"""``python -m tests.chaos.entry ARGS``: the herald CLI with the sandbox's native key TTL shortened.

The sandbox-native adapter declares a 24 h ``key_ttl`` as a class constant and has no
setting for it, so a run cannot outlive it. The forgotten-keys scenario starts its
workers through this module with ``HERALD_CHAOS_NATIVE_KEY_TTL`` seconds instead, and
tells the sandbox to forget keys just after that: herald must stop trusting a key the
platform no longer remembers (§6: hold, as the sandbox-native adapter cannot search).
"""

from __future__ import annotations

import os

from adapters.sandbox.adapters import SandboxNative
from core.cli import main

if __name__ == "__main__":
    ttl = os.environ.get("HERALD_CHAOS_NATIVE_KEY_TTL")
    if ttl:
        SandboxNative.key_ttl = float(ttl)
    main()
