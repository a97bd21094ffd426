"""The store's rules, written once as pure planners: no I/O, no async, no backend imports.

Each store call that writes is: read the snapshot a ``Request`` asks for, call the planner,
apply the returned writes (``rules.writes``), all in one transaction of the backend (see
memory.store.planned). The planner raises the contract's errors before anything is written and
simulates the effects of a call's own writes, so both backends behave alike by construction.
"""

from memory.store.rules.blobs import (
    ConsolidationRequest,
    ConsolidationSnapshot,
    ReflectionRequest,
    consolidation_blob,
    plan_consolidation,
    plan_delete_reflection,
    plan_edit_reflection,
    plan_set_aside,
)
from memory.store.rules.checks import check_query_dimension
from memory.store.rules.derived import fact_scope_key, weighted_tokens
from memory.store.rules.formation import (
    FormationRequest,
    FormationSnapshot,
    formation_request,
    plan_formation,
)
from memory.store.rules.keys import ApiKeyRequest, plan_create_api_key, plan_revoke_api_key
from memory.store.rules.manage import (
    FactRequest,
    FactSnapshot,
    plan_edit_fact,
    plan_invalidate_fact,
)
from memory.store.rules.messages import (
    RecordRequest,
    RecordSnapshot,
    Said,
    plan_record_messages,
    said,
)
from memory.store.rules.text import tokenize
from memory.store.rules.writes import Plan, Request, Write

__all__ = [
    "ApiKeyRequest",
    "ConsolidationRequest",
    "ConsolidationSnapshot",
    "FactRequest",
    "FactSnapshot",
    "FormationRequest",
    "FormationSnapshot",
    "Plan",
    "RecordRequest",
    "RecordSnapshot",
    "ReflectionRequest",
    "Request",
    "Said",
    "Write",
    "check_query_dimension",
    "consolidation_blob",
    "fact_scope_key",
    "formation_request",
    "plan_consolidation",
    "plan_create_api_key",
    "plan_delete_reflection",
    "plan_edit_fact",
    "plan_edit_reflection",
    "plan_formation",
    "plan_invalidate_fact",
    "plan_record_messages",
    "plan_revoke_api_key",
    "plan_set_aside",
    "said",
    "tokenize",
    "weighted_tokens",
]
