"""The AT Protocol as the sandbox's Bluesky speaks it: XRPC's errors, and the identifiers
it makes – DIDs, TIDs, CIDs, record keys.

* An XRPC error is ``{"error": name, "message": message}`` with its HTTP status
  (``packages/xrpc-server/src/errors.ts``).

* A handle's DID is ``did:plc:`` and 24 base32 characters of the handle's SHA-256: every
  handle resolves, always to the same DID.
* A TID (a record key of type ``tid``) is 13 characters of the sortable base32 alphabet
  ``234567abcdefghijklmnopqrstuvwxyz``, the microseconds since the epoch and a clock id,
  top bit 0 (the TID spec; ``packages/syntax/src/tid.ts``).
* A CID is a real CIDv1 string (multibase ``b``, base32): a blob's is exactly the real one
  (codec raw, SHA-256 of its bytes: ``bafkrei...``, as the PDS's ``cidForRawHash``). A
  record's has the DAG-CBOR codec's shape (``bafyrei...``) but hashes the record's
  canonical JSON (keys sorted, no spaces, UTF-8) rather than its DAG-CBOR bytes: equally
  stable, since both encodings are canonical – the same record always has the same CID,
  whatever the order of its keys, and any change to it changes the CID – though not the
  number a real PDS would compute.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from typing import Any

from adapters.sandbox.store import Refusal, canonical_json

SORTABLE_BASE32 = "234567abcdefghijklmnopqrstuvwxyz"
TID_PATTERN = re.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")
#: Any record key's syntax (the record key spec; ``packages/syntax/src/recordkey.ts``).
RECORD_KEY_PATTERN = re.compile(r"^[a-zA-Z0-9_~.:-]{1,512}$")
_RAW, _DAG_CBOR, _SHA2_256 = 0x55, 0x71, 0x12


def did_for(handle: str) -> str:
    """The DID a handle resolves to: the same one every time."""
    digest = hashlib.sha256(handle.lower().encode()).digest()
    return "did:plc:" + base64.b32encode(digest).decode().lower()[:24]


def is_record_key(rkey: str) -> bool:
    return bool(RECORD_KEY_PATTERN.match(rkey)) and rkey not in (".", "..")


def is_tid(value: str) -> bool:
    return bool(TID_PATTERN.match(value))


_tid_lock = threading.Lock()
_last_tid = 0


def next_tid() -> str:
    """A TID for now, later than every one given before by this process."""
    global _last_tid
    with _tid_lock:
        value = max(time.time_ns() // 1000 << 10, _last_tid + 1)
        _last_tid = value
    return "".join(SORTABLE_BASE32[(value >> shift) & 31] for shift in range(60, -1, -5))


def _cid(codec: int, data: bytes) -> str:
    multihash = bytes([_SHA2_256, 32]) + hashlib.sha256(data).digest()
    return "b" + base64.b32encode(bytes([1, codec]) + multihash).decode().lower().rstrip("=")


def blob_cid(data: bytes) -> str:
    """A blob's CID, as the PDS computes it."""
    return _cid(_RAW, data)


def record_cid(record: Any) -> str:
    """A record's CID: stable for its content (see the module's docstring)."""
    return _cid(_DAG_CBOR, canonical_json(record).encode())


def xrpc_error(status: int, name: str, message: str) -> Refusal:
    """A refusal in XRPC's words: ``{"error": name, "message": message}``."""
    return Refusal(status, name, message, body={"error": name, "message": message})


def invalid(message: str) -> Refusal:
    return xrpc_error(400, "InvalidRequest", message)
