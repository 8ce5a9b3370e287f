"""The offline reply offers a partner's memories in the group, said to be theirs
(seed 004 §18.2), and only those that help with what was asked."""

from __future__ import annotations

from memory.models import Category, ThreadKind
from memory.prompts.common import Person
from memory.prompts.reply import CitedMemory, ReplyContext
from memory.rules.tasks.reply import NO_MEMORY, OFFLINE_STATEMENT, compose_for
from tests.unit.memory.rules.tasks.journal import ALICE, BOB, NOW

CARA = Person(id="u-cara", name="Cara")


def _memory(content: str, owner: Person | None, *, said: bool = False) -> CitedMemory:
    return CitedMemory(
        content=content,
        category=Category.FACT,
        from_name=owner.name if owner and owner != ALICE else None,
        owner_id=owner.id if owner else None,
        said=said,
    )


def _reply(text: str, *memories: CitedMemory, kind: ThreadKind = ThreadKind.GROUP) -> str:
    ctx = ReplyContext(
        speaker_id=ALICE.id,
        speaker_name=ALICE.name,
        thread_kind=kind,
        people=[ALICE, BOB, CARA],
        text=text,
        now=NOW,
        memories=list(memories),
        retrieved=True,
    )
    return compose_for(ctx)


def test_a_named_partners_preferences_are_offered_as_theirs() -> None:
    reply = _reply(
        "@alfred any ideas for dinner with Bob tonight?",
        _memory("Bob is vegetarian", BOB),
        _memory("Bob loves Thai food", BOB),
        _memory("Bob's dentist is Dr Reyes", BOB),
        _memory("Cara adores jazz", CARA),
    )
    assert reply == "From what Bob has shared here: Bob is vegetarian; Bob loves Thai food."


def test_a_plan_statement_naming_a_partner_gets_their_context() -> None:
    reply = _reply("@alfred I'm cooking for Bob's birthday", _memory("Bob is vegan", BOB))
    assert reply == "From what Bob has shared here: Bob is vegan."


def test_a_plan_made_together_offers_each_partners_own_and_the_speakers() -> None:
    reply = _reply(
        "@alfred what should we cook for dinner on Sunday?",
        _memory("Bob can't eat nuts", BOB),
        _memory("Cara loves cooking risotto", CARA),
        _memory("Alice hates cooking on weekdays", ALICE),
        _memory("The family's Sunday dinner is at six", None),
        _memory("The wifi password is on the fridge", None),
    )
    assert reply.splitlines() == [
        "From what Bob has shared here: Bob can't eat nuts.",
        "From what Cara has shared here: Cara loves cooking risotto.",
        "You mentioned: Alice hates cooking on weekdays.",
        "For everyone: The family's Sunday dinner is at six.",
    ]


def test_memories_matching_only_the_name_are_not_offered_for_a_plan() -> None:
    reply = _reply("@alfred any ideas for dinner with Bob?", _memory("Bob's car is red", BOB))
    assert reply == NO_MEMORY


def test_a_statement_that_is_no_plan_gets_no_partner_context() -> None:
    reply = _reply("@alfred Bob is late again", _memory("Bob loves Thai food", BOB))
    assert reply == OFFLINE_STATEMENT


def test_no_partner_context_in_a_dm() -> None:
    """Retrieval never puts a partner's memory in a DM; were one there, the DM still
    would not offer it as partner context."""
    reply = _reply(
        "any ideas for dinner with Bob tonight?",
        _memory("Bob is vegetarian", BOB),
        kind=ThreadKind.DM,
    )
    assert "has shared" not in reply


def test_a_line_not_formed_yet_is_quoted_as_its_author_s() -> None:
    """Before formation, what Bob said is offered in his own words, in quotes, so that
    his "I" is read as his; the asker's own line is "you said", and a fact is cited as
    before."""
    parked = _memory("I parked the car on level 3.", BOB, said=True)
    assert _reply("@alfred where did Bob park the car?", parked) == (
        'From what Bob has shared here: "I parked the car on level 3".'
    )
    mine = _memory("My mom is visiting next week", ALICE, said=True)
    circle = _memory("I moved the spare key under the pot", None, said=True)
    fact = _memory("Alice's mom likes tulips", ALICE)
    assert _reply("when is my mom visiting?", mine, fact) == "\n".join(
        [
            "From what I remember:",
            '- You said: "My mom is visiting next week"',
            "- Alice's mom likes tulips",
        ]
    )
    assert _reply("where is the spare key?", circle) == "\n".join(
        ["From what I remember:", '- Someone here said: "I moved the spare key under the pot"']
    )
    theirs = _reply(
        "when is Bob's dentist?", _memory("I see the dentist on Friday", BOB, said=True)
    )
    assert theirs == 'From what Bob has shared here: "I see the dentist on Friday".'


def test_a_question_about_a_partner_is_not_answered_by_their_name_alone() -> None:
    """ "where does Bob work?" is not answered with "Bob is vegetarian", which retrieval
    found by the name alone; "what can Bob eat?" is, since eating and a diet are the same
    thing (memory.search.related), and so is a memory of his on the topic."""
    vegetarian = _memory("Bob is vegetarian", BOB)
    assert _reply("@alfred where does Bob work?", vegetarian) == NO_MEMORY
    assert _reply("@alfred what can Bob eat?", vegetarian) == (
        "From what Bob has shared here: Bob is vegetarian."
    )
    assert (
        _reply(
            "@alfred where does Bob work?",
            vegetarian,
            _memory("Bob started a new job at the museum", BOB),
        )
        == "From what Bob has shared here: Bob started a new job at the museum."
    )
    # Asked about Bob with no topic beside his name, everything of his is the answer.
    assert "Bob is vegetarian" in _reply("@alfred what do you know about Bob?", vegetarian)


def test_a_question_about_a_partner_is_not_answered_by_anyone_s_memory_of_the_name() -> None:
    """ "when is Bob in Berlin?" is not answered with the circle's "Alice and Bob's
    anniversary dinner is on Friday", which shares only his name; a memory found by
    meaning alone, or one on the topic, still is."""
    dinner = _memory("Alice and Bob's anniversary dinner is on Friday, January 9", None)
    assert _reply("@alfred when is Bob in Berlin?", dinner) == NO_MEMORY
    trip = _memory("Bob is off to Berlin from Tuesday, January 6", BOB)
    assert _reply("@alfred when is Bob in Berlin?", dinner, trip) == (
        "From what Bob has shared here: Bob is off to Berlin from Tuesday, January 6."
    )
    assert "anniversary dinner" in _reply("@alfred when is Bob's anniversary dinner?", dinner)
    germany = _memory("The conference in Germany runs all week", None)
    assert "Germany" in _reply("@alfred when is Bob in Berlin?", germany)
