"""Inputs and outputs of the formation steps. They travel through Temporal's history, so they hold
ids, short texts, counts and the agent's small config, never transcripts or vectors.

Recorded histories (tests/histories/) decode into these types on replay: a field added later has a
default."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory.models import AgentConfig, FactScope, Id, ScopeKey, SourceIds, UtcDatetime
from memory.settings import RetrySettings, Scope

# The word a fallback writes into a decision's reasoning, a summary and the outcome attribute.
DEGRADED = "degraded"


class _T(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SplitChain(_T):
    """A window split, and the parts it was split into draining, until the drain is past it."""

    before: int | None = Field(
        description="The drain's window size before the split (None: the settings' limit)"
    )
    upto_seq: int = Field(description="The last message of the window that was split")
    passed_over: bool = Field(
        False, description="A single message of it was passed over: the failure was that message's"
    )


class FormationRequest(_T):
    session_id: Id
    agent_id: Id
    force: bool = Field(False, description="Form whatever is pending, below the thresholds too")
    retries: RetrySettings = RetrySettings()
    llm_task_queue: str | None = Field(
        None, description="Where LLM steps run (None: the workflow's queue)"
    )
    max_messages: int | None = Field(
        None,
        ge=1,
        description="Read at most this many messages (a split window); None: the settings' limit",
    )
    # Carried by continue-as-new, never read by the steps; absent from older runs' payloads.
    split: SplitChain | None = Field(
        None, description="The split in progress of a drain's window (max_messages is its part's)"
    )
    drained: dict[str, Any] | None = Field(
        None,
        description="What the earlier runs of the drain did (a FormationSummary, "
        "workflows/summary.py, which imports this module), bounded (workflows/drain.py "
        "carried): the last run's result counts them",
    )


class SessionEndRequest(_T):
    """Input of the one EndSession workflow of (agent, session)."""

    session_id: Id
    agent_id: Id
    ended_at: UtcDatetime
    retries: RetrySettings = RetrySettings()


class Window(_T):
    """One agent's unformed message range of one session, and the scopes it may write.

    It carries what the later steps of the pass need, so that they do not read it again."""

    formation_id: str
    session_id: Id
    agent_id: Id
    user_id: Id | None = Field(None, description="The session's single user; None in group chats")
    after_seq: int
    upto_seq: int
    message_count: int
    fact_scopes: tuple[FactScope, ...]
    reflection_scopes: tuple[Scope, ...]
    more_pending: bool = Field(
        False, description="Messages beyond this window (its message or token limit)"
    )
    user_epochs: dict[str, int] = Field(
        default_factory=dict,
        description="Erasure epoch, when loaded, of each user the window's messages carry the id "
        "of and of its single user (forget_user): not every user of the session, whom a big "
        "group's window could not carry",
    )
    agent: AgentConfig | None = Field(
        None, description="The agent's config as the pass read it (None in windows of older runs)"
    )
    slices: int = Field(
        1,
        ge=1,
        description="How many slices its steps read it in: more than 1 for a message longer than "
        "the formation budget, alone in its window (memory/pipeline/slices.py)",
    )
    slice_cut: int = Field(
        0,
        ge=0,
        description="The rule its long message is cut into slices by (memory/transcript.py "
        "CUT_RULE: 1 at a sentence end): 0, the whitespace cut, in windows of older runs, which "
        "go on forming their parts as they were planned",
    )
    group: bool | None = Field(
        None,
        description="Whether the session was a group chat by its last message (memory/"
        "group_start.py): what one person told alone is not kept for whoever joins later "
        "(memory.scopes.place_reflection). None in windows of older runs",
    )

    def scope_key(self, scope: Scope) -> ScopeKey:
        return ScopeKey.of(scope, self.agent_id, user_id=self.user_id, session_id=self.session_id)


class LlmCall(_T):
    task: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    # A drain's totals tally its calls per task, provider and model (workflows/drain.py), so what
    # continue-as-new carries stays small however long the drain: count them, not the entries.
    count: int = Field(1, ge=1, description="The calls it stands for, its tokens their sums")


class NewFact(_T):
    index: int
    content: str
    scope: FactScope
    source_message_ids: SourceIds = Field((), description="The messages it was extracted from")
    # On its speaker's clock ("...T22:30:00-05:00"): the offset rides in the timestamp, which an
    # older worker reads as the same instant (memory.said says why).
    said_at: UtcDatetime | None = Field(None, description="Time of its latest source message")


class ExtractedFactsResult(_T):
    facts: list[NewFact]
    llm: list[LlmCall] = []
    dropped: int = Field(
        0, description="Outputs dropped: too long, empty, duplicate or disabled scope"
    )
    max_facts: int | None = Field(
        None,
        description="The most facts one formation keeps (facts.max_per_formation), set for a "
        "slice: the slices' facts together are kept to it (memory/pipeline/slices.py)",
    )
    over_bound: int = Field(
        0,
        description="Distinct facts the second looks found past the window's bound "
        "(facts.max_per_formation) and left out: said and not formed, counted by the run",
    )


class SimilarFact(_T):
    """A stored fact similar to a new one: a dedup candidate."""

    fact_id: str
    content: str
    version: int
    similarity: float


class CandidatesResult(_T):
    """Similar existing facts per new fact index (only indices that have any)."""

    by_new_index: dict[int, list[SimilarFact]]
    embedding_calls: int = 0
    read_at: UtcDatetime | None = Field(
        None, description="When the search started: the commit re-checks adds against later facts"
    )


class Decision(_T):
    new_index: int
    event: str = Field(pattern="^(ADD|UPDATE|DELETE|NONE)$")
    existing_id: str | None = None
    expected_version: int | None = None
    final_text: str | None = None
    reasoning: str = ""


class DecisionsResult(_T):
    decisions: list[Decision]
    llm: list[LlmCall] = []
    embedding_calls: int = Field(
        0, description="Embedding of the texts to store (cached for the commit to read)"
    )


class NewReflection(_T):
    scope: Scope
    content: str
    source_message_ids: SourceIds = Field((), description="The messages it was formed from")
    said_at: UtcDatetime | None = Field(None, description="Time of its latest source message")


class ReflectionsResult(_T):
    reflections: list[NewReflection]
    llm: list[LlmCall] = []


class CommitResult(_T):
    already_committed: bool
    facts_added: int
    facts_updated: int
    facts_invalidated: int
    facts_duplicate: int
    reflections_added: int
    due_for_consolidation: list[ScopeKey]
    embedding_calls: int = Field(0, description="Always 0 now: the decide step embeds")
    pending_messages: int = 0
    due_after: bool = Field(
        False,
        description="What arrived while this window formed is due by itself: the formation goes "
        "round once more (the hot path held its repeated requests back)",
    )
    discarded_for_erasure: bool = Field(
        False,
        description="A user of the window was forgotten during the pass: nothing was written, "
        "not even the cursor; the window is formed again without their messages",
    )


class ConsolidationRequest(_T):
    key: ScopeKey
    force: bool = False
    retries: RetrySettings = RetrySettings()
    llm_task_queue: str | None = None
    # Draft from only these buffered reflections (whichever are still buffered), whatever the
    # threshold: a part of a buffer whose whole draft stayed unusable (workflows/consolidate_scope).
    only_ids: list[str] | None = None
    # Draft from the blob alone, no reflection: whether the provider refuses the blob (or the
    # prompt) itself, when it refused a single reflection with it. The draft is not stored.
    blob_only: bool = False
    # Draft from the buffer's oldest batch (settings.reflections.batch), saying whether more is
    # buffered; False (the runs of older workflows, the import's merge): from the whole buffer.
    in_batches: bool = False
    # Buffered reflections an earlier split of this consolidation kept (no draft took them):
    # its later batches leave them out, or each would fail on them and be split again.
    skip_ids: list[str] = []
    # Carried by continue-as-new, never read by the steps; absent from older runs' payloads.
    carried: dict[str, Any] | None = Field(
        None,
        description="What the earlier runs of this consolidation did (a ConsolidationSummary, "
        "workflows/summary.py, bounded): the last run's result counts them",
    )


class BufferedReflection(_T):
    """A buffered reflection as a consolidation that splits its buffer names it: the hash tells
    a later set-aside whether a person corrected it meanwhile."""

    reflection_id: str
    content_hash: str


class ConsolidationDraft(_T):
    """A validated new blob, not yet stored."""

    key: ScopeKey
    base_version: int
    content: str | None = Field(None, description="None: nothing to consolidate")
    word_limit: int
    absorbed_ids: list[str] = []
    # memory.ids.text_hash of each absorbed reflection's content as drafted: the apply refuses
    # (Conflict: draft again) when one was edited since. Empty in drafts of older workers.
    absorbed_hashes: dict[str, str] = {}
    llm: list[LlmCall] = []
    # When the oldest of them was buffered: the consolidation lag (runtime.metrics) is measured
    # from it. None in drafts of older histories.
    oldest_buffered_at: UtcDatetime | None = None
    # More reflections are buffered than this draft merged (settings.reflections.batch): the
    # consolidation drafts again once it is applied. False in drafts of older workers.
    more: bool = False
    # The new blob's said_from: when the earliest of what it holds was said. None in
    # drafts of older workers (the blob then says it is not known).
    said_from: UtcDatetime | None = None


class ConsolidationResult(_T):
    key: ScopeKey
    version: int
    absorbed: int
