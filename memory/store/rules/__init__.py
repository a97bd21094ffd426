"""The store's rules, written once as pure planners: no I/O, no async, no backend imports.

Each store call that writes is: read the snapshot the planner asks for, call the planner, apply
the returned writes (``rules.writes``) in the same transaction. The planner raises the contract's
errors before anything is written and simulates the effects of a call's own writes, so both
backends behave alike by construction.
"""

from memory.store.rules.blobs import (
    consolidation_blob,
    plan_consolidation,
    plan_delete_reflection,
    plan_edit_reflection,
)
from memory.store.rules.checks import check_query_dimension
from memory.store.rules.derived import fact_scope_key, token_count, tokenize, weighted_tokens
from memory.store.rules.formation import (
    FormationRequest,
    FormationSnapshot,
    formation_request,
    plan_formation,
)
from memory.store.rules.manage import plan_edit_fact, plan_invalidate_fact
from memory.store.rules.messages import RecordSnapshot, plan_record_messages
from memory.store.rules.writes import Plan, Write

__all__ = [
    "FormationRequest",
    "FormationSnapshot",
    "Plan",
    "RecordSnapshot",
    "Write",
    "check_query_dimension",
    "consolidation_blob",
    "fact_scope_key",
    "formation_request",
    "plan_consolidation",
    "plan_delete_reflection",
    "plan_edit_fact",
    "plan_edit_reflection",
    "plan_formation",
    "plan_invalidate_fact",
    "plan_record_messages",
    "token_count",
    "tokenize",
    "weighted_tokens",
]
