""" "What do you remember about me/us?" lists what was said here that formation has not
reached yet, quoted and attributed, through the same privacy filter as everything else:
a replay tries to leak each DM line into the group and into the other member's DM."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import Settings
from tests.helpers.replay import replay_lines, reply_texts, say

SAID = [
    {"circle": "fam", "members": ["alice", "bob"]},
    say("alice", "group:fam", "hi everyone!"),  # small talk: not listed
    say("alice", "group:fam", "I love spicy ramen"),
    say("bob", "group:fam", "we're out of olive oil"),
    say("bob", "dm:bob", "I'm planning to propose to Alice in June"),
    say("alice", "dm:alice", "I'm thinking about quitting my job"),
]
ASKED = [
    say("alice", "group:fam", "@alfred what do you remember about me?"),
    say("alice", "group:fam", "@alfred what do you remember about us?"),
    say("bob", "group:fam", "@alfred what do you remember about us?"),
    say("alice", "dm:alice", "what do you remember about me?"),
    say("bob", "dm:bob", "what do you remember about me?"),
]
PROPOSAL, QUITTING = "propose", "quitting"


async def test_lines_not_filed_yet_are_listed_where_they_are_visible(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(settings, [*SAID, *ASKED], tmp_path / "p")
    alice_me, alice_us, bob_us, alice_dm, bob_dm = reply_texts(out)[-5:]
    assert alice_me.endswith('Said recently, not filed yet:\n- You: "I love spicy ramen"')
    assert "olive" not in alice_me  # Bob's, not about Alice
    assert alice_us.endswith(
        'Said recently, not filed yet:\n- You: "I love spicy ramen"\n'
        '- Bob: "we\'re out of olive oil"'
    ), alice_us
    assert (
        '- Alice: "I love spicy ramen"' in bob_us and '- You: "we\'re out of olive oil"' in bob_us
    )
    assert f'- You: "I\'m thinking about {QUITTING} my job"' in alice_dm, alice_dm
    assert f'- You: "I\'m planning to {PROPOSAL} to Alice in June"' in bob_dm, bob_dm
    # Each DM line reaches neither the group nor the other member's DM.
    for text in (alice_me, alice_us, bob_us, bob_dm):
        assert QUITTING not in text, text
    for text in (alice_me, alice_us, bob_us, alice_dm):
        assert PROPOSAL not in text, text


async def test_once_formed_a_line_is_a_memory_and_no_longer_pending(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [*SAID, {"clock": "+7h"}, {"jobs": "drain"}, ASKED[0]],
        tmp_path / "f",
    )
    (recall,) = reply_texts(out)[-1:]
    assert "- Alice loves spicy ramen" in recall, recall
    assert "not filed yet" not in recall and '"I love spicy ramen"' not in recall, recall
