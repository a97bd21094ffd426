"""What the models must return (structured outputs), and what each task's payload holds.

The schemas avoid defaults and use nullable fields instead, so they are valid for OpenAI strict
structured outputs and for Gemini ``response_schema`` alike.

Payloads (``LLMRequest.payload``), which the heuristic provider reads instead of the prompt:
- extract_facts: {"messages": [Msg], "agent_name": str, "scopes": ["user", "agent"] (enabled ones),
  "max_words": int}
- decide_facts: {"new_facts": [{"index": int, "content": str, "scope": str}],
  "existing": [{"index": int, "content": str}],
  "candidates": [{"new_index": int, "existing_index": int, "similarity": float}]}
- extract_reflections: {"messages": [Msg], "new_facts": [str], "scopes": ["agent", "user", "session"]
  (enabled ones), "current": {scope: {"consolidated": str, "recent": [str]}}, "max_words": int}
- consolidate: {"scope": str, "current_content": str, "current_version": int, "reflections": [str],
  "word_limit": int}
where Msg = {"seq": int, "role": str, "name": str, "content": str, "created_at": iso str}.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtractedFact(_Out):
    content: str = Field(description="One atomic, self-contained fact, at most 30 words")
    scope: Literal["user", "agent"] = Field(
        description="user: about this user; agent: for all users"
    )


class ExtractedFacts(_Out):
    facts: list[ExtractedFact]


class FactDecision(_Out):
    new_fact_index: int = Field(description="Index of the new fact in <new_facts>")
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    existing_index: int | None = Field(
        description="Index in <existing_memories> for UPDATE/DELETE/NONE"
    )
    final_text: str | None = Field(description="The text to store for ADD/UPDATE/DELETE")
    reasoning: str


class FactDecisions(_Out):
    decisions: list[FactDecision]


class ExtractedReflection(_Out):
    content: str = Field(description="One interpreted insight, at most 35 words")


class ExtractedReflections(_Out):
    agent_reflections: list[ExtractedReflection]
    user_reflections: list[ExtractedReflection]
    session_reflections: list[ExtractedReflection]
