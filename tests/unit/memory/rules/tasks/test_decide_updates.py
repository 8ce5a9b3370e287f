"""Formation step 2 without a model: ADD / UPDATE / NONE by slots and similarity."""

from __future__ import annotations

import pytest

from memory.prompts.decide_updates import CandidateFact, DecideUpdatesContext, UpdateDecision
from memory.rules.slots import says_it_changed
from memory.rules.tasks.decide_updates import decide_updates

# --- decide_updates -------------------------------------------------------------------------------


async def decide(new: list[str], candidates: list[CandidateFact]) -> list[UpdateDecision]:
    ctx = DecideUpdatesContext(new_facts=new, candidates=candidates)
    return (decide_updates(ctx)).decisions


def cand(
    content: str, similarity: float = 0.85, *, cid: str = "f1", index: int = 0
) -> CandidateFact:
    return CandidateFact(id=cid, content=content, similarity=similarity, new_index=index)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Alice dislikes coffee", "Alice likes coffee"),
        ("Alice hates coffee", "Alice loves coffee"),
        ("Alice likes coffee", "Alice can't stand coffee"),
        ("Alice's sister's name is Anna", "Alice's sister's name is Jane"),
        ("Alice lives in Berlin", "Alice lives in Paris"),
        ("Alice works at Beta", "Alice works at Acme"),
        ("Alice no longer works at Acme", "Alice works at Acme"),
        ("Alice started working at Globex", "Alice works at Acme"),
        ("Alice started a new job at Globex", "Alice works at Acme"),
        ("Alice got a new job with the council", "Alice started working at Acme"),
        ("Alice is not vegetarian anymore", "Alice is a vegetarian"),
        ("Alice doesn't eat meat", "Alice eats meat"),
        ("Alice's birthday is May 5", "Alice's birthday is March 3"),
        ("Alice wants Alfred to reply in French", "Alice wants Alfred to reply in Spanish"),
        # an event is at one time: the later one replaces it, named in fewer words or not
        (
            "The Northwind review was moved to Friday, January 9 at 10",
            "The client review with Northwind is on Thursday, January 8 at 3pm",
        ),
        (
            "Bob's dentist appointment got pushed back to the evening of Wednesday, January 7",
            "The dentist appointment is on Monday, January 12 at 9",
        ),
        ("The party is on Sunday, January 11", "The party is on Saturday, January 10"),
        # or it is off, or a visit is
        ("The plumber cancelled", "The plumber is coming on Thursday, January 8 at 10"),
        (
            "Dinner with the Smiths is off, they're sick",
            "Dinner with the Smiths is on Saturday, January 10 at 7",
        ),
        (
            "Grandpa can't come on Sunday, January 11 after all",
            "Grandpa is coming for dinner on Sunday, January 11",
        ),
        ("Jake's football practice moved to Thursdays", "Jake's football practice is on Tuesdays"),
        # someone's event, said as "has a …"
        (
            "Alice's dentist appointment got moved to Tuesday, January 13",
            "Alice has a dentist appointment on Monday, January 12 at 9",
        ),
        ("Mia's ballet moved to Thursdays", "Mia has ballet on Wednesdays at 5"),
    ],
)
async def test_contradiction_updates(new: str, old: str) -> None:
    assert await decide([new], [cand(old, 0.96)]) == [
        UpdateDecision(
            new_index=0, action="UPDATE", target_id="f1", content=new, contradiction=True
        )
    ]


async def test_an_event_moved_replaces_its_time_however_far_apart_the_embeddings() -> None:
    """The moved review embeds far from the review as first said: the slot, not the
    similarity, makes the old time a candidate."""
    new = "The review was postponed to Friday, January 9"
    assert await decide([new], [cand("The client review is on Thursday, January 8", 0.4)]) == [
        UpdateDecision(
            new_index=0, action="UPDATE", target_id="f1", content=new, contradiction=True
        )
    ]


async def test_refinement_updates_without_contradiction() -> None:
    assert await decide(["Alice loves coffee"], [cand("Alice likes coffee")]) == [
        UpdateDecision(
            new_index=0,
            action="UPDATE",
            target_id="f1",
            content="Alice loves coffee",
            contradiction=False,
        )
    ]


@pytest.mark.parametrize(
    ("new", "old", "similarity"),
    [
        ("Alice likes coffee", "alice likes coffee.", 0.8),
        ("Alice is vegetarian", "Alice is a vegetarian", 0.8),
        ("Alice enjoys hiking in the Alps", "Alice enjoys hiking in the Alps mountains", 0.97),
        ("Alice's sister is called Jane", "Alice has a sister called Jane", 0.95),
        (
            "The review was moved to Thursday, January 8",
            "The review is on Thursday, January 8",
            0.8,
        ),
    ],
)
async def test_known_facts_are_none(new: str, old: str, similarity: float) -> None:
    assert await decide([new], [cand(old, similarity)]) == [
        UpdateDecision(new_index=0, action="NONE", target_id="f1")
    ]


@pytest.mark.parametrize(
    ("new", "old", "similarity"),
    [
        ("Bob likes coffee", "Alice likes coffee", 0.9),
        ("Alice is allergic to cats", "Alice is allergic to peanuts", 0.9),
        ("Alice likes tea", "Alice likes coffee", 0.9),
        ("Alice plays chess on Sundays", "Alice plays tennis", 0.8),
        ("Alice dislikes coffee", "Alice likes coffee", 0.5),
        # other events, or not a time at all
        ("The party is on Saturday, January 10", "The review is on Thursday, January 8", 0.75),
        (
            "Mia's dentist appointment is on Monday, January 12",
            "Leo's dentist appointment is on Friday, January 9",
            0.9,
        ),
        ("Leo is on holiday", "Leo is on Friday, January 9", 0.8),
        ("Bob moved to Lisbon", "The review moved to Friday, January 9", 0.5),
        ("Sam cancelled the meeting", "Sam is coming on Friday, January 9", 0.8),
        ("Mia's practice is on Thursdays too", "Mia's practice is on Tuesdays at 5", 0.9),
        # "has a meeting" again is another meeting, however alike the wording (the
        # embedded model puts these two at 0.94)
        (
            "Bob has a meeting on Wednesday, January 14 at 2",
            "Bob has a meeting on Monday, January 12 at 10",
            0.98,
        ),
    ],
)
async def test_different_facts_are_added(new: str, old: str, similarity: float) -> None:
    assert await decide([new], [cand(old, similarity)]) == [
        UpdateDecision(new_index=0, action="ADD")
    ]


async def test_one_decision_per_new_fact_in_order() -> None:
    decisions = await decide(
        ["Alice likes tea", "Alice dislikes coffee", "Bob lives in Rome"],
        [
            cand("Alice likes coffee", 0.75, cid="a", index=1),
            cand("Alice likes coffee", 0.9, cid="b", index=0),
        ],
    )
    assert [(d.new_index, d.action, d.target_id, d.contradiction) for d in decisions] == [
        (0, "ADD", None, False),
        (1, "UPDATE", "a", True),
        (2, "ADD", None, False),
    ]


async def test_contradiction_beats_near_identical_similarity() -> None:
    decisions = await decide(
        ["Alice dislikes coffee"],
        [cand("Alice likes tea", 0.99, cid="x"), cand("Alice likes coffee", 0.97, cid="y")],
    )
    assert [(d.action, d.target_id, d.contradiction) for d in decisions] == [("UPDATE", "y", True)]


@pytest.mark.parametrize(
    ("fact", "news"),
    [
        ("The review was moved to Friday, January 9", True),
        ("The plumber cancelled", True),
        ("Dinner with the Smiths is off", True),
        ("The party is on Sunday, January 11", False),  # a contradiction: asked about
        ("Alice lives in Berlin", False),
        ("Bob moved to Lisbon", False),
    ],
)
def test_a_move_or_a_cancellation_is_news_not_a_contradiction(fact: str, news: bool) -> None:
    assert says_it_changed(fact) is news


@pytest.mark.parametrize(
    ("new", "old", "kept"),
    [
        (
            "The review was moved to 4pm",
            "The client review is on Thursday, January 8 at 3pm",
            "The review was moved to 4pm on Thursday, January 8",
        ),
        (
            "Jake's practice moved to 6pm",
            "Jake's practice is on Tuesdays at 5",
            "Jake's practice moved to 6pm on Tuesdays",
        ),
        # a new day, or no day to keep: as said
        (
            "The review was moved to Friday, January 9",
            "The review is on Thursday, January 8",
            "The review was moved to Friday, January 9",
        ),
        ("The review was moved to 4pm", "The review is at 3pm", "The review was moved to 4pm"),
    ],
)
async def test_an_event_moved_to_another_hour_keeps_its_day(new: str, old: str, kept: str) -> None:
    (decision,) = await decide([new], [cand(old, 0.9)])
    assert decision.action == "UPDATE" and decision.content == kept
