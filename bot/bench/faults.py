"""``alfred bench faults``: fault drills against the real bot, and what each one cost.

Each drill runs the real bot (``alfred run``'s :func:`run_bot`, polling, embedded servers
in a temporary folder, the in-process worker) against a local Bot API and a local model
server that answers at once. ``--senders`` people each send "remember that …" messages
in their DMs, one every ``--interval`` seconds in turn, each with a word of its own;
after a third of the ``--messages`` the drill's fault strikes. Once every message was
answered (or ``--timeout`` ran out), the drill counts:

* ``sent``: messages pushed to the bot;
* ``confirmed``: messages answered "Got it, I'll remember that." (after a replay too);
* ``stored``: messages whose journal entry and memory (a fact holding its word) are in
  the database after recovery;
* ``lost``: sent but not stored;
* ``duplicated``: a message journaled twice, or confirmed more often than it was sent;
* ``recovery_s``: from the fault to the first confirmation of a message sent after it;
* ``degraded_reply_max_s``: the longest wait for the first answer to a message sent
  while the dependency was down (the "restarting" apology or the answer itself);
* ``formations_done`` / ``formations_open``: formation requests (one per 45 messages of a
  thread) the worker finished, and those still open when the drill ended; with
  ``--messages 200`` and 4 senders each thread asks for one, after the fault.

Drills: ``kill-mongo`` and ``kill-redis`` (``kill -9`` of the embedded server; its
supervisor starts it again). Not drilled yet: killing the worker mid-formation, model
errors, slow and garbage model answers (see docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr
from pymongo import AsyncMongoClient

from bot.bench.bot import _chat_or_task
from bot.bench.common import JsonOption, emit, stderr
from bot.bench.fake_bot_api import TOKEN, FakeBotApi
from bot.bench.fake_openai import FakeOpenAI, text_task_handler
from bot.telegram.run import run_bot
from integrations.mongo.outbox import FORMATION_REQUESTS
from memory.constants import FACTS, MESSAGES
from memory.errors import AlfredError
from runtime.embedded import Kind, acquire, stop_before_removal
from runtime.embedded.probe import answers
from runtime.embedded.state import EmbeddedPaths, read_state
from runtime.settings import load_settings

GOT_IT = "Got it, I'll remember that."
START_S = 120.0  # the first start loads the local embedding model
DATABASE = "alfred_bench_faults"
DRILLS: dict[str, Kind] = {"kill-mongo": "mongo", "kill-redis": "redis"}


@dataclass
class _Message:
    chat_id: int
    message_id: int
    word: str
    at: float


@dataclass
class _Traffic:
    messages: list[_Message] = field(default_factory=list)


def _word(n: int) -> str:
    """A word no other message holds (letters only: the tokenizer keeps it whole)."""
    letters = "bcdfghjklmnpqrstvwxz"
    out = ""
    n += 1000
    while n:
        n, r = divmod(n, len(letters))
        out += letters[r]
    return "zq" + out


async def _first(predicate: Callable[[], bool], deadline: float) -> bool:
    while not predicate():
        if time.perf_counter() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _drill(
    name: str, kind: Kind, *, messages: int, senders: int, interval: float, deadline_s: float
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="alfred-bench-faults-"))
    try:
        # The drill's own lease names the server to kill (the bot shares the server).
        lease = await asyncio.to_thread(acquire, kind, folder)
        try:
            return await _run(name, kind, lease, folder, messages, senders, interval, deadline_s)
        finally:
            await asyncio.to_thread(lease.release)
    finally:
        await asyncio.to_thread(stop_before_removal, folder)
        shutil.rmtree(folder, ignore_errors=True)


async def _run(
    name: str,
    kind: Kind,
    lease: Any,
    folder: Path,
    messages: int,
    senders: int,
    interval: float,
    deadline_s: float,
) -> dict[str, Any]:
    async with (
        FakeOpenAI(chat_handler=text_task_handler(_chat_or_task), record=False) as model,
        FakeBotApi() as api,
    ):
        settings = load_settings().model_copy(
            update={
                "telegram_bot_token": SecretStr(TOKEN),
                "telegram_api_base_url": api.base_url,
                "openai_api_key": SecretStr("bench"),
                "openai_base_url": model.base_url,
                "embeddings_provider": "local",
                "alfred_data_dir": folder,
                "mongodb_uri": None,
                "redis_url": None,
                "mongodb_database": DATABASE,
                "metrics_port": 0,
                "webhook_url": None,
                "run_worker": "inprocess",
            }
        )
        stop = asyncio.Event()
        bot = asyncio.create_task(run_bot(settings, stop=stop), name="bench-faults-bot")
        try:
            people = [api.user(f"p{k}") for k in range(senders)]
            chats = [api.private_chat(p) for p in people]
            stderr.print(f"{name}: starting the bot …")
            api.push_text(chats[0], people[0], "hello")
            if not await _first(
                lambda: bool(api.sent) or bot.done(), time.perf_counter() + START_S
            ):
                raise AlfredError(f"bench faults: the bot did not answer within {START_S:g}s")
            if bot.done():
                raise AlfredError(f"bench faults: the bot stopped: {bot.exception()!r}")
            warm = len(api.sent)
            traffic = _Traffic()
            killed_at = 0.0
            restart: asyncio.Task[float | None] | None = None
            stderr.print(f"{name}: {messages} messages from {senders} people, a kill at 1/3 …")
            for n in range(messages):
                if n == messages // 3:
                    state = read_state(EmbeddedPaths(lease.data_dir, kind))
                    pid = state.server_pid if state else None
                    if pid is None:
                        raise AlfredError(f"bench faults: no {kind} server to kill")
                    os.kill(pid, signal.SIGKILL)
                    killed_at = time.perf_counter()
                    restart = asyncio.create_task(_restarted(lease, kind, pid))
                k = n % senders
                word = _word(n)
                update = api.push_text(chats[k], people[k], f"remember that my code {n} is {word}")
                traffic.messages.append(
                    _Message(
                        chats[k]["id"], update["message"]["message_id"], word, time.perf_counter()
                    )
                )
                await asyncio.sleep(interval)
            done = await _first(
                lambda: _confirmed(api, chats, warm) >= messages or bot.done(),
                time.perf_counter() + deadline_s,
            )
            restarted_at = await restart if restart is not None else None
            if bot.done():
                raise AlfredError(f"bench faults: the bot stopped: {bot.exception()!r}")
            if not done:
                stderr.print(f"{name}: not every message was answered within {deadline_s:g}s")
            state = read_state(EmbeddedPaths(lease.data_dir, "mongo"))
            url = state.url if state else ""
            deadline = time.perf_counter() + deadline_s
            return await _count(
                name, api, chats, warm, traffic, url, killed_at, restarted_at, deadline
            )
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(bot, 60)


async def _restarted(lease: Any, kind: Kind, old_pid: int) -> float | None:
    """When the supervisor's new server answered (None: not within two minutes)."""
    paths = EmbeddedPaths(lease.data_dir, kind)
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        state = read_state(paths)
        if (
            state is not None
            and state.ready
            and state.server_pid not in (None, old_pid)
            and await asyncio.to_thread(answers, kind, state.port)
        ):
            return time.perf_counter()
        await asyncio.sleep(0.02)
    return None


def _confirmed(api: FakeBotApi, chats: list[dict[str, Any]], warm: int) -> int:
    ids = {c["id"] for c in chats}
    return sum(1 for s in api.sent[warm:] if s.chat_id in ids and s.text == GOT_IT)


async def _count(
    name: str,
    api: FakeBotApi,
    chats: list[dict[str, Any]],
    warm: int,
    traffic: _Traffic,
    mongo_url: str,
    killed_at: float,
    restarted_at: float | None,
    deadline: float,
) -> dict[str, Any]:
    sent_after = api.sent[warm:]
    per_chat_sent: dict[int, int] = {}
    for m in traffic.messages:
        per_chat_sent[m.chat_id] = per_chat_sent.get(m.chat_id, 0) + 1
    confirmed = 0
    duplicated = 0
    for chat_id, count in per_chat_sent.items():
        got = sum(1 for s in sent_after if s.chat_id == chat_id and s.text == GOT_IT)
        confirmed += min(got, count)
        duplicated += max(0, got - count)
    # recovery: the first confirmation of a message sent after the kill, per chat in order
    after_kill = [m for m in traffic.messages if m.at >= killed_at]
    recovery_s: float | None = None
    degraded: list[float] = []
    for chat in chats:
        mine = [m for m in traffic.messages if m.chat_id == chat["id"]]
        replies = [s for s in sent_after if s.chat_id == chat["id"]]
        got_its = [s for s in replies if s.text == GOT_IT]
        for index, m in enumerate(mine):
            if m.at < killed_at or index >= len(got_its):
                continue
            if recovery_s is None or got_its[index].at - killed_at < recovery_s:
                recovery_s = got_its[index].at - killed_at
            first = next((s for s in replies if s.at >= m.at), None)
            if first is not None and (restarted_at is None or m.at < restarted_at):
                degraded.append(first.at - m.at)
    stored = 0
    journal_dupes = 0
    formations: dict[str, int] = {}
    if mongo_url:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            mongo_url, serverSelectionTimeoutMS=10_000
        )
        try:
            db = client[DATABASE]
            for m in traffic.messages:
                journaled = await db[MESSAGES].count_documents(
                    {"text": {"$regex": re.escape(m.word)}, "role": "user"}
                )
                fact = await db[FACTS].find_one({"content": {"$regex": re.escape(m.word)}})
                journal_dupes += max(0, journaled - 1)
                stored += int(journaled >= 1 and fact is not None)
            formations = await _formations(db, deadline)
        finally:
            await client.close()
    sent = len(traffic.messages)
    return {
        "name": name,
        "sent": sent,
        "confirmed": confirmed,
        "stored": stored,
        "lost": sent - stored,
        "duplicated": duplicated + journal_dupes,
        "recovery_s": round(recovery_s, 3) if recovery_s is not None else None,
        "server_restart_s": round(restarted_at - killed_at, 3) if restarted_at else None,
        "after_fault": len(after_kill),
        "degraded_reply_max_s": round(max(degraded), 3) if degraded else None,
        "formations_done": formations.get("done", 0),
        "formations_open": formations.get("pending", 0) + formations.get("queued", 0),
    }


async def _formations(db: Any, deadline: float) -> dict[str, int]:
    """Formation requests by status, once none is open (or at ``deadline``)."""
    while True:
        counts: dict[str, int] = {}
        async for doc in db[FORMATION_REQUESTS].find({}, {"status": 1}):
            counts[str(doc.get("status"))] = counts.get(str(doc.get("status")), 0) + 1
        if not counts.get("pending") and not counts.get("queued"):
            return counts
        if time.perf_counter() >= deadline:
            return counts
        await asyncio.sleep(0.2)


def register(app: typer.Typer) -> None:
    @app.command("faults")
    def bench_faults(
        drills: Annotated[
            str, typer.Option(help=f"Comma-separated drills: {', '.join(DRILLS)}.")
        ] = ",".join(DRILLS),
        messages: Annotated[int, typer.Option(min=3, help="Messages per drill.")] = 60,
        senders: Annotated[int, typer.Option(min=1, help="People sending at once.")] = 4,
        interval: Annotated[float, typer.Option(min=0, help="Seconds between messages.")] = 0.1,
        timeout: Annotated[float, typer.Option(help="Seconds to wait for all answers.")] = 180.0,
        as_json: JsonOption = False,
    ) -> None:
        """Kill each embedded server mid-traffic: sent, confirmed, stored, lost,
        duplicated and seconds to recover, per drill."""
        chosen = [d.strip() for d in drills.split(",") if d.strip()]
        unknown = [d for d in chosen if d not in DRILLS]
        if unknown:
            raise typer.BadParameter(f"unknown drill(s) {unknown}; known: {list(DRILLS)}")
        results = [
            asyncio.run(
                _drill(
                    d,
                    DRILLS[d],
                    messages=messages,
                    senders=senders,
                    interval=interval,
                    deadline_s=timeout,
                )
            )
            for d in chosen
        ]
        lines = [
            f"{r['name']}: sent {r['sent']}, confirmed {r['confirmed']}, stored {r['stored']}, "
            f"lost {r['lost']}, duplicated {r['duplicated']}, recovered in {r['recovery_s']} s "
            f"(server back in {r['server_restart_s']} s; longest wait for a first answer "
            f"while down {r['degraded_reply_max_s']} s); formations done "
            f"{r['formations_done']}, open {r['formations_open']}"
            for r in results
        ]
        emit({"drills": results}, as_json=as_json, summary="\n".join(lines))
