"""Alfred's questions are bound to their question: only the asked person's next message
in the same thread within 30 minutes, or their Telegram reply to the question within 7
days, answers; a short answer completes it, anything else leaves it pending. And a
first-person query ranks the speaker's own memories first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say

FAM = {"circle": "fam", "members": ["nora", "theo"]}
CHAT = [
    "the weather is grey today",
    "we watched a film last night",
    "the train was late again",
]


def reply_to_bot(who: str, where: str, text: str) -> dict[str, Any]:
    line = say(who, where, text)
    line["say"]["reply_to"] = "bot"
    return line


def _form(who: str, where: str) -> list[dict[str, Any]]:
    return [*(say(who, where, t) for t in CHAT), {"clock": "+20m"}, {"jobs": "drain"}]


def _current(out: list[dict[str, Any]], word: str) -> list[str]:
    return [
        f["content"]
        for f in dumps(out)[-1]["facts"]
        if f["invalid_at"] is None and word.lower() in f["content"].lower()
    ]


async def test_whose_is_answered_by_the_next_message_or_a_reply(
    settings: Settings, tmp_path: Path
) -> None:
    """Nora's bare "mine" (not addressed) right after the question completes it; Theo's
    "Nora's", sent as a Telegram reply after an unrelated line, completes his; Theo's
    "mine" 40 minutes after another question does not."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "group:fam", "@alfred remember that Grandpa collects stamps"),
            say("nora", "group:fam", "mine"),
            say("theo", "group:fam", "@alfred remember that Dad plays the cello"),
            say("theo", "group:fam", "the bus was full this morning"),
            reply_to_bot("theo", "group:fam", "Nora's"),
            say("theo", "group:fam", "@alfred remember that the boss wants the slides"),
            {"clock": "+40m"},
            say("theo", "group:fam", "@alfred mine"),
            {"dump": "all"},
        ],
        tmp_path / "whose",
    )
    texts = [r["text"] for r in replies(out)]
    assert "whose do you mean" in texts[0], texts
    stamps = _current(out, "stamps")
    assert len(stamps) == 1 and "grandpa" in stamps[0].lower(), stamps
    facts = {f["content"]: f for f in dumps(out)[-1]["facts"]}
    assert facts[stamps[0]]["owner_user_id"] == dumps(out)[-1]["clarifications"][0]["user_id"]
    cello = _current(out, "cello")
    assert cello and "Nora's dad" in cello[0], cello
    assert not _current(out, "slides"), "an answer 40 minutes later answers nothing"
    statuses = [c["status"] for c in dumps(out)[-1]["clarifications"]]
    assert statuses == ["resolved", "resolved", "asked"], statuses


def _conflict() -> list[dict[str, Any]]:
    """Nora said she lives in Oslo; a day later, in passing, Trondheim: formation finds
    the conflict and Alfred asks with its next reply."""
    return [
        FAM,
        say("nora", "dm:nora", "I live in Oslo"),
        *_form("nora", "dm:nora"),
        {"clock": "+1d"},
        say("nora", "dm:nora", "I live in Trondheim"),
        *_form("nora", "dm:nora"),
        say("nora", "dm:nora", "good morning"),
    ]


async def test_a_late_bare_yes_does_not_answer_a_conflict_question(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            *_conflict(),
            say("nora", "dm:nora", "the cat is asleep on the sofa"),
            say("nora", "dm:nora", "did you see the match?"),
            say("nora", "dm:nora", "yes"),
            {"dump": "all"},
        ],
        tmp_path / "late-yes",
    )
    texts = [r["text"] for r in replies(out)]
    asked = [t for t in texts if "has that changed?" in t]
    assert asked and "Oslo" in asked[0], texts
    assert not [t for t in texts if t.startswith("Thanks — I")], texts
    (item,) = dumps(out)[-1]["clarifications"]
    assert item["status"] == "asked", item


async def test_a_reply_within_a_week_answers_and_after_a_week_it_expires(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            *_conflict(),
            {"clock": "+2d"},
            reply_to_bot("nora", "dm:nora", "no, still Oslo"),
            {"dump": "all"},
        ],
        tmp_path / "reply",
    )
    assert replies(out)[-1]["text"] == "Thanks — I'll keep remembering it the way it was."
    assert _current(out, "lives in") == ["Nora lives in Oslo"]

    out = await replay_lines(
        settings,
        [
            *_conflict(),
            {"clock": "+8d"},
            reply_to_bot("nora", "dm:nora", "no, still Oslo"),
            {"dump": "all"},
        ],
        tmp_path / "expired",
    )
    assert not replies(out)[-1]["text"].startswith("Thanks — I"), replies(out)[-1]
    assert _current(out, "lives in") == ["Nora lives in Trondheim"]
    (item,) = dumps(out)[-1]["clarifications"]
    assert item["status"] == "expired", item


async def test_a_first_person_query_ranks_the_speakers_own_memories_first(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "group:fam", "@alfred remember that my grandma's birthday is on June 9"),
            say(
                "theo",
                "group:fam",
                "@alfred remember that my grandma's birthday is on March 3, she turns 90",
            ),
            probe("theo", "group:fam", "when is my grandma's birthday?"),
            probe("nora", "group:fam", "when is my grandma's birthday?"),
        ],
        tmp_path / "mine-first",
    )
    theo, nora = probes(out)
    assert theo["memories"][0]["owner"] == "theo", theo["memories"]
    assert nora["memories"][0]["owner"] == "nora", nora["memories"]


async def test_only_the_asked_person_answers(settings: Settings, tmp_path: Path) -> None:
    """Theo replying "mine" to the question Alfred asked Nora answers nothing; Nora's own
    next message still does."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "group:fam", "@alfred remember that Dad restores old radios"),
            reply_to_bot("theo", "group:fam", "mine"),
            say("nora", "group:fam", "Nora's"),
            {"dump": "all"},
        ],
        tmp_path / "asked-only",
    )
    radios = [f for f in dumps(out)[-1]["facts"] if "radios" in f["content"]]
    assert len(radios) == 1 and "Nora's dad" in radios[0]["content"], radios
    (item,) = dumps(out)[-1]["clarifications"]
    assert item["status"] == "resolved" and radios[0]["owner_user_id"] == item["user_id"]
