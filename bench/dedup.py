"""Where the dedup candidate gate sits for an embedder: cosines of stored/new fact pairs.

The dedup step (memory/pipeline/facts.py) shows the LLM the stored facts most similar to each new
fact, above a cosine gate; the LLM decides ADD/UPDATE/DELETE/NONE. A pair the LLM must see (a
duplicate, an update, a contradiction) that falls below the gate is silently added twice, while a
pair above it only costs a few prompt tokens, so the gate is set below the lowest must-see pair.
The pairs below are hand-written facts as the extraction prompt writes them (third person, one
statement each). The bench prints every pair's cosine, the lowest must-see and highest unrelated
ones, and the gate it suggests: the lowest must-see cosine minus a margin of 0.05, rounded down
to 0.05. The last line is one JSON object.

Run: ``.venv/bin/python bench/dedup.py`` (default embedder) or with MNEMOS_EMBEDDING__PROVIDER.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.embedding import make_embedder
from memory.settings import Settings

MARGIN = 0.05

# (stored fact, new fact): the LLM must see the stored one to decide.
MUST_SEE = [
    ("User lives in Berlin.", "User moved to Munich last month."),
    ("User lives in Berlin.", "User no longer lives in Berlin."),
    ("User works as a nurse.", "User now works as a software developer."),
    ("User has a dog named Max.", "User's dog Max died in March."),
    ("User is vegetarian.", "User started eating fish again."),
    ("User prefers email for contact.", "User prefers to be contacted by phone."),
    ("User's favourite colour is blue.", "User's favourite colour is green."),
    ("User is learning Spanish.", "User is learning Spanish and practises daily."),
    ("User plays tennis on Sundays.", "User plays tennis every Sunday morning."),
    ("User's daughter is 5 years old.", "User's daughter turned 6."),
    ("User is allergic to peanuts.", "User has a peanut allergy."),
    ("User drives a Toyota Corolla.", "User sold the Toyota and bought a bike."),
    ("User is married to Anna.", "User and Anna divorced."),
    ("User wants to visit Japan.", "User visited Japan in April."),
]
# (stored fact, new fact): different subjects; the LLM need not see the stored one.
UNRELATED = [
    ("User lives in Berlin.", "User is allergic to peanuts."),
    ("User works as a nurse.", "User's favourite colour is blue."),
    ("User has a dog named Max.", "User prefers email for contact."),
    ("User is vegetarian.", "User drives a Toyota Corolla."),
    ("User plays tennis on Sundays.", "User is learning Spanish."),
    ("User's daughter is 5 years old.", "User wants to visit Japan."),
    ("User is married to Anna.", "User works night shifts."),
    ("User likes jazz music.", "User lives in Berlin."),
]


async def main() -> None:
    embedder = make_embedder(Settings())
    texts = [t for pair in MUST_SEE + UNRELATED for t in pair]
    batch = await embedder.embed(texts)
    vectors = dict(zip(texts, batch.vectors, strict=True))

    def cosine(a: str, b: str) -> float:
        return float(np.dot(vectors[a], vectors[b]))

    must = [cosine(a, b) for a, b in MUST_SEE]
    other = [cosine(a, b) for a, b in UNRELATED]
    for label, pairs, scores in (("must-see", MUST_SEE, must), ("unrelated", UNRELATED, other)):
        for (a, b), score in sorted(zip(pairs, scores, strict=True), key=lambda x: x[1]):
            print(f"{label:>9} {score:.3f}  {a} | {b}")
    gate = math.floor((min(must) - MARGIN) * 20) / 20
    print(f"{embedder.model}: must-see min {min(must):.3f}, unrelated max {max(other):.3f}, "
          f"suggested gate {gate:.2f}")  # fmt: skip
    print(json.dumps({"model": embedder.model, "must_see_min": round(min(must), 3),
                      "unrelated_max": round(max(other), 3), "gate": gate}))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
