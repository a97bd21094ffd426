"""Contract: a message keeps the UTC offset its created_at was sent with (the speaker's clock,
StoredMessage.utc_offset_minutes) beside the instant every store keeps in UTC: through recording,
loading, export and import, on every backend. A message stored without one reads as None (UTC)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.models import MessageIn, StoredMessage
from memory.store.base import MemoryStore
from tests.store.builders import T0, record

# The same clock reading on three clocks: Chicago in May, India, UTC.
CHICAGO = timezone(timedelta(hours=-5))
INDIA = timezone(timedelta(hours=5, minutes=30))
SENT = {"m1": (CHICAGO, -300), "m2": (INDIA, 330), "m3": (UTC, 0)}


def _message(message_id: str, seconds: int) -> MessageIn:
    zone, _ = SENT[message_id]
    return MessageIn(
        message_id=message_id,
        role="user",
        content=f"message {message_id}",
        created_at=(T0 + timedelta(seconds=seconds)).astimezone(zone),
        user_id="u1",
    )


def _offsets(messages: list[StoredMessage]) -> dict[str, int | None]:
    return {m.message_id: m.utc_offset_minutes for m in messages}


async def test_the_offset_a_message_was_sent_with_is_kept(store: MemoryStore) -> None:
    sent = [_message("m1", 0), _message("m2", 1), _message("m3", 2)]
    await record(store, "s1", "a1", sent, now_seconds=10)

    loaded = await store.load_messages("s1", 0, 10)
    assert _offsets(loaded) == {mid: minutes for mid, (_, minutes) in SENT.items()}
    # The instant is the one sent, held in UTC as before.
    assert [m.created_at for m in loaded] == [m.created_at for m in sent]
    assert all(m.created_at.utcoffset() == timedelta(0) for m in loaded)
    assert _offsets(await store.get_messages("s1", ["m1", "m2"])) == {"m1": -300, "m2": 330}


async def test_export_and_import_carry_the_offset(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [_message("m1", 0), _message("m2", 1)], now_seconds=10)
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=True, now=T0)
    lines = out.getvalue().splitlines()
    assert sum('"utc_offset_minutes":-300' in line for line in lines) == 1

    batch = to_import(read_export(lines))
    copies = [m.message.model_copy(update={"session_id": "s2"}) for m in batch.messages]
    assert (await store.import_messages(copies)).inserted == 2
    assert _offsets(await store.load_messages("s2", 0, 10)) == {"m1": -300, "m2": 330}


async def test_a_message_imported_without_an_offset_reads_as_utc(store: MemoryStore) -> None:
    """A file exported before offsets were kept: its messages hold none, as stored rows do."""
    older = StoredMessage(
        session_id="s1", seq=1, message_id="m1", role="user", content="hi",
        created_at=datetime(2025, 1, 1, tzinfo=UTC), user_id="u1", agent_id="a1",
    )  # fmt: skip
    await store.import_messages([older])
    [loaded] = await store.load_messages("s1", 0, 10)
    assert loaded.utc_offset_minutes is None and loaded == older
