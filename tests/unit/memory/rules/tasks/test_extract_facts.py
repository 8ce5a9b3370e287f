"""Formation step 1 without a model: facts from statements, precisely and without garbage."""

from __future__ import annotations

import pytest

from memory.models import Category, Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import ExtractedFact, ExtractFactsContext
from memory.rules.tasks.extract_facts import extract_facts
from tests.unit.memory.rules.tasks.journal import ALICE, BOB, NOW, extract_ctx, line


async def extract(
    text: str | list[JournalLine], kind: ThreadKind = ThreadKind.GROUP
) -> list[ExtractedFact]:
    lines = [line(text)] if isinstance(text, str) else text
    result = extract_facts(extract_ctx(lines, kind))
    return result.facts


def summary(facts: list[ExtractedFact]) -> list[tuple[str, Category, int, str]]:
    return [(f.content, f.category, f.importance, f.about) for f in facts]


# --- extract_facts: statement families ------------------------------------------------------

F, REL, CTX = Category.FACT, Category.RELATIONSHIP, Category.CONTEXT


@pytest.mark.parametrize(
    ("text", "content", "category", "importance"),
    [
        ("I'm allergic to peanuts", "Alice is allergic to peanuts", F, 9),
        (
            "I\u2019m severely allergic to shellfish!",
            "Alice is severely allergic to shellfish",
            F,
            9,
        ),
        ("I am allergic to cats", "Alice is allergic to cats", F, 9),
        ("I have a nut allergy", "Alice has a nut allergy", F, 9),
        ("I've got a peanut allergy", "Alice has got a peanut allergy", F, 9),
        ("i'm allergic to bees", "Alice is allergic to bees", F, 9),
        ("My son is allergic to eggs", "Alice's son is allergic to eggs", F, 9),
        ("I'm lactose intolerant", "Alice is lactose intolerant", F, 8),
        ("I'm a vegetarian", "Alice is a vegetarian", F, 8),
        ("I am vegan", "Alice is vegan", F, 8),
        ("I don't eat pork", "Alice doesn't eat pork", F, 7),
        ("I can't eat gluten", "Alice can't eat gluten", F, 7),
        ("I'm diabetic", "Alice is diabetic", F, 8),
        ("I really love Italian food", "Alice really loves Italian food", F, 6),
        ("I like to cook", "Alice likes to cook", F, 6),
        ("I LOVE PIZZA", "Alice LOVES PIZZA", F, 6),
        ("I enjoy long walks", "Alice enjoys long walks", F, 6),
        ("I'm a big fan of jazz", "Alice is a big fan of jazz", F, 6),
        ("Pizza is my favourite food", "Pizza is Alice's favourite food", F, 6),
        ("my favorite color is green", "Alice's favorite color is green", F, 6),
        ("I hate olives", "Alice hates olives", F, 6),
        ("I can't stand jazz", "Alice can't stand jazz", F, 6),
        ("I don't like horror films", "Alice doesn't like horror films", F, 6),
        ("I dislike crowds", "Alice dislikes crowds", F, 6),
        ("my sister's name is Jane", "Alice's sister's name is Jane", REL, 7),
        ("My dog's name is Rex", "Alice's dog's name is Rex", REL, 7),
        ("my boss is called Tom", "Alice's boss is called Tom", REL, 7),
        ("My dentist is Dr Lee", "Alice's dentist is Dr Lee", REL, 7),
        ("I'm married to Bob", "Alice is married to Bob", REL, 7),
        ("I have two kids", "Alice has two kids", REL, 6),
        ("I have a cat named Tom", "Alice has a cat named Tom", REL, 6),
        ("my brother works at Google", "Alice's brother works at Google", REL, 6),
        # said on Monday, March 3: the week is named by its days, to stay true after it
        ("My mom is visiting next week", "Alice's mom is visiting the week of March 10", CTX, 5),
        # A schedule says when: "on Tuesdays", "at 5pm" (not a mood, though "-ing")
        ("My mom is visiting on Sundays", "Alice's mom is visiting on Sundays", CTX, 5),
        ("my daughter starts school at 8am", "Alice's daughter starts school at 8am", CTX, 5),
        (
            "My son starts swimming lessons on Tuesdays at 5 pm",
            "Alice's son starts swimming lessons on Tuesdays at 5 pm",
            CTX,
            5,
        ),
        ("my birthday is March 3", "Alice's birthday is March 3", F, 8),
        ("My birthday is on the 3rd of March", "Alice's birthday is on the 3rd of March", F, 8),
        ("my mom's birthday is May 5th", "Alice's mom's birthday is May 5th", F, 8),
        ("my birthday is tomorrow", "Alice's birthday is on March 4", F, 8),
        ("I was born on 12 June 1990", "Alice was born on 12 June 1990", F, 8),
        ("I work at Acme as an engineer", "Alice works at Acme as an engineer", F, 6),
        ("I work as a nurse", "Alice works as a nurse", F, 6),
        ("I'm a teacher at Hillside School", "Alice is a teacher at Hillside School", F, 6),
        ("my job is accountant", "Alice's job is accountant", F, 6),
        # A change of work or a thing taken up, dated as the other rules date it.
        ("I started a new job last week", "Alice started a new job the week of February 24", F, 6),
        (
            "I started working at Acme on Monday",
            "Alice started working at Acme on Monday, March 10",
            F,
            6,
        ),
        ("I got promoted today", "Alice got promoted on March 3", F, 6),
        ("I'm starting a new job next month", "Alice is starting a new job in April 2025", F, 6),
        ("I started as a nurse", "Alice started as a nurse", F, 6),
        ("I just retired", "Alice just retired", F, 6),
        ("I joined a choir last month", "Alice joined a choir in February 2025", F, 5),
        ("I started learning Spanish", "Alice started learning Spanish", F, 5),
        (
            "I'm interviewing with another agency next week, keep it quiet",
            "Alice is interviewing with another agency the week of March 10",
            CTX,
            5,
        ),
        ("I'm meeting Tom for lunch tomorrow", "Alice is meeting Tom for lunch on March 4", CTX, 5),
        (
            "I'm moving to Berlin in May, don't tell anyone",
            "Alice is moving to Berlin in May",
            CTX,
            5,
        ),
        ("I live in Berlin", "Alice lives in Berlin", F, 6),
        ("I just moved to Lisbon", "Alice just moved to Lisbon", F, 6),
        ("I'm from Dublin", "Alice is from Dublin", F, 5),
        ("I'm retired", "Alice is retired", F, 5),
        ("I'm 34 years old", "Alice is 34 years old", F, 5),
        ("I speak French and German", "Alice speaks French and German", F, 5),
        ("I'm planning a surprise party", "Alice is planning a surprise party", CTX, 5),
        (
            "I'm flying to Rome next Friday",
            "Alice is flying to Rome next Friday (said on Monday, March 3)",
            CTX,
            5,
        ),
        # away for a while: the days dated, the last counted from the first
        (
            "I'm off to Berlin for work from Tuesday to Thursday",
            "Alice is off to Berlin for work from Tuesday, March 4 to Thursday, March 6",
            CTX,
            5,
        ),
        (
            "I'll be in Lisbon from Friday until Monday",
            "Alice will be in Lisbon from Friday, March 7 until Monday, March 10",
            CTX,
            5,
        ),
        ("I'm away in Oslo next week", "Alice is away in Oslo the week of March 10", CTX, 5),
        (
            "I have a dentist appointment on Monday",  # said on Monday 3 March 2025
            "Alice has a dentist appointment on Monday, March 10",
            CTX,
            5,
        ),
        # A plan in the progressive, when it says when (said on Monday 3 March 2025).
        (
            "I'm having a dinner party on Saturday",
            "Alice is having a dinner party on Saturday, March 8",
            CTX,
            5,
        ),
        ("I'm having a picnic tomorrow", "Alice is having a picnic on March 4", CTX, 5),
        # Where a thing was put: asked about a day later.
        (
            "I parked the car on level 3 of the station garage",
            "Alice parked the car on level 3 of the station garage",
            CTX,
            5,
        ),
        ("I parked on level 2", "Alice parked on level 2", CTX, 5),
        (
            "I put the spare key under the blue pot",
            "Alice put the spare key under the blue pot",
            CTX,
            5,
        ),
        (
            "I keep my passport in the desk drawer",
            "Alice keeps Alice's passport in the desk drawer",
            CTX,
            5,
        ),
        ("I left my umbrella at the office", "Alice left Alice's umbrella at the office", CTX, 5),
        (
            "I hid the spare key under the blue pot myself",
            "Alice hid the spare key under the blue pot themselves",
            CTX,
            5,
        ),
        ("Bob and I love sushi", "Bob and Alice love sushi", F, 6),
        # An aside after the fact is no part of it.
        (
            "I'm allergic to shellfish, just so everyone knows",
            "Alice is allergic to shellfish",
            F,
            9,
        ),
        ("I'm allergic to kiwi, by the way", "Alice is allergic to kiwi", F, 9),
        ("I'm allergic to nuts, in case you were wondering", "Alice is allergic to nuts", F, 9),
        # A question after the statement is no part of it, and does not hide it.
        ("I love spicy ramen, do you?", "Alice loves spicy ramen", F, 6),
    ],
)
async def test_first_person_statements(
    text: str, content: str, category: Category, importance: int
) -> None:
    for kind in (ThreadKind.GROUP, ThreadKind.DM):
        assert summary(await extract(text, kind)) == [(content, category, importance, "speaker")]


@pytest.mark.parametrize(
    ("text", "content", "category", "importance"),
    [
        # What must not go wrong when cooking or ordering for them, and their week.
        ("Sam is allergic to shellfish", "Sam is allergic to shellfish", F, 9),
        ("Mia's birthday is on June 3", "Mia's birthday is on June 3", F, 8),
        ("Mia has ballet on Wednesdays at 5", "Mia has ballet on Wednesdays at 5", F, 6),
        (
            "Bob has a meeting on Monday at 10",
            "Bob has a meeting on Monday, March 10 at 10",
            CTX,
            6,
        ),
        ("Leo has a peanut allergy", "Leo has a peanut allergy", F, 9),
        ("Bob is vegetarian", "Bob is vegetarian", F, 8),
        ("Mia doesn't eat pork", "Mia doesn't eat pork", F, 7),
    ],
)
async def test_statements_about_someone_named_are_the_circle_s_in_a_group(
    text: str, content: str, category: Category, importance: int
) -> None:
    """Said in the group, "Sam is allergic to shellfish" is everyone's there (any member,
    Sam included, may correct it); said in a DM it is the speaker's."""
    assert summary(await extract(text)) == [(content, category, importance, "circle")]
    assert summary(await extract(text, ThreadKind.DM)) == [
        (content, category, importance, "speaker")
    ]


async def test_fact_carries_speaker_and_source() -> None:
    facts = await extract([line("I love tea", who=BOB, message_id="m42")])
    assert len(facts) == 1
    fact = facts[0]
    assert (fact.content, fact.speaker_id, fact.source_message_ids) == (
        "Bob loves tea",
        BOB.id,
        ["m42"],
    )
    assert fact.ambiguous_reference is None


async def test_speaker_name_on_the_line_wins() -> None:
    journal = [
        JournalLine(
            message_id="m1", role=Role.USER, speaker_id="u9", speaker_name="Zoe", text="I love tea"
        )
    ]
    assert [f.content for f in await extract(journal)] == ["Zoe loves tea"]


async def test_dm_speaker_defaults_to_the_thread_owner() -> None:
    facts = await extract([line("I love tea", who=None)], ThreadKind.DM)
    assert [(f.content, f.speaker_id) for f in facts] == [("Alice loves tea", ALICE.id)]


async def test_unknown_speaker_in_a_group_gives_nothing() -> None:
    assert await extract([line("I love tea", who=None)]) == []
    stranger = Person(id="u-zed", name="Zed")
    assert await extract([line("I love tea", who=stranger)]) == []


async def test_same_words_from_two_speakers_stay_two_facts() -> None:
    facts = await extract(
        [
            line("remember that Bob hates cilantro", who=ALICE, message_id="m1"),
            line("remember that Bob hates cilantro", who=BOB, message_id="m2"),
        ]
    )
    assert [(f.content, f.speaker_id) for f in facts] == [
        ("Bob hates cilantro", ALICE.id),
        ("Bob hates cilantro", BOB.id),
    ]


async def test_several_clauses_give_several_facts() -> None:
    facts = await extract("Oh and I really love hiking because it's calm, but I hate running 😅")
    assert [f.content for f in facts] == ["Alice really loves hiking", "Alice hates running"]


async def test_an_introduction_is_not_a_fact_about_the_speaker_being_themselves() -> None:
    """ "I'm Alice, I run the studio" is what Alice does; "remember that I'm Alice",
    said alone, is kept as said, since the person was told it would be."""
    facts = await extract("remember that I'm Alice, and I run the studio")
    assert [f.content for f in facts] == ["Alice runs the studio"]
    facts = await extract("remember that I'm Alice")
    assert [f.content for f in facts] == ["Alice is Alice"]


async def test_a_clause_about_someone_named_is_its_own_fact() -> None:
    facts = await extract("I'm vegetarian, and Bob is allergic to shellfish")
    assert summary(facts) == [
        ("Alice is vegetarian", F, 8, "speaker"),
        ("Bob is allergic to shellfish", F, 9, "circle"),
    ]
    facts = await extract("I love spicy food but Bob can't eat chili")
    assert [f.content for f in facts] == ["Alice loves spicy food", "Bob can't eat chili"]


# --- we / our: circle in a group, speaker in a DM ---------------------------------------------


async def test_our_child_s_schedule_is_the_circle_s_in_a_group_and_the_speaker_s_in_a_dm() -> None:
    said = "Our daughter Mia starts swimming lessons on Tuesdays at 5pm."
    assert summary(await extract(said, ThreadKind.GROUP)) == [
        (
            "Alice and Bob's daughter Mia starts swimming lessons on Tuesdays at 5pm",
            CTX,
            5,
            "circle",
        )
    ]
    assert summary(await extract(said, ThreadKind.DM)) == [
        ("Alice's daughter Mia starts swimming lessons on Tuesdays at 5pm", CTX, 5, "speaker")
    ]


@pytest.mark.parametrize(
    ("text", "group", "dm", "category", "importance"),
    [
        (
            "We love hiking",
            "Alice and Bob love hiking",
            "Alice and others love hiking",
            F,
            6,
        ),
        (
            "our anniversary is on 12 June",
            "Alice and Bob's anniversary is on 12 June",
            "Alice's anniversary is on 12 June",
            F,
            8,
        ),
        (
            "We're planning a trip to Rome in May",
            "Alice and Bob are planning a trip to Rome in May",
            "Alice and others are planning a trip to Rome in May",
            CTX,
            5,
        ),
        (
            "we live in Leeds",
            "Alice and Bob live in Leeds",
            "Alice and others live in Leeds",
            F,
            6,
        ),
        (
            "Our daughter Emma starts school in September",
            "Alice and Bob's daughter Emma starts school in September",
            "Alice's daughter Emma starts school in September",
            CTX,
            5,
        ),
        (
            "We got married on 3 May 2015",
            "Alice and Bob got married on 3 May 2015",
            "Alice and others got married on 3 May 2015",
            F,
            8,
        ),
    ],
)
async def test_we_is_the_circle_only_in_a_group(
    text: str, group: str, dm: str, category: Category, importance: int
) -> None:
    assert summary(await extract(text, ThreadKind.GROUP)) == [
        (group, category, importance, "circle")
    ]
    assert summary(await extract(text, ThreadKind.DM)) == [(dm, category, importance, "speaker")]


async def test_my_in_a_group_is_the_speaker_even_with_our_in_it() -> None:
    facts = await extract("I love our garden")
    assert summary(facts) == [("Alice loves Alice and Bob's garden", F, 6, "speaker")]


async def test_large_groups_are_named_as_members() -> None:
    people = [Person(id=f"u{i}", name=f"P{i}") for i in range(6)]
    ctx = ExtractFactsContext(
        thread_kind=ThreadKind.GROUP,
        people=people,
        now=NOW,
        lines=[
            JournalLine(
                message_id="m1", role=Role.USER, speaker_id="u0", text="We love board games"
            )
        ],
    )
    facts = (extract_facts(ctx)).facts
    assert [(f.content, f.about) for f in facts] == [
        ("The group members love board games", "circle")
    ]


# --- explicit remember and corrections -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content", "category", "importance"),
    [
        ("remember that I'm allergic to peanuts", "Alice is allergic to peanuts", F, 9),
        ("@alfred remember that I love tea", "Alice loves tea", F, 7),
        ("Remember: Bob hates cilantro", "Bob hates cilantro", F, 7),
        ("don't forget that my sister's name is Jane", "Alice's sister's name is Jane", REL, 7),
        (
            "keep in mind the plumber comes next Tuesday",
            "The plumber comes next Tuesday (said on Monday, March 3)",
            CTX,
            7,
        ),
        ("make a note that my wifi is slow", "Alice's wifi is slow", F, 7),
        ("note that my mom's birthday is May 5", "Alice's mom's birthday is May 5", F, 8),
        ("Actually, I'm not vegetarian anymore", "Alice is not vegetarian anymore", F, 7),
        ("I used to live in Paris but now I live in Berlin", "Alice lives in Berlin", F, 7),
        ("That's not right, my mom's name is Sarah", "Alice's mom's name is Sarah", REL, 7),
        ("My mom's name is Sarah, not Susan", "Alice's mom's name is Sarah", REL, 7),
        ("I no longer work at Acme", "Alice no longer works at Acme", F, 7),
    ],
)
async def test_explicit_and_corrected_statements(
    text: str, content: str, category: Category, importance: int
) -> None:
    assert summary(await extract(text, ThreadKind.DM)) == [
        (content, category, importance, "speaker")
    ]


async def test_explicit_payload_is_clipped_to_thirty_words() -> None:
    payload = " ".join(f"word{i}" for i in range(50))
    facts = await extract(f"remember that Bob said {payload}")
    assert len(facts) == 1
    assert len(facts[0].content.split()) == 30
    assert facts[0].content.endswith("…")


async def test_dedupes_within_a_call_and_merges_sources() -> None:
    facts = await extract(
        [
            line("I love tea", message_id="m1"),
            line("I love tea!", message_id="m2"),
            line("remember that I love tea", message_id="m3"),
        ]
    )
    assert [(f.content, f.importance, f.source_message_ids) for f in facts] == [
        ("Alice loves tea", 7, ["m1", "m2", "m3"])
    ]


async def test_only_user_lines_count() -> None:
    facts = await extract(
        [
            line("I'm allergic to peanuts", who=None, role=Role.AGENT),
            line("I love tea", who=None, role=Role.TOOL, message_id="m2"),
            line("I love coffee", message_id="m3"),
        ]
    )
    assert [f.content for f in facts] == ["Alice loves coffee"]


# --- no false positives, no garbage ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "ok thanks",
        "I love it",
        "I hate that",
        "I love you Alfred",
        "I'm going to bed",
        "I'm off to bed",
        "I'm off to the shops",
        "I'm away",
        "I'll be in touch",
        "I'll be at home",
        "we're going home now",
        "I hate when that happens",
        "I like your idea",
        "I love this song",
        "I work in 5 minutes",
        "I'm from work",
        "I'm so tired",
        "I have a question",
        "my phone is dead",
        "my job is killing me",
        "my kids are driving me crazy",
        "my job is killing me every day",
        "I'm having a bad day",
        "I'm having a bad day tomorrow",
        "we're having a great time",
        "I left the party at 10",  # leaving a place is not putting a thing there
        "I started at 9",  # a time, not a workplace
        "He is allergic to cats",  # whom "he" is, the rules cannot tell
        "I'm meeting you",
        "Bob has a cold",
        "This has everything on Monday",
        "I'm starting to think",
        "The soup is vegan",
        "Everyone is vegetarian",
        "I joined the call",
        "I started the dishwasher",
        "I'm starting a new job",  # a plan says when
        "I put the kids to bed",
        "I parked",
        "I put my foot down",
        "I'm having a party",  # no day: a plan says when
        "I think I like tea",
        "If I were rich I'd love a boat",
        "Maybe I'm allergic to cats",
        "Is Bob allergic to nuts?",
        "Do you like jazz?",
        "Is Bob allergic to nuts, do you know?",  # a question first, whatever follows
        "do you like jazz, or what?",
        "I'm not allergic to anything",
        "I used to live in Paris",
        "my birthday is coming up",
        "forget that I'm allergic to peanuts",
        "what do you remember about me?",
        "always keep your answers short",
        "Je suis allergique aux arachides",
        "Me gusta el café",
        "Мне нравится чай",
        "我对花生过敏",
        "🙂🙂🙂",
        "",
        "   ",
        "\x00\x07",
        "asdf qwer zxcv",
        "remember that 🙂",
        "remember that Мне нравится чай",
    ],
)
async def test_nothing_worth_a_fact(text: str) -> None:
    for kind in (ThreadKind.GROUP, ThreadKind.DM):
        assert await extract(text, kind) == []


@pytest.mark.parametrize(
    "text",
    [
        "I love tea. " * 9000,
        "x" * 100_000,
        "🙂" * 60_000,
        "я люблю чай " * 9000,
        "I'm allergic to " * 7000,
        "my sister's name is " * 5000,
    ],
)
async def test_huge_inputs_do_not_crash(text: str) -> None:
    facts = await extract(text)
    for fact in facts:
        assert len(fact.content.split()) <= 30
    assert len({f.content for f in facts}) == len(facts)


async def test_every_fact_is_at_most_thirty_words() -> None:
    long_object = " ".join(["very"] * 40)
    assert await extract(f"I love {long_object} spicy food") == []


# --- ambiguity in groups --------------------------------------------------------------------------


async def test_bare_kinship_in_a_group_is_flagged_on_the_fact() -> None:
    facts = await extract("remember that Mom is allergic to penicillin", ThreadKind.GROUP)
    assert [(f.content, f.ambiguous_reference) for f in facts] == [
        ("Mom is allergic to penicillin", "Mom")
    ]
    facts = await extract("remember that Mom is allergic to penicillin", ThreadKind.DM)
    assert [f.ambiguous_reference for f in facts] == [None]


async def test_my_mom_is_not_ambiguous() -> None:
    facts = await extract("my mom's name is Sarah", ThreadKind.GROUP)
    assert [(f.content, f.ambiguous_reference) for f in facts] == [
        ("Alice's mom's name is Sarah", None)
    ]


async def test_the_event_said_in_a_group_is_the_circle_s_and_in_a_dm_the_speaker_s() -> None:
    """ "the client review …" in a team's group is the team's, so any member may correct
    it; "my dentist appointment" stays the speaker's; in a DM everything is the speaker's."""
    group = await extract("The client review is on Thursday at 3pm")
    assert [(f.content, f.about) for f in group] == [
        ("The client review is on Thursday, March 6 at 3pm", "circle")
    ]
    mine = await extract("my dentist appointment is on Friday at 9")
    assert [f.about for f in mine] == ["speaker"]
    dm = await extract("The client review is on Thursday at 3pm", ThreadKind.DM)
    assert [f.about for f in dm] == ["speaker"]
