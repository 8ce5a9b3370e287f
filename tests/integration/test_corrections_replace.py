"""Explicit corrections and new values replace: exactly one value stays current, the old
one is kept as history (invalidated, not deleted), and nobody is asked — the person was
explicit. Each scenario also lets formation run afterwards, which must not undo it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import dumps, replay_lines, replies, say

FAM = {"circle": "fam", "members": ["nora", "theo"]}
#: Three chatty lines and a cold session: formation runs over everything said before.
FORM = [
    say("nora", "dm:nora", "the weather is grey today"),
    say("nora", "dm:nora", "we watched a film last night"),
    say("nora", "dm:nora", "the train was late again"),
    {"clock": "+20m"},
    {"jobs": "drain"},
    {"dump": "all"},
]


def _facts(out: list[dict[str, Any]], word: str) -> tuple[list[str], list[str]]:
    """(current, history) contents of the last dump that mention ``word``."""
    facts = [f for f in dumps(out)[-1]["facts"] if word.lower() in f["content"].lower()]
    current = [f["content"] for f in facts if f["invalid_at"] is None]
    history = [f["content"] for f in facts if f["invalid_at"] is not None]
    return current, history


def _no_question(out: list[dict[str, Any]]) -> None:
    assert dumps(out)[-1]["clarifications"] == [], dumps(out)[-1]["clarifications"]
    assert not [r for r in replies(out) if "has that changed" in r["text"]], replies(out)


async def test_remembering_a_new_value_replaces_the_old(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that my dog is called Biscuit"),
            say("nora", "dm:nora", "remember that my dog is called Pepper"),
            *FORM,
        ],
        tmp_path / "renew",
    )
    current, history = _facts(out, "dog is called")
    assert len(current) == 1 and "Pepper" in current[0], current
    assert [h for h in history if "Biscuit" in h], history
    assert "Pepper" in replies(out)[1]["text"], replies(out)[1]
    _no_question(out)


async def test_a_compound_correction_replaces(settings: Settings, tmp_path: Path) -> None:
    """A compound "I don't X anymore, I Y now" retires X and keeps Y, one current value."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that I work at the bakery"),
            say("nora", "dm:nora", "I don't work at the bakery anymore, I work at the florist now"),
            *FORM,
        ],
        tmp_path / "compound",
    )
    current, history = _facts(out, "works at")
    assert current == ["Nora works at the florist"], current
    assert history == ["Nora works at the bakery"], history
    _no_question(out)


async def test_a_subjectless_compound_correction_replaces(
    settings: Settings, tmp_path: Path
) -> None:
    """The same as "not X anymore, Y now", with no subject at all."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that I'm pescatarian"),
            say("nora", "dm:nora", "not pescatarian anymore, vegan now"),
            *FORM,
        ],
        tmp_path / "bare",
    )
    dump = dumps(out)[-1]
    current = [f["content"] for f in dump["facts"] if f["invalid_at"] is None]
    assert current == ["Nora is vegan"], current
    _, history = _facts(out, "pescatarian")
    assert history == ["Nora is pescatarian"], history
    _no_question(out)


async def test_i_meant_x_not_y_swaps_the_value(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that I live in Leeds"),
            say("nora", "dm:nora", "I meant Bristol, not Leeds"),
            *FORM,
        ],
        tmp_path / "meant",
    )
    current, history = _facts(out, "lives in")
    assert current == ["Nora lives in Bristol"], current
    assert history == ["Nora lives in Leeds"], history
    assert "Bristol" in replies(out)[1]["text"], replies(out)[1]
    _no_question(out)


async def test_has_changed_its_y_now_replaces(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that my bank is Barclays"),
            say("nora", "dm:nora", "my bank has changed, it's Monzo now"),
            *FORM,
        ],
        tmp_path / "changed",
    )
    current, _ = _facts(out, "bank")
    assert len(current) == 1 and "Monzo" in current[0], current
    _, history = _facts(out, "Barclays")
    assert history, "the old bank is kept as history"
    _no_question(out)


async def test_a_self_correction_within_a_minute_leaves_one_value(
    settings: Settings, tmp_path: Path
) -> None:
    """Two plain statements half a minute apart, formed together: the later wins, the
    earlier is history, and nobody is asked."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "I work at the cinema"),
            {"clock": "+30s"},
            say("nora", "dm:nora", "I work at the museum"),
            *FORM,
        ],
        tmp_path / "self",
    )
    current, history = _facts(out, "works at")
    assert current == ["Nora works at the museum"], current
    assert history == ["Nora works at the cinema"], history
    _no_question(out)


async def test_i_meant_before_formation_corrects_what_was_just_said(
    settings: Settings, tmp_path: Path
) -> None:
    """An "I meant …" seconds after a plain statement, before any formation: the statement
    is corrected where it was said, and formation does not bring the old value back."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "I live in Oslo"),
            {"clock": "+20s"},
            say("nora", "dm:nora", "I meant Bergen, not Oslo"),
            *FORM,
        ],
        tmp_path / "meant-early",
    )
    current, history = _facts(out, "lives in")
    assert current == ["Nora lives in Bergen"], current
    assert history == ["Nora lives in Oslo"], history
    _no_question(out)


async def test_an_explicit_correction_after_a_plain_statement_keeps_it_as_history(
    settings: Settings, tmp_path: Path
) -> None:
    """An "Actually, …" seconds after a plain statement: formation, reading the statement
    later, files it as history rather than dropping it or making it current."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "I live in Oslo"),
            {"clock": "+20s"},
            say("nora", "dm:nora", "Actually, I live in Tromso"),
            *FORM,
        ],
        tmp_path / "actually-early",
    )
    current, history = _facts(out, "lives in")
    assert current == ["Nora lives in Tromso"], current
    assert history == ["Nora lives in Oslo"], history
    _no_question(out)


async def test_actually_with_another_value_of_the_same_sentence_replaces_it(
    settings: Settings, tmp_path: Path
) -> None:
    """ "actually the party is on Saturday" shares only "party" with "The party is on
    Friday" (half its content terms), but says nearly the same by meaning: it replaces
    it, and that holds after formation and a day. A fact about someone else ("dad's
    birthday" for "mom's birthday", a cosine of about 0.6) is close in meaning too, but
    not that close: it is added beside it, and mom's stays current."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "dm:nora", "remember that the party is on Friday"),
            say("nora", "dm:nora", "actually the party is on Saturday"),
            say("nora", "dm:nora", "remember that mom's birthday is May 3"),
            say("nora", "dm:nora", "actually dad's birthday is June 9"),
            *FORM,
            {"clock": "+1d"},
            {"jobs": "drain"},
            say("nora", "dm:nora", "when is the party?"),
            {"dump": "all"},
        ],
        tmp_path / "party",
    )
    texts = [r["text"] for r in replies(out)]
    assert texts[1].startswith("Thanks for the correction"), texts[1]
    assert "Saturday" in texts[-1] and "Friday" not in texts[-1], texts[-1]
    # Kept with their dates (said on Monday 5 January), as every "on Friday" is.
    assert _facts(out, "party") == (
        ["The party is on Saturday, January 10"],
        ["The party is on Friday, January 9"],
    )
    assert texts[3].startswith("Thanks, noted"), texts[3]
    assert _facts(out, "mom") == (["Mom's birthday is May 3"], [])
    assert _facts(out, "dad") == (["Dad's birthday is June 9"], [])
    _no_question(out)


async def test_a_correction_in_the_group_names_our_members_as_remember_does(
    settings: Settings, tmp_path: Path
) -> None:
    """ "our" in a group's correction is the members by name, as in a request to remember
    (it read "The group members'", since the correction was not told who they are)."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("nora", "group:fam", "@alfred remember that our landlord's phone is 555-0102"),
            say("theo", "group:fam", "@alfred actually our landlord's phone is 555-0199"),
            {"dump": "all"},
        ],
        tmp_path / "our",
    )
    texts = [r["text"] for r in replies(out)]
    assert texts[1].startswith("Thanks for the correction"), texts[1]
    current, history = _facts(out, "landlord")
    assert current == ["Nora and Theo's landlord's phone is 555-0199"], current
    assert history == ["Nora and Theo's landlord's phone is 555-0102"], history
