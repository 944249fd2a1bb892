"""The sandbox platform and its adapters, loaded as a herald plugin like any other.

``server.py`` is a local HTTP server that behaves like a social platform in each dedupe
strategy and injects faults; ``adapters.py`` holds one adapter per strategy.
"""

from __future__ import annotations

from adapters.sandbox.adapters import SANDBOX_ADAPTERS, SandboxNative, SandboxNone, SandboxReadback
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["SandboxNative", "SandboxNone", "SandboxReadback", "herald_register_adapters"]


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the three sandbox adapters: native key, read-back, and none."""
    for adapter in SANDBOX_ADAPTERS:
        register(adapter)
