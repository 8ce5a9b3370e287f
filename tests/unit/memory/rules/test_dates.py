"""Relative days made absolute, so that a memory stays true after the week it was said in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.rules.dates import resolve_relative_dates

MONDAY = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("my birthday is tomorrow", "my birthday is on January 6"),
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
        "a barbecue next Sunday",  # read two ways: left as said
        "the party on Friday 9 January",  # already dated
        "the party on Friday, January 9",
        "Friday is my favourite day",
        "the party on Friday's menu",
    ],
)
def test_habits_dated_days_and_next_weekday_are_left_as_said(said: str) -> None:
    assert resolve_relative_dates(said, MONDAY) == said
