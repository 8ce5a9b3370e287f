"""Remember: explicit requests to keep something, and what is not one."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    RememberIntent,
    RememberLastIntent,
    detect_intent,
    detect_remember,
    detect_remember_last,
)


@pytest.mark.parametrize(
    ("text", "payload"),
    [
        ("remember that my mom's name is Sarah", "my mom's name is Sarah"),
        ("Remember: Bob hates cilantro.", "Bob hates cilantro"),
        ("remember - the wifi code is on the fridge", "the wifi code is on the fridge"),
        ("Remember, I'm allergic to nuts!", "I'm allergic to nuts"),
        ("remember my birthday is March 3", "my birthday is March 3"),
        ("@alfred remember that I\u2019m allergic to peanuts!", "I'm allergic to peanuts"),
        ("Alfred, please remember that we're out of milk", "we're out of milk"),
        ("Don't forget that our anniversary is on 12 June", "our anniversary is on 12 June"),
        ("dont forget: Bob's flight lands at 6", "Bob's flight lands at 6"),
        ("don't forget my sister is vegan", "my sister is vegan"),
        ("keep in mind I'm vegetarian", "I'm vegetarian"),
        ("Keep in mind that Bob works nights.", "Bob works nights"),
        ("bear in mind: the car is at the garage", "the car is at the garage"),
        ("make a note that the plumber comes Tuesday", "the plumber comes Tuesday"),
        ("Make a note of my new address: 5 Main St", "my new address: 5 Main St"),
        ("take a note: Bob prefers aisle seats", "Bob prefers aisle seats"),
        ("Note that the meeting moved to 3pm.", "the meeting moved to 3pm"),
        ("note: gate code 1234", "gate code 1234"),
        ("note to self: call the bank", "call the bank"),
        ("For the record, I hate mushrooms", "I hate mushrooms"),
        ("memorise that Bob's shoe size is 44", "Bob's shoe size is 44"),
        ("Can you remember that I'm vegan?", "I'm vegan"),
        ("could you please remember that Jane is Bob's sister", "Jane is Bob's sister"),
        ("I want you to remember that I hate jazz", "I hate jazz"),
        ("oh and btw remember that Bob is allergic to shellfish", "Bob is allergic to shellfish"),
        ("Actually, remember that the party is at 8", "the party is at 8"),
        ("We went out. Remember that Bob hates sushi. Fun night!", "Bob hates sushi"),
        ("remember that \u201cthe code is 42\u201d", "the code is 42"),
        ("REMEMBER THAT I LOVE TEA!!!", "I LOVE TEA"),
        ("remember that Dr. Smith is our dentist", "Dr. Smith is our dentist"),
        ("remember that I'm allergic to peanuts 🥜🙂", "I'm allergic to peanuts"),
    ],
)
def test_remember_payload(text: str, payload: str) -> None:
    assert detect_remember(text) == RememberIntent(payload=payload)


@pytest.mark.parametrize(
    "text",
    [
        "I remember that film",
        "Do you remember that I'm vegan?",
        "Remember that time we went to Rome?",
        "Remember that film we saw last week",
        "remember that night",
        "Remember when we met?",
        "remember to buy milk",
        "don't forget to call mom",
        "Don't forget the milk",
        "remember me?",
        "remember that",
        "remember this",
        "remember: 🙂",
        "I'll keep in mind",
        "Did you forget that I'm vegetarian?",
        "she said to note that",
        "What do you remember about me?",
        "",
        "   ",
    ],
)
def test_not_a_remember_request(text: str) -> None:
    assert detect_remember(text) is None


@pytest.mark.parametrize(
    ("text", "payload"),
    [
        ("The bike shed code is 2208, remember that", "The bike shed code is 2208"),
        ("our lease ends in August - remember that!", "our lease ends in August"),
        ("Leo's recital is on the 9th, don't forget", "Leo's recital is on the 9th"),
        ("the landlord visits on Monday; keep that in mind", "the landlord visits on Monday"),
        ("Mia takes her pills at 8... note that down", "Mia takes her pills at 8"),
        ("The dentist moved to 4pm. Remember that.", "The dentist moved to 4pm"),
        ("We swapped to the green bin. Don't forget!", "We swapped to the green bin"),
        ("the spare fuse is in the drawer, make a note of it", "the spare fuse is in the drawer"),
    ],
)
def test_a_closing_cue_keeps_what_was_said_before_it(text: str, payload: str) -> None:
    assert detect_remember(text) == RememberIntent(payload=payload)


@pytest.mark.parametrize(
    "text",
    [
        "We met at that bar in Porto, remember that?",
        "I will, don't forget",
        "Is the shop open today? Remember that.",
        "note that down",
        "remember that, please",
        "do you remember that",
    ],
)
def test_a_closing_cue_needs_a_statement_before_it(text: str) -> None:
    assert detect_remember(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "remember that",
        "@alfred remember that",
        "Alfred, please remember this!",
        "remember it, please",
        "don't forget that",
        "keep that in mind",
        "note that down",
        "make a note of it",
    ],
)
def test_a_message_that_is_only_a_cue_points_back(text: str) -> None:
    assert detect_remember_last(text) == RememberLastIntent()
    assert detect_intent(text) == RememberLastIntent()


@pytest.mark.parametrize(
    "text",
    [
        "remember that?",
        "do you remember that",
        "I remember that",
        "remember",
        "The dentist moved to 4pm. Remember that.",
        "remember that I like tea",
    ],
)
def test_a_question_or_a_cue_with_its_statement_does_not_point_back(text: str) -> None:
    assert detect_remember_last(text) is None
