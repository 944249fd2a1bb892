"""The one writer of publishing state: posts, deliveries, parts, publications, attempts.

Every SQL statement that changes them lives in this package – ``attempts`` for the
publish path (the claim and every fenced write), ``authoring`` for what people do
(create, move, cancel, approve, lift holds) – so the rules can be read in one place.
"""

from core.ledger.attempts import (
    GLOBAL_STOP,
    Claim,
    DeliveryPlan,
    Early,
    PartPlan,
    claim_due_post,
    claim_post,
    delivery_parked,
    delivery_stopped,
    fenced,
    part_published,
    record_publication,
    release,
    renew_lease,
)
from core.ledger.authoring import cancel_post, insert_post, lift_holds, reschedule_post, set_approval

__all__ = [
    "GLOBAL_STOP",
    "Claim",
    "DeliveryPlan",
    "Early",
    "PartPlan",
    "cancel_post",
    "claim_due_post",
    "claim_post",
    "delivery_parked",
    "delivery_stopped",
    "fenced",
    "insert_post",
    "lift_holds",
    "part_published",
    "record_publication",
    "release",
    "renew_lease",
    "reschedule_post",
    "set_approval",
]
