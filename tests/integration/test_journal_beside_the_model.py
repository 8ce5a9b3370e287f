"""A message the model answers is journaled while the model answers.

Its two writes (the thread's update and the message's insert) used to go before the
turn's memory read, which waited for them. Now they are sent as the model is asked, once
every read of the turn is done, and the turn does not finish before they have. These
tests hold that to what the person is owed: the message is journaled however the turn
ends (the model down included), a redelivered message is neither answered nor asked
about again, two deliveries of one message at once get one answer, and the turn's reads
are the ones a turn journaled first would make (the history bounded, the partitions, the
questions), on the real embedded server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.constants import MESSAGES, THREADS
from memory.errors import Unavailable
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.settings import Settings
from services.reply.assistant import LLM_DOWN
from tests.helpers.services import migrated_services
from tests.integration.test_lean_reply import COMMANDS, HOME
from tests.integration.test_lean_reply import group as said

NOW = datetime(2026, 5, 4, 8, tzinfo=UTC)
TESS, OMAR = 8301, 8302


class CountingModel:
    """The services' model, counting Alfred's answers; ``down`` makes it fail as an
    unreachable model does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.asked = 0
        self.down = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def chat(self, *args: Any, **kwargs: Any) -> Any:
        self.asked += 1
        if self.down:
            raise Unavailable("llm", "the test's model is down")
        return await self.inner.chat(*args, **kwargs)


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "beside", NOW) as services:
        yield services


def _clock(s: Services) -> ManualClock:
    clock = s.clock
    if not isinstance(clock, ManualClock):
        raise TypeError("these tests run on a manual clock")
    return clock


async def _journaled(s: Services, message_id: int) -> list[dict[str, Any]]:
    return [d async for d in s.mongo.db[MESSAGES].find({"_id": f"{HOME}:{message_id}"})]


async def test_the_writes_go_after_the_reads_and_the_turn_waits_for_them(s: Services) -> None:
    model = CountingModel(s.llm)
    s.llm = model
    assistant = build_assistant(s)
    clock = _clock(s)
    # A thread long enough that its history read is bounded by a time window.
    for n in range(1, 16):
        await assistant.handle(said(TESS, "Tess", f"the boiler needs part {n}", n))
        clock.advance(timedelta(seconds=20))
    await assistant.handle(said(OMAR, "Omar", "@alfred what's new?", 16))  # warm: the index
    clock.advance(timedelta(seconds=20))
    COMMANDS.order.clear()
    COMMANDS.bodies.clear()
    COMMANDS.on = True
    try:
        turn = await assistant.handle(said(OMAR, "Omar", "@alfred which part does it need?", 17))
    finally:
        COMMANDS.on = False
    assert turn.replies, "the message was answered"
    order = COMMANDS.order
    writes = [order.index(f"start insert {MESSAGES}"), order.index(f"start update {THREADS}")]
    reads = [i for i, step in enumerate(order) if step == f"end aggregate {MESSAGES}"]
    assert reads, order
    # The turn's memory reads ended before either write started: they waited on no write.
    assert max(reads) < min(writes), order
    # The history read is as bounded as when the writes went first.
    history = next(
        body
        for body in COMMANDS.bodies
        if body.get("aggregate") == MESSAGES and "$facet" in str(body)
    )
    assert "created_at" in history["pipeline"][0]["$match"], history["pipeline"][0]
    # When handle returns, the message is journaled, in the session the thread holds.
    stored = await _journaled(s, 17)
    thread = await s.mongo.db[THREADS].find_one({"_id": str(HOME)})
    assert thread is not None and len(stored) == 1
    assert stored[0]["session_id"] == thread["session_id"]
    assert thread["last_at"].replace(tzinfo=UTC) == clock.now()
    assert f"{HOME}:17" in thread["recent_ids"]
    assert model.asked == 2


async def test_the_message_is_journaled_when_the_model_is_down(s: Services) -> None:
    model = CountingModel(s.llm)
    s.llm = model
    assistant = build_assistant(s)
    await assistant.handle(said(TESS, "Tess", "the boiler service is on 9 May", 1))
    model.down = True
    turn = await assistant.handle(said(OMAR, "Omar", "@alfred when is the boiler service?", 2))
    assert [r.text for r in turn.replies] == [LLM_DOWN]  # "I've kept your message"
    assert model.asked == 1
    stored = await _journaled(s, 2)
    assert len(stored) == 1 and stored[0]["text"] == "@alfred when is the boiler service?"
    thread = await s.mongo.db[THREADS].find_one({"_id": str(HOME)})
    assert thread is not None and thread["pending_messages"] == 2


async def test_a_redelivered_message_is_not_answered_or_asked_about_again(s: Services) -> None:
    model = CountingModel(s.llm)
    s.llm = model
    assistant = build_assistant(s)
    await assistant.handle(said(TESS, "Tess", "the boiler service is on 9 May", 1))
    first = await assistant.handle(said(OMAR, "Omar", "@alfred when is the boiler service?", 2))
    assert first.replies and model.asked == 1
    again = await assistant.handle(said(OMAR, "Omar", "@alfred when is the boiler service?", 2))
    assert again.replies == []
    assert model.asked == 1  # known from the thread's last messages: the model is not asked
    assert len(await _journaled(s, 2)) == 1


async def test_one_message_delivered_twice_at_once_is_answered_once(s: Services) -> None:
    model = CountingModel(s.llm)
    s.llm = model
    assistant = build_assistant(s)
    await assistant.handle(said(TESS, "Tess", "the boiler service is on 9 May", 1))
    question = said(OMAR, "Omar", "@alfred when is the boiler service?", 2)
    turns = await asyncio.gather(assistant.handle(question), assistant.handle(question))
    assert sorted(len(t.replies) for t in turns) == [0, 1], turns
    assert len(await _journaled(s, 2)) == 1
