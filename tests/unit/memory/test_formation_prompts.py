"""What formation tells a real model about days: each line's time on its speaker's clock,
and that "tomorrow" is counted from that line, not from when formation runs (fact
extraction and the always-in-context notes alike)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from memory.models import Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractFactsContext
from memory.prompts.reflect import REFLECT, ReflectContext

SAID = datetime(2026, 1, 5, 13, 0, tzinfo=UTC)  # Monday 13:00 UTC: Tuesday 02:00 in Auckland


def _ctx(*, at: datetime | None) -> ExtractFactsContext:
    return ExtractFactsContext(
        thread_kind=ThreadKind.DM,
        thread_owner_id="u-nora",
        people=[Person(id="u-nora", name="Nora")],
        now=datetime(2026, 1, 6, 20, 0, tzinfo=UTC),  # formed a day later
        lines=[
            JournalLine(
                message_id="m1",
                role=Role.USER,
                speaker_id="u-nora",
                speaker_name="Nora",
                text="I'm hosting a dinner party tomorrow",
                at=at,
            )
        ],
    )


def test_each_line_says_when_it_was_said_on_its_speakers_clock() -> None:
    system, user = (
        m.content
        for m in EXTRACT_FACTS.build(_ctx(at=SAID.astimezone(ZoneInfo("Pacific/Auckland"))))
    )
    assert (
        "[m1] (user, weight 1.0, said Tue 2026-01-06 02:00 NZDT) Nora: "
        "I'm hosting a dinner party tomorrow"
    ) in user
    rule = " ".join(system.split())
    assert "counted from when that line was said" in rule
    assert 'Habits ("on Fridays") stay as said' in rule
    # a span is named by its days; what people read two ways keeps the day it was said
    assert 'mom is visiting the week of March 9"' in rule
    assert '"Bob flies to Rome next Friday (said on Monday, March 2)"' in rule


def test_a_line_without_a_time_is_shown_as_before() -> None:
    _, user = (m.content for m in EXTRACT_FACTS.build(_ctx(at=None)))
    assert "[m1] (user, weight 1.0) Nora: I'm hosting a dinner party tomorrow" in user


def test_the_notes_are_told_the_same_and_to_date_their_days() -> None:
    ctx = ReflectContext.model_validate(
        _ctx(at=SAID.astimezone(ZoneInfo("Pacific/Auckland"))).model_dump()
    )
    system, user = (m.content for m in REFLECT.build(ctx))
    assert "(user, weight 1.0, said Tue 2026-01-06 02:00 NZDT) Nora:" in user
    rule = " ".join(system.split())
    assert "counted from when that line was said" in rule
    assert '"next Friday (said on Monday, March 2)"' in rule


def test_a_real_model_is_told_whose_a_group_s_statement_is_as_the_rules_read_it() -> None:
    """The offline rules make "Sam is allergic to shellfish" and "the review is on
    Thursday", said in a group, the circle's; a real model is told the same, and that a
    DM's is the speaker's."""
    system = EXTRACT_FACTS.build(_ctx(at=SAID))[0].content
    assert "about someone named" in system and "Sam is allergic to shellfish" in system
    assert "the review is on Thursday" in system
    assert 'always in a DM, "speaker"' in " ".join(system.split())
