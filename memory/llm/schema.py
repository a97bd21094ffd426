"""The JSON schema a server is asked to enforce, built from a task's output model.

Against OpenAI-compatible servers we send ``response_format: {"type": "json_schema", ...}``:
llama.cpp compiles it into a grammar that masks every token the schema forbids (Ollama and vLLM do
the same through their own grammar engines; hosted OpenAI through strict structured outputs). So
the schema is the contract a small model cannot break: event names are enums, texts and lists are
bounded (``maxLength`` / ``maxItems``), every property is required (null where absent) and no
other property is allowed. Against OpenAI-compatible servers the decide step's schema is also
narrowed to the request: one decision per new fact, in order, each index a shown fact's or null
(decision_schema.py).
What a grammar cannot express (a word limit) or a server was not asked to enforce is checked after
parsing, and a violation is retried.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from memory.llm.decision_schema import narrowed_decisions
from memory.prompts.decide_facts import DecideFactsInput

Mode = Literal["json_schema", "json_object"]

# Annotations a grammar ignores and that only cost prompt-side tokens on servers that echo the
# schema into the prompt (Ollama): titles and defaults. Descriptions stay: they guide the model.
_DROP = ("title", "default")


def strict_schema(model: type[BaseModel], speakers: Sequence[str] | None = None) -> dict[str, Any]:
    """The model's JSON schema in strict form: all properties required, no others allowed.

    With ``speakers`` (the speaker ids of the window's messages), every ``speaker`` property is
    an enum of them or null: a small model wrote a user's display name ("Alice") where the id
    ("alice") was asked for, and the item was dropped as nobody's; a grammar makes that
    impossible."""
    schema = copy.deepcopy(model.model_json_schema())
    _strict(schema)
    if speakers is not None:
        _enum_speakers(schema, sorted(set(speakers)))
    return schema


def _enum_speakers(node: Any, speakers: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _enum_speakers(item, speakers)
    elif isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and "speaker" in props:
            choices: list[dict[str, Any]] = [{"type": "null"}]
            if speakers:
                choices.insert(0, {"type": "string", "enum": speakers})
            props["speaker"] = {"anyOf": choices}
        for value in node.values():
            _enum_speakers(value, speakers)


def _strict(node: Any) -> None:
    """Strict form of a schema node, in place (``properties`` and ``$defs`` map names to nodes:
    their keys are field names, never annotations to drop)."""
    if isinstance(node, list):
        for item in node:
            _strict(item)
        return
    if not isinstance(node, dict):
        return
    for key in _DROP:
        node.pop(key, None)
    if node.get("type") == "object" and "properties" in node:
        node["required"] = list(node["properties"])
        node["additionalProperties"] = False
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            for child in value.values():
                _strict(child)
        else:
            _strict(value)


def response_format(
    model: type[BaseModel],
    mode: Mode,
    speakers: Sequence[str] | None = None,
    decisions: DecideFactsInput | None = None,
) -> dict[str, Any]:
    """The ``response_format`` of a chat completion asking for this model's JSON; with
    ``decisions`` (the decide step's input), its answer narrowed to that request
    (decision_schema.py)."""
    if mode == "json_object":
        return {"type": "json_object"}
    schema = strict_schema(model, speakers)
    if decisions is not None:
        schema = narrowed_decisions(schema, decisions)
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "strict": True, "schema": schema},
    }


def parsed_answer[M: BaseModel](schema: type[M], text: str) -> M:
    """The answer's JSON text as ``schema``; pydantic.ValidationError when it does not fit.

    Pydantic's JSON parser refuses a lone-surrogate escape ("\\ud800") as invalid JSON, though
    the answer fits and the texts it is in drop that character (memory.input_rules.ModelText):
    an answer refused for that alone is read again by Python's parser, which takes it."""
    try:
        return schema.model_validate_json(text)
    except ValidationError as refused:
        if not any(e["type"] == "json_invalid" for e in refused.errors()):
            raise
        try:
            data = json.loads(text)
        except ValueError:
            raise refused from None
        return schema.model_validate(data)
