"""The retrieval heuristic and the dynamic fact limit (seed 004 §15.1, DESIGN.md §6.2)."""

from __future__ import annotations

import pytest

from memory import heuristics
from memory.constants import RETRIEVAL_MAX_LIMIT, RETRIEVAL_MIN_LIMIT
from memory.heuristics import dynamic_limit, should_retrieve

# A sentence with no trigger word, no greeting, no acknowledgement: only its length counts.
PLAIN = "the train was late again this evening, sadly"


def plain(length: int) -> str:
    """``PLAIN`` padded or cut to exactly ``length`` characters (still no trigger word)."""
    text = (PLAIN + " " + "zz " * 40)[:length].rstrip()
    return text + "z" * (length - len(text))


# --- skipped ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        # greetings, including ones longer than 10 characters
        "hi",
        "Hello!",
        "good morning",
        "Good evening!!",
        "good afternoon...",
        "hiya!!!!!!!!",
        # acknowledgements
        "ok",
        "thanks",
        "thank you!!!",
        "perfect!!!!!!",
        "got it.",
        "haha",
        # commands, even when they mention memory words
        "/start",
        "/status please tell me what you remember about me and my partner",
        "/calendar book the dentist appointment for my mom",
        # ten characters or fewer without a memory/plan/date word
        "I love it",  # a preference word, but too short to need facts
        "who is it?",
        "really?",
        "ok?",
        "thanks?",
        "why not?",
        "is it?",
        "hey there",
        "",
        "   ",
        # no trigger and not longer than 50 characters
        PLAIN,
        "the weather is nice today",
        plain(50),
    ],
)
def test_skipped(message: str) -> None:
    assert not should_retrieve(message)


# --- triggered --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        # people
        "call my dentist tomorrow",
        "our boss said no again",
        "is my partner's flight late",
        "who is coming on Saturday",
        "what does Bob do for work",
        "which one was it again then",
        # preferences
        "I hate cilantro so much",
        "she's allergic to cats",
        "pick my favourite pizza place",
        "we can't eat gluten at all",
        # dates and events
        "Bob's birthday is soon",
        "the dentist appointment",
        "our anniversary dinner",
        # plans
        "booking the flights now",
        "scheduled a call with Ann",
        "the trip to Rome next week",
        "planning the weekend here",
        # memory words
        "you mentioned a restaurant",
        "do you remember the hotel name",
        "I told you about my knee",
        # questions: contractions, and short ones with no trigger word at all
        "where's the wifi password",
        "what’s Ben's shoe size",
        "wifi password?",
        "the gate code?",
        "gate code?",
        "Sam's bday?",
        # longer than 50 characters, no trigger needed
        plain(51),
        "The train was delayed by forty minutes again this morning",
    ],
)
def test_triggered(message: str) -> None:
    assert should_retrieve(message)


@pytest.mark.parametrize("message", ["birthday?", "remember?", "forget it", "plan it", "party!"])
def test_short_messages_with_memory_plan_or_date_words_still_trigger(message: str) -> None:
    """The module's one exception to "≤ 10 characters: skip": a short message naming a
    memory, a plan or a date ("birthday?") is exactly what retrieval is for."""
    assert len(message) <= 10
    assert should_retrieve(message)


def test_fifty_characters_is_the_boundary() -> None:
    assert len(plain(50)) == 50 and len(plain(51)) == 51
    assert not should_retrieve(plain(50))
    assert should_retrieve(plain(51))


# --- addressing Alfred is not content -----------------------------------------------------


@pytest.mark.parametrize(
    "message",
    ["@alfred hi", "@alfred_bot hello!", "Alfred, thanks!", "alfred: ok", "ALFRED - good morning"],
)
def test_addressing_is_stripped_before_skipping(message: str) -> None:
    assert not should_retrieve(message)


def test_addressing_does_not_count_toward_length() -> None:
    content = plain(48)
    for prefix in ("@alfred ", "Alfred, ", "@alfred_bot: "):
        assert len(prefix + content) > 50
        assert not should_retrieve(prefix + content)
    assert should_retrieve("@alfred " + plain(51))


def test_only_the_name_alfred_is_stripped() -> None:
    """ "Alfredo…" is content, not an address."""
    message = "Alfredo sauce is on the stove, the pasta is nearly done."
    assert 50 < len(message) <= 56
    assert should_retrieve(message)


def test_addressed_questions_still_trigger() -> None:
    assert should_retrieve("@alfred what is my mom's name")
    assert should_retrieve("Alfred, remember?")


# --- the dynamic limit ---------------------------------------------------------------------


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        ("tell me the plan", 5),  # base
        ("what is the plan?", 7),  # question +2
        ("the hotel and the flights", 8),  # several topics +3
        ("the hotel, also the flights", 8),
        ("the hotel plus the flights", 8),
        ("the hotel as well", 8),
        ("android bandwidth", 5),  # "and" only as a word
        (words(20), 5),  # 20 words: not long
        (words(21), 8),  # more than 20 words +3
        (words(21) + "?", 10),
        (words(19) + " and more", 11),  # 21 words and several topics
        (words(19) + " and more?", 13),  # everything: 5 + 3 + 3 + 2
    ],
)
def test_dynamic_limit(message: str, limit: int) -> None:
    assert dynamic_limit(message) == limit


def test_dynamic_limit_stays_between_five_and_fifteen() -> None:
    assert (RETRIEVAL_MIN_LIMIT, RETRIEVAL_MAX_LIMIT) == (5, 15)
    longest = " and ".join(words(40).split()) + "? also? plus?"
    assert dynamic_limit("") == 5
    assert dynamic_limit(longest) == 13 <= RETRIEVAL_MAX_LIMIT


def test_dynamic_limit_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heuristics, "RETRIEVAL_MAX_LIMIT", 9)
    assert dynamic_limit(words(19) + " and more?") == 9
    assert dynamic_limit("what is the plan?") == 7


def test_dynamic_limit_ignores_the_address() -> None:
    # 20 words after "@alfred": not long; "Alfred," does not count as a word either
    assert dynamic_limit("@alfred " + words(20)) == 5
    assert dynamic_limit("Alfred, " + words(20)) == 5
    assert dynamic_limit("Alfred, " + words(21)) == 8
