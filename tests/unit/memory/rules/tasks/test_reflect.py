"""Formation step 3 without a model: directives, group plans and the session summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.models import ReflectionScope, Role, ThreadKind
from memory.prompts.common import JournalLine
from memory.prompts.reflect import ReflectContext, ScopeMemory
from memory.rules.tasks.reflect import reflect
from tests.unit.memory.rules.tasks.journal import ALICE, BOB, NOW, PEOPLE, line

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
    result = reflect(ctx)
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


async def test_a_day_in_a_note_is_its_date_counted_from_when_it_was_said() -> None:
    """Said on Sunday evening and formed on Monday (``NOW``): the note is read for days,
    so its "tomorrow" is the Monday it meant; a question is quoted as asked."""
    said = datetime(2025, 3, 2, 20, 0, tzinfo=UTC)
    plan = line("We're organising a barbecue tomorrow").model_copy(update={"at": said})
    assert await reflections(reflect_ctx([plan], ThreadKind.GROUP)) == [
        (ReflectionScope.CIRCLE, "Alice and Bob are organising a barbecue on March 3.", None)
    ]
    assert await reflections(reflect_ctx([plan], ThreadKind.DM)) == [
        (ReflectionScope.SESSION, "Alice and others are organising a barbecue on March 3.", None)
    ]
    asked = line("Are we still meeting the plumber tomorrow?").model_copy(update={"at": said})
    assert await reflections(reflect_ctx([asked], ThreadKind.DM)) == [
        (ReflectionScope.SESSION, "Alice asked: Are we still meeting the plumber tomorrow?", None)
    ]


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
            "Bob needs to buy wine, cheese and bread from the market on the morning of "
            "Saturday, March 8.",
            None,
        ),
        (
            ReflectionScope.SESSION,
            "Alice asked: What should we cook for the vegetarian guests?",
            None,
        ),
    ]


async def test_session_notes_leave_out_the_words_that_addressed_alfred() -> None:
    """The note says what was asked, not whom: "@alfred" in a circle's summary is noise."""
    lines = [
        line("@alfred is anyone planning something for Friday?", message_id="m1"),
        line("@alfred", who=BOB, message_id="m2"),
    ]
    assert await reflections(reflect_ctx(lines)) == [
        (ReflectionScope.SESSION, "Alice asked: is anyone planning something for Friday?", None)
    ]


async def test_an_introduction_is_not_noted_as_the_speaker_being_themselves() -> None:
    """ "Hi Alfred! I'm Alice, I run the studio." is noted as what Alice does, not as
    "Alice is Alice, …"; said alone, the introduction is no note at all."""
    lines = [
        line("Hi Alfred! I'm Alice, I run the studio.", message_id="m1"),
        line("Hi! I'm Bob.", who=BOB, message_id="m2"),
    ]
    assert await reflections(reflect_ctx(lines)) == [
        (ReflectionScope.SESSION, "Alice runs the studio.", None)
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


@pytest.mark.parametrize(
    ("said", "noted"),
    [
        # a short plan of a name, a verb and a day is English: rewritten and dated
        (
            "Grandma arrives next Saturday",
            "Grandma arrives next Saturday (said on Monday, March 3).",
        ),
        ("Mi abuela llega el sábado", "Alice wrote: Mi abuela llega el sábado."),
        ("Oma kommt nächsten Samstag", "Alice wrote: Oma kommt nächsten Samstag."),
    ],
)
async def test_a_short_plan_with_a_day_is_read_as_english(said: str, noted: str) -> None:
    assert await reflections(reflect_ctx([line(said)])) == [(ReflectionScope.SESSION, noted, None)]


@pytest.mark.parametrize("text", ["", "🙂🙂🙂", "ok thanks", "x" * 100_000, "lol " * 20_000])
async def test_reflect_on_junk_gives_nothing_and_does_not_crash(text: str) -> None:
    result = await reflections(reflect_ctx([line(text)]))
    assert all(len(content.split()) <= 35 for _, content, _ in result)
    if text.strip() in {"", "🙂🙂🙂", "ok thanks"}:
        assert result == []
