"""Formation step 2: ADD / UPDATE / DELETE / NONE against similar facts of the partition."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memory.llm import ModelTier, PromptMessage, ResponseModel, Task


class CandidateFact(BaseModel):
    """An existing fact similar (cosine ≥ 0.7) to a new one, in the same partition."""

    id: str
    content: str
    similarity: float
    new_index: int = Field(description="which new fact this candidate is similar to")
    #: Not stored yet: a new fact from an earlier message of the same conversation. A
    #: later message that changes it is the person correcting themselves.
    earlier: bool = False


class DecideUpdatesContext(BaseModel):
    new_facts: list[str]
    candidates: list[CandidateFact]
    #: The person has just told Alfred these facts themselves ("remember that …", a
    #: correction): a fact that changes an existing one replaces it, with no question.
    explicit: bool = False


class UpdateDecision(ResponseModel):
    new_index: int
    action: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    target_id: str | None = Field(default=None, description="the existing fact to update or delete")
    content: str | None = Field(
        default=None, description="for UPDATE: the merged wording, at most 30 words"
    )
    contradiction: bool = Field(
        default=False,
        description="the new fact contradicts the existing one (rather than refining it)",
    )


class UpdateDecisions(ResponseModel):
    decisions: list[UpdateDecision]


SYSTEM = """\
You keep a memory of facts free of duplicates and contradictions. For each new fact \
you see the existing facts that are similar to it. Decide one action per new fact:
- ADD: it is new information; keep it as a separate fact.
- UPDATE: it refines or corrects an existing fact; give target_id and the merged \
wording in content (at most 30 words, the newest information wins).
- DELETE: it says an existing fact is no longer true and nothing should replace it \
("I don't eat meat anymore" deletes "Bob loves steak"); give target_id.
- NONE: it is already known; nothing changes.
Set contradiction true when the new fact and the existing one cannot both be true \
(a changed preference, a new address, a different name); the old fact is kept as history.
A new value for the same thing ("Ann's sister is called Mia" after "Ann's sister is \
called Lea", "Ann drives a red Polo" after "Ann drives a blue Golf") is an UPDATE with \
contradiction true, never an ADD: only one value may stay current. An event moved or \
called off ("the review moved to Friday", "the plumber cancelled") is an UPDATE of the \
fact saying when it was, contradiction true, even when it names the event in fewer \
words. An existing fact \
marked "earlier" is from an earlier message of the same conversation: the later message \
wins (the person corrected themselves).
Answer with JSON only: {"decisions": [{"new_index", "action", "target_id", "content", \
"contradiction"}]}, one decision per new fact."""


def build(ctx: DecideUpdatesContext) -> list[PromptMessage]:
    lines = []
    if ctx.explicit:
        lines.append(
            "The person has just told me these new facts themselves: where one changes an "
            "existing fact, it replaces it (UPDATE)."
        )
    for i, fact in enumerate(ctx.new_facts):
        lines.append(f"New fact {i}: {fact}")
        for cand in (c for c in ctx.candidates if c.new_index == i):
            mark = ", earlier" if cand.earlier else ""
            lines.append(
                f"  existing {cand.id} (similarity {cand.similarity:.2f}{mark}): {cand.content}"
            )
    return [
        PromptMessage(role="system", content=SYSTEM),
        PromptMessage(role="user", content="\n".join(lines)),
    ]


DECIDE_UPDATES: Task[DecideUpdatesContext, UpdateDecisions] = Task(
    "decide_updates", ModelTier.FAST, DecideUpdatesContext, UpdateDecisions, build
)
