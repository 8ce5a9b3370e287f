"""What the chat model is told: the honesty the offline rules keep must hold with a real
model too, so the system prompt says it."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.models import ThreadKind
from memory.prompts.common import Person
from memory.prompts.reply import ReplyContext, system_prompt


def _prompt(always: str = "") -> str:
    ctx = ReplyContext(
        speaker_id="u1",
        speaker_name="Nora",
        thread_kind=ThreadKind.DM,
        text="ok thanks",
        now=datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        always=always,
    )
    return system_prompt(ctx)


def test_the_model_is_told_it_stores_nothing_and_not_to_claim_it() -> None:
    prompt = _prompt()
    assert "never say you have noted, saved or will remember" in prompt
    assert "acknowledgement" in prompt


def test_standing_instructions_reach_the_model_with_the_rule_to_follow_them() -> None:
    prompt = _prompt('## What you keep in mind\n- Nora asked me: "no emojis"')
    assert 'Nora asked me: "no emojis"' in prompt
    assert "Standing instructions" in prompt and "apply to every reply" in prompt


def _group_prompt(facts_block: str = "") -> str:
    ctx = ReplyContext(
        speaker_id="u1",
        speaker_name="Nora",
        thread_kind=ThreadKind.GROUP,
        people=[Person(id="u1", name="Nora"), Person(id="u2", name="Omar")],
        text="any ideas for dinner with Omar tonight?",
        now=datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        facts_block=facts_block,
    )
    return system_prompt(ctx)


def test_in_the_group_the_model_is_asked_to_offer_partner_context_and_say_whose_it_is() -> None:
    """Seed 004 §18.2: a partner's memory marked with their name is offered when it helps,
    attributed to them, never as the speaker's."""
    prompt = _group_prompt("## What you remember\n**Facts:**\n- Omar is vegetarian (from Omar)")
    assert "- Omar is vegetarian (from Omar)" in prompt
    assert "## Partner context" in prompt
    assert '"(from Name)" or "[Name]"' in prompt
    assert "offer it without being asked" in prompt
    assert "always say whose it is" in prompt
    assert "Never present a partner's memory as Nora's" in prompt
    assert 'as theirs ("Bob mentioned …")' in prompt  # the citing instructions agree


def test_a_dm_prompt_has_no_partner_context() -> None:
    assert "Partner context" not in _prompt()
