"""Formation step 3: reflections, hierarchical circle → user → session, aware of memory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory.llm import ModelTier, PromptMessage, ResponseModel, Task
from memory.models import ReflectionScope
from memory.prompts.common import ConversationContext, render_conversation, render_people


class ScopeMemory(BaseModel):
    """The current always-in-context memory of one scope: its blob and recent notes."""

    blob: str | None = None
    recent: list[str] = Field(default_factory=list)


class ReflectContext(ConversationContext):
    new_facts: list[str] = Field(default_factory=list)
    circle: ScopeMemory = Field(default_factory=ScopeMemory)
    user: ScopeMemory = Field(default_factory=ScopeMemory)
    session: ScopeMemory = Field(default_factory=ScopeMemory)


class ExtractedReflection(ResponseModel):
    scope: ReflectionScope
    content: str = Field(description="an interpreted note, at most 35 words")
    about_user_id: str | None = Field(
        default=None, description="for user reflections: whose preference or directive"
    )


class Reflections(ResponseModel):
    reflections: list[ExtractedReflection]


SYSTEM = """\
You update the always-in-context memory of Alfred, an assistant for people who share a \
life. Facts were already extracted; do not repeat them. Write reflections: interpreted \
notes that change how Alfred should act. Work in this order, each level holding only \
what the levels before it do not:
1. circle (only in a group thread): plans and situations of the whole group ("We are \
organising a dinner for Friday"), shared conventions.
2. user: one person's preferences and directives for Alfred ("Alice wants short \
answers", "Bob prefers Spanish"); set about_user_id.
3. session: a rolling summary of what this conversation is doing right now, its open \
questions and next steps.
Each reflection is at most 35 words. Skip anything already in the current memory. In a \
DM thread never write circle reflections. A note is read for days and weeks: a day said \
relative to its line ("tomorrow", "on Friday", "next week") is written as the date it \
means, counted from when that line was said (each line shows its time); "next Friday" \
keeps its words and the day of its line ("next Friday (said on Monday, March 2)"). \
Return {"reflections": []} when nothing new.
Answer with JSON only: {"reflections": [{"scope", "content", "about_user_id"}]}."""


def _scope(name: str, mem: ScopeMemory) -> str:
    recent = "\n".join(f"- {r}" for r in mem.recent) or "(none)"
    return f"<{name}_memory>\n{mem.blob or '(empty)'}\nRecent:\n{recent}\n</{name}_memory>"


def build(ctx: ReflectContext) -> list[PromptMessage]:
    facts = "\n".join(f"- {f}" for f in ctx.new_facts) or "(none)"
    user = "\n\n".join(
        [
            f"Thread: {ctx.thread_kind.value}. Today: {ctx.now:%Y-%m-%d}.",
            f"People: {render_people(ctx.people)}",
            _scope("circle", ctx.circle),
            _scope("user", ctx.user),
            _scope("session", ctx.session),
            f"<newly_formed_facts>\n{facts}\n</newly_formed_facts>",
            f"<conversation>\n{render_conversation(ctx.lines)}\n</conversation>",
        ]
    )
    return [PromptMessage(role="system", content=SYSTEM), PromptMessage(role="user", content=user)]


REFLECT: Task[ReflectContext, Reflections] = Task(
    "reflect", ModelTier.SLOW, ReflectContext, Reflections, build
)
