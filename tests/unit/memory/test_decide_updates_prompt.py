"""What the update decision tells a real model: explicit facts replace what they change,
and a later statement of the same conversation wins over an earlier one."""

from __future__ import annotations

from memory.prompts.decide_updates import DECIDE_UPDATES, CandidateFact, DecideUpdatesContext
from memory.rules.tasks.decide_updates import decide_updates


def _ctx(*, explicit: bool) -> DecideUpdatesContext:
    return DecideUpdatesContext(
        new_facts=["Ann lives in Tromso"],
        candidates=[
            CandidateFact(
                id="new:0", content="Ann lives in Oslo", similarity=0.6, new_index=0, earlier=True
            )
        ],
        explicit=explicit,
    )


def test_the_prompt_says_explicit_facts_replace_and_the_later_message_wins() -> None:
    system, user = (m.content for m in DECIDE_UPDATES.build(_ctx(explicit=True)))
    assert "the later message wins" in " ".join(system.split())
    assert "never an ADD" in system
    assert "An event moved or called off" in " ".join(system.split())
    assert "told me these new facts themselves" in user
    assert "existing new:0 (similarity 0.60, earlier): Ann lives in Oslo" in user
    _, plain = (m.content for m in DECIDE_UPDATES.build(_ctx(explicit=False)))
    assert "themselves" not in plain


def test_the_offline_rules_replace_the_same_slot_below_the_candidate_similarity() -> None:
    (decision,) = decide_updates(_ctx(explicit=True)).decisions
    assert decision.action == "UPDATE" and decision.target_id == "new:0"
    assert decision.contradiction
