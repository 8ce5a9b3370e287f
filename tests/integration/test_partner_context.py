"""Proactive partner context (seed 004 §18.2): in the group, what a partner shared there is
offered when it helps, and said to be theirs; what they said in their DM never is, and a
DM never shows a partner's memory at all (DESIGN.md §3)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    completion,
    json_task_handler,
    tool_call,
)
from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.models import Partition, Viewer
from memory.retrieval import Retriever
from memory.search.app_backend import AppSearchBackend
from memory.search.scope_index import ScopeIndexCache
from runtime.settings import Settings
from tests.helpers.fakes import HashEmbedder
from tests.helpers.replay import probe, probes, replay_lines, replies, say, with_model
from tests.helpers.world import dm, group, viewer

FLAT = {"circle": "flat", "members": ["ines", "kofi", "lena"]}
DEFAULT_TASKS = json_task_handler()


def _texts(out: list[dict[str, Any]], where: str) -> list[str]:
    return [r["text"] for r in replies(out) if r["in"] == where and r["to"] == "ines"]


async def test_a_partners_group_preferences_are_offered_in_the_group_as_theirs(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FLAT,
            say("kofi", "group:flat", "@alfred remember that I'm gluten free"),
            say("kofi", "group:flat", "@alfred remember that I adore Sichuan food"),
            say("kofi", "group:flat", "@alfred remember that my bike is in the cellar"),
            say("lena", "group:flat", "@alfred remember that I adore opera"),
            say("ines", "group:flat", "@alfred what could I make for supper with Kofi on Friday?"),
            say("ines", "group:flat", "@alfred I'm baking a cake for Kofi's birthday"),
        ],
        tmp_path / "a",
    )
    supper, cake = _texts(out, "group:flat")
    for answer in (supper, cake):
        assert "From what Kofi has shared here:" in answer, answer
        assert "gluten free" in answer, answer
        # Only what helps, and only the partner asked about.
        assert "bike" not in answer and "opera" not in answer, answer
    assert "Sichuan" in supper, supper


async def test_a_partners_dm_memory_is_never_offered_in_the_group(
    settings: Settings, tmp_path: Path
) -> None:
    """Kofi's DM memory matches both questions better than anything (his name, "dinner",
    "ramen", a dislike): only the privacy filter keeps it out, so this fails if it is
    bypassed. A plan made together ("we … this weekend") offers every partner's."""
    out = await replay_lines(
        settings,
        [
            FLAT,
            say("kofi", "dm:kofi", "remember that I hate seafood ramen at dinner"),
            say("kofi", "group:flat", "@alfred remember that I love ramen"),
            say("ines", "group:flat", "@alfred any ideas for dinner with Kofi tonight?"),
            say("ines", "group:flat", "@alfred where should we go for ramen this weekend?"),
            probe("ines", "group:flat", "any ideas for dinner with Kofi tonight?"),
            say("kofi", "dm:kofi", "any ideas for dinner tonight?"),
        ],
        tmp_path / "b",
    )
    ideas, weekend = _texts(out, "group:flat")
    assert "From what Kofi has shared here:" in ideas and "ramen" in ideas, ideas
    assert "Kofi has shared here" in weekend and "ramen" in weekend, weekend
    for answer in (ideas, weekend):
        assert "seafood" not in answer, answer
    seen = [m["content"] for m in probes(out)[0]["memories"]]
    assert not [c for c in seen if "seafood" in c], seen
    # Kofi's own DM still has it: it is private, not lost.
    own = [r["text"] for r in replies(out) if r["in"] == "dm:kofi"][-1]
    assert "seafood" in own, own


async def test_in_a_dm_a_partners_group_memory_is_not_offered(
    settings: Settings, tmp_path: Path
) -> None:
    """A member's group memory is visible in the group and in their own DM, never in
    another member's DM (DESIGN.md §3): Ines's DM gets no partner context."""
    out = await replay_lines(
        settings,
        [
            FLAT,
            say("kofi", "group:flat", "@alfred remember that I love ramen"),
            say("kofi", "group:flat", "@alfred remember that I'm vegetarian"),
            say("ines", "dm:ines", "any ideas for dinner with Kofi tonight?"),
            say("ines", "group:flat", "@alfred any ideas for dinner with Kofi tonight?"),
            probe("ines", "dm:ines", "any ideas for dinner with Kofi tonight?"),
        ],
        tmp_path / "c",
    )
    (in_dm,) = _texts(out, "dm:ines")
    (in_group,) = _texts(out, "group:flat")
    assert "ramen" in in_group and "vegetarian" in in_group, in_group
    assert "From what Kofi has shared here:" in in_group, in_group
    assert "ramen" not in in_dm and "vegetarian" not in in_dm, in_dm
    assert "has shared" not in in_dm, in_dm
    assert probes(out)[0]["memories"] == [], probes(out)[0]


async def test_no_partner_context_when_nothing_of_theirs_helps(
    settings: Settings, tmp_path: Path
) -> None:
    """Naming Lena makes her memories match her name, not the plan: her car does not
    help with dinner, and a weekend plan finds nothing of anyone's."""
    out = await replay_lines(
        settings,
        [
            FLAT,
            say("lena", "group:flat", "@alfred remember that my car is a blue Fiat"),
            say("kofi", "group:flat", "@alfred remember that my bike is in the cellar"),
            say("kofi", "group:flat", "@alfred remember that I love ramen"),
            say("ines", "group:flat", "@alfred any ideas for dinner with Lena tonight?"),
            say("ines", "group:flat", "@alfred what shall we do this weekend?"),
            say("ines", "group:flat", "@alfred any ideas for dinner with Kofi tonight?"),
        ],
        tmp_path / "d",
    )
    lena, weekend, kofi = _texts(out, "group:flat")
    for answer in (lena, weekend):
        assert "has shared" not in answer, answer
        for unrelated in ("Fiat", "bike", "ramen"):
            assert unrelated not in answer, answer
    assert "From what Kofi has shared here:" in kofi and "ramen" in kofi, kofi
    assert "bike" not in kofi, kofi


async def test_what_a_partner_said_minutes_ago_in_the_group_is_offered_as_theirs(
    settings: Settings, tmp_path: Path
) -> None:
    """Before formation, Kofi's group line is found through his name (it shares no word
    with the question); his DM line, said as recently, is not."""
    out = await replay_lines(
        settings,
        [
            FLAT,
            say("kofi", "group:flat", "I've gone vegan this month"),
            say("kofi", "dm:kofi", "honestly I'm sick of pasta"),
            say("ines", "group:flat", "@alfred any ideas for dinner with Kofi tonight?"),
        ],
        tmp_path / "e",
    )
    (answer,) = _texts(out, "group:flat")
    assert "From what Kofi has shared here:" in answer and "vegan" in answer, answer
    assert "pasta" not in answer, answer


# --- retrieval: a query naming someone finds what they said --------------------------------


async def test_a_query_naming_a_member_finds_their_memories_without_their_name(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """What Bob said is stored as said ("pad thai is my comfort food"): the speaker is
    metadata, not text. A question naming Bob still finds it, through his name, and
    only where it is visible."""
    store = MongoFactStore(migrated_db)
    clock = ManualClock(datetime(2026, 4, 2, 18, 0, tzinfo=UTC))
    embedder = HashEmbedder()
    writer = FactWriter(store, embedder, clock)
    await writer.add("pad thai is my comfort food", Partition.member("fam", "bob"))
    await writer.add("my brother owes me money", Partition.dm("bob"))
    await writer.add("the dishwasher rattles", Partition.member("fam", "alice"))
    cache = ScopeIndexCache(store, dimensions=embedder.dimensions, model_name=embedder.model_name)
    retriever = Retriever(AppSearchBackend(cache), embedder, clock)
    query = "ideas for dinner with Bob?"
    about = {"bob": "Bob"}

    async def found(v: Viewer, names: dict[str, str] | None) -> list[str]:
        result = await retriever.search(v, query, limit=10, about=names)
        return [f.fact.content for f in result.facts]

    alice_group = viewer("alice", group("fam"), ["fam"])
    assert await found(alice_group, None) == []
    assert await found(alice_group, about) == ["pad thai is my comfort food"]
    # Alice's DM sees neither Bob's group memory nor his DM one, named or not.
    assert await found(viewer("alice", dm("alice"), ["fam"]), about) == []
    # Naming Bob never reaches his DM memory: the equality above leaves it out, and so
    # does Bob's own view of the group.
    assert await found(viewer("bob", group("fam"), ["fam"]), about) == [
        "pad thai is my comfort food"
    ]


# --- with a model: what the prompt holds and asks -------------------------------------------


def _model(request: RecordedRequest) -> Any:
    """A chat model that searches when told to and otherwise answers briefly."""
    if not request.tools:
        return DEFAULT_TASKS(request)
    searched = any(m.get("role") == "tool" for m in request.messages)
    if "TOOL" in request.last_user_text and not searched:
        return completion(None, tool_calls=[tool_call("search_memory", {"query": "Kofi food"})])
    return completion("Kofi mentioned he loves ramen — maybe the ramen bar?")


async def test_with_a_model_the_group_prompt_marks_partner_memories_and_asks_to_offer_them(
    settings: Settings, tmp_path: Path
) -> None:
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.set_handler(_model)
        world = with_model(settings, fake)
        await replay_lines(
            world,
            [
                FLAT,
                say("kofi", "group:flat", "@alfred remember that I love ramen"),
                say("kofi", "dm:kofi", "remember that I hate seafood ramen at dinner"),
                say("ines", "group:flat", "@alfred any ideas for dinner with Kofi tonight?"),
                say("ines", "dm:ines", "any ideas for dinner with Kofi tonight?"),
                say("ines", "group:flat", "@alfred TOOL what does Kofi like?"),
            ],
            tmp_path / "model",
        )
        prompts = [r for r in fake.chat_requests if r.tools]

    def asked(text: str, thread: str) -> RecordedRequest:
        return next(
            r for r in prompts if r.last_user_text.endswith(text) and thread in r.system_prompt
        )

    group_prompt = asked("dinner with Kofi tonight?", "shared group").system_prompt
    assert "ramen (from Kofi)" in group_prompt, group_prompt
    assert "## Partner context" in group_prompt and "always say whose it is" in group_prompt
    dm_prompt = asked("dinner with Kofi tonight?", "private chat with Ines").system_prompt
    assert "ramen" not in dm_prompt and "Partner context" not in dm_prompt, dm_prompt
    # Kofi's DM memory is in no prompt and no tool result built for another thread.
    for request in prompts:
        if "private chat with Kofi" in request.system_prompt:
            continue
        assert "seafood" not in request.raw.decode(), request.system_prompt
    tool_results = [m for r in prompts for m in r.messages if m.get("role") == "tool"]
    assert any("(from Kofi)" in str(m.get("content")) for m in tool_results), tool_results
