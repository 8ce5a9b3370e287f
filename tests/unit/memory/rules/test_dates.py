"""Relative days made absolute, so that a memory stays true after the week it was said in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import ThreadKind
from memory.rules.dates import resolve_relative_dates
from memory.rules.language import clip_words
from memory.rules.person import Voice
from memory.rules.statements import match_statement

MONDAY = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("my birthday is tomorrow", "my birthday is on January 6"),
        # a plan moved to another day (said on Monday 5 January)
        ("the review moved to Friday at 10", "the review moved to Friday, January 9 at 10"),
        ("postponed until Thursday", "postponed until Thursday, January 8"),
        ("the meeting has been moved to tomorrow", "the meeting has been moved to January 6"),
        ("the party is on tonight", "the party is on the evening of January 5"),
        ("a party for Bob on Friday", "a party for Bob on Friday, January 9"),
        ("a party for Bob this Friday", "a party for Bob on Friday, January 9"),
        (
            "the dentist on friday, don't tell him",
            "the dentist on Friday, January 9, don't tell him",
        ),
        # said on a Monday: "on Monday" is the next one, "this Monday" is today
        ("the dentist on Monday", "the dentist on Monday, January 12"),
        ("the dentist this Monday", "the dentist on Monday, January 5"),
        ("a barbecue on Sunday", "a barbecue on Sunday, January 11"),
        # from one day to another: the last is counted from the first
        ("away from Tuesday to Thursday", "away from Tuesday, January 6 to Thursday, January 8"),
        ("away from Friday until Monday", "away from Friday, January 9 until Monday, January 12"),
        (
            "in Rome from Monday to Wednesday",
            "in Rome from Monday, January 12 to Wednesday, January 14",
        ),
        # one part of one day ("Friday nights" is a habit, below)
        ("the party is on Saturday night", "the party is on the night of Saturday, January 10"),
        (
            "the train leaves Sunday morning",
            "the train leaves on the morning of Sunday, January 11",
        ),
        (
            "the dentist got pushed back to Wednesday evening",
            "the dentist got pushed back to the evening of Wednesday, January 7",
        ),
    ],
)
def test_a_coming_day_is_named_with_its_date(said: str, kept: str) -> None:
    assert resolve_relative_dates(said, MONDAY) == kept


@pytest.mark.parametrize(
    "said",
    [
        "swimming on Tuesdays",  # a habit, every week
        "pizza on Friday nights",
        "yoga on Sunday mornings",
        "the party on Friday 9 January",  # already dated
        "the party on Friday, January 9",
        "Friday is my favourite day",
        "the party on Friday's menu",
        "the party on Friday night's menu",
    ],
)
def test_habits_and_dated_days_are_left_as_said(said: str) -> None:
    assert resolve_relative_dates(said, MONDAY) == said


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("my mom is visiting next week", "my mom is visiting the week of January 12"),
        ("Next week we paint the hall", "the week of January 12 we paint the hall"),
        ("I'm swamped this week", "I'm swamped the week of January 5"),
        ("I started my new job last week", "I started my new job the week of December 29"),
        ("we move to Lisbon next month", "we move to Lisbon in February 2026"),
        ("I was in Rome last month", "I was in Rome in December 2025"),
        ("we're getting married next year", "we're getting married in 2027"),
        ("a hike this weekend", "a hike the weekend of January 10"),
        ("we're cooking pasta tonight", "we're cooking pasta on the evening of January 5"),
        ("I saw Hana last Friday", "I saw Hana on Friday, January 2"),
        ("I saw Hana last Monday", "I saw Hana on Monday, December 29"),
        ("the exam is in 3 days", "the exam is on January 8"),
        ("we move in two weeks", "we move the week of January 19"),
        ("the lease ends in six months", "the lease ends around July 2026"),
        ("we'll be back in a year", "we'll be back around 2027"),
        # a bare day after a verb of coming or going is the coming one
        (
            "the plumber is coming Thursday at 10",
            "the plumber is coming on Thursday, January 8 at 10",
        ),
        ("school starts Monday", "school starts on Monday, January 12"),
        ("Grandma arrives Saturday", "Grandma arrives on Saturday, January 10"),
    ],
)
def test_a_span_is_named_by_the_days_it_means(said: str, kept: str) -> None:
    assert resolve_relative_dates(said, MONDAY) == kept


def test_a_span_counted_across_a_year_end() -> None:
    december = datetime(2026, 12, 30, 8, 0, tzinfo=UTC)  # a Wednesday
    said = "the move is next month, the party next week, the trip next year"
    assert resolve_relative_dates(said, december) == (
        "the move is in January 2027, the party the week of January 4, the trip in 2027"
    )


def test_this_weekend_said_on_its_sunday_is_the_one_under_way() -> None:
    sunday = datetime(2026, 1, 11, 10, 0, tzinfo=UTC)
    assert resolve_relative_dates("a hike this weekend", sunday) == (
        "a hike the weekend of January 10"
    )


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("a barbecue next Sunday", "a barbecue next Sunday (said on Monday, January 5)"),
        (
            "my dentist appointment is next Friday",
            "my dentist appointment is next Friday (said on Monday, January 5)",
        ),
        ("camping next weekend", "camping next weekend (said on Monday, January 5)"),
        (
            "the vet next Monday at 10, then lunch.",
            "the vet next Monday at 10, then lunch (said on Monday, January 5).",
        ),
    ],
)
def test_what_people_read_two_ways_keeps_the_day_it_was_said(said: str, kept: str) -> None:
    """ "next Friday" is the coming Friday to some and the one after to others: it keeps
    its words, and whoever reads it a week later can still count from the day it was
    said. Resolving it again adds nothing."""
    assert resolve_relative_dates(said, MONDAY) == kept
    assert resolve_relative_dates(kept, MONDAY + timedelta(days=9)) == kept


@pytest.mark.parametrize(
    "said",
    [
        "see you next time",
        "the shed next to the garage",
        "next week's menu",  # a possessive keeps its words
        "back in a day or two",
        "in a month of Sundays",
        "in a year's time",
        "back in two days' time",
        "our trip next December",
        "the week after",
        "the cleaner comes Fridays",  # a habit
        "the rent is due Friday",  # maybe every Friday: left to the recurring rule
    ],
)
def test_next_and_in_that_name_no_span_are_left_as_said(said: str) -> None:
    assert resolve_relative_dates(said, MONDAY) == said


def test_a_line_too_long_gives_up_the_day_it_was_said_before_any_word() -> None:
    """A fact may have 30 words: one of 27 with "next Friday" is still kept, without the
    day it was said, rather than dropped; a note clipped to its limit loses that day
    first, so a cut never falls inside it."""
    long = (
        "Our neighbour Ruth is taking the kids, the dog, the two cats and the rabbit to her "
        "sister's farm near the lake next Friday for the whole weekend"
    )
    voice = Voice.for_speaker("Dana", ThreadKind.DM)
    found = match_statement(long, voice, MONDAY)
    assert found is not None and found.content.endswith("next Friday for the whole weekend")
    assert "(said on" not in found.content
    note = "Dana's sister flies in next Friday (said on Monday, January 5)."
    assert clip_words(note, 8) == "Dana's sister flies in next Friday."
    assert clip_words(note, 12) == note
    assert clip_words(note, 4) == "Dana's sister flies in…"
