"""The update processor and the rate limiter of :mod:`bot.telegram.ordering`, driven as
PTB drives them (one task per update, in queue order), with events instead of time:
each test says which update may run when, and checks who started before whom."""

from __future__ import annotations

import asyncio
import datetime as dtm
from typing import Any

import pytest
from telegram import Update
from telegram.error import RetryAfter

from bot.telegram.ordering import ChatOrderedProcessor, ChatRateLimiter, chat_key

CHAT_A, CHAT_B = -1001, 42


def update(update_id: int, chat_id: int) -> Update:
    chat = {"id": chat_id, "type": "group" if chat_id < 0 else "private", "title": "t"}
    user = {"id": 7, "is_bot": False, "first_name": "Ann"}
    message = {"message_id": update_id, "date": 0, "chat": chat, "from": user, "text": "hi"}
    parsed = Update.de_json({"update_id": update_id, "message": message}, None)
    if parsed is None:
        raise ValueError("not an update")
    return parsed


class Script:
    """Handlers that log when they start and end, and wait for the test's go-ahead."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    async def handler(self, name: str, *, blocked: bool = False) -> None:
        self.log.append(f"start {name}")
        if blocked:
            await self.gate(name).wait()
        else:
            await asyncio.sleep(0)  # a handler always awaits something
        self.log.append(f"end {name}")


async def until(condition: Any, what: str) -> None:
    """Let the loop run until ``condition()``; fails (not hangs) if it never holds."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


def feed(
    processor: ChatOrderedProcessor, items: list[tuple[Update, Any]]
) -> list[asyncio.Task[None]]:
    """As PTB's update fetcher does: one task per update, created in queue order."""
    return [asyncio.create_task(processor.process_update(u, c)) for u, c in items]


async def test_one_chat_in_order_when_many_arrive_at_once() -> None:
    processor = ChatOrderedProcessor(running=8)
    script = Script()
    names = [f"a{k}" for k in range(20)]
    tasks = feed(
        processor,
        [(update(k + 1, CHAT_A), script.handler(n)) for k, n in enumerate(names)],
    )
    await asyncio.gather(*tasks)
    expected = [e for n in names for e in (f"start {n}", f"end {n}")]
    assert script.log == expected  # never two of one chat at once, and in arrival order
    assert processor.chats == 0  # an idle chat is forgotten


async def test_a_slow_update_holds_only_its_own_chat() -> None:
    processor = ChatOrderedProcessor(running=8)
    script = Script()
    tasks = feed(
        processor,
        [
            (update(1, CHAT_A), script.handler("a1", blocked=True)),
            (update(2, CHAT_A), script.handler("a2")),
            (update(3, CHAT_B), script.handler("b1")),
            (update(4, CHAT_B), script.handler("b2")),
        ],
    )
    await until(lambda: "end b2" in script.log, "chat B handled while a1 hangs")
    assert "start a1" in script.log and "end a1" not in script.log
    assert "start a2" not in script.log  # a2 waits for a1, its own chat's earlier update
    assert processor.chats == 1
    script.gate("a1").set()
    await asyncio.gather(*tasks)
    assert script.log.index("end a1") < script.log.index("start a2")
    assert script.log.index("end b1") < script.log.index("start b2")
    assert processor.chats == 0


async def test_waiting_for_a_turn_takes_no_running_slot() -> None:
    """Two slots, a chat with a long queue behind a hung update: another chat still runs
    (a waiting update holding a slot would fill both)."""
    processor = ChatOrderedProcessor(running=2)
    script = Script()
    queued = [(update(k + 2, CHAT_A), script.handler(f"a{k + 2}")) for k in range(5)]
    tasks = feed(
        processor,
        [
            (update(1, CHAT_A), script.handler("a1", blocked=True)),
            *queued,
            (update(9, CHAT_B), script.handler("b1")),
        ],
    )
    await until(lambda: "end b1" in script.log, "chat B handled beside chat A's queue")
    script.gate("a1").set()
    await asyncio.gather(*tasks)
    assert [e for e in script.log if e.startswith("start a")] == [
        f"start a{k}" for k in range(1, 7)
    ]


async def test_the_global_bound_holds() -> None:
    processor = ChatOrderedProcessor(running=1)
    script = Script()
    tasks = feed(
        processor,
        [
            (update(1, CHAT_A), script.handler("a1", blocked=True)),
            (update(2, CHAT_B), script.handler("b1")),
        ],
    )
    await until(lambda: "start a1" in script.log, "a1 started")
    for _ in range(100):
        await asyncio.sleep(0)
    assert "start b1" not in script.log  # one slot, taken by a1
    script.gate("a1").set()
    await asyncio.gather(*tasks)
    assert script.log == ["start a1", "end a1", "start b1", "end b1"]


def test_what_orders_an_update() -> None:
    assert chat_key(update(1, CHAT_A)) == CHAT_A
    inline = Update.de_json(
        {
            "update_id": 5,
            "inline_query": {
                "id": "q",
                "from": {"id": 99, "is_bot": False, "first_name": "Bo"},
                "query": "",
                "offset": "",
            },
        },
        None,
    )
    assert chat_key(inline) == 99  # no chat: its user
    assert chat_key(object()) is None


async def test_a_429_pauses_only_its_own_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB's own AIORateLimiter pauses every request after a 429; ours only the chat's."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    limiter = ChatRateLimiter(max_retries=2)
    log: list[str] = []
    b_sent_at: list[float] = []
    first = True

    async def send_a() -> dict[str, Any]:
        nonlocal first
        log.append("a tries")
        if first:
            first = False
            raise RetryAfter(dtm.timedelta(seconds=1))
        return {"ok": True}

    async def send_b() -> dict[str, Any]:
        log.append("b sent")
        b_sent_at.append(asyncio.get_running_loop().time())
        return {"ok": True}

    async def request(callback: Any, chat_id: int) -> Any:
        return await limiter.process_request(
            callback, (), {}, "sendMessage", {"chat_id": chat_id}, None
        )

    a = asyncio.create_task(request(send_a, CHAT_A))
    await until(lambda: CHAT_A in limiter._paused_until, "chat A refused with a 429")
    a_paused_until = limiter._paused_until[CHAT_A]
    b_answer = await request(send_b, CHAT_B)  # not held by chat A's pause
    assert b_answer == {"ok": True}
    assert log == ["a tries", "b sent"] and not a.done()
    assert b_sent_at[0] < a_paused_until  # B did not wait out A's pause
    assert await a == {"ok": True}  # chat A retried after its pause
    assert log == ["a tries", "b sent", "a tries"]


async def test_a_429_without_a_chat_pauses_everyone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    limiter = ChatRateLimiter(max_retries=1)
    loop = asyncio.get_running_loop()
    log: list[str] = []
    sent_at: list[float] = []

    async def bot_wide() -> bool:
        log.append("bot-wide tries")
        if len(log) == 1:
            raise RetryAfter(dtm.timedelta(seconds=1))
        return True

    async def send_b() -> bool:
        sent_at.append(loop.time())
        return True

    first = asyncio.create_task(limiter.process_request(bot_wide, (), {}, "getMe", {}, None))
    await until(lambda: None in limiter._paused_until, "a bot-wide 429")
    paused_until = limiter._paused_until[None]
    await limiter.process_request(send_b, (), {}, "sendMessage", {"chat_id": CHAT_B}, None)
    assert sent_at[0] >= paused_until  # chat B waited for the bot-wide pause
    assert await first is True
    assert log == ["bot-wide tries", "bot-wide tries"]
    assert not limiter._paused_until  # expired pauses are forgotten


async def test_retries_run_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    limiter = ChatRateLimiter(max_retries=0)

    async def refused() -> bool:
        raise RetryAfter(dtm.timedelta(seconds=1))

    with pytest.raises(RetryAfter):
        await limiter.process_request(refused, (), {}, "sendMessage", {"chat_id": 1}, None)
