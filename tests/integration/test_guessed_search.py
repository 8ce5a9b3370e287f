"""A ranking made ahead of its search (``Retriever.foresee``) is taken only when it is the
ranking the search would make: same viewer, thread and query, and the very index the
search confirms, unchanged. A write, a forget or another viewer gets a search of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.bench.fake_openai import FakeOpenAI, completion, json_task_handler
from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.models import Partition
from memory.retrieval import RetrievalResult, Retriever
from runtime.settings import Settings
from tests.helpers.fakes import HashEmbedder, SlowEmbedder
from tests.helpers.replay import replay_lines, replies, say, with_model
from tests.helpers.world import dm, viewer
from tests.integration.test_retrieval import (
    ALICE_DM,
    ALICE_GROUP,
    BOB_DM,
    BOB_GROUP,
    CAROL_DM,
    CAROL_WORK,
    make_retriever,
)
from tests.integration.test_retrieval import world as world

World = tuple[MongoFactStore, FactWriter, ManualClock]
TASKS = json_task_handler()
SECRET = "Remember that I'm planning a surprise party for Bob at the Zanzibar Lounge on Friday"


def count_rankings(r: Retriever) -> list[int]:
    """How many rankings ``r`` makes (a guess's and a search's alike)."""
    made = [0]
    rank = r._rank

    async def counted(*args: Any, **kwargs: Any) -> list[str]:
        made[0] += 1
        return await rank(*args, **kwargs)

    r._rank = counted  # type: ignore[method-assign]
    return made


def ranking(result: RetrievalResult) -> list[tuple[str, float, float]]:
    return [(f.fact.content, f.score, f.relevance) for f in result.facts]


async def guessed(r: Retriever, v: Any, query: str) -> None:
    """Make the guess and let it finish, as it does while a turn's reads are in flight
    (waited for, not slept on: a loaded machine may take longer than any fixed pause)."""
    r.foresee(v, query)
    await asyncio.gather(*(g.task for g in r._guesses.values()), return_exceptions=True)


async def test_a_guess_on_the_unchanged_index_is_the_search_ranked_once(world: World) -> None:
    store, _, clock = world
    query = "where is the family going in May?"
    cold = await make_retriever(store, HashEmbedder(), clock).for_message(BOB_GROUP, query)
    embedder = HashEmbedder()
    r = make_retriever(store, embedder, clock)
    r.foresee(BOB_GROUP, query)
    assert r._guesses == {}, "no index was ever searched here: nothing to guess on"
    await r.for_message(BOB_GROUP, "what does bob love to eat?")  # builds the index
    made = count_rankings(r)
    await guessed(r, BOB_GROUP, query)
    assert made == [1]
    found = await r.for_message(BOB_GROUP, query)
    assert made == [1], "the search ranked again instead of taking the guess"
    assert ranking(found) == ranking(cold)
    assert found.facts[0].fact.content == "The family is going to Lisbon in May"
    assert embedder.calls == 2, "the guess and its search embed the query once between them"
    # Taken once: the same question later is searched afresh.
    await r.for_message(BOB_GROUP, query)
    assert made == [2]


async def test_a_write_or_a_forget_after_the_guess_gets_a_search_of_its_own(
    world: World,
) -> None:
    store, writer, clock = world
    embedder = HashEmbedder()
    r = make_retriever(store, embedder, clock)
    await r.for_message(BOB_DM, "what does bob love to eat?")
    made = count_rankings(r)
    # Another process learns a fact between the guess and its search.
    await guessed(r, BOB_DM, "is bob learning the cello?")
    await writer.add("Bob started learning the cello", Partition.member("fam", "bob"))
    found = await r.for_message(BOB_DM, "is bob learning the cello?")
    assert made == [2]
    assert found.facts[0].fact.content == "Bob started learning the cello"
    assert found.legs.get("embed") is None, "dropping the guess must not drop its embedding"
    # A forget between the guess and its search: the forgotten fact is not answered.
    await guessed(r, BOB_DM, "what food does bob love?")
    sushi = next(f for f in await store.list_visible(BOB_DM) if "sushi" in f.content)
    await store.delete([sushi.id])
    found = await r.for_message(BOB_DM, "what food does bob love?")
    assert made == [4]
    assert "Bob loves sushi and ramen" not in [f.fact.content for f in found.facts]


async def test_a_guess_serves_only_the_viewer_thread_and_query_it_was_made_for(
    world: World,
) -> None:
    store, _, clock = world
    secret = "Alice is planning a surprise party for Bob on Friday"
    query = "surprise party for Bob on Friday"
    r = make_retriever(store, HashEmbedder(), clock)
    everyone = (ALICE_DM, ALICE_GROUP, BOB_DM, BOB_GROUP, CAROL_DM, CAROL_WORK)
    for v in everyone:  # every viewer has an index to guess on
        await r.for_message(v, "what is happening on Friday?")
    made = count_rankings(r)
    await guessed(r, ALICE_DM, query)
    assert made == [1]
    for v in everyone[1:]:
        found = await r.for_message(v, query)
        assert secret not in [f.fact.content for f in found.facts], v
    assert made == [len(everyone)], "another viewer or thread took Alice's DM guess"
    found = await r.for_message(ALICE_DM, query)
    assert made == [len(everyone)] and found.facts[0].fact.content == secret
    # A guess made while Alice was in the work circle does not answer her once she left.
    await guessed(r, ALICE_DM, "where is the team offsite?")
    left_work = viewer("alice", dm("alice"), ["fam"])
    found = await r.for_message(left_work, "where is the team offsite?")
    assert "The work team offsite is in Porto on Friday" not in [
        f.fact.content for f in found.facts
    ]
    assert made == [len(everyone) + 2]


async def test_a_question_that_names_someone_or_asks_for_more_is_ranked_afresh(
    world: World,
) -> None:
    store, _, clock = world
    r = make_retriever(store, HashEmbedder(), clock)
    await r.for_message(ALICE_GROUP, "what does bob love to eat?")
    made = count_rankings(r)
    await guessed(r, ALICE_GROUP, "dinner ideas for bob?")
    await r.for_message(ALICE_GROUP, "dinner ideas for bob?", about={"bob": "Bob"})
    assert made == [2]
    await guessed(r, ALICE_GROUP, "what does bob love?")
    await r.search(ALICE_GROUP, "what does bob love?", limit=25)
    assert made == [4]


async def test_a_guess_dropped_while_the_query_embeds_leaves_its_search_the_embedding(
    world: World,
) -> None:
    store, writer, clock = world
    r = make_retriever(store, SlowEmbedder(delay=0.2), clock)
    await r.for_message(BOB_DM, "what does bob love to eat?")
    made = count_rankings(r)
    r.foresee(BOB_DM, "is bob learning the cello?")
    await asyncio.sleep(0)  # the guess waits for the query's embedding
    await writer.add("Bob started learning the cello", Partition.member("fam", "bob"))
    found = await r.for_message(BOB_DM, "is bob learning the cello?")
    assert made == [2]
    assert found.legs["dense"].startswith("ok"), found.legs
    assert found.facts[0].fact.content == "Bob started learning the cello"


async def test_through_the_reply_path_a_guess_leaks_nothing_and_forgets(
    settings: Settings, tmp_path: Path
) -> None:
    """Each question twice, so the second is answered from a guess on the index the first
    built: the DM secret enters only Alice's DM prompts, and not even those once she has
    forgotten it, across formation and a day."""
    asked = "@alfred where is the surprise party I am planning for Bob?"
    twice = [say("alice", "dm:alice", asked)] * 2
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.set_handler(lambda request: completion("Noted.") if request.tools else TASKS(request))
        out = await replay_lines(
            with_model(settings, fake),
            [
                {"circle": "fam", "members": ["alice", "bob"]},
                {"circle": "work", "members": ["carol", "alice"]},
                say("alice", "dm:alice", SECRET),
                *twice,
                *[say("bob", "group:fam", "@alfred is anyone planning a party for me?")] * 2,
                *[say("alice", "group:fam", asked)] * 2,
                *[say("bob", "dm:bob", "where is my surprise party?")] * 2,
                *[say("carol", "group:work", "@alfred where is the party for Bob?")] * 2,
                say("alice", "dm:alice", "forget that I'm planning a surprise party for Bob"),
                *twice,
                {"clock": "+1d"},
                {"jobs": "drain"},
                *twice,
            ],
            tmp_path,
        )
        prompts = [(r.system_prompt, r.raw.decode()) for r in fake.chat_requests if r.tools]
    assert [r["text"] for r in replies(out)].count("Noted.") == 14, replies(out)
    in_dm = [system for system, _ in prompts if "private chat with Alice" in system]
    elsewhere = [body for system, body in prompts if "private chat with Alice" not in system]
    assert len(in_dm) == 6 and len(elsewhere) == 8
    assert all("zanzibar" in system.lower() for system in in_dm[:2]), in_dm[:2]
    assert not [body for body in elsewhere if "zanzibar" in body.lower()]
    assert not [system for system in in_dm[2:] if "zanzibar" in system.lower()], in_dm[2:]
