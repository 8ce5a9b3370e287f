"""Who a group message is about: the members it names, and plans made together."""

from __future__ import annotations

import pytest

from memory.prompts.common import Person
from memory.rules.partners import is_joint_plan, named_members, states_preference

ANA = Person(id="1", name="Ana")
BEN = Person(id="2", name="Ben Okafor")
WILL = Person(id="3", name="Will")
PEOPLE = [ANA, BEN, WILL]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("any ideas for dinner with Ben tonight?", [BEN]),
        ("what should I get ben for his birthday?", [BEN]),
        ("is it Ben's turn to cook?", [BEN]),
        ("Ben Okafor and Will are coming over", [BEN, WILL]),
        ("will we have time for lunch?", []),  # "will" is a word, "Will" a name
        ("Benjamin called", []),
        ("I'm Ana and I'm hungry", []),  # the speaker is not a partner
        ("@Ben_bot hello", []),
    ],
)
def test_named_members(text: str, named: list[Person]) -> None:
    assert named_members(text, PEOPLE, speaker_id=ANA.id) == named


def test_a_first_name_two_members_share_names_neither_unless_written_in_full() -> None:
    ben_two = Person(id="4", name="Ben Stone")
    people = [ANA, BEN, ben_two]
    assert named_members("dinner with Ben?", people, ANA.id) == []
    assert named_members("dinner with Ben Stone?", people, ANA.id) == [ben_two]


@pytest.mark.parametrize(
    ("text", "joint"),
    [
        ("what should we do this weekend?", True),
        ("any gift ideas for our anniversary?", True),
        ("let's book a trip", True),
        ("we are tired", False),
        ("what should I cook tonight?", False),
    ],
)
def test_plans_made_together(text: str, joint: bool) -> None:
    assert is_joint_plan(text) is joint


@pytest.mark.parametrize(
    ("text", "preference"),
    [
        ("Bob is vegetarian", True),
        ("Ana can't stand coriander", True),
        ("Ben collects vinyl records", True),
        ("Ben's car is red", False),
        ("the dentist is Dr Reyes", False),
    ],
)
def test_preferences(text: str, preference: bool) -> None:
    assert states_preference(text) is preference
