"""Honest replies: Alfred claims to have stored something only when it did, the erase
prompt is settled by its asker's next message only, instructions are said back, used,
withdrawn and forgotten, and "what do you remember about us/me?" lists what is there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import (
    current_facts,
    dumps,
    probe,
    probes,
    replay_lines,
    replies,
    reply_texts,
    say,
)

STORING_CLAIMS = ("noted", "keep it in mind", "i'll remember", "remembered", "saved")
#: The background forms what was said, then a day passes and it runs again.
FORMATION_THEN_A_DAY: list[dict[str, Any]] = [
    {"clock": "+20m"},
    {"jobs": "drain"},
    {"clock": "+1d"},
    {"jobs": "drain"},
]


async def test_acknowledgements_and_chatter_claim_nothing_was_stored(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "okay, thank you!"),
            say("nora", "dm:nora", "great"),
            say("nora", "dm:nora", "got it"),
            say("nora", "dm:nora", "I might repaint the hallway at some point"),
            say("nora", "dm:nora", "which bakery did the neighbours recommend?"),
            say("omar", "group:home", "@alfred sounds good"),
            {"dump": "all"},
        ],
        tmp_path / "a",
    )
    texts = reply_texts(out)
    assert len(texts) == 6, texts
    for text in texts:
        assert not any(claim in text.lower() for claim in STORING_CLAIMS), text
    assert dumps(out)[-1]["facts"] == [], "nothing was stored, and nothing was claimed"


async def test_remember_still_says_it_stored(settings: Settings, tmp_path: Path) -> None:
    """The other side of honesty: when something is stored, the reply says so."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that the boiler service is in March"),
            {"dump": "all"},
        ],
        tmp_path / "b",
    )
    assert "remember" in reply_texts(out)[0].lower()
    assert any("boiler" in c for c in current_facts(dumps(out)[-1]))


async def test_the_erase_prompt_takes_a_natural_yes_from_the_asker(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that my locker code is 2291"),
            say("omar", "dm:omar", "remember that I run on Thursdays"),
            say("nora", "dm:nora", "please forget everything you know about me"),
            {"clock": "+2m"},
            say("nora", "dm:nora", "Sure, go ahead"),
            say("omar", "dm:omar", "delete all my data"),
            say("omar", "dm:omar", "do it"),
            {"dump": "all"},
        ],
        tmp_path / "c",
    )
    texts = reply_texts(out)
    assert texts[3].startswith("Done — I've erased everything"), texts[3]
    assert texts[5].startswith("Done — I've erased everything"), texts[5]
    assert current_facts(dumps(out)[-1]) == []


async def test_the_erase_prompt_is_not_settled_by_someone_else_or_a_late_yes(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "group:home", "@alfred remember that I keep the tent in the attic"),
            say("nora", "group:home", "@alfred forget everything about me"),
            say("omar", "group:home", "@alfred yes please"),  # not Omar's to confirm
            {"clock": "+6m"},
            say("nora", "group:home", "@alfred yes please"),  # too late
            say("nora", "group:home", "@alfred forget everything about me"),
            say("nora", "group:home", "hmm, let me think about it"),  # not a yes
            say("nora", "group:home", "@alfred yes"),  # the question is gone
            {"dump": "all"},
        ],
        tmp_path / "d",
    )
    texts = [(r["to"], r["text"]) for r in replies(out)]
    assert not any("erased" in t for _, t in texts), texts
    late = texts[3]
    assert late[0] == "nora" and "lapsed" in late[1] and "didn't erase" in late[1], late
    cancelled = texts[5]
    assert cancelled[0] == "nora" and "cancelled the erase" in cancelled[1], cancelled
    assert any("tent" in c for c in current_facts(dumps(out)[-1]))


async def test_an_addressed_non_answer_cancels_the_erase_and_is_answered(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that my locker code is 2291"),
            say("nora", "dm:nora", "forget everything about me"),
            say("nora", "dm:nora", "what is my locker code?"),
        ],
        tmp_path / "e",
    )
    answer = reply_texts(out)[2]
    assert answer.startswith("OK — I've cancelled the erase: nothing was deleted."), answer
    assert "2291" in answer


async def test_an_instruction_is_said_back_used_by_recall_and_withdrawn(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "going forward, call me Captain"),
            say("nora", "dm:nora", "what is my name?"),
            say("nora", "dm:nora", "never mention my old job"),
            say("nora", "dm:nora", "what do you remember about me?"),
            say("nora", "dm:nora", "don't call me Captain anymore"),
            say("nora", "dm:nora", "what do you remember about me?"),
            {"dump": "all"},
        ],
        tmp_path / "f",
    )
    texts = reply_texts(out)
    assert "I'll call you Captain" in texts[0], texts[0]
    assert "Captain" in texts[1], texts[1]
    assert "I won't mention your old job" in texts[2], texts[2]
    assert "Captain" in texts[3] and "never mention my old job" in texts[3], texts[3]
    assert "won't call you Captain" in texts[4], texts[4]
    assert "Captain" not in texts[5] and "old job" in texts[5], texts[5]
    dump = dumps(out)[-1]
    assert not [c for c in current_facts(dump) if "Captain" in c], current_facts(dump)
    notes = [r["content"] for r in dump["reflections"]]
    assert not [n for n in notes if "Captain" in n], notes


async def test_a_new_preferred_name_replaces_the_old_one(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "please call me Nor"),
            say("nora", "dm:nora", "actually, call me Nono"),
            {"dump": "all"},
        ],
        tmp_path / "g",
    )
    current = current_facts(dumps(out)[-1])
    assert [c for c in current if "preferred name" in c] == ["Nora's preferred name is Nono"]


async def test_an_avoidance_can_be_withdrawn_and_another_forgotten(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("omar", "group:home", "@alfred don't use bullet points"),
            say("omar", "group:home", "@alfred no jokes please"),
            say("nora", "group:home", "@alfred you can use bullet points again"),  # not hers
            say("omar", "dm:omar", "feel free to use bullet points again"),
            say("omar", "group:home", "@alfred forget that I don't want jokes"),
            {"dump": "all"},
        ],
        tmp_path / "h",
    )
    texts = reply_texts(out)
    assert "I won't use bullet points" in texts[0], texts[0]
    assert "nothing changes" in texts[2], texts[2]
    assert "dropped your instruction" in texts[3] and "bullet points" in texts[3], texts[3]
    assert "forgotten your instruction" in texts[4] and "jokes" in texts[4], texts[4]
    dump = dumps(out)[-1]
    assert [r for r in dump["reflections"] if r.get("directive")] == []
    said = [m["text"] for m in dump["messages"]]
    assert not [m for m in said if "no jokes" in m], said


async def test_about_us_in_the_group_covers_members_and_never_a_dm(
    settings: Settings, tmp_path: Path
) -> None:
    """The leak test: Alice's DM memory never reaches the group's "about us", while her
    and Bob's group memories and the circle's do."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["alice", "bob"]},
            say("alice", "dm:alice", "remember that I'm saving for a pottery wheel"),
            say("alice", "dm:alice", "never mention my sister's wedding"),
            say("alice", "group:home", "@alfred remember that I water the ferns"),
            say("bob", "group:home", "@alfred remember that I fix the bikes"),
            say("bob", "group:home", "@alfred remember that we recycle on Tuesdays"),
            say("bob", "group:home", "@alfred what do you remember about us?"),
            say("alice", "dm:alice", "what do you remember about us?"),
        ],
        tmp_path / "i",
    )
    group, dm = reply_texts(out)[-2:]
    assert "ferns" in group and "bikes" in group and "recycle" in group, group
    assert "pottery" not in group and "wedding" not in group, group
    assert "pottery" not in dm and "wedding" not in dm and "bikes" not in dm, dm
    assert "recycle" in dm and "ferns" in dm, dm


async def test_about_me_says_when_there_is_more_than_it_lists(
    settings: Settings, tmp_path: Path
) -> None:
    lines: list[Any] = [{"circle": "home", "members": ["nora", "omar"]}]
    lines += [
        say("nora", "dm:nora", f"remember that my locker number {n} is on floor {n + 40}")
        for n in range(33)
    ]
    lines += [say("nora", "dm:nora", "what do you remember about me?")]
    out = await replay_lines(settings, lines, tmp_path / "j")
    recall = reply_texts(out)[-1]
    assert "…and 3 more I haven't listed" in recall, recall


async def test_notes_are_recalled_and_a_learned_instruction_can_be_withdrawn(
    settings: Settings, tmp_path: Path
) -> None:
    """An instruction said in the group without addressing Alfred is learned in the
    background as a note: "about me" lists it, "about us" lists the circle's notes, and
    the person can withdraw it like one given to Alfred directly."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "group:home", "please keep your replies brief"),
            say("omar", "group:home", "we're planning a barbecue at the allotment for Sunday"),
            say("nora", "group:home", "the forecast says sunshine"),
            say("omar", "group:home", "I'll get the charcoal tomorrow"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            say("nora", "group:home", "@alfred what do you remember about me?"),
            say("omar", "group:home", "@alfred what do you remember about us?"),
            say("nora", "group:home", "@alfred no need to keep your replies brief anymore"),
            say("nora", "group:home", "@alfred what do you remember about me?"),
        ],
        tmp_path / "k",
    )
    about_me, about_us, withdrawn, after = reply_texts(out)[-4:]
    assert "brief" in about_me, about_me
    assert "Notes:" in about_us and "barbecue" in about_us, about_us
    assert "dropped your instruction" in withdrawn, withdrawn
    assert "brief" not in after, after


async def test_forgetting_someones_thing_by_name_holds_across_formation_and_days(
    settings: Settings, tmp_path: Path
) -> None:
    """A request like "forget Eve's birthday" (a possessive, no "that" or "about") is a forget: the
    "Done" is true after the background has run and a day has passed, the other memory
    of Eve stays, and the request itself is not kept to be recalled."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that my sister Eve's birthday is on March 3"),
            say("nora", "dm:nora", "remember that Eve likes green tea"),
            say("nora", "dm:nora", "forget Eve's birthday"),
            *FORMATION_THEN_A_DAY,
            say("nora", "dm:nora", "When is Eve's birthday?"),
            say("nora", "dm:nora", "What does Eve like?"),
            {"dump": "all"},
        ],
        tmp_path / "f",
    )
    texts = reply_texts(out)
    assert texts[2].startswith("Done"), texts[2]
    birthday, likes = texts[3:5]
    assert "March" not in birthday, birthday
    assert "green tea" in likes and "March" not in likes, likes
    current = current_facts(dumps(out)[-1])
    assert not any("March" in c for c in current), current
    assert any("green tea" in c for c in current), current
    said = [m.get("text", "") for m in dumps(out)[-1].get("messages", [])]
    assert said and not any("forget Eve" in t for t in said), said


async def test_a_bare_remember_that_keeps_what_was_said_before_it_and_nothing_else(
    settings: Settings, tmp_path: Path
) -> None:
    """ "remember that" on its own keeps the person's message before it, as "forget that"
    forgets it: the "Got it" is true after formation and a day, the statement is marked
    handled (formation does not learn it a second time), a DM statement stays the
    person's own and a group one is the circle's. With only a question or nothing
    before it, Alfred asks what to keep and stores nothing."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that"),
            say("nora", "dm:nora", "is the gym open on Sunday?"),
            say("nora", "dm:nora", "remember that"),
            say("nora", "dm:nora", "My locker code is 4411"),
            say("nora", "dm:nora", "remember that"),
            say("omar", "group:home", "The wifi password is bluefrog22"),
            say("omar", "group:home", "@alfred keep that in mind"),
            *FORMATION_THEN_A_DAY,
            say("nora", "dm:nora", "what's my locker code?"),
            say("nora", "group:home", "@alfred what's the wifi password?"),
            say("omar", "group:home", "@alfred what's Nora's locker code?"),
            say("omar", "dm:omar", "what's the locker code?"),
            {"dump": "all"},
        ],
        tmp_path / "r",
    )
    texts = reply_texts(out)
    assert texts[0].startswith("What should I remember?"), texts[0]
    assert texts[2].startswith("What should I remember?"), texts[2]
    assert "remember" in texts[4].lower(), texts[4]
    assert "remember" in texts[5].lower(), texts[5]
    mine, wifi, omar_group, omar_dm = texts[-4:]
    assert "4411" in mine, mine
    assert "bluefrog22" in wifi, wifi
    assert "4411" not in omar_group and "4411" not in omar_dm, (omar_group, omar_dm)
    dump = dumps(out)[-1]
    facts = [f for f in dump["facts"] if f["invalid_at"] is None]
    locker = [f for f in facts if "4411" in f["content"]]
    wifi_facts = [f for f in facts if "bluefrog22" in f["content"]]
    assert len(locker) == 1 and locker[0]["visibility"] == "dm", locker
    assert len(wifi_facts) == 1 and wifi_facts[0]["visibility"] == "shared"
    assert not any("gym" in f["content"] for f in facts), facts
    said = {m["text"]: m for m in dump["messages"]}
    assert said["My locker code is 4411"]["handled"] is True
    assert said["The wifi password is bluefrog22"]["handled"] is True


async def test_a_bare_remember_that_after_an_answered_question_keeps_nothing_more(
    settings: Settings, tmp_path: Path
) -> None:
    """The answer to "whose do you mean?" was acted on already (the memory it completed
    is stored, the answer is handled): a bare "remember that" after it asks what to keep
    rather than storing the answer's words as a memory of their own."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "group:home", "@alfred remember that Grandpa collects stamps"),
            say("nora", "group:home", "@alfred Omar's grandpa Olav"),
            say("nora", "group:home", "@alfred remember that"),
            *FORMATION_THEN_A_DAY,
            {"dump": "all"},
        ],
        tmp_path / "r",
    )
    asked, answered, bare = reply_texts(out)[:3]
    assert "whose do you mean" in asked, asked
    assert answered.startswith("Got it"), answered
    assert bare.startswith("What should I remember?"), bare
    current = current_facts(dumps(out)[-1])
    # the answer completed the memory it was asked for, and is no memory of its own
    assert [c for c in current if "Olav" in c] == ["Omar's grandpa Olav collects stamps"], current


async def test_a_forget_it_could_not_read_says_how_and_is_never_recalled(
    settings: Settings, tmp_path: Path
) -> None:
    """ "forget Hana" (a bare name: it may as well be a change of plan) is not acted on:
    Alfred says how to ask instead of "I can't chat", the memory stays, and the request
    is never offered back as a memory, before formation or after it and a day. Asked the
    way it says, Alfred forgets, and that holds too."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that Hana is allergic to peanuts"),
            say("nora", "dm:nora", "forget Hana"),
            say("nora", "dm:nora", "What is Hana allergic to?"),
            *FORMATION_THEN_A_DAY,
            say("nora", "dm:nora", "What is Hana allergic to?"),
            say("nora", "dm:nora", "forget about Hana"),
            *FORMATION_THEN_A_DAY,
            say("nora", "dm:nora", "What is Hana allergic to?"),
            {"dump": "all"},
        ],
        tmp_path / "h",
    )
    texts = reply_texts(out)
    assert len(texts) == 6, texts
    assert '"forget about' in texts[1] and "can't chat" not in texts[1], texts[1]
    for answer in texts[2:4]:
        assert "peanuts" in answer and "forget Hana" not in answer, answer
    assert texts[4].startswith("Done"), texts[4]
    assert "peanuts" not in texts[5] and "forget" not in texts[5], texts[5]
    dump = dumps(out)[-1]
    assert not any("Hana" in c for c in current_facts(dump)), current_facts(dump)


async def test_forget_that_after_a_remember_forgets_what_it_stored(
    settings: Settings, tmp_path: Path
) -> None:
    """ "forget that" right after a request to remember means what the request stored:
    the words after "remember that", or, after a bare "remember that", the statement it
    kept. After a bare "remember that" that kept nothing, or after another "forget that",
    it names nothing and Alfred asks. Each "Done" holds across formation and a day, and
    nothing else is deleted on the way."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("nora", "dm:nora", "remember that the gate code is 4412"),
            say("nora", "dm:nora", "forget that"),
            say("nora", "dm:nora", "the boiler was serviced in March"),
            say("nora", "dm:nora", "remember that"),
            say("nora", "dm:nora", "forget that"),
            say("nora", "dm:nora", "forget that"),
            say("nora", "dm:nora", "remember that my locker is number 12"),
            say("nora", "dm:nora", "remember that"),
            say("nora", "dm:nora", "forget that"),
            *FORMATION_THEN_A_DAY,
            say("nora", "dm:nora", "what's the gate code?"),
            say("nora", "dm:nora", "when was the boiler serviced?"),
            say("nora", "dm:nora", "which locker is mine?"),
            {"dump": "all"},
        ],
        tmp_path / "r",
    )
    texts = reply_texts(out)
    assert len(texts) == 12, texts
    assert texts[1].startswith("Done") and texts[4].startswith("Done"), texts
    assert texts[5].startswith("What should I forget?"), texts[5]
    assert texts[7].startswith("What should I remember?"), texts[7]
    assert texts[8].startswith("What should I forget?"), texts[8]
    gate, boiler, locker = texts[9:]
    assert "4412" not in gate and "March" not in boiler, (gate, boiler)
    assert "number 12" in locker, locker
    dump = dumps(out)[-1]
    assert current_facts(dump) == ["Nora's locker is number 12"], current_facts(dump)
    said = [m.get("text", "") for m in dump["messages"]]
    assert "remember that my locker is number 12" in said, said
    assert not any("4412" in t or "boiler was" in t for t in said), said


async def test_a_schedule_said_in_passing_is_answered_the_next_day_only_where_it_was_said(
    settings: Settings, tmp_path: Path
) -> None:
    """Offline, "our daughter starts swimming on Tuesdays at 5pm" becomes a memory of the
    circle once formed (it used to stay in the session's note, gone the next day), and it
    answers a day later in that group, and in no other circle, while a schedule said in a
    DM answers in that DM alone."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            {"circle": "club", "members": ["omar", "pia"]},
            say(
                "nora", "group:home", "Our daughter Mia starts swimming lessons on Tuesdays at 5pm."
            ),
            say("nora", "dm:nora", "My son Leo starts ballet on Fridays at 4pm"),
            *FORMATION_THEN_A_DAY,
            say("omar", "group:home", "@alfred when are Mia's swimming lessons?"),
            say("pia", "group:club", "@alfred when are Mia's swimming lessons?"),
            say("omar", "group:home", "@alfred when does Leo have ballet?"),
            say("omar", "dm:omar", "when does Leo have ballet?"),
            say("nora", "dm:nora", "when does Leo have ballet?"),
        ],
        tmp_path / "s",
    )
    answers = [(r["in"], r["to"], r["text"]) for r in replies(out)][1:]  # after "can't chat"
    assert [(where, to) for where, to, _ in answers] == [
        ("group:home", "omar"),
        ("group:club", "pia"),
        ("group:home", "omar"),
        ("dm:omar", "omar"),
        ("dm:nora", "nora"),
    ], answers
    home, club, home_ballet, omar_dm, nora_dm = (text for _, _, text in answers)
    assert "Tuesdays at 5pm" in home, home
    # Nora's DM reaches neither her circle's group, nor another circle, nor Omar's DM
    for text in (club, home_ballet, omar_dm):
        assert "4pm" not in text and "Fridays" not in text, text
    assert "Mia" not in club and "5pm" not in club, club  # the home circle's, not the club's
    assert "Fridays at 4pm" in nora_dm, nora_dm


async def test_a_coming_day_is_still_the_right_day_a_week_later(
    settings: Settings, tmp_path: Path
) -> None:
    """ "On Friday", said on Monday 5 January, is kept as Friday 9 January: a week later
    the memory still names that day, not the Friday after it, and stays in the DM."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say(
                "nora", "dm:nora", "remember that I'm planning a surprise party for Omar on Friday"
            ),
            {"clock": "+7d"},
            {"jobs": "drain"},
            probe("nora", "dm:nora", "what am I planning for Omar?"),
            probe("omar", "group:home", "what is Nora planning?"),
        ],
        tmp_path / "w",
    )
    assert "remember" in reply_texts(out)[0].lower()
    nora, omar = probes(out)
    assert [m["content"] for m in nora["memories"]] == [
        "Nora is planning a surprise party for Omar on Friday, January 9"
    ]
    assert omar["memories"] == [] and "surprise" not in omar["context"].lower()


async def test_a_coming_day_is_counted_from_when_it_was_said_not_when_it_was_formed(
    settings: Settings, tmp_path: Path
) -> None:
    """Said on Thursday 8 January and formed in the background on Friday 9 January,
    "on Friday" is that Friday, not the one a week later."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            {"clock": "+3d"},
            say("nora", "dm:nora", "I'm hosting a dinner party on Friday"),
            {"clock": "+1d"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "f",
    )
    assert current_facts(dumps(out)[-1]) == ["Nora is hosting a dinner party on Friday, January 9"]


async def test_a_day_said_relative_is_counted_on_the_speakers_clock(
    settings: Settings, tmp_path: Path
) -> None:
    """At 13:00 UTC on Monday 5 January it is 02:00 on Tuesday in Auckland. Nora set
    Auckland for herself, and the home group set it for the group (so Omar, who set
    none, is on it in the group and in his DM); Pia, in no circle with a zone, is on UTC.
    Their "tomorrow", in background formation and in "remember that …", is the day after
    their own today, as the replies' clock line tells each of them. The group's "we" is
    its members, though Nora did not speak in that batch."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            {"circle": "work", "members": ["pia"]},
            say("nora", "dm:nora", "my time zone is Pacific/Auckland"),
            say("omar", "group:home", "@alfred our time zone is Pacific/Auckland"),
            {"clock": "+4h"},
            say("nora", "dm:nora", "I'm hosting a dinner party tomorrow"),
            say("nora", "dm:nora", "remember that I have a dentist appointment tomorrow"),
            say("omar", "group:home", "We're hosting a barbecue tomorrow"),
            say("omar", "dm:omar", "remember that I have a haircut tomorrow"),
            say("pia", "dm:pia", "I'm hosting a dinner party tomorrow"),
            say("pia", "dm:pia", "remember that I have a dentist appointment tomorrow"),
            {"clock": "+1d"},
            {"jobs": "drain"},
            {"probe": {"as": "nora", "in": "group:home", "query": "what are we doing?"}},
            {"dump": "all"},
        ],
        tmp_path / "f",
    )
    # The group's note, kept in mind for days, names the day too.
    (kept,) = probes(out)
    assert "Nora and Omar are hosting a barbecue on January 7." in kept["context"]
    assert "tomorrow" not in kept["context"]
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Nora and Omar are hosting a barbecue on January 7",
        "Nora has a dentist appointment on January 7",
        "Nora is hosting a dinner party on January 7",
        "Omar has a haircut on January 7",
        "Pia has a dentist appointment on January 6",
        "Pia is hosting a dinner party on January 6",
    ]
