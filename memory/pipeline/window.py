"""Step 1: which messages one formation reads, which scopes it may write, and the agent it forms for."""

from __future__ import annotations

from memory import ids, switch_marks, transcript
from memory.deps import Deps
from memory.group_start import as_of, first_seqs, group_since, window_end
from memory.lookup import require_agent, require_session
from memory.models import AgentConfig, SessionInfo, StoredMessage
from memory.pipeline.types import FormationRequest, Window
from memory.prompts.common import MAX_ITEMS
from memory.scopes import formable_scopes, single_user
from memory.settings import FormationSettings, Settings
from memory.speakers import participants
from memory.store.base import MemoryStore
from memory.store.rules.withheld import formable
from memory.triggers import formation_due


def _may_exceed_budget(pending_weighted_tokens: float, cfg: FormationSettings) -> bool:
    """Whether the pending messages may hold more than the budget: their weighted tokens bound
    their size (by the smallest role weight), so most windows are not read here at all and a
    pass still reads its transcript once."""
    lightest = min(cfg.weight(role) for role in ("user", "agent", "tool", "system", "other"))
    return lightest <= 0 or pending_weighted_tokens / lightest > cfg.max_tokens_per_run


def message_limit(settings: Settings) -> int:
    """Most messages one formation reads: ``formation.max_messages_per_run`` when set, else twice
    the facts one extraction answer carries: a dialogue whose every user turn states a fact still
    fits one answer, so ordinary traffic seldom needs a split (docs/backlog.md)."""
    if settings.formation.max_messages_per_run is not None:
        return settings.formation.max_messages_per_run
    return 2 * min(MAX_ITEMS, settings.facts.max_per_formation)


def answer_is_full(deps: Deps, items: int, bound: int) -> bool:
    """Whether an answer of ``items`` may have been cut at its ``bound``: a model that fills its
    bound likely had more to say; a deterministic provider fails beyond it instead."""
    return items > bound or (items == bound and not deps.llm.deterministic)


async def load_window(
    store: MemoryStore, settings: Settings, req: FormationRequest
) -> Window | None:
    """The next unformed range of (session, agent), or None when nothing is due."""
    state = await store.get_session_agent_state(req.session_id, req.agent_id)
    if state is None or state.last_seq <= state.cursor_seq:
        return None
    if not req.force and not formation_due(state, settings.formation):
        return None
    agent = await require_agent(store, req.agent_id)
    session = await require_session(store, req.session_id, req.agent_id)
    limit = message_limit(settings)
    if req.max_messages is not None:  # a split: the part of a window that did not fit
        limit = min(limit, req.max_messages)
    upto = min(state.last_seq, state.cursor_seq + limit)
    # Never across the moment the session became a group: what was said alone forms alone.
    first = await first_seqs(store, session)
    upto = window_end(state.cursor_seq, upto, group_since(session, first))
    # Nor across a change of the agent's memory switches: each part forms under the switches it
    # was recorded under (memory/switch_marks.py).
    upto = switch_marks.window_end(state.cursor_seq, upto, state.switch_marks)
    slices = 1
    stored: list[StoredMessage] | None = None  # the range as stored, when read here
    if _may_exceed_budget(state.pending_weighted_tokens, settings.formation):
        # Cut by size too: the window's messages, as the prompts show them, fit the budget.
        stored = await store.load_messages(req.session_id, state.cursor_seq, upto)
        # Those a forget kept for other agents are not this one's to form (rules.withheld).
        messages = formable(stored, state.withheld)
        if messages:
            fit = transcript.fitting(messages, settings.formation.max_chars_per_run)
            upto = messages[fit - 1].seq
            # A message longer than the budget is alone: read in slices (pipeline/slices.py).
            slices = transcript.slice_count(
                messages[:fit], settings.formation.max_chars_per_run, rule=transcript.CUT_RULE
            )
        stored = [m for m in stored if m.seq <= upto]
    # The scopes of the people who had spoken up to the window's last message (group_start.py).
    seen = as_of(session, first, upto)
    recorded_under = switch_marks.as_recorded(agent, state, upto)
    fact_scopes, reflection_scopes = formable_scopes(recorded_under, seen)
    return Window(
        slices=slices,
        slice_cut=transcript.CUT_RULE,
        formation_id=ids.formation_id(
            req.session_id, req.agent_id, state.cursor_seq, upto, session.created_at
        ),
        session_id=req.session_id,
        agent_id=req.agent_id,
        user_id=single_user(seen),
        after_seq=state.cursor_seq,
        upto_seq=upto,
        message_count=upto - state.cursor_seq,
        fact_scopes=fact_scopes,
        reflection_scopes=reflection_scopes,
        more_pending=upto < state.last_seq,
        group=seen.is_group,
        # A user forgotten while this formation runs gets a new epoch: the commit then writes
        # nothing for them (rules.erasure).
        user_epochs=await store.erasure_epochs(
            req.agent_id, await _window_users(store, seen, state.cursor_seq, upto, stored)
        ),
        agent=agent,
    )


async def _window_users(
    store: MemoryStore,
    seen: SessionInfo,
    after_seq: int,
    upto_seq: int,
    stored: list[StoredMessage] | None,
) -> tuple[str, ...]:
    """The users a commit of the window (after_seq, upto_seq] can write memory for, or whose
    forget changes its messages: those its messages carry the id of (any role, withheld ones
    too: memory.speakers.participants) and its single user. Not every user of the session: the
    epochs of a group of thousands would make the window, a step payload, larger than Temporal
    allows. A window while the session was no group has at most one person: no read. A group's
    messages are read here unless the budget cut read them: a window it did not need to read
    fits the budget, so this read is small."""
    if not seen.is_group:
        return tuple(dict.fromkeys((*seen.user_ids, *seen.session_user_ids)))
    if stored is None:
        stored = await store.load_messages(seen.session_id, after_seq, upto_seq)
    return participants(stored)


async def window_agent(deps: Deps, window: Window) -> AgentConfig:
    """The agent the window was loaded for; read again only for a window of an older run."""
    if window.agent is not None:
        return window.agent
    return await require_agent(deps.store, window.agent_id)


async def window_messages(deps: Deps, window: Window) -> list[StoredMessage]:
    """The window's messages the agent may form (none withheld from it: rules.withheld), loaded
    once per pass on this worker (memory/pipeline/transcripts.py)."""
    return await deps.transcripts.messages(
        deps.store,
        window.formation_id,
        window.session_id,
        window.after_seq,
        window.upto_seq,
        window.user_epochs,
        window.agent_id,
    )
