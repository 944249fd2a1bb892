"""The one writer of publishing state: posts, deliveries, parts, publications, attempts.

Every SQL statement that changes them lives in this package, so the rules can be read in
one place: ``claim`` (the compare-and-set, admission, keys and ``sending``), ``results``
(every fenced write of an attempt, and a part's wait for its turn under a rate),
``authoring`` (what people do: create, move, cancel, approve, lift holds), ``support``
(what support staff do: retry, a reconnect's lift, an attempt in doubt resolved, each
recorded), ``channels`` (connected, and a channel's removal with the deliveries it
cancels), ``imports`` (posts another system published, recorded, and the rule that no
change reaches them), ``schedules`` (recurring releases: the stamp's compare-and-set, the
queue, each slot's outcome), ``moves`` (what they share). What differs between SQLite and
PostgreSQL is behind ``dialect``, in ``sqlite`` and ``postgresql`` (with ``pipeline``).
"""

from core.ledger.authoring import Cancelled, cancel_post, insert_post, lift_holds, reschedule_post, set_approval
from core.ledger.channels import cancel_deliveries, live_channel, remove_channel, unfinished_deliveries
from core.ledger.claim import Claim, DeliveryPlan, Early, PartPlan, claim_due_post, claim_post
from core.ledger.results import (
    delivery_paced,
    delivery_parked,
    delivery_stopped,
    fenced,
    part_published,
    record_publication,
    release,
    renew_lease,
)
from core.ledger.statements import GLOBAL_STOP

__all__ = [
    "GLOBAL_STOP",
    "Cancelled",
    "Claim",
    "DeliveryPlan",
    "Early",
    "PartPlan",
    "cancel_deliveries",
    "cancel_post",
    "claim_due_post",
    "claim_post",
    "delivery_paced",
    "delivery_parked",
    "delivery_stopped",
    "fenced",
    "insert_post",
    "lift_holds",
    "live_channel",
    "part_published",
    "record_publication",
    "release",
    "remove_channel",
    "renew_lease",
    "reschedule_post",
    "set_approval",
    "unfinished_deliveries",
]
