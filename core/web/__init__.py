"""The dashboard (§15): server-rendered Jinja2 pages with htmx, on the API's app and its
services. ``mount`` adds its routes and the session it logs in with."""

from __future__ import annotations

from fastapi import FastAPI


def mount(app: FastAPI) -> None:
    """Add the dashboard's pages to ``app``."""
