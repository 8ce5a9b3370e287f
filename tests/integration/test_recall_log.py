"""Recall counts: the bot logs them, the worker's every-minute duty adds them to the facts.

A count must reach its fact exactly once, whether the fold is interrupted halfway, loses
its lock, two workers' crons fold at once, or the fact was deleted meanwhile; and a
reply's recall must be on its fact after the crons ran, not only in the process that
answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from integrations.mongo.recall_log import MongoRecallLog
from integrations.redis.queue import FOLD_RECALLS
from jobs.inprocess import run_due_crons
from jobs.worker import worker_options
from memory.constants import FACTS, RECALLS
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.jobs import jobs_runtime
from runtime.settings import Settings
from services.formation_duties import fold_recalls
from services.messages import Incoming, Sender
from tests.helpers.services import migrated_services

NOW = datetime(2026, 5, 4, 8, tzinfo=UTC)


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "recall", NOW) as services:
        yield services


async def _facts(s: Services, *ids: str) -> None:
    await s.mongo.db[FACTS].insert_many([{"_id": i, "access_count": 0} for i in ids])


async def _counts(s: Services) -> dict[str, tuple[int, object]]:
    return {
        d["_id"]: (d["access_count"], d.get("last_accessed_at"))
        async for d in s.mongo.db[FACTS].find({})
    }


async def test_a_fold_cut_off_after_adding_is_finished_by_the_next_without_adding_twice(
    s: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _facts(s, "f1", "f2")
    log = MongoRecallLog(s.mongo.db)
    await log.append({"f1": (2, NOW), "f2": (1, NOW)})
    await log.append({"f1": (1, NOW + timedelta(minutes=1))})
    dying = MongoRecallLog(s.mongo.db)
    real_apply = dying._apply

    async def apply_then_die(token: str, go_on: Callable[[], bool]) -> int | None:
        await real_apply(token, go_on)
        raise ConnectionResetError("the worker died before deleting its batches")

    monkeypatch.setattr(dying, "_apply", apply_then_die)
    with pytest.raises(ConnectionResetError):
        await dying.fold()
    after_cut = await _counts(s)
    assert after_cut == {"f1": (3, NOW + timedelta(minutes=1)), "f2": (1, NOW)}
    assert await log.waiting() == 2, "the marked batches are still there"

    assert await MongoRecallLog(s.mongo.db).fold() == 2  # another worker, the same token
    assert await _counts(s) == after_cut, "nothing added twice"
    assert await log.waiting() == 0


async def test_two_crons_at_once_add_every_count_exactly_once(s: Services) -> None:
    ids = [f"f{i}" for i in range(30)]
    await _facts(s, *ids)
    log = MongoRecallLog(s.mongo.db)
    expected = dict.fromkeys(ids, 0)
    for batch in range(120):  # more batches than one fold step takes
        chosen = ids[batch % 30 :: 7]
        await log.append({i: (1, NOW + timedelta(seconds=batch)) for i in chosen})
        for i in chosen:
            expected[i] += 1
    rt = jobs_runtime(s)  # one lock for both, as two workers share Redis's
    done = await asyncio.gather(fold_recalls(rt), fold_recalls(rt))
    assert sorted(done)[0] == 0, "the second found the first folding and left it the work"
    assert {k: n for k, (n, _) in (await _counts(s)).items()} == expected
    assert await log.waiting() == 0


async def test_a_fold_that_lost_its_lock_stops_and_the_next_finishes(s: Services) -> None:
    ids = [f"f{i}" for i in range(200)]
    await _facts(s, *ids)
    log = MongoRecallLog(s.mongo.db)
    await log.append({i: (1, NOW) for i in ids})  # more facts than one write takes
    asked = 0

    def lost_after_first_write() -> bool:
        nonlocal asked
        asked += 1
        return asked <= 2  # the loop's question, then the first chunk's

    first = await log.fold(go_on=lost_after_first_write)
    assert 0 < sum(n for n, _ in (await _counts(s)).values()) < len(ids)
    assert first == 0 and await log.waiting() == 1, "the marked batch waits"
    assert await log.fold() == len(ids)
    assert {n for n, _ in (await _counts(s)).values()} == {1}
    assert await log.waiting() == 0


async def test_a_count_for_a_deleted_fact_adds_to_nothing(s: Services) -> None:
    await _facts(s, "kept")
    log = MongoRecallLog(s.mongo.db)
    await log.append({"gone": (4, NOW), "kept": (1, NOW)})
    assert await log.fold() == 2
    assert await _counts(s) == {"kept": (1, NOW)}, "no document made for the deleted fact"
    assert await s.mongo.db[RECALLS].count_documents({}) == 0


async def test_a_replys_recall_is_on_its_fact_after_the_crons(s: Services) -> None:
    assistant = build_assistant(s)
    home = -100500

    def said(n: int, text: str) -> Incoming:
        return Incoming(
            chat_id=home,
            chat_type="group",
            sender=Sender(telegram_id=8201, name="Ines"),
            message_id=n,
            text=text,
            chat_title="Home",
            addressed=text.startswith("@alfred"),
        )

    await assistant.handle(said(1, "@alfred remember that the boiler service is on 9 May"))
    (fact,) = await s.facts.all_for_audit()
    assert fact.access_count == 0
    turn = await assistant.handle(said(2, "@alfred when is the boiler service?"))
    assert turn.replies and "9 May" in turn.replies[0].text
    await s.retriever.drain()
    assert s.access is not None and s.recalls is not None
    await s.access.flush()
    assert (await s.facts.get(fact.id)).access_count == 0, "logged only"  # type: ignore[union-attr]

    runs = await run_due_crons(s)
    assert [r.report for r in runs if r.name == FOLD_RECALLS] == [{"facts_updated": 1}]
    recalled = await s.facts.get(fact.id)
    assert recalled is not None and recalled.access_count == 1
    assert recalled.last_accessed_at == NOW and recalled.reinforced_at == NOW
    assert await s.recalls.fold() == 0, "folded once"


def test_the_worker_folds_recall_counts_every_minute() -> None:
    (fold,) = [c for c in worker_options()["cron_jobs"] if c.name == FOLD_RECALLS]
    assert fold.second == 50 and fold.minute is None
