"""The switches that stop publishing: the emergency stop (global or per account) and an
account's standing. Admission reads them; lifting one re-admits what it held."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from core import ledger
from core.runtime.clock import DatabaseClock
from core.services.channels import account_named
from core.services.posts import lift_admission_holds
from core.store import db
from core.store.models import AccountStatus, Switch


@dataclass(frozen=True)
class AccountView:
    """An account's standing and the switches that stop its publishing."""

    name: str
    status: AccountStatus
    #: The account's own emergency stop.
    emergency_stop: bool
    #: The stop for every account (`herald stop` without --account).
    global_stop: bool


def show_account(name: str) -> AccountView:
    """Raises: NotFound: no account of that name."""
    with db.reading() as s:
        account = account_named(s, name)
        switch = s.execute(select(Switch).where(Switch.name == ledger.GLOBAL_STOP)).scalar_one_or_none()
        return AccountView(account.name, account.status, account.emergency_stop, bool(switch and switch.on))


def set_emergency_stop(on: bool, account: str | None = None) -> list[int]:
    """Stop (or resume) publishing everywhere, or for one account.

    Returns:
        When resuming, the ids of the posts armed again.
    """
    now = DatabaseClock(db.engine()).now()
    with db.transaction() as s:
        if account is None:
            switch = s.execute(select(Switch).where(Switch.name == ledger.GLOBAL_STOP)).scalar_one_or_none()
            if switch is None:
                switch = Switch(name=ledger.GLOBAL_STOP, changed_at=now)
                s.add(switch)
            switch.on = on
            switch.changed_at = now
        else:
            account_named(s, account).emergency_stop = on
    return [] if on else lift_admission_holds()


def set_account_status(account: str, status: AccountStatus) -> list[int]:
    """Mark an account active, unpaid or suspended; back to active re-admits its posts.

    Raises:
        NotFound: no account of that name (a typo never makes one).
    """
    with db.transaction() as s:
        account_named(s, account).status = status
    return lift_admission_holds() if status is AccountStatus.ACTIVE else []
