"""What a formation or consolidation run did, returned as its result (a formation's also kept short
in its memo for the UI). Here, apart from the workflows, so that whoever starts them can type the
handle without importing the workflow modules (which import the activities)."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from memory.pipeline.types import CommitResult, Decision, LlmCall


class FormationSummary(BaseModel):
    formations: int = 0
    messages_formed: int = 0
    facts_extracted: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    facts_invalidated: int = 0
    facts_duplicate: int = 0
    reflections_added: int = 0
    consolidations_requested: list[str] = Field(default_factory=list)
    decisions: dict[str, int] = Field(default_factory=dict)
    llm_calls: list[LlmCall] = Field(default_factory=list)
    embedding_calls: int = 0
    decisions_redone: int = Field(0, description="Stale decisions decided again")
    duration_ms: int = 0

    def add_commit(self, messages: int, c: CommitResult) -> None:
        self.formations += 1
        self.messages_formed += messages
        self.facts_added += c.facts_added
        self.facts_updated += c.facts_updated
        self.facts_invalidated += c.facts_invalidated
        self.facts_duplicate += c.facts_duplicate
        self.reflections_added += c.reflections_added
        self.embedding_calls += c.embedding_calls
        self.consolidations_requested += [k.key for k in c.due_for_consolidation]

    def add_decisions(self, decisions: list[Decision]) -> None:
        counts = Counter(self.decisions)
        counts.update(d.event for d in decisions)
        self.decisions = dict(counts)

    def memo(self) -> dict[str, object]:
        tokens_in = sum(c.input_tokens for c in self.llm_calls)
        tokens_out = sum(c.output_tokens for c in self.llm_calls)
        return {
            "summary": (
                f"{self.formations} formation(s), {self.messages_formed} messages: "
                f"facts +{self.facts_added} ~{self.facts_updated} -{self.facts_invalidated}, "
                f"reflections +{self.reflections_added}, consolidations {len(self.consolidations_requested)}, "
                f"LLM calls {len(self.llm_calls)} ({tokens_in} in / {tokens_out} out tokens)"
            ),
            "facts_added": self.facts_added,
            "facts_updated": self.facts_updated,
            "facts_invalidated": self.facts_invalidated,
            "reflections_added": self.reflections_added,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
        }


class ConsolidationSummary(BaseModel):
    consolidations: int = 0
    absorbed: int = 0
    version: int = 0
    llm_calls: list[LlmCall] = []


class SessionEndSummary(BaseModel):
    """What ending a session formed and consolidated (the EndSession workflow's result)."""

    formation: FormationSummary
    consolidation: ConsolidationSummary
