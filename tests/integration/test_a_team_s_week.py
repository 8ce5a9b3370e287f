"""A small team's week on the embedded defaults (offline model): what its members say in
passing is learned by background formation and answered days later where it was said,
and what one member says in a DM reaches neither the group nor anyone else's DM."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import Settings
from tests.helpers.replay import (
    assert_shows_nothing_of,
    current_facts,
    dumps,
    formed_overnight,
    probe,
    probes,
    replay_lines,
    reply_texts,
    say,
)

#: Said on Monday 5 January 2026 (the replay's clock), formed that night.
SAID = [
    {"circle": "studio", "members": ["maya", "leo", "sam"]},
    say("maya", "group:studio", "Hi Alfred! I'm Maya, I run the studio."),
    say("leo", "group:studio", "I'm vegetarian, and Sam is allergic to shellfish"),
    say("sam", "group:studio", "The client review with Northwind is on Thursday at 3pm"),
    say("sam", "dm:sam", "I'm interviewing with another agency next week, keep it quiet"),
    *formed_overnight("+1d"),
]
INTERVIEW = "agency"


async def test_what_a_team_says_in_passing_is_answered_days_later_where_it_was_said(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            *SAID,
            say("maya", "group:studio", "@alfred when is the Northwind review?"),
            say("maya", "group:studio", "@alfred any dietary requirements I should know about?"),
            say("sam", "dm:sam", "when is my interview?"),
            say("leo", "group:studio", "@alfred what do you remember about us?"),
            probe("maya", "group:studio", "is anyone interviewing with another agency?"),
            probe("leo", "dm:leo", "is Sam interviewing with another agency?"),
            probe("maya", "group:studio", "is anyone looking for a new job or a new employer?"),
            probe("sam", "group:studio", "when is my interview with the agency?"),
            {"dump": "all"},
        ],
        tmp_path / "t",
    )
    review, allergy, interview, about_us = reply_texts(out)[-4:]
    assert "Thursday, January 8 at 3pm" in review, review
    # Asked in other words than were said (memory.search.related).
    assert "Sam is allergic to shellfish" in allergy and "Leo is vegetarian" in allergy, allergy
    assert "the week of January 12" in interview, interview
    # Each thing said is its own memory, and the introduction is not "Maya is Maya".
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Leo is vegetarian",
        "Sam is allergic to shellfish",
        "Sam is interviewing with another agency the week of January 12",
        "The client review with Northwind is on Thursday, January 8 at 3pm",
    ]
    notes = [r["content"] for r in dumps(out)[-1]["reflections"]]
    assert any("Maya runs the studio" in n for n in notes), notes
    assert not any("Maya is Maya" in n for n in notes), notes
    for text in (review, allergy, about_us):
        assert INTERVIEW not in text, text
    assert_shows_nothing_of(INTERVIEW, *probes(out))


async def test_a_family_s_week_is_answered_after_it_and_a_dm_surprise_stays_in_the_dm(
    settings: Settings, tmp_path: Path
) -> None:
    """A family says in passing, on Monday 5 January, who is coming and when, a child's
    week and a birthday; after formation and four days each is answered in the group,
    dated. Bob's surprise party for Nora, said in his DM, is in his DM only."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "bob"]},
            say("nora", "group:home", "Grandpa is coming for dinner on Sunday"),
            say("bob", "group:home", "Mia has ballet on Wednesdays at 5"),
            say("nora", "group:home", "Mia's birthday is on June 3"),
            say("bob", "dm:bob", "Nora's surprise party is on Saturday at 7pm"),
            *formed_overnight("+4d"),
            say("bob", "group:home", "@alfred when is Grandpa coming?"),
            say("nora", "group:home", "@alfred when does Mia have ballet?"),
            say("bob", "group:home", "@alfred when is Mia's birthday?"),
            say("bob", "dm:bob", "when is the surprise party?"),
            probe("nora", "group:home", "is there a party on Saturday?"),
            probe("nora", "dm:nora", "any surprise party for me?"),
            probe("bob", "group:home", "when is the surprise party?"),
        ],
        tmp_path / "f",
    )
    grandpa, ballet, birthday, party = reply_texts(out)[-4:]
    assert "Sunday, January 11" in grandpa, grandpa
    assert "Wednesdays at 5" in ballet, ballet
    assert "June 3" in birthday, birthday
    assert "Saturday, January 10 at 7pm" in party, party
    for text in (grandpa, ballet, birthday):
        assert "surprise" not in text.lower(), text
    assert_shows_nothing_of("surprise", *probes(out))


async def test_another_member_moves_the_team_s_event_and_the_move_holds(
    settings: Settings, tmp_path: Path
) -> None:
    """Sam says when the review is; a day later Maya tells Alfred it moved. "The review"
    is the team's (the circle's), so Maya's correction replaces it, as she is told, and
    that holds across formation and a day. Maya's DM aside about it stays in her DM."""
    out = await replay_lines(
        settings,
        [
            {"circle": "studio", "members": ["maya", "sam"]},
            say("sam", "group:studio", "The client review with Northwind is on Thursday at 3pm"),
            {"clock": "+8h"},
            {"jobs": "drain"},
            say(
                "maya",
                "group:studio",
                "@alfred actually the Northwind review moved to Friday at 10",
            ),
            say("maya", "dm:maya", "I'm dreading the Northwind review, their CFO is awful"),
            *formed_overnight("+1d"),
            {"jobs": "drain"},
            say("sam", "group:studio", "@alfred when is the Northwind review?"),
            probe("sam", "group:studio", "Northwind review CFO"),
            probe("sam", "dm:sam", "what does Maya think of the Northwind review?"),
            {"dump": "all"},
        ],
        tmp_path / "m",
    )
    corrected, answer = reply_texts(out)[0], reply_texts(out)[-1]
    assert corrected.startswith("Thanks for the correction"), corrected
    assert "Friday, January 9 at 10" in answer and "Thursday" not in answer, answer
    assert [f for f in current_facts(dumps(out)[-1]) if "Northwind" in f] == [
        "The Northwind review moved to Friday, January 9 at 10"
    ]
    assert_shows_nothing_of("CFO", *probes(out))


async def test_someone_can_correct_what_another_member_said_about_them(
    settings: Settings, tmp_path: Path
) -> None:
    """Leo tells the group Sam is allergic to shellfish; it is the team's memory, so Sam
    can correct it, as he is told, and the correction holds across formation and a day,
    in the group and in Sam's DM. Leo's DM aside about Sam reaches neither."""
    out = await replay_lines(
        settings,
        [
            {"circle": "studio", "members": ["maya", "leo", "sam"]},
            say("leo", "group:studio", "I'm vegetarian, and Sam is allergic to shellfish"),
            say("leo", "dm:leo", "Sam is allergic to Mondays, honestly"),
            {"clock": "+8h"},
            {"jobs": "drain"},
            say("sam", "group:studio", "@alfred actually I'm not allergic to shellfish"),
            *formed_overnight("+1d"),
            {"jobs": "drain"},
            say("maya", "group:studio", "@alfred any allergies in the team?"),
            say("sam", "dm:sam", "what allergies do I have?"),
            probe("sam", "dm:sam", "Sam allergic Mondays"),
            probe("maya", "group:studio", "is Sam allergic to Mondays?"),
            {"dump": "all"},
        ],
        tmp_path / "a",
    )
    corrected, in_group, in_dm = reply_texts(out)[-3:]
    assert corrected.startswith("Thanks for the correction"), corrected
    for answer in (in_group, in_dm):
        assert "Sam is not allergic to shellfish" in answer, answer
        assert "Sam is allergic to shellfish" not in answer, answer
    assert "Sam is allergic to shellfish" not in current_facts(dumps(out)[-1])
    assert_shows_nothing_of("Mondays", *probes(out))


async def test_a_move_said_in_passing_replaces_the_time_and_a_dm_moves_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    """Sam says when the review is. The next day Maya mentions in passing, not to
    Alfred, that it moved, and Leo that the dentist appointment got pushed back; Leo also
    tells Alfred in his DM that the review moved to Monday. After formation and a day the
    group is told only the new times, dated. Leo's DM is his own memory: it does not move
    the team's review, and nobody else is shown it."""
    out = await replay_lines(
        settings,
        [
            {"circle": "studio", "members": ["maya", "leo", "sam"]},
            say("sam", "group:studio", "The client review with Northwind is on Thursday at 3pm"),
            say("leo", "group:studio", "Dentist appointment is on Monday at 9"),
            *formed_overnight("+1h"),
            say("maya", "group:studio", "The Northwind review was moved to Friday at 10"),
            say(
                "leo",
                "group:studio",
                "the dentist appointment got pushed back to Wednesday evening",
            ),
            say("leo", "dm:leo", "The Northwind review was moved to Monday, keep it quiet"),
            *formed_overnight("+1d"),
            say("sam", "group:studio", "@alfred when is the Northwind review?"),
            say("maya", "group:studio", "@alfred when is the dentist appointment?"),
            probe("sam", "group:studio", "is the Northwind review on Monday?"),
            probe("maya", "dm:maya", "when is the Northwind review?"),
            probe("sam", "dm:sam", "Northwind review Monday"),
            {"dump": "all"},
        ],
        tmp_path / "p",
    )
    review, dentist = reply_texts(out)[-2:]
    assert "Friday, January 9 at 10" in review, review
    assert "Thursday" not in review and "Monday" not in review, review
    assert "the evening of Wednesday, January 7" in dentist, dentist
    assert "Monday" not in dentist, dentist
    assert sorted(f for f in current_facts(dumps(out)[-1]) if "review" in f) == [
        "The Northwind review was moved to Friday, January 9 at 10",
        "The Northwind review was moved to Monday, January 12",
    ]
    assert_shows_nothing_of("January 12", *probes(out))


async def test_what_is_called_off_or_moved_is_answered_as_it_is_now_without_a_question(
    settings: Settings, tmp_path: Path
) -> None:
    """A family plans its week on Monday; the next day, in passing, the plumber cancels,
    dinner with the Smiths is off and Jake's practice moves to Thursdays. After formation
    and a day the group is told how things are now, and nobody is asked "has that
    changed?" about news they gave. Nora's DM that the dentist is off is hers: it changes
    nothing the group sees."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "bob"]},
            say("nora", "group:home", "The plumber is coming Thursday at 10"),
            say("bob", "group:home", "Dinner with the Smiths is on Saturday at 7"),
            say("bob", "group:home", "Jake's football practice is on Tuesdays at 5"),
            say("nora", "group:home", "The dentist appointment is on Friday at 9"),
            *formed_overnight("+1h"),
            say("nora", "group:home", "The plumber cancelled"),
            say("bob", "group:home", "dinner with the Smiths is off, they're sick"),
            say("bob", "group:home", "Jake's football practice moved to Thursdays"),
            say("nora", "dm:nora", "the dentist appointment is cancelled, I'll tell Bob myself"),
            *formed_overnight("+1h"),
            say("bob", "group:home", "@alfred when is the plumber coming?"),
            say("nora", "group:home", "@alfred when is dinner with the Smiths?"),
            say("nora", "group:home", "@alfred when is Jake's football practice?"),
            say("bob", "group:home", "@alfred when is the dentist appointment?"),
            probe("bob", "dm:bob", "is the dentist appointment cancelled?"),
            {"dump": "all"},
        ],
        tmp_path / "c",
    )
    plumber, dinner, practice, dentist = reply_texts(out)[-4:]
    assert "The plumber cancelled" in plumber and "Thursday" not in plumber, plumber
    assert "off" in dinner and "Saturday" not in dinner, dinner
    assert "Thursdays" in practice and "Tuesdays" not in practice, practice
    assert "Friday, January 9 at 9" in dentist and "cancelled" not in dentist, dentist
    assert not [t for t in reply_texts(out) if "has that changed" in t]
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Dinner with the Smiths is off, they're sick",
        "Jake's football practice moved to Thursdays",
        "The dentist appointment is cancelled, Nora will tell Bob themselves",
        "The dentist appointment is on Friday, January 9 at 9",
        "The plumber cancelled",
    ]
    assert_shows_nothing_of("tell Bob", *probes(out))


async def test_a_couple_s_week_answers_who_is_away_and_nothing_by_a_name_alone(
    settings: Settings, tmp_path: Path
) -> None:
    """A couple says in passing who is away when and whose surgery is when; after
    formation and a day each is answered, dated, and a question that nothing answers gets
    "I don't know" rather than their anniversary dinner, which shares only a name. Ava's
    DM about Tom's present stays in her DM."""
    out = await replay_lines(
        settings,
        [
            {"circle": "us", "members": ["ava", "tom"]},
            say("ava", "group:us", "Our anniversary dinner is at Rosa's on Friday at 8pm"),
            say("tom", "group:us", "I'm off to Berlin for work from Tuesday to Thursday"),
            say("ava", "group:us", "My mum's surgery is on the 14th"),
            say("ava", "dm:ava", "I'm getting Tom a watch for our anniversary, don't tell him"),
            *formed_overnight("+1d"),
            say("ava", "group:us", "@alfred when is Tom in Berlin?"),
            say("tom", "group:us", "@alfred when is Ava's mum's surgery?"),
            say("tom", "group:us", "@alfred when is Ava at the gym?"),
            say("tom", "group:us", "@alfred what is Ava getting me for our anniversary?"),
            probe("tom", "group:us", "is Ava getting Tom a watch?"),
            probe("tom", "dm:tom", "what present is Ava getting me?"),
        ],
        tmp_path / "u",
    )
    berlin, surgery, gym, present = reply_texts(out)[-4:]
    assert "Tuesday, January 6 to Thursday, January 8" in berlin, berlin
    assert "Ava's mum's surgery is on the 14th" in surgery, surgery
    assert gym.startswith("I don't know"), gym
    for text in (berlin, surgery, gym, present):
        assert "watch" not in text, text
    assert_shows_nothing_of("watch", *probes(out))


async def test_a_move_to_another_hour_keeps_the_day_across_formation_and_days(
    settings: Settings, tmp_path: Path
) -> None:
    """The review is on Thursday at 3pm; the next day someone says in passing it was
    pushed back to 4pm. The day is still true: two days later the group is told 4pm on
    Thursday, January 8, not an hour on no day."""
    out = await replay_lines(
        settings,
        [
            {"circle": "studio", "members": ["maya", "sam"]},
            say("sam", "group:studio", "The client review with Northwind is on Thursday at 3pm"),
            *formed_overnight("+1h"),
            say("maya", "group:studio", "the Northwind review got pushed back to 4pm"),
            *formed_overnight("+1d"),
            say("sam", "group:studio", "@alfred when is the Northwind review?"),
            {"dump": "all"},
        ],
        tmp_path / "h",
    )
    answer = reply_texts(out)[-1]
    assert "4pm on Thursday, January 8" in answer and "3pm" not in answer, answer
    assert [f for f in current_facts(dumps(out)[-1]) if "review" in f] == [
        "The Northwind review got pushed back to 4pm on Thursday, January 8"
    ]


async def test_in_a_dm_my_appointment_moved_replaces_it_and_another_meeting_adds(
    settings: Settings, tmp_path: Path
) -> None:
    """In her DM Maya has a dentist appointment on Monday and a meeting on Wednesday;
    the next day her dentist appointment moves. After formation and a day the dentist is
    on the new day and the meeting is still known; a second meeting adds to the first.
    None of it is in the group."""
    out = await replay_lines(
        settings,
        [
            {"circle": "studio", "members": ["maya", "sam"]},
            say("maya", "dm:maya", "I have a dentist appointment on Monday at 9"),
            say("maya", "dm:maya", "I have a meeting on Wednesday at 2pm"),
            *formed_overnight("+1h"),
            say("maya", "dm:maya", "my dentist appointment got moved to Tuesday"),
            say("maya", "dm:maya", "I have a meeting on Thursday at 11am"),
            *formed_overnight("+1d"),
            say("maya", "dm:maya", "when is my dentist appointment?"),
            probe("sam", "group:studio", "when is Maya's dentist appointment?"),
            probe("maya", "group:studio", "dentist appointment"),
            {"dump": "all"},
        ],
        tmp_path / "d",
    )
    dentist = reply_texts(out)[-1]
    assert "Tuesday, January 6" in dentist and "Monday" not in dentist, dentist
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Maya has a meeting on Thursday, January 8 at 11am",
        "Maya has a meeting on Wednesday, January 7 at 2pm",
        "Maya's dentist appointment got moved to Tuesday, January 6",
    ]
    assert_shows_nothing_of("dentist", *probes(out))
