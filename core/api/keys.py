"""``/api/v1/keys``: the account's API keys – list, make, revoke – for its admins, each the
call `herald keys ...` makes (``core.services.keys``).

A key's secret is answered once, by the create that made it (``Cache-Control: no-store``);
herald keeps only its hash, so no later answer, page or log line can carry it. Another
account's key is not found.

A create takes no ``Idempotency-Key``: replaying the first answer would mean keeping the
secret to answer it again, which is what a key must never be. A create repeated after a
lost answer makes a second key; the first, never seen, is listed here and revoked like any.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from core.api.auth import Admin
from core.api.models import KeyCreate, PathId
from core.domain.timing import parse_duration
from core.services.keys import CreatedKey, KeyView, create_key, list_keys, revoke_key
from core.services.views import Json, jsonable

router = APIRouter(prefix="/keys", tags=["keys"])


@router.get("", response_model=list[KeyView])
def keys(who: Admin) -> Json:
    """The account's keys, newest first, revoked ones too: never a secret, nor its hash."""
    return jsonable(list_keys(who.account))


@router.post("", response_model=CreatedKey, status_code=201)
def create(body: KeyCreate, who: Admin, response: Response) -> Json:
    """Make a key for the account; ``secret`` is the whole key, answered this once."""
    expires_in = parse_duration(body.expires) if body.expires is not None else None
    made = create_key(who.account, body.role, name=body.name, expires_in=expires_in)
    response.headers["Cache-Control"] = "no-store"
    return jsonable(made)


@router.delete("/{key_id}", response_model=KeyView)
def revoke(key_id: PathId, who: Admin) -> Json:
    """Revoke a key at once (this one too: its next request is refused, 401)."""
    return jsonable(revoke_key(key_id, account_id=who.account_id))
