"""Evidence recall of search_facts on LoCoMo: text-only, vector-only and hybrid, same code path.

Every turn of every conversation is stored as one agent-scoped fact (one agent per conversation)
through the real store (SQLite in a temporary directory) with the default embedder's vectors,
formed in the session it was said in (each LoCoMo session is a mnemos session with one formation,
as the product would have formed it, so each fact carries its ``source_session_id``). Every
non-adversarial question (category != 5) is asked through ``search_facts`` in each mode, and a
question's recall@k is the share of its evidence turns (``dia_id``s) among the first k hits.

Run: ``.venv/bin/python bench/locomo.py --data PATH/locomo-dev.json [--thresholds default|off]``.
``default`` (the default) is what a user gets: default settings, so the embedder's calibrated gates;
``off`` drops every gate and measures ranking quality alone. The bench checks that hybrid is at
least as good as each single method at every cut. The last line is one JSON object.
The data set is CC BY-NC: it is read from its path and never copied into the project.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import numpy as np
import numpy.typing as npt

# Run as a script (``python bench/x.py``): the repository root goes on the path for ``bench``.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory import ids  # noqa: E402
from memory.embedding import make_embedder  # noqa: E402
from memory.embedding.base import Embedder, EmbeddingBatch  # noqa: E402
from memory.formation_commit import FactAdd, FormationCommit  # noqa: E402
from memory.models import AgentConfig, MessageIn  # noqa: E402
from memory.rag import search_facts  # noqa: E402
from memory.search_results import SearchMode  # noqa: E402
from memory.settings import RagSettings, Settings  # noqa: E402
from memory.store.base import MemoryStore  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402

CUTS = (5, 10, 20)
ADVERSARIAL = 5
NOW = datetime(2024, 1, 1, tzinfo=UTC)
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass
class Question:
    text: str
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    turns: dict[str, str] = field(default_factory=dict)  # dia_id -> fact content
    questions: list[Question] = field(default_factory=list)


def _dia_ids(text: str) -> list[str]:
    """Canonical 'D<session>:<turn>' ids; the data set has a few lists like 'D8:6; D9:17'."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA.findall(text)]


def _turn_text(turn: dict[str, Any]) -> str:
    """What a fact formed from this turn would say: who said it, and what a shared photo shows."""
    text = f"{turn['speaker']}: {turn['text']}"
    if caption := turn.get("blip_caption"):
        text += f" [shares {caption}]"
    return text


def load(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = Conversation(sample_id=sample["sample_id"])
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    for dia_id in _dia_ids(turn["dia_id"]):
                        conv.turns[dia_id] = _turn_text(turn)
        for qa in sample["qa"]:
            evidence = frozenset(
                d for item in qa.get("evidence", []) for d in _dia_ids(item) if d in conv.turns
            )
            # Questions whose evidence names no existing turn cannot be scored.
            if qa["category"] != ADVERSARIAL and evidence:
                conv.questions.append(Question(text=qa["question"], evidence=evidence))
        conversations.append(conv)
    return conversations


class MemoEmbedder(Embedder):
    """Remembers vectors by text: the questions are embedded once in a batch, not once per mode."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.calibration = inner.calibration  # the gates belong to the model, not the wrapper
        self._memo: dict[str, npt.NDArray[np.float32]] = {}

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            batch = await self.inner.embed(missing)
            self._memo.update(zip(missing, batch.vectors, strict=True))
        rows = [self._memo[t] for t in texts]
        vectors = np.stack(rows) if rows else np.zeros((0, self.dimension), dtype=np.float32)
        return EmbeddingBatch(vectors=vectors, model=self.model, dimension=self.dimension)


def agent_for(conv: Conversation) -> AgentConfig:
    return AgentConfig(agent_id=f"locomo-{conv.sample_id}", name=conv.sample_id)


def _session_of(dia_id: str) -> str:
    """'D3:5' -> 'D3': the LoCoMo session a turn was said in."""
    return dia_id.split(":", 1)[0]


async def index(
    store: MemoryStore, embedder: Embedder, conversations: Sequence[Conversation]
) -> dict[str, str]:
    """Store every turn as an agent-scoped fact formed in its own session; returns fact_id -> dia_id."""
    dia_of: dict[str, str] = {}
    for conv in conversations:
        agent = agent_for(conv)
        await store.upsert_agent(agent)
        dia_ids = list(conv.turns)
        batch = await embedder.embed([conv.turns[d] for d in dia_ids])
        vectors = dict(zip(dia_ids, batch.vectors, strict=True))
        sessions: dict[str, list[str]] = {}
        for dia_id in dia_ids:
            sessions.setdefault(_session_of(dia_id), []).append(dia_id)
        for name, turns in sessions.items():
            session = f"{agent.agent_id}-{name}"
            message = MessageIn(message_id="m1", role="other", content="load", created_at=NOW)
            await store.record_messages(
                session, agent.agent_id, [message], weights={}, chars_per_token=4.0, now=NOW
            )
            formation = ids.formation_id(session, agent.agent_id, 0, 1)
            ops = []
            for i, dia_id in enumerate(turns):
                fact_id = ids.fact_id(formation, i)
                dia_of[fact_id] = dia_id
                ops.append(
                    FactAdd(
                        fact_id=fact_id,
                        scope="agent",
                        content=conv.turns[dia_id],
                        embedding=vectors[dia_id].tolist(),
                    )
                )
            await store.commit_formation(
                FormationCommit(
                    formation_id=formation,
                    session_id=session,
                    agent_id=agent.agent_id,
                    expected_cursor=0,
                    new_cursor=1,
                    embedding_model=embedder.model,
                    fact_ops=ops,
                    committed_at=NOW,
                )
            )
    return dia_of


async def recall(
    store: MemoryStore,
    embedder: Embedder,
    settings: Settings,
    conversations: Sequence[Conversation],
    dia_of: dict[str, str],
    mode: SearchMode,
) -> dict[str, float]:
    """Mean evidence recall at each cut over every question."""
    totals = dict.fromkeys(CUTS, 0.0)
    count = 0
    for conv in conversations:
        agent = agent_for(conv)
        for question in conv.questions:
            result = await search_facts(
                store, embedder, settings, agent=agent, session=None, user_id=None,
                queries=[question.text], top_k=max(CUTS), now=NOW, mode=mode,
            )  # fmt: skip
            found = [dia_of[hit.fact_id] for hit in result.hits]
            for cut in CUTS:
                totals[cut] += len(question.evidence & set(found[:cut])) / len(question.evidence)
            count += 1
    return {str(cut): round(totals[cut] / count, 3) for cut in CUTS}


def settings_for(thresholds: str) -> Settings:
    if thresholds == "default":
        return Settings()
    off = RagSettings(
        calibrated_gates=False,
        semantic_score_threshold=0,
        text_score_threshold=0,
        rrf_score_threshold=0,
    )
    return Settings(rag=off)


def shortfalls(figures: dict[str, dict[str, float]]) -> list[str]:
    """Where hybrid ranks below a single method (the default must never rank below text-only)."""
    return [
        f"hybrid @{cut} {figures['hybrid'][cut]:.3f} < {mode} {figures[mode][cut]:.3f}"
        for mode in ("text", "vector")
        for cut in figures["hybrid"]
        if figures["hybrid"][cut] < figures[mode][cut]
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.json or a split of it")
    parser.add_argument("--thresholds", choices=("default", "off"), default="default")
    args = parser.parse_args()

    conversations = load(args.data)
    questions = sum(len(c.questions) for c in conversations)
    turns = sum(len(c.turns) for c in conversations)
    settings = settings_for(args.thresholds)
    embedder = MemoEmbedder(make_embedder(settings))
    print(f"embedder {embedder.model}, thresholds {args.thresholds}")
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "locomo.db")
        await store.setup()
        started = time.perf_counter()
        dia_of = await index(store, embedder, conversations)
        print(f"indexed {turns} turns of {len(conversations)} conversations "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        await embedder.embed([q.text for c in conversations for q in c.questions])
        figures = {}
        for mode in get_args(SearchMode):
            started = time.perf_counter()
            figures[mode] = await recall(store, embedder, settings, conversations, dia_of, mode)
            cells = "  ".join(f"@{k} {v:.3f}" for k, v in figures[mode].items())
            print(f"{mode:>6}: {cells}  ({questions} questions, "
                  f"{time.perf_counter() - started:.1f} s)")  # fmt: skip
        await store.close()
    await embedder.close()
    below = shortfalls(figures)
    print("hybrid >= text and vector at every cut" if not below else "; ".join(below))
    result = {mode: figures[mode] for mode in ("text", "vector", "hybrid")}
    print(json.dumps({"model": embedder.model, "thresholds": args.thresholds, **result}))


if __name__ == "__main__":
    asyncio.run(main())
