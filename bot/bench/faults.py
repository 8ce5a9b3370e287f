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
* ``recovery_s``: from the fault until confirmations of messages sent after it flow again
  (each chat's messages are confirmed in order: the first confirmation beyond the
  messages sent before the fault), the earliest over the chats;
* ``server_restart_s``: from the kill until the restarted server answered;
* ``chat_wait_max_s``: during the fault (until the server answered again, or the model
  was well again), the longest a chat waited for its next answer (the "restarting"
  apology, or a confirmation) after one of its messages. Replies carry no message id in
  a DM, so this is how long a chat went unanswered, not each message's own latency;
* ``formations_done`` / ``formations_open``: formation requests (one per 45 messages of a
  thread) the worker finished, and those still open when the drill ended; with
  ``--messages 200`` and 4 senders each thread asks for one, after the fault.

Drills: ``kill-mongo`` and ``kill-redis`` (``kill -9`` of the embedded server; its
supervisor starts it again); ``model-errors`` (HTTP 500), ``model-garbage`` (answers that
are not JSON) and ``model-hang`` (no answer at all) from a third of the messages to two
thirds; ``kill-worker`` (a worker process of its own, ``kill -9`` while it forms; a new
one starts at once; its ``recovery_s`` is until no formation is open);
``formation-errors``, ``formation-garbage`` and ``formation-slow`` (formation's model
calls fail or lag while the chat path is answered; the messages are statements, and
``recovery_s`` runs from the model's recovery until no formation is open; a message
marked formed that no good extraction read counts as lost); and ``busy-group``
(:mod:`bot.bench.fault_drills`). See docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from arq.constants import in_progress_key_prefix
from pydantic import SecretStr
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from bot.bench.bot import _chat_or_task
from bot.bench.common import JsonOption, emit, stderr
from bot.bench.fake_bot_api import TOKEN, FakeBotApi
from bot.bench.fake_openai import (
    FakeOpenAI,
    Handler,
    RecordedRequest,
    completion,
    server_error,
    text_task_handler,
)
from bot.bench.fault_drills import (
    DATABASE,
    KILL_WAIT_S,
    FormationModel,
    busy_group,
    formation_fault,
    formation_figures,
    settled,
)
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


async def _hang(request: RecordedRequest) -> Any:
    await asyncio.sleep(3600)


def _garbage(request: RecordedRequest) -> Any:
    return completion("Sure! The facts are: the code, and the word.")


def _error(request: RecordedRequest) -> Any:
    return server_error(500)


@dataclass(frozen=True)
class Drill:
    """A fault: ``kill`` names the embedded server killed with ``kill -9`` (its
    supervisor restarts it); ``model`` is how the model answers from a third of the
    messages to two thirds (then it answers well again)."""

    kill: Kind | None = None
    model: Handler | None = None
    #: Run the worker as a process of its own and ``kill -9`` it in the middle of its
    #: first job; a new worker is started at once.
    worker: bool = False
    #: How formation's model calls fail from a third of the messages to two thirds
    #: (:class:`bot.bench.fault_drills.FormationModel`); the chat path is answered well.
    #: The messages are statements (not "remember that"): what is learned, formation
    #: learns.
    formation: str | None = None

    @property
    def answer(self) -> str | None:
        """The confirmation each message gets (None: any answer)."""
        return None if self.formation else GOT_IT


DRILLS: dict[str, Drill] = {
    "kill-mongo": Drill(kill="mongo"),
    "kill-redis": Drill(kill="redis"),
    "model-errors": Drill(model=_error),
    "model-garbage": Drill(model=_garbage),
    "model-hang": Drill(model=_hang),
    "kill-worker": Drill(worker=True),
    "formation-errors": Drill(formation="errors"),
    "formation-garbage": Drill(formation="garbage"),
    "formation-slow": Drill(formation="slow"),
}
#: Not a :class:`Drill` of the traffic above: ``alfred bench telegram``'s run
#: (:func:`bot.bench.fault_drills.busy_group`).
BUSY_GROUP = "busy-group"
BUSY_MENTIONS = 40
ALL_DRILLS = [*DRILLS, BUSY_GROUP]
#: Words that make a thread's messages reach a formation (~1,000 tokens) every 8 or so.
FILLER = (
    " (for the record, and so that there is something to learn from: we walked along "
    "the river this morning, the bakery was closed, the neighbours were painting their "
    "fence green, and the cat refused to come inside until the rain stopped; later the "
    "rain stopped, we had soup with bread from the other bakery, and the cat slept on "
    "the warm windowsill while we planned the week ahead, the shopping and the visits)"
)


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
    name: str, drill: Drill, *, messages: int, senders: int, interval: float, deadline_s: float
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="alfred-bench-faults-"))
    lease = None
    try:
        if drill.kill is not None:
            # The drill's own lease names the server to kill (the bot shares the server).
            lease = await asyncio.to_thread(acquire, drill.kill, folder)
        return await _run(name, drill, lease, folder, messages, senders, interval, deadline_s)
    finally:
        if lease is not None:
            await asyncio.to_thread(lease.release)
        await asyncio.to_thread(stop_before_removal, folder)
        shutil.rmtree(folder, ignore_errors=True)


def _kill(lease: Any, kind: Kind) -> asyncio.Task[float | None]:
    """``kill -9`` the server; the task tells when its replacement answered."""
    state = read_state(EmbeddedPaths(lease.data_dir, kind))
    pid = state.server_pid if state else None
    if pid is None:
        raise AlfredError(f"bench faults: no {kind} server to kill")
    os.kill(pid, signal.SIGKILL)
    return asyncio.create_task(_restarted(lease, kind, pid))


async def _run(
    name: str,
    drill: Drill,
    lease: Any,
    folder: Path,
    messages: int,
    senders: int,
    interval: float,
    deadline_s: float,
) -> dict[str, Any]:
    formation_model = FormationModel(text_task_handler(_chat_or_task))
    handler = formation_model if drill.formation else text_task_handler(_chat_or_task)
    async with (
        FakeOpenAI(chat_handler=handler, record=False) as model,
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
                "run_worker": "external" if drill.worker else "inprocess",
            }
        )
        stop = asyncio.Event()
        bot = asyncio.create_task(run_bot(settings, stop=stop), name="bench-faults-bot")
        worker = _Workers(folder, model.base_url) if drill.worker else None
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
            killer: asyncio.Task[float | None] | None = None
            ender: asyncio.Task[float] | None = None
            if worker is not None:
                await worker.start()
                killer = asyncio.create_task(worker.kill_mid_job())
            # From the kill (kill-worker) or the model's recovery (formation drills):
            # when no formation request was open any more, watched as it happens.
            settle: asyncio.Task[float | None] | None = None
            if killer is not None:
                settle = asyncio.create_task(settled(folder, killer, deadline_s))
            fault_at = 0.0
            fault_end: float | None = None
            restart: asyncio.Task[float | None] | None = None
            stderr.print(f"{name}: {messages} messages from {senders} people, the fault at 1/3 …")
            for n in range(messages):
                if n == messages // 3:
                    fault_at = time.perf_counter()
                    if drill.kill is not None:
                        restart = _kill(lease, drill.kill)
                    if drill.model is not None:
                        model.set_handler(drill.model)
                    if drill.formation is not None:
                        ender = asyncio.create_task(
                            formation_fault(formation_model, drill.formation)
                        )
                        settle = asyncio.create_task(settled(folder, ender, deadline_s))
                if n == 2 * messages // 3 and drill.model is not None:
                    model.set_handler(None)
                    fault_end = time.perf_counter()
                k = n % senders
                word = _word(n)
                said = f"my code {n} is {word}"
                if drill.formation is None:
                    said = f"remember that {said}"
                text = said + (FILLER if drill.worker or drill.formation else "")
                update = api.push_text(chats[k], people[k], text)
                traffic.messages.append(
                    _Message(
                        chats[k]["id"], update["message"]["message_id"], word, time.perf_counter()
                    )
                )
                await asyncio.sleep(interval)
            done = await _first(
                lambda: _confirmed(api, chats, warm, drill.answer) >= messages or bot.done(),
                time.perf_counter() + deadline_s,
            )
            if restart is not None:
                fault_end = await restart
            if killer is not None:
                struck_at: float | None = None
                with contextlib.suppress(TimeoutError):  # formations fall due late, if at all
                    struck_at = await asyncio.wait_for(killer, min(deadline_s, KILL_WAIT_S))
                fault_at = struck_at or 0.0
            if bot.done():
                raise AlfredError(f"bench faults: the bot stopped: {bot.exception()!r}")
            if not done:
                stderr.print(f"{name}: not every message was answered within {deadline_s:g}s")
            state = read_state(EmbeddedPaths(folder, "mongo"))  # mkdtemp: absolute
            url = state.url if state else ""
            deadline = time.perf_counter() + deadline_s
            figures = await _count(
                name, api, chats, warm, traffic, url, fault_at, fault_end, deadline, drill
            )
            if drill.kill is None:
                figures["server_restart_s"] = None
            # Neither the worker nor formation is on the reply path: what they recover
            # is formations (from the kill, or from the model's recovery).
            settled_at = await settle if settle is not None else None
            if ender is not None:
                fault_end = await ender
            since = fault_at if worker is not None else fault_end
            if settle is not None:
                ok = settled_at is not None and since and figures["formations_open"] == 0
                figures["recovery_s"] = (
                    round(settled_at - since, 3) if ok and settled_at and since else None
                )
            if worker is not None:
                figures["worker_killed"] = fault_at > 0
            if drill.formation is not None:
                figures.update(
                    await formation_figures(
                        url, [m.word for m in traffic.messages], formation_model
                    )
                )
                figures["lost"] += figures["formed_unlearned"]
            return figures
        finally:
            if worker is not None:
                await worker.stop()
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(bot, 60)


class _Workers:
    """Worker processes of the drill's own (``arq jobs.worker.WorkerSettings``)."""

    def __init__(self, folder: Path, model_url: str) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if k not in ("MONGODB_URI", "REDIS_URL")}
        self.env.update(
            ALFRED_DATA_DIR=str(folder),
            OPENAI_API_KEY="bench",
            OPENAI_BASE_URL=model_url,
            EMBEDDINGS_PROVIDER="local",
            MONGODB_DATABASE=DATABASE,
            METRICS_PORT="0",
        )
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self) -> None:
        log = await asyncio.to_thread(open, self.folder / "worker.log", "ab")
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "arq", "jobs.worker.WorkerSettings",
                env=self.env, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
            )  # fmt: skip
        finally:
            log.close()
        self.procs.append(proc)

    async def kill_mid_job(self) -> float | None:
        """``kill -9`` the worker while it forms (a formation request's job is in
        progress); start another at once. When it struck."""
        redis_state = read_state(EmbeddedPaths(self.folder, "redis"))
        mongo_state = read_state(EmbeddedPaths(self.folder, "mongo"))
        if redis_state is None or mongo_state is None:
            return None
        redis = Redis.from_url(redis_state.url)
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_state.url)
        requests = mongo[DATABASE][FORMATION_REQUESTS]
        try:
            while True:
                ids = [d["_id"] async for d in requests.find({"status": "queued"}, {"_id": 1})]
                keys = [f"{in_progress_key_prefix}{i}" for i in ids]
                if keys and await redis.exists(*keys):
                    self.procs[-1].kill()
                    struck = time.perf_counter()
                    await self.procs[-1].wait()
                    await self.start()
                    return struck
                await asyncio.sleep(0.01)
        finally:
            await redis.aclose()
            await mongo.close()

    async def stop(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                proc.terminate()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 30)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


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


def _confirmed(api: FakeBotApi, chats: list[dict[str, Any]], warm: int, answer: str | None) -> int:
    ids = {c["id"] for c in chats}
    return sum(1 for s in api.sent[warm:] if s.chat_id in ids and answer in (None, s.text))


async def _count(
    name: str,
    api: FakeBotApi,
    chats: list[dict[str, Any]],
    warm: int,
    traffic: _Traffic,
    mongo_url: str,
    fault_at: float,
    fault_end: float | None,
    deadline: float,
    drill: Drill,
) -> dict[str, Any]:
    sent_after = api.sent[warm:]

    def confirms(text: str) -> bool:
        return drill.answer in (None, text)

    per_chat_sent: dict[int, int] = {}
    for m in traffic.messages:
        per_chat_sent[m.chat_id] = per_chat_sent.get(m.chat_id, 0) + 1
    confirmed = 0
    duplicated = 0
    for chat_id, count in per_chat_sent.items():
        got = sum(1 for s in sent_after if s.chat_id == chat_id and confirms(s.text))
        confirmed += min(got, count)
        duplicated += max(0, got - count)
    # recovery: the first confirmation of a message sent after the fault, per chat in order
    after_fault = [m for m in traffic.messages if m.at >= fault_at]
    recovery_s: float | None = None
    waits: list[float] = []
    for chat in chats:
        mine = [m for m in traffic.messages if m.chat_id == chat["id"]]
        replies = [s for s in sent_after if s.chat_id == chat["id"]]
        got_its = [s for s in replies if confirms(s.text)]
        for index, m in enumerate(mine):
            if m.at < fault_at or index >= len(got_its):
                continue
            if recovery_s is None or got_its[index].at - fault_at < recovery_s:
                recovery_s = got_its[index].at - fault_at
            first = next((s for s in replies if s.at >= m.at), None)
            if first is not None and (fault_end is None or m.at < fault_end):
                waits.append(first.at - m.at)
    stored = 0
    journal_dupes = 0
    formations: dict[str, int] = {}
    settled = 0.0
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
                # Formation drills: learning waits for formation (counted apart).
                fact = drill.formation or await db[FACTS].find_one(
                    {"content": {"$regex": re.escape(m.word)}}
                )
                journal_dupes += max(0, journaled - 1)
                stored += int(journaled >= 1 and bool(fact))
            formations = await _formations(db, deadline)
            settled = time.perf_counter()
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
        "server_restart_s": round(fault_end - fault_at, 3) if fault_end else None,
        "after_fault": len(after_fault),
        "chat_wait_max_s": round(max(waits), 3) if waits else None,
        "formations_done": formations.get("done", 0),
        "formations_open": formations.get("pending", 0) + formations.get("queued", 0),
        "formations_settled_s": round(settled - fault_at, 3) if settled and fault_at else None,
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


def _summary(r: dict[str, Any]) -> str:
    line = (
        f"{r['name']}: sent {r['sent']}, confirmed {r['confirmed']}, stored {r['stored']}, "
        f"lost {r['lost']}, duplicated {r['duplicated']}, recovered in {r['recovery_s']} s"
    )
    if r["name"] == BUSY_GROUP:
        return line + f" (the DM's answer, behind {r['sent'] - 1} group mentions)"
    line += (
        f" (server back in {r['server_restart_s']} s; a chat waited at most "
        f"{r['chat_wait_max_s']} s for an answer during the fault); formations done "
        f"{r['formations_done']}, open {r['formations_open']}"
    )
    if "formed_unlearned" in r:
        line += (
            f"; formed without learning {r['formed_unlearned']}, set aside {r['set_aside']}, "
            f"bad model answers {r['model_faults_served']}"
        )
    return line


def register(app: typer.Typer) -> None:
    @app.command("faults")
    def bench_faults(
        drills: Annotated[
            str, typer.Option(help=f"Comma-separated drills: {', '.join(ALL_DRILLS)}.")
        ] = ",".join(ALL_DRILLS),
        messages: Annotated[int, typer.Option(min=3, help="Messages per drill.")] = 60,
        senders: Annotated[int, typer.Option(min=1, help="People sending at once.")] = 4,
        interval: Annotated[float, typer.Option(min=0, help="Seconds between messages.")] = 0.1,
        mentions: Annotated[
            int, typer.Option(min=1, help="busy-group: mentions before the DM.")
        ] = BUSY_MENTIONS,
        timeout: Annotated[float, typer.Option(help="Seconds to wait for all answers.")] = 180.0,
        as_json: JsonOption = False,
    ) -> None:
        """Kill each embedded server mid-traffic, make the model fail, bury a DM behind a
        busy group: sent, confirmed, stored, lost, duplicated and seconds to recover, per
        drill."""
        chosen = [d.strip() for d in drills.split(",") if d.strip()]
        unknown = [d for d in chosen if d not in ALL_DRILLS]
        if unknown:
            raise typer.BadParameter(f"unknown drill(s) {unknown}; known: {ALL_DRILLS}")
        results = [
            asyncio.run(busy_group(mentions, timeout))
            if d == BUSY_GROUP
            else asyncio.run(
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
        emit({"drills": results}, as_json=as_json, summary="\n".join(map(_summary, results)))
