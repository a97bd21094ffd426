"""The decide step's answer schema narrowed to one request, for servers that compile it to a grammar.

The shared schema (``FactDecisions``) lets a decision name any new fact and any index, or none.
On the 1.5B model that was the decide step's commonest failure: in one LoCoMo conversation 23 of
144 decisions were an UPDATE with ``existing_index`` null, some answers decided a new fact that
was not asked about, and every degraded formation of an earlier run was an answer the pipeline
rejected for its indices, twice, so that the fallback added the whole batch undecided (issue #22).

Narrowed, the answer is a tuple with one decision per new fact, in the order shown, whose
``existing_index`` is one of the shown facts or null. A grammar-enforcing server (llama.cpp, vLLM,
Ollama) then cannot emit a decision twice, a fact left undecided or an index nothing has; a change
naming no fact or a fact not offered to that new fact keeps the new fact as an ADD
(dedup.resolve), with no retry.

The index is not narrowed to each new fact's own candidates, and null stays allowed: the grammar
never forces the model to name a fact. Tried on the eight recorded LoCoMo decide prompts, a grammar
with each new fact's candidates only (no null) and this one gave the same answers: the model named
a candidate for 22 of 25 new facts and never wrote null, and its changes were mostly wrong, one a
merge copying a fact it was shown but not offered ("Jon plans to perform at a nearby festival in
February 2023." replacing "Jon plans to start a dance studio ..." for "Jon is looking for the right
type of flooring for his dance studio"). What keeps such a change out of the store is the rules
after parsing (dedup.resolve, fact_overlap.py), not the grammar.

``prefixItems`` is not in hosted OpenAI's strict subset, so hosted models get the shared schema
(and make few index mistakes); the validation after parsing is the same either way.
"""

from __future__ import annotations

import copy
from typing import Any

from memory.prompts.decide_facts import DecideFactsInput


def narrowed_decisions(strict: dict[str, Any], inp: DecideFactsInput) -> dict[str, Any]:
    """``strict`` (the strict ``FactDecisions`` schema) with its decisions narrowed to ``inp``."""
    schema = copy.deepcopy(strict)
    item = schema["$defs"].pop("FactDecision")
    if not schema["$defs"]:
        del schema["$defs"]
    decisions = schema["properties"]["decisions"]
    del decisions["items"]
    decisions["prefixItems"] = [_decision(item, inp, f.index) for f in inp.new_facts]
    # The tuple's length again, for engines that read prefixItems as a prefix only.
    decisions["minItems"] = decisions["maxItems"] = len(inp.new_facts)
    return schema


def _decision(item: dict[str, Any], inp: DecideFactsInput, new_index: int) -> dict[str, Any]:
    """The decision of new fact ``new_index``: its own index, and a shown fact's or null."""
    props = item["properties"]
    decision = copy.deepcopy(item)
    decision["properties"]["new_fact_index"] = {**props["new_fact_index"], "enum": [new_index]}
    shown = [{"type": "integer", "enum": [e.index for e in inp.existing]}] if inp.existing else []
    description = props["existing_index"]["description"]
    decision["properties"]["existing_index"] = {
        "anyOf": [*shown, {"type": "null"}],
        "description": description,
    }
    return decision
