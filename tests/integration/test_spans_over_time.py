"""What was said about a span of time stays true after it, and a line not yet formed is
quoted as its author's: replays across background formation and days, on the embedded
defaults (offline model), with the privacy of a DM line tried in the same scenario."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import Settings
from tests.helpers.replay import (
    assert_shows_nothing_of,
    current_facts,
    dumps,
    probe,
    probes,
    replay_lines,
    reply_texts,
    say,
)

#: Said on Monday 5 January 2026 (the replay's clock), formed that night.
SAID = [
    {"circle": "home", "members": ["nora", "omar"]},
    say("nora", "group:home", "My mom is visiting next week"),
    say("omar", "group:home", "I have a dentist appointment next Friday"),
    say("omar", "dm:omar", "I have an interview at the museum next month"),
    {"clock": "+7h"},
    {"jobs": "drain"},
]


async def test_next_week_is_still_that_week_nine_days_later(
    settings: Settings, tmp_path: Path
) -> None:
    """ "Next week", said on Monday 5 January, is the week of January 12 when it is asked
    about nine days later (when "next week" would be the week of January 19); "next
    Friday", which people read two ways, keeps its words and the day it was said; Omar's
    DM stays in his DM."""
    out = await replay_lines(
        settings,
        [
            *SAID,
            {"clock": "+9d"},
            {"jobs": "drain"},
            say("nora", "group:home", "@alfred when is my mom visiting?"),
            say("nora", "group:home", "@alfred when is Omar's dentist appointment?"),
            probe("omar", "dm:omar", "when is my museum interview?"),
            probe("nora", "group:home", "when is Omar's museum interview?"),
            probe("omar", "group:home", "when is my museum interview?"),
            {"dump": "all"},
        ],
        tmp_path / "w",
    )
    mom, dentist = reply_texts(out)[-2:]
    assert "the week of January 12" in mom and "next week" not in mom, mom
    assert "next Friday (said on Monday, January 5)" in dentist, dentist
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Nora's mom is visiting the week of January 12",
        "Omar has a dentist appointment next Friday (said on Monday, January 5)",
        "Omar has an interview at the museum in February 2026",
    ]
    in_dm, in_group, omar_in_group = probes(out)
    assert [m["content"] for m in in_dm["memories"]] == [
        "Omar has an interview at the museum in February 2026"
    ]
    assert_shows_nothing_of("museum", in_group, omar_in_group)


async def test_a_line_not_formed_yet_is_quoted_as_its_author_s(
    settings: Settings, tmp_path: Path
) -> None:
    """Before formation, Omar's "I parked …" is answered to Nora as Omar's words in
    quotes, not as a line in Alfred's own voice, and Nora's own line comes back as hers;
    the same question about a DM line finds nothing in the group. After formation the
    answers are the facts, in the third person."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("omar", "group:home", "I parked the car on level 3 of the station garage"),
            say("omar", "dm:omar", "I left the spare key with Mrs Patel next door"),
            say("nora", "group:home", "My sister is visiting next week"),
            say("nora", "group:home", "@alfred where did Omar park?"),
            say("nora", "group:home", "@alfred when is my sister visiting?"),
            say("nora", "group:home", "@alfred where is Omar's spare key?"),
            {"clock": "+7h"},
            {"jobs": "drain"},
            say("nora", "group:home", "@alfred where did Omar park?"),
        ],
        tmp_path / "q",
    )
    parked, sister, key, formed = reply_texts(out)[-4:]
    assert parked == (
        'From what Omar has shared here: "I parked the car on level 3 of the station garage".'
    ), parked
    assert sister == 'From what I remember:\n- You said: "My sister is visiting next week"'
    assert "Patel" not in key and "spare key" not in key.lower(), key
    assert "Omar parked the car on level 3 of the station garage" in formed, formed
    assert '"' not in formed, formed


async def test_a_plan_kept_as_a_note_is_answered_days_later_where_it_was_said(
    settings: Settings, tmp_path: Path
) -> None:
    """Offline, "we're going to Lisbon in two weeks" becomes the group's note, dated; ten
    days later a question about it in the group is answered from that note, not with "I
    don't know". Omar's plan said in his DM is answered in no group."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("omar", "group:home", "we're going to Lisbon in two weeks"),
            say("omar", "dm:omar", "I'm flying to Porto in two weeks for a secret job interview"),
            {"clock": "+7h"},
            {"jobs": "drain"},
            {"clock": "+10d"},
            {"jobs": "drain"},
            say("nora", "group:home", "@alfred when are we going to Lisbon?"),
            say("nora", "group:home", "@alfred when is Omar flying to Porto?"),
            say("omar", "group:home", "@alfred when am I flying to Porto?"),
            probe("omar", "dm:omar", "when am I flying to Porto?"),
        ],
        tmp_path / "n",
    )
    # Kept, in Omar's DM, so the group's answers below had something to leak.
    (own,) = probes(out)
    assert "Porto the week of January 19" in own["context"], own
    lisbon, porto, own_porto = reply_texts(out)[-3:]
    assert lisbon == (
        "From what I keep in mind here:\n"
        "- Nora and Omar are going to Lisbon the week of January 19."
    ), lisbon
    for leak in (porto, own_porto):
        assert "Porto" not in leak and "interview" not in leak, leak


async def test_a_visit_said_with_a_question_is_kept_with_its_day_in_its_circle(
    settings: Settings, tmp_path: Path
) -> None:
    """ "The plumber is coming Thursday at 10, what should we prepare?" states a visit
    before it asks: formation keeps the visit, dated (Thursday, January 8), and a week
    later it answers in the group, and in no other circle."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            {"circle": "club", "members": ["omar", "pia"]},
            say(
                "nora",
                "group:home",
                "the plumber is coming Thursday at 10, what should we prepare?",
            ),
            {"clock": "+7h"},
            {"jobs": "drain"},
            {"clock": "+7d"},
            {"jobs": "drain"},
            say("omar", "group:home", "@alfred when is the plumber coming?"),
            say("pia", "group:club", "@alfred when is the plumber coming?"),
        ],
        tmp_path / "p",
    )
    home, club = reply_texts(out)[-2:]
    assert "The plumber is coming on Thursday, January 8 at 10" in home, home
    assert "plumber" not in club.lower() and "January 8" not in club, club


async def test_a_new_job_told_in_a_dm_is_still_known_weeks_later_and_only_there(
    settings: Settings, tmp_path: Path
) -> None:
    """ "I started a new job last week", told in a DM, was only a session note offline and
    was gone with the session. It is now a fact, dated by its week, that Omar's DM still
    answers from three weeks later, after formation; the group, where Nora asks about it,
    never shows it, and neither does Nora's DM."""
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["nora", "omar"]},
            say("omar", "dm:omar", "I started a new job last week"),
            say("nora", "group:home", "I joined a choir last month"),
            {"clock": "+7h"},
            {"jobs": "drain"},
            {"clock": "+21d"},
            {"jobs": "drain"},
            say("omar", "dm:omar", "when did I start my new job?"),
            probe("nora", "group:home", "when did Omar start his new job?"),
            probe("nora", "dm:nora", "when did Omar start his new job?"),
            say("omar", "group:home", "@alfred what do you remember about Nora's choir?"),
            {"dump": "all"},
        ],
        tmp_path / "j",
    )
    job, choir = reply_texts(out)[-2:]
    assert "the week of December 29" in job, job
    assert "choir in December 2025" in choir, choir
    assert sorted(current_facts(dumps(out)[-1])) == [
        "Nora joined a choir in December 2025",
        "Omar started a new job the week of December 29",
    ]
    assert_shows_nothing_of("job", *probes(out))
