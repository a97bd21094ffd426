"""Where "the same fact again" starts for an embedder: the cosine above which the dedup step
decides NONE without asking the model (memory/pipeline/predecide.py).

A restated fact (the same statement extracted again from a later message, worded a little
differently) needs no model. A correction often differs by one word or number ("blue" → "green",
"5" → "6") and scores nearly as high, so the bound must sit above every such change, or a
correction would be dropped as a duplicate, the one mistake dedup must never make. The pairs are
facts as the extraction prompt writes them. The bench prints every pair's cosine, the highest
change and the lowest restatement, and the bound: the highest change plus a margin of 0.02,
rounded up to 0.01 (restatements below it are left to the model, which is only slower). The
last line is one JSON object.

Run: ``.venv/bin/python bench/duplicate_bound.py`` (default embedder) or with
MNEMOS_EMBEDDING__PROVIDER.
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

MARGIN = 0.02

# (stored fact, new fact): the same statement; NONE is right.
RESTATED = [
    ("User lives in Berlin.", "The user lives in Berlin."),
    ("User lives in Berlin.", "User lives in Berlin, Germany."),
    ("User works as a nurse.", "User is a nurse by profession."),
    ("User has a dog named Max.", "User owns a dog called Max."),
    ("User is allergic to peanuts.", "User has a peanut allergy."),
    ("Alice's birthday is on March 3.", "Alice was born on March 3."),
    ("The Mars Festival budget is $50,000.", "The budget of the Mars Festival is $50,000."),
    ("The vendor contract deadline is January 24, 2027.",
     "The deadline of the vendor contract is January 24, 2027."),
    ("Bob prefers Python for data analysis.", "Bob prefers to use Python for data analysis."),
    ("User's daughter Mia is 5 years old.", "User's daughter, Mia, is five years old."),
]  # fmt: skip
# (stored fact, new fact): a change that must reach the store; NONE would lose it.
CHANGED = [
    ("User's favourite colour is blue.", "User's favourite colour is green."),
    ("User's daughter is 5 years old.", "User's daughter is 6 years old."),
    ("User lives in Berlin.", "User lives in Munich."),
    ("User lives in Berlin.", "User no longer lives in Berlin."),
    ("User works as a nurse.", "User worked as a nurse."),
    ("The Mars Festival budget is $50,000.", "The Mars Festival budget is $70,000."),
    ("The vendor contract deadline is January 24, 2027.",
     "The vendor contract deadline is January 31, 2027."),
    ("The Mars Festival opens on March 15, 2027 in Lisbon.",
     "The Mars Festival opens on March 22, 2027 in Lisbon."),
    ("Alice's birthday is on March 3.", "Alice's birthday is on March 13."),
    ("User is vegetarian.", "User is not vegetarian."),
    ("User drives a Toyota Corolla.", "User drives a Toyota Camry."),
    ("Bob prefers Python for data analysis.", "Bob prefers R for data analysis."),
    ("User is learning Spanish.", "User is learning Spanish and practises daily."),
    ("The team meets on Mondays at 10:00.", "The team meets on Mondays at 11:00."),
]  # fmt: skip


async def main() -> None:
    embedder = make_embedder(Settings())
    texts = [t for pair in RESTATED + CHANGED for t in pair]
    batch = await embedder.embed(texts)
    vectors = dict(zip(texts, batch.vectors, strict=True))

    def cosine(a: str, b: str) -> float:
        return float(np.dot(vectors[a], vectors[b]))

    same = [cosine(a, b) for a, b in RESTATED]
    changed = [cosine(a, b) for a, b in CHANGED]
    for label, pairs, scores in (("restated", RESTATED, same), ("changed", CHANGED, changed)):
        for (a, b), score in sorted(zip(pairs, scores, strict=True), key=lambda x: x[1]):
            print(f"{label:>9} {score:.3f}  {a} | {b}")
    bound = math.ceil((max(changed) + MARGIN) * 100) / 100
    caught = sum(s >= bound for s in same)
    print(f"{embedder.model}: changed max {max(changed):.3f}, restated min {min(same):.3f}, "
          f"bound {bound:.2f} (restatements at or above it: {caught}/{len(same)})")  # fmt: skip
    print(json.dumps({"model": embedder.model, "changed_max": round(max(changed), 3),
                      "restated_min": round(min(same), 3), "bound": bound,
                      "restated_caught": caught, "restated": len(same)}))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
