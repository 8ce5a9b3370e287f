"""Consolidation: merge buffered reflections into one word-limited blob per partition."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory.llm import ModelTier, PromptMessage, ResponseModel, Task
from memory.models import ReflectionScope


class ConsolidateContext(BaseModel):
    scope: ReflectionScope
    current_blob: str | None = None
    reflections: list[str]
    word_limit: int


class ConsolidatedBlob(ResponseModel):
    content: str = Field(description="the merged memory, within the word limit")


SYSTEM = """\
You maintain one compact memory note. Merge the current note with the new reflections \
into a single note: keep what is still true, let newer reflections override older ones, \
drop what is finished or contradicted, and keep names and dates exact. Stay within the \
word limit. Write plain sentences, no headings. Answer with JSON only: {"content": "…"}."""


def build(ctx: ConsolidateContext) -> list[PromptMessage]:
    new = "\n".join(f"- {r}" for r in ctx.reflections)
    user = (
        f"Scope: {ctx.scope.value}. Word limit: {ctx.word_limit}.\n\n"
        f"<current_note>\n{ctx.current_blob or '(empty)'}\n</current_note>\n\n"
        f"<new_reflections>\n{new}\n</new_reflections>"
    )
    return [PromptMessage(role="system", content=SYSTEM), PromptMessage(role="user", content=user)]


CONSOLIDATE: Task[ConsolidateContext, ConsolidatedBlob] = Task(
    "consolidate", ModelTier.SLOW, ConsolidateContext, ConsolidatedBlob, build
)
