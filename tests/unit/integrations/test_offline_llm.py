"""The offline provider: the LLM port answered by rules, precisely and without garbage."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from integrations.offline_llm import OFFLINE_NOTICE, OfflineLLM, compose_reply
from memory.errors import ConfigurationError
from memory.llm import LLM, ModelTier, PromptMessage, Task, ToolCall
from memory.models import Category, ReflectionScope, Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.consolidate import CONSOLIDATE, ConsolidateContext
from memory.prompts.decide_updates import (
    DECIDE_UPDATES,
    CandidateFact,
    DecideUpdatesContext,
    UpdateDecision,
)
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractedFact, ExtractFactsContext
from memory.prompts.reflect import REFLECT, ReflectContext, ScopeMemory

NOW = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
ALICE = Person(id="u-alice", name="Alice")
BOB = Person(id="u-bob", name="Bob")
PEOPLE = [ALICE, BOB]


def line(
    text: str,
    *,
    who: Person | None = ALICE,
    role: Role = Role.USER,
    message_id: str = "m1",
) -> JournalLine:
    return JournalLine(
        message_id=message_id,
        role=role,
        speaker_id=who.id if who else None,
        speaker_name=None,
        text=text,
    )


def extract_ctx(
    lines: list[JournalLine], kind: ThreadKind = ThreadKind.GROUP
) -> ExtractFactsContext:
    return ExtractFactsContext(
        thread_kind=kind,
        thread_owner_id=ALICE.id if kind is ThreadKind.DM else None,
        people=PEOPLE if kind is ThreadKind.GROUP else [ALICE],
        now=NOW,
        lines=lines,
    )


async def extract(
    text: str | list[JournalLine], kind: ThreadKind = ThreadKind.GROUP
) -> list[ExtractedFact]:
    lines = [line(text)] if isinstance(text, str) else text
    result = await OfflineLLM().run(EXTRACT_FACTS, extract_ctx(lines, kind))
    return result.facts


def summary(facts: list[ExtractedFact]) -> list[tuple[str, Category, int, str]]:
    return [(f.content, f.category, f.importance, f.about) for f in facts]


# --- the port ---------------------------------------------------------------------------------


def test_implements_the_llm_protocol() -> None:
    llm = OfflineLLM()
    assert isinstance(llm, LLM)
    assert llm.offline is True
    assert llm.supported_tasks() == {"extract_facts", "decide_updates", "reflect", "consolidate"}


async def test_usage_counts_calls_per_task_with_no_tokens() -> None:
    llm = OfflineLLM()
    await llm.run(EXTRACT_FACTS, extract_ctx([line("I love tea")]))
    await llm.run(EXTRACT_FACTS, extract_ctx([line("hi")]))
    await llm.run(DECIDE_UPDATES, DecideUpdatesContext(new_facts=[], candidates=[]))
    await llm.chat([], [], _no_tool)
    assert llm.usage.calls == {"extract_facts": 2, "decide_updates": 1, "chat": 1}
    assert llm.usage.total_calls == 4
    assert llm.usage.total_tokens == 0


class _Nothing(BaseModel):
    pass


async def test_unknown_task_is_a_configuration_error() -> None:
    task: Task[_Nothing, _Nothing] = Task(
        "summarise_web", ModelTier.FAST, _Nothing, _Nothing, lambda ctx: []
    )
    llm = OfflineLLM()
    with pytest.raises(ConfigurationError, match="summarise_web"):
        await llm.run(task, _Nothing())
    assert llm.usage.total_calls == 0


async def test_wrong_context_type_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ExtractFactsContext"):
        await OfflineLLM().run(EXTRACT_FACTS, _Nothing())  # type: ignore[misc]


# --- chat -------------------------------------------------------------------------------------


async def _no_tool(call: ToolCall) -> str:
    raise AssertionError("the offline provider never calls tools")


async def test_chat_without_fallback_says_it_is_offline() -> None:
    outcome = await OfflineLLM().chat(
        [PromptMessage(role="user", content="how are you?")], [], _no_tool
    )
    assert outcome.offline is True
    assert outcome.tool_calls == []
    assert outcome.text == OFFLINE_NOTICE
    assert "offline" in outcome.text
    assert "without a language model" in outcome.text
    assert "remember" in outcome.text


async def test_chat_passes_a_composed_text_fallback_through() -> None:
    outcome = await OfflineLLM().chat([], [], _no_tool, fallback="  Got it, I'll remember that. ")
    assert outcome.text == "Got it, I'll remember that."
    assert outcome.offline is True


async def test_chat_uses_an_injected_composer() -> None:
    seen: list[Any] = []

    def composer(fallback: Any) -> str:
        seen.append(fallback)
        return "templated"

    outcome = await OfflineLLM(composer=composer).chat([], [], _no_tool, fallback={"k": 1})
    assert (outcome.text, seen) == ("templated", [{"k": 1}])


@pytest.mark.parametrize("fallback", [None, "", "   ", 42, {"intent": "recall"}])
def test_compose_reply_falls_back_to_the_notice(fallback: Any) -> None:
    assert compose_reply(fallback) == OFFLINE_NOTICE


# --- the reply composer ------------------------------------------------------------------


def _reply_to(text: str, *memories: str) -> str:
    from integrations.offline_llm.reply import compose_for
    from memory.prompts.reply import CitedMemory, ReplyContext

    ctx = ReplyContext(
        speaker_id=ALICE.id,
        speaker_name=ALICE.name,
        thread_kind=ThreadKind.GROUP,
        text=text,
        now=NOW,
        memories=[CitedMemory(content=m, category=Category.FACT) for m in memories],
        retrieved=True,
    )
    return compose_for(ctx)


@pytest.mark.parametrize(
    "text",
    [
        "@alfred remind me, what's the code for the gate",
        "Alfred do you remember the code for the gate",
        "tell me the gate code",
        "where's the gate code",
        "gate code?",
    ],
)
def test_requests_without_a_question_mark_are_answered_from_memory(text: str) -> None:
    reply = _reply_to(text, "the gate code is 4512")
    assert reply.startswith("From what I remember:") and "4512" in reply


def test_only_memories_on_the_question_s_topic_are_cited_when_some_are() -> None:
    reply = _reply_to(
        "@alfred what is the gate code?",
        "the wifi password is on the fridge",
        "the gate code is 4512",
        "Ann's birthday is on 3 May",
    )
    assert "4512" in reply and "wifi" not in reply and "birthday" not in reply
    # no memory shares a word with the question: what retrieval found is cited as it is
    reply = _reply_to("@alfred where do we keep it?", "the spare key is under the mat")
    assert "under the mat" in reply


@pytest.mark.parametrize("text", ["@alfred thanks!", "Thank you, Alfred", "cheers alfred"])
def test_thanks_are_acknowledged_as_thanks(text: str) -> None:
    assert _reply_to(text, "the gate code is 4512") == "You're welcome!"


def test_a_statement_is_noted_not_answered() -> None:
    assert _reply_to("@alfred the gate code changed yesterday", "the gate code is 4512") == (
        "Noted — I'll keep it in mind."
    )


# --- extract_facts: statement families ------------------------------------------------------

F, REL, CTX = Category.FACT, Category.RELATIONSHIP, Category.CONTEXT


@pytest.mark.parametrize(
    ("text", "content", "category", "importance"),
    [
        ("I'm allergic to peanuts", "Alice is allergic to peanuts", F, 9),
        (
            "I\u2019m severely allergic to shellfish!",
            "Alice is severely allergic to shellfish",
            F,
            9,
        ),
        ("I am allergic to cats", "Alice is allergic to cats", F, 9),
        ("I have a nut allergy", "Alice has a nut allergy", F, 9),
        ("I've got a peanut allergy", "Alice has got a peanut allergy", F, 9),
        ("i'm allergic to bees", "Alice is allergic to bees", F, 9),
        ("My son is allergic to eggs", "Alice's son is allergic to eggs", F, 9),
        ("I'm lactose intolerant", "Alice is lactose intolerant", F, 8),
        ("I'm a vegetarian", "Alice is a vegetarian", F, 8),
        ("I am vegan", "Alice is vegan", F, 8),
        ("I don't eat pork", "Alice doesn't eat pork", F, 7),
        ("I can't eat gluten", "Alice can't eat gluten", F, 7),
        ("I'm diabetic", "Alice is diabetic", F, 8),
        ("I really love Italian food", "Alice really loves Italian food", F, 6),
        ("I like to cook", "Alice likes to cook", F, 6),
        ("I LOVE PIZZA", "Alice LOVES PIZZA", F, 6),
        ("I enjoy long walks", "Alice enjoys long walks", F, 6),
        ("I'm a big fan of jazz", "Alice is a big fan of jazz", F, 6),
        ("Pizza is my favourite food", "Pizza is Alice's favourite food", F, 6),
        ("my favorite color is green", "Alice's favorite color is green", F, 6),
        ("I hate olives", "Alice hates olives", F, 6),
        ("I can't stand jazz", "Alice can't stand jazz", F, 6),
        ("I don't like horror films", "Alice doesn't like horror films", F, 6),
        ("I dislike crowds", "Alice dislikes crowds", F, 6),
        ("my sister's name is Jane", "Alice's sister's name is Jane", REL, 7),
        ("My dog's name is Rex", "Alice's dog's name is Rex", REL, 7),
        ("my boss is called Tom", "Alice's boss is called Tom", REL, 7),
        ("My dentist is Dr Lee", "Alice's dentist is Dr Lee", REL, 7),
        ("I'm married to Bob", "Alice is married to Bob", REL, 7),
        ("I have two kids", "Alice has two kids", REL, 6),
        ("I have a cat named Tom", "Alice has a cat named Tom", REL, 6),
        ("my brother works at Google", "Alice's brother works at Google", REL, 6),
        ("My mom is visiting next week", "Alice's mom is visiting next week", CTX, 5),
        ("my birthday is March 3", "Alice's birthday is March 3", F, 8),
        ("My birthday is on the 3rd of March", "Alice's birthday is on the 3rd of March", F, 8),
        ("my mom's birthday is May 5th", "Alice's mom's birthday is May 5th", F, 8),
        ("my birthday is tomorrow", "Alice's birthday is on March 4", F, 8),
        ("I was born on 12 June 1990", "Alice was born on 12 June 1990", F, 8),
        ("I work at Acme as an engineer", "Alice works at Acme as an engineer", F, 6),
        ("I work as a nurse", "Alice works as a nurse", F, 6),
        ("I'm a teacher at Hillside School", "Alice is a teacher at Hillside School", F, 6),
        ("my job is accountant", "Alice's job is accountant", F, 6),
        ("I live in Berlin", "Alice lives in Berlin", F, 6),
        ("I just moved to Lisbon", "Alice just moved to Lisbon", F, 6),
        ("I'm from Dublin", "Alice is from Dublin", F, 5),
        ("I'm retired", "Alice is retired", F, 5),
        ("I'm 34 years old", "Alice is 34 years old", F, 5),
        ("I speak French and German", "Alice speaks French and German", F, 5),
        ("I'm planning a surprise party", "Alice is planning a surprise party", CTX, 5),
        ("I'm flying to Rome next Friday", "Alice is flying to Rome next Friday", CTX, 5),
        (
            "I have a dentist appointment on Monday",
            "Alice has a dentist appointment on Monday",
            CTX,
            5,
        ),
        ("Bob and I love sushi", "Bob and Alice love sushi", F, 6),
    ],
)
async def test_first_person_statements(
    text: str, content: str, category: Category, importance: int
) -> None:
    for kind in (ThreadKind.GROUP, ThreadKind.DM):
        assert summary(await extract(text, kind)) == [(content, category, importance, "speaker")]


async def test_fact_carries_speaker_and_source() -> None:
    facts = await extract([line("I love tea", who=BOB, message_id="m42")])
    assert len(facts) == 1
    fact = facts[0]
    assert (fact.content, fact.speaker_id, fact.source_message_ids) == (
        "Bob loves tea",
        BOB.id,
        ["m42"],
    )
    assert fact.ambiguous_reference is None


async def test_speaker_name_on_the_line_wins() -> None:
    journal = [
        JournalLine(
            message_id="m1", role=Role.USER, speaker_id="u9", speaker_name="Zoe", text="I love tea"
        )
    ]
    assert [f.content for f in await extract(journal)] == ["Zoe loves tea"]


async def test_dm_speaker_defaults_to_the_thread_owner() -> None:
    facts = await extract([line("I love tea", who=None)], ThreadKind.DM)
    assert [(f.content, f.speaker_id) for f in facts] == [("Alice loves tea", ALICE.id)]


async def test_unknown_speaker_in_a_group_gives_nothing() -> None:
    assert await extract([line("I love tea", who=None)]) == []
    stranger = Person(id="u-zed", name="Zed")
    assert await extract([line("I love tea", who=stranger)]) == []


async def test_same_words_from_two_speakers_stay_two_facts() -> None:
    facts = await extract(
        [
            line("remember that Bob hates cilantro", who=ALICE, message_id="m1"),
            line("remember that Bob hates cilantro", who=BOB, message_id="m2"),
        ]
    )
    assert [(f.content, f.speaker_id) for f in facts] == [
        ("Bob hates cilantro", ALICE.id),
        ("Bob hates cilantro", BOB.id),
    ]


async def test_several_clauses_give_several_facts() -> None:
    facts = await extract("Oh and I really love hiking because it's calm, but I hate running 😅")
    assert [f.content for f in facts] == ["Alice really loves hiking", "Alice hates running"]


# --- we / our: circle in a group, speaker in a DM ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "group", "dm", "category", "importance"),
    [
        (
            "We love hiking",
            "Alice and Bob love hiking",
            "Alice and others love hiking",
            F,
            6,
        ),
        (
            "our anniversary is on 12 June",
            "Alice and Bob's anniversary is on 12 June",
            "Alice's anniversary is on 12 June",
            F,
            8,
        ),
        (
            "We're planning a trip to Rome in May",
            "Alice and Bob are planning a trip to Rome in May",
            "Alice and others are planning a trip to Rome in May",
            CTX,
            5,
        ),
        (
            "we live in Leeds",
            "Alice and Bob live in Leeds",
            "Alice and others live in Leeds",
            F,
            6,
        ),
        (
            "Our daughter Emma starts school in September",
            "Alice and Bob's daughter Emma starts school in September",
            "Alice's daughter Emma starts school in September",
            CTX,
            5,
        ),
        (
            "We got married on 3 May 2015",
            "Alice and Bob got married on 3 May 2015",
            "Alice and others got married on 3 May 2015",
            F,
            8,
        ),
    ],
)
async def test_we_is_the_circle_only_in_a_group(
    text: str, group: str, dm: str, category: Category, importance: int
) -> None:
    assert summary(await extract(text, ThreadKind.GROUP)) == [
        (group, category, importance, "circle")
    ]
    assert summary(await extract(text, ThreadKind.DM)) == [(dm, category, importance, "speaker")]


async def test_my_in_a_group_is_the_speaker_even_with_our_in_it() -> None:
    facts = await extract("I love our garden")
    assert summary(facts) == [("Alice loves Alice and Bob's garden", F, 6, "speaker")]


async def test_large_groups_are_named_as_members() -> None:
    people = [Person(id=f"u{i}", name=f"P{i}") for i in range(6)]
    ctx = ExtractFactsContext(
        thread_kind=ThreadKind.GROUP,
        people=people,
        now=NOW,
        lines=[
            JournalLine(
                message_id="m1", role=Role.USER, speaker_id="u0", text="We love board games"
            )
        ],
    )
    facts = (await OfflineLLM().run(EXTRACT_FACTS, ctx)).facts
    assert [(f.content, f.about) for f in facts] == [
        ("The group members love board games", "circle")
    ]


# --- explicit remember and corrections -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content", "category", "importance"),
    [
        ("remember that I'm allergic to peanuts", "Alice is allergic to peanuts", F, 9),
        ("@alfred remember that I love tea", "Alice loves tea", F, 7),
        ("Remember: Bob hates cilantro", "Bob hates cilantro", F, 7),
        ("don't forget that my sister's name is Jane", "Alice's sister's name is Jane", REL, 7),
        ("keep in mind the plumber comes next Tuesday", "The plumber comes next Tuesday", CTX, 7),
        ("make a note that my wifi is slow", "Alice's wifi is slow", F, 7),
        ("note that my mom's birthday is May 5", "Alice's mom's birthday is May 5", F, 8),
        ("Actually, I'm not vegetarian anymore", "Alice is not vegetarian anymore", F, 7),
        ("I used to live in Paris but now I live in Berlin", "Alice lives in Berlin", F, 7),
        ("That's not right, my mom's name is Sarah", "Alice's mom's name is Sarah", REL, 7),
        ("My mom's name is Sarah, not Susan", "Alice's mom's name is Sarah", REL, 7),
        ("I no longer work at Acme", "Alice no longer works at Acme", F, 7),
    ],
)
async def test_explicit_and_corrected_statements(
    text: str, content: str, category: Category, importance: int
) -> None:
    assert summary(await extract(text, ThreadKind.DM)) == [
        (content, category, importance, "speaker")
    ]


async def test_explicit_payload_is_clipped_to_thirty_words() -> None:
    payload = " ".join(f"word{i}" for i in range(50))
    facts = await extract(f"remember that Bob said {payload}")
    assert len(facts) == 1
    assert len(facts[0].content.split()) == 30
    assert facts[0].content.endswith("…")


async def test_dedupes_within_a_call_and_merges_sources() -> None:
    facts = await extract(
        [
            line("I love tea", message_id="m1"),
            line("I love tea!", message_id="m2"),
            line("remember that I love tea", message_id="m3"),
        ]
    )
    assert [(f.content, f.importance, f.source_message_ids) for f in facts] == [
        ("Alice loves tea", 7, ["m1", "m2", "m3"])
    ]


async def test_only_user_lines_count() -> None:
    facts = await extract(
        [
            line("I'm allergic to peanuts", who=None, role=Role.AGENT),
            line("I love tea", who=None, role=Role.TOOL, message_id="m2"),
            line("I love coffee", message_id="m3"),
        ]
    )
    assert [f.content for f in facts] == ["Alice loves coffee"]


# --- no false positives, no garbage ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "ok thanks",
        "I love it",
        "I hate that",
        "I love you Alfred",
        "I'm going to bed",
        "we're going home now",
        "I hate when that happens",
        "I like your idea",
        "I love this song",
        "I work in 5 minutes",
        "I'm from work",
        "I'm so tired",
        "I have a question",
        "my phone is dead",
        "my job is killing me",
        "my kids are driving me crazy",
        "I think I like tea",
        "If I were rich I'd love a boat",
        "Maybe I'm allergic to cats",
        "Is Bob allergic to nuts?",
        "Do you like jazz?",
        "I'm not allergic to anything",
        "I used to live in Paris",
        "my birthday is coming up",
        "forget that I'm allergic to peanuts",
        "what do you remember about me?",
        "always keep your answers short",
        "Je suis allergique aux arachides",
        "Me gusta el café",
        "Мне нравится чай",
        "我对花生过敏",
        "🙂🙂🙂",
        "",
        "   ",
        "\x00\x07",
        "asdf qwer zxcv",
        "remember that 🙂",
        "remember that Мне нравится чай",
    ],
)
async def test_nothing_worth_a_fact(text: str) -> None:
    for kind in (ThreadKind.GROUP, ThreadKind.DM):
        assert await extract(text, kind) == []


@pytest.mark.parametrize(
    "text",
    [
        "I love tea. " * 9000,
        "x" * 100_000,
        "🙂" * 60_000,
        "я люблю чай " * 9000,
        "I'm allergic to " * 7000,
        "my sister's name is " * 5000,
    ],
)
async def test_huge_inputs_do_not_crash(text: str) -> None:
    facts = await extract(text)
    for fact in facts:
        assert len(fact.content.split()) <= 30
    assert len({f.content for f in facts}) == len(facts)


async def test_every_fact_is_at_most_thirty_words() -> None:
    long_object = " ".join(["very"] * 40)
    assert await extract(f"I love {long_object} spicy food") == []


# --- ambiguity in groups --------------------------------------------------------------------------


async def test_bare_kinship_in_a_group_is_flagged_on_the_fact() -> None:
    facts = await extract("remember that Mom is allergic to penicillin", ThreadKind.GROUP)
    assert [(f.content, f.ambiguous_reference) for f in facts] == [
        ("Mom is allergic to penicillin", "Mom")
    ]
    facts = await extract("remember that Mom is allergic to penicillin", ThreadKind.DM)
    assert [f.ambiguous_reference for f in facts] == [None]


async def test_my_mom_is_not_ambiguous() -> None:
    facts = await extract("my mom's name is Sarah", ThreadKind.GROUP)
    assert [(f.content, f.ambiguous_reference) for f in facts] == [
        ("Alice's mom's name is Sarah", None)
    ]


# --- decide_updates -------------------------------------------------------------------------------


async def decide(new: list[str], candidates: list[CandidateFact]) -> list[UpdateDecision]:
    ctx = DecideUpdatesContext(new_facts=new, candidates=candidates)
    return (await OfflineLLM().run(DECIDE_UPDATES, ctx)).decisions


def cand(
    content: str, similarity: float = 0.85, *, cid: str = "f1", index: int = 0
) -> CandidateFact:
    return CandidateFact(id=cid, content=content, similarity=similarity, new_index=index)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Alice dislikes coffee", "Alice likes coffee"),
        ("Alice hates coffee", "Alice loves coffee"),
        ("Alice likes coffee", "Alice can't stand coffee"),
        ("Alice's sister's name is Anna", "Alice's sister's name is Jane"),
        ("Alice lives in Berlin", "Alice lives in Paris"),
        ("Alice works at Beta", "Alice works at Acme"),
        ("Alice no longer works at Acme", "Alice works at Acme"),
        ("Alice is not vegetarian anymore", "Alice is a vegetarian"),
        ("Alice doesn't eat meat", "Alice eats meat"),
        ("Alice's birthday is May 5", "Alice's birthday is March 3"),
        ("Alice wants Alfred to reply in French", "Alice wants Alfred to reply in Spanish"),
    ],
)
async def test_contradiction_updates(new: str, old: str) -> None:
    assert await decide([new], [cand(old, 0.96)]) == [
        UpdateDecision(
            new_index=0, action="UPDATE", target_id="f1", content=new, contradiction=True
        )
    ]


async def test_refinement_updates_without_contradiction() -> None:
    assert await decide(["Alice loves coffee"], [cand("Alice likes coffee")]) == [
        UpdateDecision(
            new_index=0,
            action="UPDATE",
            target_id="f1",
            content="Alice loves coffee",
            contradiction=False,
        )
    ]


@pytest.mark.parametrize(
    ("new", "old", "similarity"),
    [
        ("Alice likes coffee", "alice likes coffee.", 0.8),
        ("Alice is vegetarian", "Alice is a vegetarian", 0.8),
        ("Alice enjoys hiking in the Alps", "Alice enjoys hiking in the Alps mountains", 0.97),
        ("Alice's sister is called Jane", "Alice has a sister called Jane", 0.95),
    ],
)
async def test_known_facts_are_none(new: str, old: str, similarity: float) -> None:
    assert await decide([new], [cand(old, similarity)]) == [
        UpdateDecision(new_index=0, action="NONE", target_id="f1")
    ]


@pytest.mark.parametrize(
    ("new", "old", "similarity"),
    [
        ("Bob likes coffee", "Alice likes coffee", 0.9),
        ("Alice is allergic to cats", "Alice is allergic to peanuts", 0.9),
        ("Alice likes tea", "Alice likes coffee", 0.9),
        ("Alice plays chess on Sundays", "Alice plays tennis", 0.8),
        ("Alice dislikes coffee", "Alice likes coffee", 0.5),
    ],
)
async def test_different_facts_are_added(new: str, old: str, similarity: float) -> None:
    assert await decide([new], [cand(old, similarity)]) == [
        UpdateDecision(new_index=0, action="ADD")
    ]


async def test_one_decision_per_new_fact_in_order() -> None:
    decisions = await decide(
        ["Alice likes tea", "Alice dislikes coffee", "Bob lives in Rome"],
        [
            cand("Alice likes coffee", 0.75, cid="a", index=1),
            cand("Alice likes coffee", 0.9, cid="b", index=0),
        ],
    )
    assert [(d.new_index, d.action, d.target_id, d.contradiction) for d in decisions] == [
        (0, "ADD", None, False),
        (1, "UPDATE", "a", True),
        (2, "ADD", None, False),
    ]


async def test_contradiction_beats_near_identical_similarity() -> None:
    decisions = await decide(
        ["Alice dislikes coffee"],
        [cand("Alice likes tea", 0.99, cid="x"), cand("Alice likes coffee", 0.97, cid="y")],
    )
    assert [(d.action, d.target_id, d.contradiction) for d in decisions] == [("UPDATE", "y", True)]


# --- reflect --------------------------------------------------------------------------------------


def reflect_ctx(
    lines: list[JournalLine], kind: ThreadKind = ThreadKind.GROUP, **memory: Any
) -> ReflectContext:
    return ReflectContext(
        thread_kind=kind,
        thread_owner_id=ALICE.id if kind is ThreadKind.DM else None,
        people=PEOPLE if kind is ThreadKind.GROUP else [ALICE],
        now=NOW,
        lines=lines,
        **memory,
    )


async def reflections(ctx: ReflectContext) -> list[tuple[ReflectionScope, str, str | None]]:
    result = await OfflineLLM().run(REFLECT, ctx)
    return [(r.scope, r.content, r.about_user_id) for r in result.reflections]


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("Please always keep your answers short", "Alice wants short answers from Alfred."),
        ("be more concise", "Alice wants concise answers from Alfred."),
        ("answer in Spanish", "Alice wants Alfred to reply in Spanish."),
        ("please call me Al", "Alice wants to be called Al."),
        ("don't use emojis", "Alice's instruction to Alfred: don't use emojis."),
        ("never mention my ex", "Alice's instruction to Alfred: never mention Alice's ex."),
        (
            "always greet me in French",
            "Alice's instruction to Alfred: always greet Alice in French.",
        ),
    ],
)
async def test_directives_become_user_reflections(text: str, note: str) -> None:
    for kind in (ThreadKind.GROUP, ThreadKind.DM):
        assert await reflections(reflect_ctx([line(text)], kind)) == [
            (ReflectionScope.USER, note, ALICE.id)
        ]


async def test_directive_already_known_is_not_repeated() -> None:
    ctx = reflect_ctx(
        [line("answer in Spanish")],
        user=ScopeMemory(recent=["Alice wants Alfred to reply in Spanish."]),
    )
    assert await reflections(ctx) == []


async def test_group_plans_become_circle_reflections_only_in_groups() -> None:
    text = "We're organising a dinner for Friday with the neighbours."
    assert await reflections(reflect_ctx([line(text)], ThreadKind.GROUP)) == [
        (
            ReflectionScope.CIRCLE,
            "Alice and Bob are organising a dinner for Friday with the neighbours.",
            None,
        )
    ]
    dm = await reflections(reflect_ctx([line(text)], ThreadKind.DM))
    assert dm == [
        (
            ReflectionScope.SESSION,
            "Alice and others are organising a dinner for Friday with the neighbours.",
            None,
        )
    ]
    assert all(scope is not ReflectionScope.CIRCLE for scope, _, _ in dm)


async def test_known_circle_plan_is_not_repeated() -> None:
    ctx = reflect_ctx(
        [line("We're organising a dinner for Friday")],
        circle=ScopeMemory(recent=["Alice and Bob are organising a dinner for Friday."]),
    )
    assert [s for s, _, _ in await reflections(ctx)] == []


async def test_session_summary_picks_informative_user_sentences() -> None:
    lines = [
        line("Hi Alfred!", message_id="m1"),
        line("ok", who=BOB, message_id="m2"),
        line("Sounds good", who=BOB, message_id="m3"),
        line(
            "I need to buy wine, cheese and bread from the market on Saturday morning.",
            who=BOB,
            message_id="m4",
        ),
        line("Sure, here is a recipe with lots of words in it", who=None, role=Role.AGENT),
        line("What should we cook for the vegetarian guests?", message_id="m5"),
    ]
    assert await reflections(reflect_ctx(lines)) == [
        (
            ReflectionScope.SESSION,
            "Bob needs to buy wine, cheese and bread from the market on Saturday morning.",
            None,
        ),
        (
            ReflectionScope.SESSION,
            "Alice asked: What should we cook for the vegetarian guests?",
            None,
        ),
    ]


async def test_session_summary_is_capped_and_each_note_is_at_most_35_words() -> None:
    texts = [
        "Bob is restoring an old wooden sailing boat in the garage this winter.",
        "The kids started violin lessons with a new teacher downtown.",
        "Our neighbours invited everyone to a barbecue party next Sunday afternoon.",
        "I finished reading a long novel about medieval castles, knights, dragons, sieges, "
        "feasts, tournaments, betrayals, weddings, plagues, harvests, winters, rivers, bridges, "
        "monasteries, markets, pilgrims, bishops, merchants, archers and the mysterious queen "
        "of the northern islands and her seven loyal sons.",
        "Grandpa's hospital checkup went fine yesterday morning.",
    ]
    lines = [line(text, message_id=f"m{n}") for n, text in enumerate(texts)]
    result = await reflections(reflect_ctx(lines, ThreadKind.DM))
    assert len(result) == 3
    for scope, content, about in result:
        assert (scope, about) == (ReflectionScope.SESSION, None)
        assert len(content.split()) <= 35
    longest = result[[c for _, c, _ in result].index(max((c for _, c, _ in result), key=len))][1]
    assert longest.startswith("Alice finished reading a long novel about medieval castles")
    assert longest.endswith("…")
    assert len(longest.split()) == 35


async def test_session_summary_skips_what_is_already_known() -> None:
    text = "Bob needs new hiking boots for the Alps trip."
    known_facts = reflect_ctx(
        [line(text)], new_facts=["Bob needs new hiking boots for the Alps trip"]
    )
    assert await reflections(known_facts) == []
    known_session = reflect_ctx(
        [line(text)], session=ScopeMemory(blob="Alice needs new hiking boots for the Alps trip.")
    )
    assert await reflections(known_session) == []


async def test_non_english_is_quoted_not_rewritten() -> None:
    result = await reflections(
        reflect_ctx([line("Мы планируем поездку в Рим в мае вместе с детьми")])
    )
    assert result == [
        (
            ReflectionScope.SESSION,
            "Alice wrote: Мы планируем поездку в Рим в мае вместе с детьми.",
            None,
        )
    ]


@pytest.mark.parametrize("text", ["", "🙂🙂🙂", "ok thanks", "x" * 100_000, "lol " * 20_000])
async def test_reflect_on_junk_gives_nothing_and_does_not_crash(text: str) -> None:
    result = await reflections(reflect_ctx([line(text)]))
    assert all(len(content.split()) <= 35 for _, content, _ in result)
    if text.strip() in {"", "🙂🙂🙂", "ok thanks"}:
        assert result == []


# --- consolidate ----------------------------------------------------------------------------------


async def consolidate(blob: str | None, new: list[str], limit: int = 400) -> str:
    ctx = ConsolidateContext(
        scope=ReflectionScope.USER, current_blob=blob, reflections=new, word_limit=limit
    )
    return (await OfflineLLM().run(CONSOLIDATE, ctx)).content


async def test_consolidate_merges_blob_and_reflections_in_order() -> None:
    assert (
        await consolidate(
            "Alice likes tea. Alice works at Acme", ["Alice wants short answers from Alfred"]
        )
        == "Alice likes tea. Alice works at Acme. Alice wants short answers from Alfred."
    )


async def test_consolidate_newest_wins_on_duplicates() -> None:
    assert (
        await consolidate("Alice likes tea. Alice is vegan.", ["alice likes tea!", "Bob is tall."])
        == "Alice is vegan. alice likes tea! Bob is tall."
    )


async def test_consolidate_newer_slot_replaces_older() -> None:
    assert (
        await consolidate(
            "Alice wants Alfred to reply in Spanish. Alice likes tea. Alice lives in Paris.",
            ["Alice wants Alfred to reply in French.", "Alice lives in Berlin."],
        )
        == "Alice likes tea. Alice wants Alfred to reply in French. Alice lives in Berlin."
    )


async def test_consolidate_keeps_the_newest_within_the_word_limit() -> None:
    old = " ".join(f"Old fact number {i}." for i in range(10))
    content = await consolidate(old, ["New fact one here.", "New fact two here."], limit=12)
    assert content == "Old fact number 9. New fact one here. New fact two here."
    assert len(content.split()) <= 12


async def test_consolidate_cuts_an_overlong_newest_sentence() -> None:
    content = await consolidate(None, [" ".join(f"w{i}" for i in range(50))], limit=10)
    assert content == "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9…"


@pytest.mark.parametrize(
    ("blob", "new"),
    [
        ("Alice likes tea.", []),
        (None, ["🙂 Alice likes tea"]),
        ("x" * 100_000, []),
        ("Мы любим чай.", ["我们喜欢茶"]),
    ],
)
async def test_consolidate_is_never_empty_with_input(blob: str | None, new: list[str]) -> None:
    content = await consolidate(blob, new, limit=5)
    assert content.strip()
    assert len(content.split()) <= 5


async def test_consolidate_of_nothing_is_empty() -> None:
    assert await consolidate(None, []) == ""
    assert await consolidate("   ", ["", "  "]) == ""
