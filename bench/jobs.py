"""The baseline job: bare rq work with nothing of herald's in it."""

from __future__ import annotations


def noop() -> None:
    """Do nothing: what rq itself costs per job is all that is measured."""
