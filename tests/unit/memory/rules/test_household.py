"""Household basics the offline extractor learns: roles, pets, recurring dates,
appointments and budgets; small talk about the same things is not a fact."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import Category, ThreadKind
from memory.prompts.common import Person
from memory.rules.person import Voice
from memory.rules.statements import clauses, match_statement

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
GROUP = Voice.for_speaker(
    "Dana", ThreadKind.GROUP, [Person(id="1", name="Dana"), Person(id="2", name="Eli")]
)
DM = Voice.for_speaker("Dana", ThreadKind.DM)


def facts(text: str, voice: Voice = GROUP) -> list[tuple[str, Category]]:
    found = [match_statement(c, voice, NOW) for c in clauses(text)]
    return [(f.content, f.category) for f in found if f is not None]


@pytest.mark.parametrize(
    ("text", "content", "category"),
    [
        ("Our landlord is Mr. Patel", "Dana and Eli's landlord is Mr. Patel", "relationship"),
        ("Dr. Okafor is our GP", "Dr. Okafor is Dana and Eli's GP", "relationship"),
        ("Ruth is our neighbour", "Ruth is Dana and Eli's neighbour", "relationship"),
        ("Pepper is our cat", "Pepper is Dana and Eli's cat", "relationship"),
        (
            "our vet is Dr. Gomez at the Elm Street clinic",
            "Dana and Eli's vet is Dr. Gomez at the Elm Street clinic",
            "relationship",
        ),
        (
            "Our neighbour Ruth feeds the cat when we're away",
            "Dana and Eli's neighbour Ruth feeds the cat when Dana and Eli are away",
            "relationship",
        ),
        ("the rent is due on the 3rd", "Dana and Eli's rent is due on the 3rd", "fact"),
        ("Bin day is Tuesday", "Dana and Eli's bin day is Tuesday", "fact"),
        (
            "the recycling goes out every other Friday",
            "Dana and Eli's recycling goes out every other Friday",
            "fact",
        ),
        (
            "our home insurance renews in March",
            "Dana and Eli's home insurance renews in March",
            "fact",
        ),
        ("Our food budget is £350 a month", "Dana and Eli's food budget is £350 a month", "fact"),
        (
            "we spend around 80 euros a week on groceries",
            "Dana and Eli spend around 80 euros a week on groceries",
            "fact",
        ),
        ("the rent is 1400 a month", "Dana and Eli's rent is 1400 a month", "fact"),
        (
            "Our appointment with the notary is on March 3",
            "Dana and Eli's appointment with the notary is on March 3",
            "context",
        ),
        (
            "Pepper's vet appointment is next Monday at 10",
            "Pepper's vet appointment is next Monday at 10 (said on Monday, January 5)",
            "context",
        ),
        # a visit the household plans for, with its day: said on Monday 5 January
        (
            "the plumber is coming Thursday at 10",
            "The plumber is coming on Thursday, January 8 at 10",
            "context",
        ),
        (
            "Our cleaner is coming over on Friday",
            "Dana and Eli's cleaner is coming over on Friday, January 9",
            "context",
        ),
        ("the electrician arrives at 9", "The electrician arrives at 9", "context"),
        (
            "the plumber is coming Thursday at 10, what should we prepare?",
            "The plumber is coming on Thursday, January 8 at 10",
            "context",
        ),
        (
            "the babysitter is coming tomorrow at 6pm",
            "The babysitter is coming on January 6 at 6pm",
            "context",
        ),
        # family and friends coming, by name or by kinship
        (
            "Grandpa is coming for dinner on Sunday",
            "Grandpa is coming for dinner on Sunday, January 11",
            "context",
        ),
        ("Dad arrives on Saturday", "Dad arrives on Saturday, January 10", "context"),
        # an event in the family's or the team's calendar, with when it is
        (
            "The client review with Northwind is on Thursday at 3pm",
            "The client review with Northwind is on Thursday, January 8 at 3pm",
            "context",
        ),
        (
            "Mia's recital is on Friday at 6pm",
            "Mia's recital is on Friday, January 9 at 6pm",
            "context",
        ),
        (
            "our flight is on Saturday at 7am",
            "Dana and Eli's flight is on Saturday, January 10 at 7am",
            "context",
        ),
        ("the train leaves at 7:40 tomorrow", "The train leaves at 7:40 on January 6", "context"),
        ("the game is on tonight", "The game is on the evening of January 5", "context"),
        (
            "the review was postponed to Thursday",
            "The review was postponed to Thursday, January 8",
            "context",
        ),
        (
            "the dentist appointment is on Monday at 9",
            "The dentist appointment is on Monday, January 12 at 9",
            "context",
        ),
        (
            "Dentist appointment is on Monday at 9",
            "Dentist appointment is on Monday, January 12 at 9",
            "context",
        ),
        (
            "Grandpa is coming Sunday morning",
            "Grandpa is coming on the morning of Sunday, January 11",
            "context",
        ),
        ("my mum's surgery is on the 14th", "Dana's mum's surgery is on the 14th", "context"),
        (
            "Eli's sister's wedding is on Saturday",
            "Eli's sister's wedding is on Saturday, January 10",
            "context",
        ),
        ("the review got pushed back to 4pm", "The review got pushed back to 4pm", "context"),
        # an event or a visit that is off
        ("the review is cancelled", "The review is cancelled", "context"),
        ("the party got called off", "The party got called off", "context"),
        (
            "dinner with the Smiths is off, they're sick",
            "Dinner with the Smiths is off, they're sick",
            "context",
        ),
        ("The plumber cancelled", "The plumber cancelled", "context"),
        (
            "Grandpa can't come on Sunday after all",
            "Grandpa can't come on Sunday, January 11 after all",
            "context",
        ),
        (
            "our cleaner isn't coming tomorrow",
            "Dana and Eli's cleaner isn't coming on January 6",
            "context",
        ),
    ],
)
def test_household_basics(text: str, content: str, category: str) -> None:
    assert facts(text) == [(content, Category(category))]


def test_in_a_dm_the_household_is_the_speakers() -> None:
    assert facts("the rent is due on the 1st", DM) == [
        ("Dana's rent is due on the 1st", Category.FACT)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "the bins are full",
        "rent is crazy these days",
        "bin day is a nightmare",
        "our budget is tight this month",
        "This is our vet",
        "That is my neighbour's car",
        "my landlord is useless",
        "the wifi password is tulip42",
        "maybe our budget is 300 a month",
        "is the rent due on the 1st?",
        # a visit without when, or a question about one, is no fact
        "the plumber is coming",
        "the plumber is coming eventually",
        "is the plumber coming Thursday?",
        "Bob is coming",
        "He's coming on Friday",
        # an event without when, or with a place where a time would be, is no fact
        "the meeting is over",
        "the show is great",
        "the meeting is in room 4",
        "the meeting moved to room 4",
        "the meeting is in 5 minutes",
        "the lunch is on me",
        "when is the client review?",
        "Every meeting is at 9",
        # cancelling something that is not a visit, or "off" that is not "called off"
        "Sam cancelled the meeting",
        "the plumber cancelled our order",
        "the meeting is off the table",
    ],
)
def test_small_talk_and_secrets_are_not_facts(text: str) -> None:
    assert facts(text) == []
