"""Repeating reminders through the replay, over several simulated days (issue 16): a
series moved to another time of day keeps its rule and is delivered at the new local
time from then on; "Done" under one delivery closes that occurrence only (the next still
comes, cancelling stops the series); one-off and repeating reminders keep their local
time across a daylight-saving change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bot.replay import parse_script, run_script
from runtime.settings import Settings
from tests.helpers.replay import replies, say

FAM = {"circle": "fam", "members": ["mira", "otto"]}
DRAIN = {"jobs": "drain"}


def at(when: str) -> dict[str, Any]:
    return {"clock": when}


def press(who: str, where: str, button: str) -> dict[str, Any]:
    return {"press": {"as": who, "in": where, "button": button}}


class _Clocked(list[tuple[int, str, Any]]):
    """Parsed script events that note the latest ``clock`` line as the replay reaches it."""

    now = ""

    def __iter__(self) -> Iterator[tuple[int, str, Any]]:
        for event in super().__iter__():
            if event[1] == "clock":
                self.now = str(event[2])
            yield event


async def run(settings: Settings, lines: list[Any], data_dir: Path) -> list[dict[str, Any]]:
    """Like :func:`tests.helpers.replay.replay_lines`, each output object tagged with the
    simulated time of the clock line before it (``"at"``)."""
    events = _Clocked(parse_script([json.dumps(line) for line in lines]))
    out: list[dict[str, Any]] = []
    world = settings.model_copy(
        update={"alfred_data_dir": data_dir, "mongodb_database": f"replay_{data_dir.name}"}
    )
    await run_script(world, events, lambda obj: out.append({**obj, "at": events.now}))
    return out


def delivered_at(out: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(simulated time, chat, text) of each delivered reminder (a reply with buttons)."""
    return [
        (o["at"], o["reply"]["in"], o["reply"]["text"])
        for o in out
        if "reply" in o and o["reply"].get("buttons")
    ]


def answers(out: list[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in replies(out) if not r.get("buttons")]


async def test_moving_a_repeating_reminder_moves_the_series_and_keeps_its_days(
    settings: Settings, tmp_path: Path
) -> None:
    out = await run(
        settings,
        [
            FAM,
            say("mira", "group:fam", "@alfred our time zone is America/Toronto"),
            say("mira", "group:fam", "@alfred remind us to put the bins out on Tuesdays at 6pm"),
            say("otto", "dm:otto", "my time zone is America/Toronto"),
            say("otto", "dm:otto", "remind me to stretch every day at 7am"),
            # Monday 04:00 in Toronto: today's 07:00 has not come yet
            say("otto", "dm:otto", "move the stretch reminder to 6:30"),
            at("2026-01-05T11:30:00Z"),
            DRAIN,
            at("2026-01-06T11:30:00Z"),
            DRAIN,
            at("2026-01-06T12:00:00Z"),
            DRAIN,  # the old 07:00: nothing
            say("otto", "dm:otto", "cancel the stretch reminder"),
            at("2026-01-06T23:00:00Z"),
            DRAIN,  # Tuesday 18:00 in Toronto
            say("mira", "group:fam", "@alfred move the bins reminder to 8pm"),
            say("mira", "group:fam", "@alfred move the bins reminder to Friday"),
            at("2026-01-13T23:00:00Z"),
            DRAIN,  # the old time: nothing
            at("2026-01-14T01:00:00Z"),
            DRAIN,  # Tuesday 13 January, 20:00 in Toronto
            at("2026-01-21T01:00:00Z"),
            DRAIN,
            say("mira", "group:fam", "@alfred what are our reminders?"),
        ],
        tmp_path,
    )
    said = answers(out)
    assert "Moved: stretch, now every day at 06:30 (next today, Monday 5 January, at 06:30)." in (
        said
    ), said
    assert (
        "Moved: put the bins out, now every Tuesday at 20:00 "
        "(next on Tuesday 13 January at 20:00)." in said
    ), said
    assert (
        "Put the bins out repeats (every Tuesday at 20:00): I can move it to another "
        'time of day, e.g. "move the reminder to 8pm". To change its days, cancel it and '
        "set it again." in said
    ), said
    assert said[-1] == (
        "Reminders here:\n1. put the bins out — every Tuesday at 20:00, "
        "next on Tuesday 27 January at 20:00"
    )
    assert delivered_at(out) == [
        ("2026-01-05T11:30:00Z", "dm:otto", "⏰ Reminder: stretch"),
        ("2026-01-06T11:30:00Z", "dm:otto", "⏰ Reminder: stretch"),
        ("2026-01-06T23:00:00Z", "group:fam", "⏰ Reminder: put the bins out"),
        # not again on the 6th at 20:00: that week's was already delivered
        ("2026-01-14T01:00:00Z", "group:fam", "⏰ Reminder: put the bins out"),
        ("2026-01-21T01:00:00Z", "group:fam", "⏰ Reminder: put the bins out"),
    ]


async def test_done_closes_one_occurrence_of_a_series_and_cancel_closes_the_series(
    settings: Settings, tmp_path: Path
) -> None:
    out = await run(
        settings,
        [
            FAM,
            say("otto", "dm:otto", "remind me to water the tomatoes every day at 8am"),
            at("2026-01-06T08:00:00Z"),
            DRAIN,
            press("otto", "dm:otto", "Done"),
            at("2026-01-07T08:00:00Z"),
            DRAIN,
            press("otto", "dm:otto", "Snooze 10 min"),
            press("otto", "dm:otto", "Done"),  # done after all: the snooze is not wanted
            at("2026-01-07T08:10:00Z"),
            DRAIN,
            at("2026-01-08T08:00:00Z"),
            DRAIN,
            say("otto", "dm:otto", "what are my reminders?"),
            say("otto", "dm:otto", "cancel the tomatoes reminder"),
            at("2026-01-09T08:00:00Z"),
            DRAIN,
            say("otto", "dm:otto", "what are my reminders?"),
        ],
        tmp_path,
    )
    said = answers(out)
    assert said[1:] == [
        "Done: water the tomatoes (this time; next tomorrow, Wednesday 7 January, at 08:00).",
        "Snoozed for 10 minutes: water the tomatoes.",
        "Done: water the tomatoes (this time; next tomorrow, Thursday 8 January, at 08:00).",
        "Reminders here:\n1. water the tomatoes — every day at 08:00, "
        "next tomorrow, Friday 9 January, at 08:00",
        "Cancelled: water the tomatoes.",
        "There are no reminders set here.",
    ], said
    assert delivered_at(out) == [
        ("2026-01-06T08:00:00Z", "dm:otto", "⏰ Reminder: water the tomatoes"),
        ("2026-01-07T08:00:00Z", "dm:otto", "⏰ Reminder: water the tomatoes"),
        ("2026-01-08T08:00:00Z", "dm:otto", "⏰ Reminder: water the tomatoes"),
    ], "the series went on after each Done, the dropped snooze never came, nor did the 9th"


async def test_one_off_and_repeating_reminders_keep_local_time_across_the_dst_change(
    settings: Settings, tmp_path: Path
) -> None:
    """Berlin goes from UTC+1 to UTC+2 on Sunday 29 March 2026: 19:00 on Saturdays is
    18:00 UTC before and 17:00 UTC after; 09:00 on Monday 30 March is 07:00 UTC."""
    out = await run(
        settings,
        [
            FAM,
            at("2026-03-23T08:00:00Z"),
            say("mira", "dm:mira", "my time zone is Europe/Berlin"),
            say("mira", "dm:mira", "remind me to feed the sourdough every Saturday at 7pm"),
            say("mira", "dm:mira", "remind me to call the bakery on 30 March at 9"),
            at("2026-03-28T17:00:00Z"),
            DRAIN,  # 18:00 in Berlin: not yet
            at("2026-03-28T18:00:00Z"),
            DRAIN,
            at("2026-03-30T06:00:00Z"),
            DRAIN,  # 08:00 in summer time: not yet
            at("2026-03-30T07:00:00Z"),
            DRAIN,
            say("mira", "dm:mira", "what are my reminders?"),
            at("2026-04-04T17:00:00Z"),
            DRAIN,
        ],
        tmp_path,
    )
    said = answers(out)
    assert said[1:3] == [
        "I'll remind you every Saturday at 19:00 (first on Saturday 28 March at 19:00): "
        "feed the sourdough.",
        "I'll remind you on Monday 30 March at 09:00: call the bakery.",
    ], said
    assert said[-1] == (
        "Reminders here:\n1. feed the sourdough — every Saturday at 19:00, "
        "next on Saturday 4 April at 19:00"
    )
    assert delivered_at(out) == [
        ("2026-03-28T18:00:00Z", "dm:mira", "⏰ Reminder: feed the sourdough"),
        ("2026-03-30T07:00:00Z", "dm:mira", "⏰ Reminder: call the bakery"),
        ("2026-04-04T17:00:00Z", "dm:mira", "⏰ Reminder: feed the sourdough"),
    ], "each at its local time, none late"


async def test_the_autumn_change_too_keeps_the_local_time(
    settings: Settings, tmp_path: Path
) -> None:
    """New York goes from UTC-4 to UTC-5 on Sunday 1 November 2026: 09:00 on Saturdays is
    13:00 UTC before and 14:00 UTC after."""
    out = await run(
        settings,
        [
            FAM,
            at("2026-10-26T12:00:00Z"),
            say("otto", "dm:otto", "my time zone is America/New_York"),
            say("otto", "dm:otto", "remind me to test the smoke alarm every Saturday at 9am"),
            say("otto", "dm:otto", "remind me to change the furnace filter on 2 November at 8"),
            at("2026-10-31T13:00:00Z"),
            DRAIN,
            at("2026-11-02T12:00:00Z"),
            DRAIN,  # 07:00 in winter time: not yet
            at("2026-11-02T13:00:00Z"),
            DRAIN,
            at("2026-11-07T13:00:00Z"),
            DRAIN,  # 08:00 in winter time: not yet
            at("2026-11-07T14:00:00Z"),
            DRAIN,
        ],
        tmp_path,
    )
    assert delivered_at(out) == [
        ("2026-10-31T13:00:00Z", "dm:otto", "⏰ Reminder: test the smoke alarm"),
        ("2026-11-02T13:00:00Z", "dm:otto", "⏰ Reminder: change the furnace filter"),
        ("2026-11-07T14:00:00Z", "dm:otto", "⏰ Reminder: test the smoke alarm"),
    ]
