"""``/api/v1/account``: the key's own account – its standing, and its emergency stop."""

from __future__ import annotations

from fastapi import APIRouter

from core.api.auth import Admin, Reader
from core.services.controls import AccountView, set_emergency_stop, show_account
from core.services.views import Json, jsonable

router = APIRouter(prefix="/account", tags=["account"])


@router.get("", response_model=AccountView)
def account(who: Reader) -> Json:
    return jsonable(show_account(who.account))


@router.post("/stop", response_model=AccountView)
def stop(who: Admin) -> Json:
    """Emergency stop for the account: hold every post from now on."""
    set_emergency_stop(True, who.account)
    return jsonable(show_account(who.account))


@router.post("/resume", response_model=AccountView)
def resume(who: Admin) -> Json:
    """Lift the account's emergency stop; its held posts are armed again."""
    set_emergency_stop(False, who.account)
    return jsonable(show_account(who.account))
