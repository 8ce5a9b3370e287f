"""``alfred bench telegram``: does one busy group delay everyone else?

The real bot (``alfred run``'s :func:`run_bot`, polling, on embedded servers in a
temporary folder) talks to a local Bot API (:mod:`bot.bench.fake_bot_api`) and a local
model server answering at once. After a warm-up, ``--mentions`` mentions arrive in one
group, then one DM. Reported: how long the DM took to be answered, and how fast the group
got its answers (Telegram's 20-messages-a-minute group limit, applied by the bot's rate
limiter, sets that pace). ``--concurrency 1`` is the old way, one update at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from bot.bench.bot import _chat_or_task
from bot.bench.common import DataDirOption, JsonOption, emit, stderr
from bot.bench.fake_bot_api import TOKEN, FakeBotApi
from bot.bench.fake_openai import FakeOpenAI, text_task_handler
from bot.telegram.run import run_bot
from runtime.embedded import stop_before_removal
from runtime.settings import load_settings

START_S = 120.0  # the first start loads the local embedding model
GROUP_ID = -100777


async def run_telegram_bench(
    mentions: int, concurrency: int | None, *, data_dir: Path | None, deadline_s: float
) -> dict[str, Any]:
    folder = data_dir or Path(tempfile.mkdtemp(prefix="alfred-bench-tg-"))
    try:
        async with (
            FakeOpenAI(chat_handler=text_task_handler(_chat_or_task), record=False) as model,
            FakeBotApi() as api,
        ):
            update: dict[str, Any] = {
                "telegram_bot_token": SecretStr(TOKEN),
                "telegram_api_base_url": api.base_url,
                "openai_api_key": SecretStr("bench"),
                "openai_base_url": model.base_url,
                "embeddings_provider": "local",
                "alfred_data_dir": folder,
                "mongodb_uri": None,
                "redis_url": None,
                "mongodb_database": "alfred_bench_telegram",
                "metrics_port": 0,
                "webhook_url": None,
                "run_worker": "inprocess",
            }
            if concurrency is not None:
                update["update_concurrency"] = concurrency
            settings = load_settings().model_copy(update=update)
            stop = asyncio.Event()
            bot = asyncio.create_task(run_bot(settings, stop=stop), name="bench-run-bot")
            try:
                return await _drive(api, mentions, settings.update_concurrency, bot, deadline_s)
            finally:
                stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(bot, 60)
    finally:
        if data_dir is None:
            await asyncio.to_thread(stop_before_removal, folder)
            shutil.rmtree(folder, ignore_errors=True)


async def _answered(
    api: FakeBotApi, bot: asyncio.Task[None], chat_id: int, count: int, deadline_s: float
) -> list[Any]:
    """Wait for answers, failing at once (with its error) if the bot stopped."""
    waiting = asyncio.ensure_future(api.wait_for(chat_id, count, deadline_s))
    await asyncio.wait({waiting, bot}, return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():
        waiting.cancel()
        raise RuntimeError(f"the bot stopped: {bot.exception()!r}")
    return waiting.result()


async def _drive(
    api: FakeBotApi, mentions: int, concurrency: int, bot: asyncio.Task[None], deadline_s: float
) -> dict[str, Any]:
    ann, bob = api.user("ann"), api.user("bob")
    group = api.group(GROUP_ID, "Busy family")
    dm = api.private_chat(bob)
    stderr.print("starting the bot …")
    api.push_text(group, ann, "@alfred hello")  # warm-up: registers the circle
    await _answered(api, bot, GROUP_ID, 1, START_S)
    api.push_text(dm, bob, "hello")
    await _answered(api, bot, dm["id"], 1, START_S)
    stderr.print(f"{mentions} mentions in one group, then one DM …")
    started = time.perf_counter()
    for k in range(mentions):
        api.push_text(group, ann, f"@alfred what do you know about plan number {k}?")
    dm_sent = time.perf_counter()
    api.push_text(dm, bob, "what is on my list?")
    dm_answer = (await _answered(api, bot, dm["id"], 2, deadline_s))[1]
    group_answers = await _answered(api, bot, GROUP_ID, 1 + mentions, deadline_s)
    group_s = group_answers[-1].at - started
    return {
        "mentions": mentions,
        "concurrency": concurrency,
        "dm_answer_s": round(dm_answer.at - dm_sent, 3),
        "dm_behind_group_answers": sum(1 for s in group_answers[1:] if s.at < dm_answer.at),
        "group_s": round(group_s, 3),
        "group_per_minute": round(mentions / group_s * 60, 2) if group_s else 0.0,
    }


def register(app: typer.Typer) -> None:
    @app.command("telegram")
    def bench_telegram(
        mentions: Annotated[int, typer.Option(min=1, help="Mentions in the busy group.")] = 40,
        concurrency: Annotated[
            int | None,
            typer.Option(
                min=1, help="Updates at once (default UPDATE_CONCURRENCY); 1: the old way."
            ),
        ] = None,
        timeout: Annotated[float, typer.Option(help="Seconds to wait for all answers.")] = 300.0,
        data_dir: DataDirOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """A DM sent behind a busy group: seconds to its answer, and the group's pace."""
        r = asyncio.run(
            run_telegram_bench(mentions, concurrency, data_dir=data_dir, deadline_s=timeout)
        )
        summary = (
            f"concurrency {r['concurrency']}: the DM behind {r['mentions']} group mentions was "
            f"answered in {r['dm_answer_s']} s (after {r['dm_behind_group_answers']} group "
            f"answers); the group got its answers in {r['group_s']} s "
            f"({r['group_per_minute']} a minute)"
        )
        emit(r, as_json=as_json, summary=summary)
