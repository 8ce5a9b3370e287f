"""Reminders, end to end through the replay (issue 16): set in words and confirmed with the
time understood, stored and delivered by the background jobs when the clock reaches
them, in the right chat, to the right person; listed, cancelled, moved and snoozed
under the privacy rule; never a memory; gone with "forget everything about me"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import dumps, replay_lines, replies, say

REPLAY_MD = Path(__file__).resolve().parents[2] / "docs" / "replay.md"
FAM = {"circle": "fam", "members": ["dana", "eli"]}
DRAIN = {"jobs": "drain"}

#: Said once per person, the first time a time is stated on the UTC fallback.
UTC_NOTE = ' (times in UTC — tell me "my time zone is …" to change it)'


def at(when: str) -> dict[str, Any]:
    return {"clock": when}


def press(who: str, where: str, button: str) -> dict[str, Any]:
    return {"press": {"as": who, "in": where, "button": button}}


def reply(who: str, where: str, text: str) -> dict[str, Any]:
    """A Telegram reply to the bot's latest message in ``where``."""
    return {"say": {"from": who, "in": where, "text": text, "reply_to": "bot"}}


def reminders_in(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The delivered reminders among the replies (they carry a Done button; a shown
    list carries buttons too, one per item)."""
    return [r for r in replies(out) if "Done" in r.get("buttons", [])]


async def test_a_dm_reminder_is_confirmed_and_delivered_on_time_in_that_dm_only(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "remind me to renew the parking permit tomorrow at 8:30"),
            at("2026-01-06T08:29:00Z"),
            DRAIN,
            at("2026-01-06T08:30:00Z"),
            DRAIN,
            at("2026-01-06T09:30:00Z"),
            DRAIN,
            say("dana", "dm:dana", "Remind me to buy stamps"),
        ],
        tmp_path / "a",
    )
    assert replies(out)[-1]["text"] == (
        'When should I remind you to buy stamps? Say e.g. "remind me to buy stamps tomorrow at 9".'
    )
    said = replies(out)
    assert said[0] == {
        "in": "dm:dana",
        "to": "dana",
        # the first time stated on a guessed zone says so, once
        "text": "I'll remind you tomorrow, Tuesday 6 January, at 08:30: renew the parking permit."
        + UTC_NOTE,
    }
    delivered = reminders_in(out)
    assert delivered == [
        {
            "in": "dm:dana",
            "to": "dana",
            "text": "⏰ Reminder: renew the parking permit",
            "buttons": ["Done", "Snooze 10 min"],
        }
    ], "once, at 08:30, not before and not again"
    # not before: the only delivery comes after the 08:30 clock line
    first_drain_end = next(i for i, o in enumerate(out) if "job" in o)
    assert not any(o.get("reply", {}).get("buttons") for o in out[:first_drain_end])


async def test_group_reminders_mention_the_person_or_go_to_everyone(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say(
                "dana", "group:fam", "@alfred remind us to water the garden every Wednesday at 6pm"
            ),
            say("dana", "group:fam", "@alfred remind Eli to collect the parcel in 3 hours"),
            say("dana", "group:fam", "@alfred remind Zoe to feed the fish in 1 hour"),
            say("dana", "dm:dana", "remind Eli to call grandma in 2 hours"),
            at("2026-01-05T12:00:00Z"),
            DRAIN,
            at("2026-01-07T18:00:00Z"),
            DRAIN,
        ],
        tmp_path / "b",
    )
    said = [r["text"] for r in replies(out)]
    assert said[0] == (
        "I'll remind everyone here every Wednesday at 18:00 (first on Wednesday 7 January at "
        "18:00): water the garden." + UTC_NOTE
    )
    assert said[1] == "I'll remind Eli today, Monday 5 January, at 12:00: collect the parcel."
    assert said[2] == "I don't know Zoe in this group."
    assert said[3].startswith("I can remind someone else only in your group")
    delivered = reminders_in(out)
    assert [(r["in"], r["to"], r["text"]) for r in delivered] == [
        ("group:fam", "eli", "@eli ⏰ Reminder: collect the parcel"),
        ("group:fam", None, "⏰ Reminder: water the garden"),
    ]


async def test_missed_occurrences_collapse_into_one_late_delivery_then_the_next_is_on_time(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("eli", "dm:eli", "remind me to take the vitamins every Friday at 7am"),
            # the jobs do not run for three weeks (a dead worker), then they do
            at("2026-01-23T07:20:00Z"),
            DRAIN,
            DRAIN,
            at("2026-01-30T07:00:00Z"),
            DRAIN,
        ],
        tmp_path / "c",
    )
    delivered = [r["text"] for r in reminders_in(out)]
    assert delivered == [
        "⏰ (late) Reminder: take the vitamins",  # 9, 16 and 23 January: one message
        "⏰ Reminder: take the vitamins",  # 30 January, on time
    ]


async def test_list_cancel_move_and_snooze_by_reply_and_by_button(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "remind me to book the dentist tomorrow at 9"),
            say("dana", "dm:dana", "remind me to water the ferns on Thursday at 8am"),
            say("dana", "dm:dana", "remind me to pay the plumber tomorrow at 11"),
            say("dana", "dm:dana", "cancel the ferns reminder"),
            say("dana", "dm:dana", "move the dentist reminder to 10"),
            say("dana", "dm:dana", "what are my reminders?"),
            at("2026-01-06T09:00:00Z"),
            DRAIN,  # the dentist was moved: nothing at 9
            at("2026-01-06T10:00:00Z"),
            DRAIN,
            reply("dana", "dm:dana", "snooze 15 minutes"),
            at("2026-01-06T10:15:00Z"),
            DRAIN,
            press("dana", "dm:dana", "Done"),
            at("2026-01-06T11:00:00Z"),
            DRAIN,
            press("dana", "dm:dana", "Snooze 10 min"),
            at("2026-01-06T11:10:00Z"),
            DRAIN,
            at("2026-01-08T08:00:00Z"),
            DRAIN,
        ],
        tmp_path / "d",
    )
    said = [r["text"] for r in replies(out)]
    assert said[3] == "Cancelled: water the ferns."
    assert said[4] == "Moved: book the dentist, now tomorrow, Tuesday 6 January, at 10:00."
    assert said[5] == (
        "Reminders here:\n1. book the dentist — tomorrow, Tuesday 6 January, at 10:00\n"
        "2. pay the plumber — tomorrow, Tuesday 6 January, at 11:00"
    )
    assert [r["text"] for r in reminders_in(out)] == [
        "⏰ Reminder: book the dentist",  # 10:00
        "⏰ Reminder: book the dentist",  # snoozed by reply: 10:15
        "⏰ Reminder: pay the plumber",  # 11:00
        "⏰ Reminder: pay the plumber",  # snoozed by the button: 11:10
    ], "the cancelled ferns reminder never came"
    assert "Snoozed for 15 minutes: book the dentist." in said
    assert "Done: book the dentist." in said
    assert "Snoozed for 10 minutes: pay the plumber." in said


async def test_another_persons_dm_reminder_cannot_be_listed_cancelled_or_snoozed(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "remind me to hide the birthday present tomorrow at 9"),
            say("eli", "group:fam", "@alfred what are our reminders?"),
            say("eli", "group:fam", "@alfred cancel the birthday present reminder"),
            say("eli", "dm:eli", "what are my reminders?"),
            say("eli", "dm:eli", "cancel the birthday reminder"),
            say("eli", "dm:eli", "move the present reminder to 11"),
            reply("eli", "dm:eli", "snooze 10 minutes"),
            say("dana", "group:fam", "@alfred what are our reminders?"),
            at("2026-01-06T09:00:00Z"),
            DRAIN,
            reply("eli", "group:fam", "@alfred snooze"),
            press("eli", "group:fam", "Snooze 10 min"),
            at("2026-01-06T09:30:00Z"),
            DRAIN,
        ],
        tmp_path / "e",
    )
    said = [r["text"] for r in replies(out) if not r.get("buttons")]
    assert said[1:9] == [
        "There are no reminders set here.",
        'I found no reminder about "birthday present" here.',
        "There are no reminders set here.",
        'I found no reminder about "birthday" here.',
        'I found no reminder about "present" here.',
        "Reply to one of my reminders to snooze it.",
        "There are no reminders set here.",  # Dana in the group: her DM's stay in her DM
        "Reply to one of my reminders to snooze it.",
    ], said
    assert [(r["in"], r["text"]) for r in reminders_in(out)] == [
        ("dm:dana", "⏰ Reminder: hide the birthday present")
    ], "delivered once, in Dana's DM only, neither cancelled nor snoozed by Eli"


async def test_reminders_are_not_memories_and_forget_everything_deletes_them(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "remind me to buy the anniversary flowers on Friday at 5pm"),
            say("dana", "group:fam", "@alfred remind Dana to bring the lanterns tomorrow at 6pm"),
            say("dana", "dm:dana", "I like hiking in the hills"),
            say("dana", "dm:dana", "my sister lives in Porto"),
            say("dana", "dm:dana", "the weather is grey today"),
            at("+30m"),
            DRAIN,
            {"dump": "all"},
            say("dana", "dm:dana", "forget everything about me"),
            say("dana", "dm:dana", "yes"),
            at("2026-01-09T17:00:00Z"),
            DRAIN,
        ],
        tmp_path / "f",
    )
    dump = dumps(out)[0]
    stored = " ".join(
        str(item.get("content") or item.get("text") or "")
        for kind in ("facts", "reflections", "consolidated", "messages")
        for item in dump[kind]
    )
    assert "flowers" not in stored and "lanterns" not in stored, stored
    erased = replies(out)[-1]["text"]
    assert erased.startswith("Done — I've erased everything about you"), erased
    assert "2 reminders" in erased, erased
    assert reminders_in(out) == [], "nothing is delivered after the erasure"


async def test_the_reminder_example_of_docs_replay_md(settings: Settings, tmp_path: Path) -> None:
    doc = REPLAY_MD.read_text(encoding="utf-8")
    block = doc.split("## Reminders", 1)[1].split("```", 2)[1]
    out = await replay_lines(settings, [ln for ln in block.splitlines() if ln.strip()], tmp_path)
    assert [(r["in"], r["to"], r["text"]) for r in replies(out)] == [
        (
            "dm:alice",
            "alice",
            "I'll remind you tomorrow, Tuesday 6 January, at 09:00: call the vet." + UTC_NOTE,
        ),
        ("dm:alice", "alice", "⏰ Reminder: call the vet"),
        ("dm:alice", "alice", "Snoozed for 10 minutes: call the vet."),
        ("dm:alice", "alice", "⏰ Reminder: call the vet"),
    ]


async def test_the_demo_sets_and_delivers_a_reminder(settings: Settings, tmp_path: Path) -> None:
    from bot.replay.demo import demo_script

    out = await replay_lines(settings, demo_script(), tmp_path / "demo")
    assert [(r["in"], r["to"], r["text"]) for r in reminders_in(out)] == [
        ("group:fam", None, "⏰ Reminder: take the bins out")
    ]
    assert {"in": "group:fam", "to": "bob", "text": "Done: take the bins out."} in replies(out)
