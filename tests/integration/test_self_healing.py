"""Self-healing: the real bot keeps going while its embedded servers are killed under it.

Each test runs ``run_bot`` (against the local fake Bot API) on embedded servers of its
own data folder, never the session's shared ones: it kills them with ``kill -9``. What
is asserted is behaviour, never a duration: the server is restarted by its supervisor
(same port, new process), a message that arrives while the database is known to be
down is answered with the "restarting" apology (not made to wait for the driver's
server-selection timeout, which would give the other apology) and is stored and
answered once the database is back, without restarting the bot; nothing is stored or
answered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pymongo import AsyncMongoClient

from bot.bench.fake_openai import FakeOpenAI, RecordedRequest, json_task_handler
from bot.telegram.handlers.messages import MEMORY_RESTARTING
from bot.telegram.run import run_bot
from integrations.mongo.outbox import FORMATION_REQUESTS
from memory.constants import FACTS, MESSAGES
from runtime.embedded import EmbeddedLease, Kind, acquire
from runtime.embedded.probe import answers
from runtime.embedded.state import EmbeddedPaths, ServerState, process_alive, read_state
from runtime.settings import Settings
from services.reply.assistant import MEMORY_DOWN
from tests.conftest import make_settings
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.polling import eventually as poll
from tests.integration import test_telegram_bot as harness

GOT_IT = "Got it, I'll remember that."
START_TIMEOUT = 90.0  # the first start loads the local embedding model
WAIT = 60.0  # a deadline for what must happen, never a measured duration

bot_env = harness.bot_env
handler_errors = harness.handler_errors
spool_file = harness.spool_file


eventually = partial(poll, within=WAIT)


def restarted(lease: EmbeddedLease) -> Callable[[], bool]:
    """The supervisor's state names a new, answering server on the lease's port."""
    paths = EmbeddedPaths(lease.data_dir, lease.kind)

    def check() -> bool:
        state = read_state(paths)
        return (
            state is not None
            and state.ready
            and state.server_pid not in (None, lease.server_pid)
            and answers(lease.kind, state.port)
        )

    return check


def current(lease: EmbeddedLease) -> ServerState:
    state = read_state(EmbeddedPaths(lease.data_dir, lease.kind))
    assert state is not None
    return state


@contextlib.asynccontextmanager
async def running_bot(settings: Settings, tg: FakeTelegram) -> AsyncIterator[asyncio.Task[None]]:
    """``run_bot`` until the block ends; up once it answered a /help."""
    world = settings.model_copy(
        update={"telegram_bot_token": SecretStr(tg.token), "telegram_api_base_url": tg.base_url}
    )
    stop = asyncio.Event()
    task = asyncio.create_task(run_bot(world, stop=stop), name="alfred-healing-bot")
    try:
        starter = tg.user("Starter", username="starter")
        tg.push_text(tg.private_chat(starter), starter, "/help")
        await tg.wait_until(
            lambda: task.done() or bool(tg.sent_messages), timeout=START_TIMEOUT, what="start"
        )
        if task.done():
            pytest.fail(f"run_bot ended: {task.exception()!r}")
        yield task
    finally:
        stop.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), WAIT)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def texts_to(tg: FakeTelegram, chat: dict[str, Any]) -> list[str]:
    return [m["text"] for m in tg.sent_messages if m["chat_id"] == chat["id"]]


async def own_servers(data_dir: Path, *kinds: Kind) -> dict[Kind, EmbeddedLease]:
    """The test's own leases: they name the processes to kill (the bot shares them)."""
    return {kind: await asyncio.to_thread(acquire, kind, data_dir) for kind in kinds}


async def test_database_killed_is_restarted_and_a_message_sent_meanwhile_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="runtime.watch")
    data_dir = tmp_path / "data"
    leases = await own_servers(data_dir, "mongo")
    mongo = leases["mongo"]
    assert mongo.server_pid is not None
    settings = make_settings(data_dir, mongodb_database="alfred_healing")
    async with FakeTelegram(bot_username="alfred") as tg, running_bot(settings, tg) as task:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        family = tg.group_chat(title="Family", members=[ann])
        tg.push_text(dm, ann, "remember that the ferry leaves at nine")
        await tg.wait_until(lambda: GOT_IT in texts_to(tg, dm), timeout=WAIT, what="a first memory")

        # Hold the supervisor still, so the database stays down until the test lets go.
        os.kill(mongo.supervisor_pid, signal.SIGSTOP)
        try:
            os.kill(mongo.server_pid, signal.SIGKILL)
            await eventually(lambda: "database is down" in caplog.text, "the bot noticed")
            said = tg.push_text(dm, ann, "remember that the boat key hangs by the back door")
            aside = tg.push_text(family, ann, "we are out of oat milk again")
            await tg.wait_until(
                lambda: MEMORY_RESTARTING in texts_to(tg, dm), timeout=WAIT, what="the apology"
            )
            assert texts_to(tg, dm) == [GOT_IT, MEMORY_RESTARTING]  # nothing else, yet
        finally:
            os.kill(mongo.supervisor_pid, signal.SIGCONT)

        await eventually(restarted(mongo), "the database restarted")
        assert current(mongo).port == mongo.port
        assert not process_alive(mongo.server_pid)
        # The spool is replayed once the database answers: the kept message is answered.
        await tg.wait_until(
            lambda: texts_to(tg, dm).count(GOT_IT) == 2, timeout=WAIT, what="the replayed answer"
        )
        assert not task.done()  # the same bot, never restarted
        tg.push_text(dm, ann, "what do you remember about me?")
        await tg.wait_until(lambda: len(texts_to(tg, dm)) == 4, timeout=WAIT, what="recall")
        replies = texts_to(tg, dm)
        assert replies[:3] == [GOT_IT, MEMORY_RESTARTING, GOT_IT]
        assert "boat key" in replies[3] and "ferry" in replies[3]
        assert MEMORY_DOWN not in replies
        assert texts_to(tg, family) == []  # not addressed: kept, never answered

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        current(mongo).url, serverSelectionTimeoutMS=10_000
    )
    try:
        db = client["alfred_healing"]
        for update, chat in ((said, dm), (aside, family)):
            message_id = f"{chat['id']}:{update['message']['message_id']}"
            assert await db[MESSAGES].count_documents({"_id": message_id}) == 1
        boat = {"content": {"$regex": re.escape("boat key")}, "valid_to": None}
        assert await db[FACTS].count_documents(boat) == 1
    finally:
        await client.close()
        await asyncio.to_thread(mongo.release)


async def test_job_queue_killed_is_restarted_and_the_worker_forms_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="jobs.inprocess")
    data_dir = tmp_path / "data"
    leases = await own_servers(data_dir, "redis", "mongo")
    redis = leases["redis"]
    assert redis.server_pid is not None
    settings = make_settings(data_dir, mongodb_database="alfred_healing_q")
    async with FakeTelegram(bot_username="alfred") as tg, running_bot(settings, tg) as task:
        # Held down longer than a client's reconnect retries: the worker's loop ends.
        os.kill(redis.supervisor_pid, signal.SIGSTOP)
        try:
            os.kill(redis.server_pid, signal.SIGKILL)
            await eventually(
                lambda: "in-process worker lost Redis" in caplog.text, "the worker noticed"
            )
        finally:
            os.kill(redis.supervisor_pid, signal.SIGCONT)
        await eventually(restarted(redis), "the job queue restarted")
        assert current(redis).port == redis.port

        # Enough words in one thread for a formation: queued now, formed by the worker
        # that was polling the server that died.
        bea = tg.user("Bea", username="bea")
        dm = tg.private_chat(bea)
        story = "On Saturdays I walk the dog along the canal and then we buy bread. " * 20
        for n in range(4):
            tg.push_text(dm, bea, f"Part {n}: {story}")
        await tg.wait_until(lambda: len(texts_to(tg, dm)) >= 4, timeout=WAIT, what="answers")
        assert MEMORY_DOWN not in texts_to(tg, dm) and MEMORY_RESTARTING not in texts_to(tg, dm)

        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            leases["mongo"].url, serverSelectionTimeoutMS=10_000
        )
        try:
            requests = client["alfred_healing_q"][FORMATION_REQUESTS]

            async def formed() -> bool:
                return await requests.count_documents({"status": "done"}) >= 1

            await eventually(formed, "a formation done by the restarted worker")
        finally:
            await client.close()
        assert not task.done()
    for lease in leases.values():
        await asyncio.to_thread(lease.release)


async def test_stopping_after_both_servers_died_does_not_raise(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    leases = await own_servers(data_dir, "mongo", "redis")
    settings = make_settings(data_dir, mongodb_database="alfred_healing_stop")
    world_stop = asyncio.Event()
    async with FakeTelegram(bot_username="alfred") as tg:
        world = settings.model_copy(
            update={"telegram_bot_token": SecretStr(tg.token), "telegram_api_base_url": tg.base_url}
        )
        task = asyncio.create_task(run_bot(world, stop=world_stop), name="alfred-stop-bot")
        ann = tg.user("Ann", username="ann")
        tg.push_text(tg.private_chat(ann), ann, "/help")
        await tg.wait_until(
            lambda: task.done() or bool(tg.sent_messages), timeout=START_TIMEOUT, what="start"
        )
        assert not task.done()
        # Their supervisors die, and with them the servers: nothing will restart them.
        for lease in leases.values():
            os.kill(lease.supervisor_pid, signal.SIGKILL)
        for lease in leases.values():
            await eventually(lambda lease=lease: not process_alive(lease.server_pid), "gone")
        world_stop.set()
        await asyncio.wait_for(task, WAIT)  # returns; raises nothing
    for lease in leases.values():
        await asyncio.to_thread(lease.release)


class HungModel:
    """A model server that takes every request and never answers."""

    async def __call__(self, request: RecordedRequest) -> Any:
        await asyncio.Event().wait()


@contextlib.asynccontextmanager
async def bot_with_hung_model(
    bot_env: Any,
) -> AsyncIterator[tuple[FakeOpenAI, FakeTelegram, Any]]:
    """A bot whose model never answers: each try would wait an hour, three times, but
    an explicit request has half a second of model time in all."""
    async with (
        FakeOpenAI(embedding_dimensions=8, chat_handler=HungModel()) as model,
        FakeTelegram(bot_username="alfred") as tg,
        bot_env(
            tg,
            openai_api_key=SecretStr("test-key"),
            openai_base_url=model.base_url,
            embeddings_provider="local",
            llm_timeout=3600.0,
            llm_explicit_budget=0.5,
        ) as bot,
    ):
        yield model, tg, bot


async def test_explicit_memory_with_a_hung_model_is_stored_as_said(bot_env: Any) -> None:
    async with bot_with_hung_model(bot_env) as (_model, tg, bot):
        cy = tg.user("Cy", username="cy")
        dm = tg.private_chat(cy)
        (reply,) = await bot.say(
            tg.text_message(dm, cy, "remember that my passport is in the red folder")
        )
        assert reply["text"] == GOT_IT
        stored = await bot.db[FACTS].find({"content": {"$regex": "passport"}}).to_list()
        # stored as said (in the third person, by rule), not lost to the hung model
        assert [f["content"] for f in stored] == ["Cy's passport is in the red folder"]


async def test_a_message_in_flight_when_the_database_dies_is_told_so_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A "remember that" is waiting on the model when the database is killed (its
    supervisor held still, so it stays down). As soon as the bot notices, that person
    hears the "restarting" apology, while their message is still being handled (not the
    driver's timeout and "try again" later); once the database is back, the same message
    is stored and confirmed, once."""
    caplog.set_level(logging.INFO, logger="runtime.watch")
    data_dir = tmp_path / "data"
    mongo = (await own_servers(data_dir, "mongo"))["mongo"]
    held, release = asyncio.Event(), asyncio.Event()
    hold = False
    answer = json_task_handler()

    async def model(request: RecordedRequest) -> Any:
        if hold:
            held.set()
            await release.wait()
        return answer(request)

    async with FakeOpenAI(embedding_dimensions=8, chat_handler=model) as fake:
        settings = make_settings(
            data_dir,
            mongodb_database="alfred_healing_flight",
            openai_api_key=SecretStr("test-key"),
            openai_base_url=fake.base_url,
            embeddings_provider="local",
            llm_explicit_budget=3600.0,  # the model answers when the test says so
        )
        async with FakeTelegram(bot_username="alfred") as tg, running_bot(settings, tg) as task:
            ann = tg.user("Ann", username="ann")
            dm = tg.private_chat(ann)
            tg.push_text(dm, ann, "remember that the ferry leaves at nine")
            await tg.wait_until(lambda: GOT_IT in texts_to(tg, dm), timeout=WAIT, what="first")
            hold = True
            tg.push_text(dm, ann, "remember that the boat key hangs by the back door")
            await asyncio.wait_for(held.wait(), WAIT)  # in flight, waiting on the model
            os.kill(mongo.supervisor_pid, signal.SIGSTOP)
            try:
                os.kill(mongo.server_pid, signal.SIGKILL)
                await eventually(lambda: "database is down" in caplog.text, "the bot noticed")
                await tg.wait_until(
                    lambda: MEMORY_RESTARTING in texts_to(tg, dm), timeout=WAIT, what="apology"
                )
                assert not release.is_set()  # told while the message is still in flight
            finally:
                os.kill(mongo.supervisor_pid, signal.SIGCONT)
            await eventually(restarted(mongo), "the database restarted")
            hold = False
            release.set()
            await tg.wait_until(
                lambda: texts_to(tg, dm).count(GOT_IT) == 2, timeout=WAIT, what="the answer"
            )
            assert texts_to(tg, dm) == [GOT_IT, MEMORY_RESTARTING, GOT_IT]
            assert not task.done()
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        current(mongo).url, serverSelectionTimeoutMS=10_000
    )
    try:
        boat = {"content": {"$regex": "boat key"}, "valid_to": None}
        assert await client["alfred_healing_flight"][FACTS].count_documents(boat) == 1
    finally:
        await client.close()
        await asyncio.to_thread(mongo.release)


async def test_a_hung_model_does_not_hold_a_correction_past_the_explicit_budget(
    bot_env: Any,
) -> None:
    """A second "remember that" about the same thing asks the model whether it replaces
    the first (the update decision): with the model hung, that call shares the one short
    budget of the extraction, so the person is answered and the new words are stored.
    The hung extraction used the whole budget, so the decision is not even asked."""
    async with bot_with_hung_model(bot_env) as (model, tg, bot):
        cy = tg.user("Cy", username="cy")
        dm = tg.private_chat(cy)
        first = "remember that my passport is in the red folder"
        (reply,) = await bot.say(tg.text_message(dm, cy, first))
        assert reply["text"] == GOT_IT
        second = "remember that my passport is in the blue folder"
        (reply,) = await bot.say(tg.text_message(dm, cy, second))
        assert reply["text"] == GOT_IT
        stored = await bot.db[FACTS].find({"content": {"$regex": "passport"}}).to_list()
        assert sorted(f["content"] for f in stored) == [
            "Cy's passport is in the blue folder",
            "Cy's passport is in the red folder",
        ]
        asked = [r for r in model.requests if r.endpoint == "chat/completions"]
        assert len(asked) == 2  # one extraction per message; no update decision
