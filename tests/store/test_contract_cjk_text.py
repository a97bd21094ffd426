"""Contract: text search finds a Chinese or Japanese word inside a sentence (every backend).

Chinese and Japanese are written without spaces, so a whole sentence is one ``\\w+`` run; every
store's text index splits such a run into overlapping character bigrams (the shared rule,
memory.store.rules.text), so "北京" finds "爱丽丝住在北京" as "Berlin" finds "Alice lives in
Berlin"."""

from __future__ import annotations

import pytest

from memory.store.base import MemoryStore
from tests.store.builders import Former, add, unit, user_filter

FACTS = {
    "zh": "爱丽丝住在北京",
    "ja": "東京に住んでいます",
    "ja-kana": "好きな食べ物はアイスクリームです",
    "mixed": "Bob bought an iPhone手机 yesterday",
    "en": "Carol lives in Berlin",
}


async def _form(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(*(add(k, c, unit(1, i)) for i, (k, c) in enumerate(FACTS.items())))


async def _found(store: MemoryStore, query: str) -> list[str]:
    return [h.fact.fact_id for h in await store.text_search(query, user_filter(), limit=10)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("北京", ["zh"]),
        ("住在北京", ["zh"]),
        ("爱丽丝住在北京", ["zh"]),
        ("東京", ["ja"]),
        ("クリーム", ["ja-kana"]),
        ("手机", ["mixed"]),
        ("iphone", ["mixed"]),
        ("Berlin", ["en"]),
        ("上海", []),
    ],
)
async def test_a_cjk_word_inside_a_sentence_is_found(
    store: MemoryStore, query: str, expected: list[str]
) -> None:
    await _form(store)

    assert await _found(store, query) == expected


async def test_the_fact_holding_more_of_a_cjk_query_ranks_first(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("both", "我喜欢喝绿茶", unit(1, 0)),
        add("one", "他喜欢红茶", unit(0, 1)),
        add("none", "她收集地图", unit(0, 0, 1)),
    )

    hits = await store.text_search("喜欢绿茶", user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["both", "one"]
    assert hits[0].score > hits[1].score > 0


KANA = {
    "bus": "駅からバスに乗ります",
    "pass": "パスを忘れました",
    "lotus": "池にハスが咲いています",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [("バス", ["bus"]), ("パス", ["pass"]), ("ハス", ["lotus"]), ("ﾊﾞｽ", ["bus"])],
)
async def test_a_voiced_kana_word_is_another_word(
    store: MemoryStore, query: str, expected: list[str]
) -> None:
    """Kana voicing makes another syllable: "バス" (bus) finds neither "パス" (pass) nor "ハス"
    (lotus); a half-width "ﾊﾞｽ" is the bus."""
    former = await Former(store).start()
    await former.form(*(add(k, c, unit(1, i)) for i, (k, c) in enumerate(KANA.items())))

    assert await _found(store, query) == expected
