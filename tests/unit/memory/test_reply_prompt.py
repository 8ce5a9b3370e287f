"""What the chat model is told: the honesty the offline rules keep must hold with a real
model too, so the system prompt says it."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.models import ThreadKind
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
