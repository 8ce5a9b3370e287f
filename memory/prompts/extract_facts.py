"""Formation step 1: atomic facts from the conversation (fast model, no memory context)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.llm import ModelTier, PromptMessage, ResponseModel, Task
from memory.models import Category
from memory.prompts.common import ConversationContext, render_conversation, render_people


class ExtractFactsContext(ConversationContext):
    """The conversation to extract from."""


class ExtractedFact(ResponseModel):
    """One fact the model found, with who it is about."""

    content: str = Field(description="an atomic, objective statement, at most 30 words")
    category: Category = Category.FACT
    importance: int = Field(default=5, ge=1, le=10)
    about: Literal["speaker", "circle"] = Field(
        default="speaker",
        description="speaker: about the person who said it; circle: about the whole group",
    )
    speaker_id: str | None = Field(default=None, description="id of the person who said it")
    source_message_ids: list[str] = Field(default_factory=list)
    ambiguous_reference: str | None = Field(
        default=None,
        description="in a group, a possessive like 'my mom' whose owner is unclear",
    )


class ExtractedFacts(ResponseModel):
    facts: list[ExtractedFact]


SYSTEM = """\
You extract long-term memories for Alfred, an assistant for people who share a life \
(a couple, a family, a small team). You read a conversation and write down the facts \
worth remembering for months: preferences, allergies, important dates, names of the \
people in their lives, jobs, plans with a date, ongoing situations.

Rules:
- Each fact is atomic, objective and stands alone: name the person ("Alice is allergic \
to peanuts"), never "I" or "the user". At most 30 words.
- category: "fact" for personal facts and preferences, "relationship" for people and \
connections, "context" for ongoing situations and plans.
- importance 1-10: 9-10 health and safety (allergies), key dates; 6-8 stable preferences, \
names of close people; 3-5 everything else worth keeping; do not return trivia.
- about: "circle" for what is said in the group about the whole group ("we", "our"), \
about someone named ("Sam is allergic to shellfish") or about a shared event ("the \
review is on Thursday"): any member may correct it; otherwise, and always in a DM, \
"speaker". speaker_id is the id of the person who said it.
- Lines weigh differently: trust user lines (weight 1.0) most; tool output (0.5) and \
the assistant's own words (0.2) only when a user confirms them.
- A day said relative to its line ("today", "tomorrow", "on Friday", "this Friday", "next \
week", "next month") is written as the date it means, counted from when that line was said \
(each line shows its time): "Bob's dentist appointment is on Friday, March 6", "Alice's \
mom is visiting the week of March 9". "Next Friday", which people read two ways, stays as \
said with the day of its line: "Bob flies to Rome next Friday (said on Monday, March 2)". \
Habits ("on Fridays") stay as said.
- Skip greetings, small talk, questions, hypotheticals and anything already resolved.
- When someone changes what they said earlier ("I work at the cinema" … "I mean the \
museum"), extract both statements, each with its own source_message_ids: the later \
message wins and the earlier is kept as history.
- In a group thread, when someone says "my mom" and it is not clear whose mother is \
meant, set ambiguous_reference to the phrase.
- Write facts in English even when the conversation is in another language.
- Return {"facts": []} when there is nothing worth remembering.
Answer with JSON only: {"facts": [{"content", "category", "importance", "about", \
"speaker_id", "source_message_ids", "ambiguous_reference"}]}."""


def build(ctx: ExtractFactsContext) -> list[PromptMessage]:
    user = (
        f"Thread: {ctx.thread_kind.value}. Today: {ctx.now:%Y-%m-%d}.\n"
        f"People: {render_people(ctx.people)}\n\n"
        f"<conversation>\n{render_conversation(ctx.lines)}\n</conversation>"
    )
    return [PromptMessage(role="system", content=SYSTEM), PromptMessage(role="user", content=user)]


EXTRACT_FACTS: Task[ExtractFactsContext, ExtractedFacts] = Task(
    "extract_facts", ModelTier.FAST, ExtractFactsContext, ExtractedFacts, build
)
