"""Two kinds of drill for ``alfred bench faults`` that are not a killed process.

* **Model faults during formation** (``formation-errors``, ``formation-garbage``,
  ``formation-slow``): :class:`FormationModel` answers the chat path well and, while the
  fault lasts, formation's tasks (every request that is not the chat path) badly: HTTP
  500, answers that are not JSON, or good answers 4 s late. It records which journal
  lines reached formation in a fact extraction that was answered well, so the drill can
  tell a message marked formed without anything learned from it (the failure of issue
  15, item 4) from one formed properly.
* **A busy group before a DM** (``busy-group``): ``alfred bench telegram``'s run (40
  mentions in one group, then one DM), reused as it is, on a data folder whose database
  the drill keeps up afterwards to count what was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from bot.bench.fake_answers import prompt_lines
from bot.bench.fake_openai import Handler, RecordedRequest, completion, server_error
from bot.bench.telegram import run_telegram_bench
from integrations.mongo.outbox import FORMATION_REQUESTS
from memory.constants import MESSAGES
from runtime.embedded import acquire, stop_before_removal
from runtime.embedded.state import EmbeddedPaths, read_state

#: How late a slow formation answer comes (well under ``LLM_TIMEOUT``: slow, not hung).
SLOW_S = 4.0
#: How long formation's model misbehaves, from its first bad answer. Long enough to fail
#: a formation job twice (its retries back off 2 s, then 4 s), short of the third failure
#: that would set the batch aside.
FORMATION_FAULT_S = 5.0
#: How long the fault waits for formation's first model call.
FIRST_FAULT_WAIT_S = 30.0
#: The chat path's system prompt starts so; everything else is formation's.
CHAT_MARKER = "You are Alfred"
EXTRACTION_MARKER = '{"facts"'
#: The fault drills' database (the traffic drills of :mod:`bot.bench.faults`).
DATABASE = "alfred_bench_faults"
#: kill-worker: how long after the traffic a formation may still start.
KILL_WAIT_S = 30.0
#: ``alfred bench telegram``'s database name.
TELEGRAM_DATABASE = "alfred_bench_telegram"


class FormationModel:
    """The drill's model server handler: good answers from ``good``, except formation's
    while ``fault`` is set (``"errors"``, ``"garbage"`` or ``"slow"``)."""

    def __init__(self, good: Handler) -> None:
        self.good = good
        self.fault: str | None = None
        #: Journal line ids of extraction prompts that were answered well.
        self.learned: set[str] = set()
        #: Formation requests answered badly (or late) during the fault.
        self.faults_served = 0
        self.first_fault = asyncio.Event()

    def _served(self) -> None:
        self.faults_served += 1
        self.first_fault.set()

    async def __call__(self, request: RecordedRequest) -> Any:
        system = request.system_prompt
        fault = None if CHAT_MARKER in system else self.fault
        if fault == "errors":
            self._served()
            return server_error(500)
        if fault == "garbage":
            self._served()
            return completion("Sure! The facts are: the code, and the word.")
        if fault == "slow":
            self._served()
            await asyncio.sleep(SLOW_S)
        answer = self.good(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if EXTRACTION_MARKER in system:
            self.learned.update(line["id"] for line in prompt_lines(request.last_user_text))
        return answer


async def formation_fault(model: FormationModel, kind: str) -> float:
    """Formation's model misbehaves for :data:`FORMATION_FAULT_S` from its first bad
    answer (formations fall due as the bot works through the traffic, behind it: a
    window in plain time could close before any came); when it was well again."""
    model.fault = kind
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(model.first_fault.wait(), FIRST_FAULT_WAIT_S)
        await asyncio.sleep(FORMATION_FAULT_S)
    finally:
        model.fault = None
    return time.perf_counter()


async def formed_unlearned(db: Any, learned: set[str], words: list[str]) -> int:
    """The drill's messages marked formed that no well-answered extraction ever read."""
    pattern = "|".join(re.escape(w) for w in words)
    count = 0
    async for doc in db[MESSAGES].find(
        {"role": "user", "formed": True, "text": {"$regex": pattern}}, {"_id": 1}
    ):
        count += int(str(doc["_id"]) not in learned)
    return count


async def set_aside(db: Any, words: list[str]) -> int:
    pattern = "|".join(re.escape(w) for w in words)
    return int(await db[MESSAGES].count_documents({"set_aside": True, "text": {"$regex": pattern}}))


async def busy_group(mentions: int, deadline_s: float) -> dict[str, Any]:
    """``alfred bench telegram``'s run as a drill: ``mentions`` mentions in one group,
    then a DM; ``recovery_s`` is how long the DM waited for its answer."""
    folder = Path(tempfile.mkdtemp(prefix="alfred-bench-faults-busy-"))
    lease = await asyncio.to_thread(acquire, "mongo", folder)  # keeps the database up after
    try:
        result = await run_telegram_bench(mentions, None, data_dir=folder, deadline_s=deadline_s)
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            lease.url, serverSelectionTimeoutMS=10_000
        )
        try:
            journal = client[TELEGRAM_DATABASE][MESSAGES]
            texts = [f"plan number {k}?" for k in range(mentions)] + ["what is on my list?"]
            stored = duplicated = 0
            for text in texts:
                found = await journal.count_documents(
                    {"role": "user", "text": {"$regex": re.escape(text) + "$"}}
                )
                stored += int(found >= 1)
                duplicated += max(0, found - 1)
        finally:
            await client.close()
    finally:
        await asyncio.to_thread(lease.release)
        await asyncio.to_thread(stop_before_removal, folder)
        shutil.rmtree(folder, ignore_errors=True)
    sent = mentions + 1
    return {
        "name": "busy-group",
        "sent": sent,
        "confirmed": sent,  # the run returns only once the DM and every mention are answered
        "stored": stored,
        "lost": sent - stored,
        "duplicated": duplicated,
        "recovery_s": result["dm_answer_s"],
        "server_restart_s": None,
        "chat_wait_max_s": result["dm_answer_s"],
        "dm_behind_group_answers": result["dm_behind_group_answers"],
        "group_s": result["group_s"],
        "concurrency": result["concurrency"],
    }


async def settled(
    folder: Path, after: asyncio.Task[float | None] | None, deadline_s: float
) -> float | None:
    """When, once ``after`` is done (now if None), no formation request was open."""
    if after is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(after), min(deadline_s, KILL_WAIT_S))
        if not after.done() or after.result() is None:
            return None
    state = read_state(EmbeddedPaths(folder, "mongo"))
    if state is None:
        return None
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        state.url, serverSelectionTimeoutMS=10_000
    )
    deadline = time.perf_counter() + deadline_s
    try:
        while time.perf_counter() < deadline:
            open_ = {"status": {"$in": ["pending", "queued"]}}
            if not await client[DATABASE][FORMATION_REQUESTS].count_documents(open_):
                return time.perf_counter()
            await asyncio.sleep(0.1)
        return None
    finally:
        await client.close()


async def formation_figures(
    mongo_url: str, words: list[str], formation_model: FormationModel
) -> dict[str, Any]:
    """Messages marked formed that no good extraction read, set aside, faults served."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        mongo_url, serverSelectionTimeoutMS=10_000
    )
    try:
        db = client[DATABASE]
        return {
            "formed_unlearned": await formed_unlearned(db, formation_model.learned, words),
            "set_aside": await set_aside(db, words),
            "model_faults_served": formation_model.faults_served,
        }
    finally:
        await client.close()
