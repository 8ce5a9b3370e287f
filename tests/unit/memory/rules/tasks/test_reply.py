"""The reply without a model: answers from memory, and says plainly that it is offline."""

from __future__ import annotations

import pytest

from memory.models import Category, ThreadKind
from memory.prompts.common import Person
from memory.prompts.reply import CitedMemory, ReplyContext, ReplyRequest
from memory.rules.tasks.reply import (
    ACKNOWLEDGED,
    FORGET_HOW,
    GREETING,
    NO_MEMORY,
    OFFLINE_STATEMENT,
    compose_for,
    reply,
)
from tests.unit.memory.rules.tasks.journal import ALICE, NOW


def test_the_reply_rule_answers_the_request_s_context() -> None:
    ctx = ReplyContext(
        speaker_id=ALICE.id,
        speaker_name=ALICE.name,
        thread_kind=ThreadKind.DM,
        text="hello",
        now=NOW,
    )
    assert reply(ReplyRequest(reply=ctx)) == compose_for(ctx)


# --- the reply composer ------------------------------------------------------------------


def _reply_to(text: str, *memories: str) -> str:
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


def test_a_statement_is_not_answered_and_not_claimed_as_stored() -> None:
    assert _reply_to("@alfred the gate code changed yesterday", "the gate code is 4512") == (
        OFFLINE_STATEMENT
    )
    assert "noted" not in OFFLINE_STATEMENT.lower()


@pytest.mark.parametrize(
    "text",
    [
        "ok",
        "cool",
        "@alfred got it",
        "sounds good!",
        "👍",
        "ok then",
        "never mind, forget it",
        "forget it",
    ],
)
def test_acknowledgements_get_a_short_answer_that_claims_nothing(text: str) -> None:
    assert _reply_to(text, "the gate code is 4512") == ACKNOWLEDGED


@pytest.mark.parametrize("text", ["ok thanks", "cool, thank you!", "great, cheers"])
def test_acknowledged_thanks_are_thanks(text: str) -> None:
    assert _reply_to(text) == "You're welcome!"


@pytest.mark.parametrize(
    "text",
    ["forget Hana", "@alfred please delete Bob", "Alfred, erase the old code", "forget", "delete!"],
)
def test_a_forget_the_rules_could_not_read_is_told_how_to_ask(text: str) -> None:
    """Not acted on (a bare name may be a change of plan), not "I can't chat": the way
    to ask, which names the two forms that work."""
    answer = _reply_to(text, "Hana is allergic to peanuts")
    assert answer == FORGET_HOW
    assert '"forget that' in answer and '"forget about' in answer


@pytest.mark.parametrize("text", ["forgetting things is normal", "deleted the old photos today"])
def test_words_that_start_like_forget_are_statements(text: str) -> None:
    assert _reply_to(text) == OFFLINE_STATEMENT


@pytest.mark.parametrize("text", ["hello @alfred", "@alfred", "Hi Alfred!", "@alfred good morning"])
def test_a_greeting_or_a_bare_mention_gets_the_introduction(text: str) -> None:
    assert _reply_to(text) == GREETING


# --- notes kept in mind ------------------------------------------------------------------

NOTES = "\n".join(
    [
        "## What you keep in mind",
        "**About this circle:**",
        "- Alice and Bob are going to Lisbon the week of January 19.",
        "- The family eats pizza on Fridays. The kids walk the dog after school.",
        "**About people here:**",
        "- [Bob] Bob prefers short answers.",
    ]
)


def _asked_with_notes(text: str, *memories: str) -> str:
    ctx = ReplyContext(
        speaker_id=ALICE.id,
        speaker_name=ALICE.name,
        thread_kind=ThreadKind.GROUP,
        people=[ALICE, Person(id="u-bob", name="Bob")],
        text=text,
        now=NOW,
        always=NOTES,
        memories=[CitedMemory(content=m, category=Category.FACT) for m in memories],
        retrieved=True,
    )
    return compose_for(ctx)


def test_a_question_a_note_answers_is_answered_from_the_note() -> None:
    """A plan said in passing is often kept as a note, not a fact: offline, a question
    about it cites the note's sentence (names aside, so "Alice and Bob" alone matches
    nothing), not "I don't know"."""
    assert _asked_with_notes("@alfred when are we going to Lisbon?") == (
        "From what I keep in mind here:\n"
        "- Alice and Bob are going to Lisbon the week of January 19."
    )
    assert _asked_with_notes("who walks the dog?") == (
        "From what I keep in mind here:\n- The kids walk the dog after school."
    )
    assert _asked_with_notes("what does Bob prefer?") == (
        "From what I keep in mind here:\n- Bob prefers short answers."
    )
    assert _asked_with_notes("what about Alice and Bob?") == NO_MEMORY
    assert _asked_with_notes("where is the spare key?") == NO_MEMORY


def test_a_memory_on_the_topic_comes_before_the_notes() -> None:
    on_topic = _asked_with_notes("when do we fly to Lisbon?", "The Lisbon flight is at 7am")
    assert on_topic == "From what I remember:\n- The Lisbon flight is at 7am"
    # found by meaning alone, sharing no word with the question: the note says more
    by_meaning = _asked_with_notes("when are we going to Lisbon?", "Bob booked a hotel")
    assert by_meaning.startswith("From what I keep in mind here:\n- Alice and Bob are going")
