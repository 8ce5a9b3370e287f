"""Nothing said is lost (issue 14, point 3): a request in a group is acted on even when
Alfred is not addressed, a short quiet thread is formed once it has waited 6 hours, and
what was said minutes ago is found at once wherever its partition is visible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say

# Requests nobody addressed to Alfred, each phrased another way, and what each keeps.
REQUESTS = [
    ("Don't forget that the boiler service is booked for 14 March", "boiler service"),
    ("keep in mind the allotment key hangs behind the pantry door", "allotment key"),
    ("The school pickup password is marmalade, remember that", "pickup password"),
    ("note that the vet closes at noon on Saturdays", "vet closes"),
    ("Remember that the gas meter reading goes in on the 1st", "gas meter"),
    ("The recycling goes out on Thursday nights - don't forget", "recycling"),
]
CHATTER = [
    "did anyone see my umbrella?",
    "remember that awful hotel in Porto?",
    "Ines, remember to buy oat milk",
    "the boiler man was very nice",
]


def _reactions(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["reaction"] for o in out if "reaction" in o]


async def test_a_request_in_a_group_is_kept_and_acknowledged_quietly(
    settings: Settings, tmp_path: Path
) -> None:
    lines: list[Any] = [{"circle": "flat", "members": ["ines", "omar"]}]
    for (request, _), chatter in zip(REQUESTS, [*CHATTER, "", ""], strict=True):
        lines.append(say("ines", "group:flat", request))
        if chatter:
            lines.append(say("omar", "group:flat", chatter))
    lines += [
        probe("omar", "group:flat", "when is the boiler service booked?"),
        probe("ines", "dm:ines", "what is the school pickup password?"),
        {"dump": "all"},
    ]
    out = await replay_lines(settings, lines, tmp_path / "quiet")

    # One reaction per request, on the requester's message, and not a single message.
    assert _reactions(out) == [{"in": "group:flat", "to": "ines", "emoji": "👍"}] * len(REQUESTS)
    assert replies(out) == []
    dump = dumps(out)[-1]
    current = [f for f in dump["facts"] if f["invalid_at"] is None]
    for _, kept in REQUESTS:
        (fact,) = [f for f in current if kept in f["content"]]
        assert fact["visibility"] == "shared", fact
        # a household routine said in the group is the flat's; the rest is Ines's own
        household = kept == "recycling"
        assert (fact["owner_user_id"] is None) == household, fact
    assert len(current) == len(REQUESTS)  # the chatter stored nothing on the spot
    handled = {m["text"] for m in dump["messages"] if m["handled"]}
    assert handled == {request for request, _ in REQUESTS}

    boiler, password = probes(out)
    assert any("boiler service" in m["content"] for m in boiler["memories"]), boiler
    assert any("marmalade" in m["content"] for m in password["memories"]), password


async def test_an_unaddressed_request_about_an_unplaced_person_is_asked_about(
    settings: Settings, tmp_path: Path
) -> None:
    """ "Mom" could be anyone's: rather than store a guess, Alfred asks, as it would had
    it been addressed; nothing is stored."""
    out = await replay_lines(
        settings,
        [
            {"circle": "flat", "members": ["ines", "omar"]},
            say("omar", "group:flat", "remember that Mom prefers the window seat"),
            {"dump": "all"},
        ],
        tmp_path / "whose",
    )
    assert _reactions(out) == []
    (question,) = replies(out)
    assert question["to"] == "omar" and "whose" in question["text"].lower()
    assert dumps(out)[-1]["facts"] == []


async def test_a_short_quiet_thread_is_formed_once_its_oldest_message_is_six_hours_old(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "flat", "members": ["ines", "omar"]},
            say("omar", "group:flat", "My sister Leila lives in Rotterdam"),
            say("ines", "group:flat", "My favourite band is Wilco"),
            say("omar", "dm:omar", "I work at the hospital"),
            {"clock": "+15m"},  # the sessions go cold: too few messages to form
            {"jobs": "drain"},
            {"dump": "all"},
            {"clock": "+330m"},  # 5 h 45 min after the first message: still waiting
            {"jobs": "drain"},
            {"dump": "all"},
            {"clock": "+20m"},  # past 6 hours: formed, however few they are
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "six",
    )
    early, waiting, formed = dumps(out)
    for dump in (early, waiting):
        assert dump["facts"] == [], dump["facts"]
        assert not any(m["formed"] for m in dump["messages"] if m["role"] == "user")
    assert all(m["formed"] for m in formed["messages"]), formed["messages"]
    facts = {f["content"]: f for f in formed["facts"]}
    leila = [f for c, f in facts.items() if "Rotterdam" in c]
    band = [f for c, f in facts.items() if "Wilco" in c]
    work = [f for c, f in facts.items() if "hospital" in c]
    assert len(leila) == len(band) == len(work) == 1, list(facts)
    assert leila[0]["visibility"] == band[0]["visibility"] == "shared"
    assert work[0]["visibility"] == "dm"


async def test_what_was_said_minutes_ago_counts_where_its_partition_is_visible(
    settings: Settings, tmp_path: Path
) -> None:
    """Nothing is formed yet (one message in the group, one in a DM): the group line is
    found in the group and in the speaker's DM, never in another member's DM or another
    circle; the DM line only in that DM. Replies use it too."""
    out = await replay_lines(
        settings,
        [
            {"circle": "flat", "members": ["ines", "omar"]},
            {"circle": "choir", "members": ["ines", "tess"]},
            say("ines", "group:flat", "I'm lactose intolerant, just so you all know"),
            say("ines", "dm:ines", "my bike is in the repair shop until Friday"),
            {"clock": "+2m"},
            probe("ines", "dm:ines", "am I lactose intolerant?"),
            probe("omar", "group:flat", "is Ines lactose intolerant?"),
            probe("omar", "dm:omar", "is Ines lactose intolerant?"),
            probe("tess", "group:choir", "is Ines lactose intolerant?"),
            probe("ines", "dm:ines", "where is my bike?"),
            probe("ines", "group:flat", "where is my bike?"),
            say("ines", "dm:ines", "am I lactose intolerant?"),
            {"dump": "all"},
        ],
        tmp_path / "minutes",
    )
    own_dm, group, other_dm, other_circle, bike_dm, bike_group = probes(out)

    def found(p: dict[str, Any], words: str) -> bool:
        return any(words in m["content"] for m in p["memories"]) and words in p["context"]

    assert found(own_dm, "lactose intolerant") and found(group, "lactose intolerant")
    assert found(bike_dm, "repair shop")
    for p in (other_dm, other_circle, bike_group):
        assert p["retrieved"] and p["memories"] == [] and p["context"] == "", p
    assert "lactose intolerant" in replies(out)[-1]["text"]
    assert dumps(out)[-1]["facts"] == []  # found in the journal, before any formation


async def test_the_demo_shows_a_quiet_group_acknowledgement(
    settings: Settings, tmp_path: Path
) -> None:
    """``alfred demo`` replays the bundled scenario: its request in the group, made
    without addressing Alfred, gets a reaction and no message, and is found at once."""
    from bot.replay.demo import demo_script

    out = await replay_lines(settings, demo_script(), tmp_path / "demo")
    (reaction,) = _reactions(out)
    assert reaction == {"in": "group:fam", "to": "alice", "emoji": "👍"}
    after = out[out.index({"reaction": reaction}) + 1 :]
    assert not [o for o in after if "reply" in o]
    (last,) = probes(after)
    assert any("blue flowerpot" in m["content"] for m in last["memories"]), last


async def test_a_thread_memory_is_off_for_is_not_requested_again_and_again(
    settings: Settings, tmp_path: Path
) -> None:
    """With extraction off, its messages wait unformed; the every-minute sweep must not
    queue a formation for them at every drain (it would, forever)."""
    off = settings.model_copy(update={"memory_extraction": False})
    out = await replay_lines(
        off,
        [
            {"circle": "flat", "members": ["ines", "omar"]},
            say("omar", "group:flat", "My sister Leila lives in Rotterdam"),
            {"clock": "+15m"},
            {"jobs": "drain"},  # the cold session's own request (it closes the session)
            {"dump": "all"},
            {"clock": "+7h"},
            {"jobs": "drain"},
            {"clock": "+1m"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "off",
    )
    later = out[out.index({"dump": dumps(out)[0]}) :]
    assert [o for o in later if "job" in o] == []
    assert not any(m["formed"] for m in dumps(out)[-1]["messages"])
