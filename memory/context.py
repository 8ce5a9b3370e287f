"""The memory text that enters the system prompt: always-in-context notes and facts.

Facts are grouped by category (facts, people, current context) and a fact that belongs
to another member is marked with their name, so the model can say "Bob mentioned …"
rather than presenting it as the speaker's own. Only what retrieval returned for this
viewer ever reaches here, and everything passes the visibility check once more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory.models import Category, Viewer
from memory.privacy import is_visible
from memory.search.results import ScoredFact

HEADINGS = {
    Category.FACT: "Facts",
    Category.RELATIONSHIP: "People",
    Category.CONTEXT: "Current context",
}

CITING_INSTRUCTIONS = (
    'When you use one of these memories, cite it naturally ("I remember you mentioned …"), '
    'and one marked with someone\'s name as theirs ("Bob mentioned …"), never as the '
    "speaker's. "
    "If you are unsure about a memory, ask. If something new conflicts with a memory, ask "
    'whether it has changed ("I thought you were vegetarian — has that changed?").'
)


def owner_note(fact_owner: str | None, viewer: Viewer, name_of: Callable[[str], str]) -> str:
    """``" (from Bob)"`` for another member's memory, ``""`` for the viewer's or the circle's."""
    if fact_owner is None or fact_owner == viewer.user_id:
        return ""
    return f" (from {name_of(fact_owner)})"


def said_by(author: str | None, viewer: Viewer, name_of: Callable[[str], str]) -> str:
    """Who said a quoted line, as the viewer reads it: "You", a member's name, or
    "Someone here" for a line of no one member."""
    if author is None:
        return "Someone here"
    return "You" if author == viewer.user_id else name_of(author)


def fact_block(
    facts: Sequence[ScoredFact],
    viewer: Viewer,
    name_of: Callable[[str], str],
    *,
    heading: str = "What you remember",
) -> str:
    """The retrieved facts as a prompt section, grouped by category; empty if none."""
    shown = [f for f in facts if is_visible(f.fact.partition, viewer)]
    if not shown:
        return ""
    lines = [f"## {heading}"]
    for category, title in HEADINGS.items():
        group = [f for f in shown if f.fact.category is category]
        if not group:
            continue
        lines.append(f"**{title}:**")
        for item in group:
            owner = item.fact.partition.owner_user_id
            if item.fact.said:
                lines.append(f'- {said_by(owner, viewer, name_of)} said: "{item.fact.content}"')
                continue
            lines.append(f"- {item.fact.content}{owner_note(owner, viewer, name_of)}")
    return "\n".join(lines)
