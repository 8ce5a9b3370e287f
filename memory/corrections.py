"""Corrections and new values that replace: exactly one value stays current.

When a person says something explicitly (remember, correct), what it gives a new value
for is retired at once, kept as history (invalidated, never deleted) and nobody is asked:
the person was explicit. Only a conflict the background finds may become a question.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import datetime

from memory.errors import Unavailable
from memory.formation_updates import similar_facts
from memory.llm import LLM, LLMOutputError
from memory.models import Fact
from memory.prompts.decide_updates import DECIDE_UPDATES, CandidateFact, DecideUpdatesContext
from memory.rules.intents import detect_correction
from memory.stores import FactStore

log = logging.getLogger(__name__)

#: Similar facts of the partition the update decision sees per explicit new fact.
SUPERSEDE_CANDIDATES = 3


async def supersede(
    facts: FactStore,
    llm: LLM,
    new: Sequence[Fact],
    *,
    reason: str,
    at: datetime,
    budget: float | None = None,
) -> list[Fact]:
    """Retire the current facts that ``new`` (just stated by the person, explicitly)
    gives another value for: each stays as history, invalidated, and exactly one
    value stays current. Nobody is asked: the person was explicit.

    The same update decision as formation's decides what is the same thing (the
    model, or the offline rules by slot), told that the facts are explicit; it runs
    only when a fact of the partition is a candidate (similar enough, or the same slot).
    ``budget`` bounds the model's time (the person is waiting: past it, nothing is
    replaced now, and formation reads the message later)."""
    candidates: list[CandidateFact] = []
    allowed: dict[int, dict[str, Fact]] = {}
    for i, fact in enumerate(new):
        if fact.embedding is None:
            continue
        others = [
            other
            for other in await facts.current_in_partition(fact.partition)
            if other.id != fact.id
        ]
        similar = [(s, f) for f, s in similar_facts(fact.embedding, others, fact.content)]
        allowed[i] = {f.id: f for _, f in similar}
        candidates += [
            CandidateFact(id=f.id, content=f.content, similarity=s, new_index=i) for s, f in similar
        ]
    if not candidates:
        return []
    if budget is not None and budget <= 0:
        log.warning("no time left of the explicit budget for the update decision, nothing replaced")
        return []
    ctx = DecideUpdatesContext(
        new_facts=[f.content for f in new], candidates=candidates, explicit=True
    )
    try:
        async with asyncio.timeout(budget):
            decisions = (await llm.run(DECIDE_UPDATES, ctx)).decisions
    except (LLMOutputError, Unavailable) as exc:
        log.warning("hot-path update decision failed, nothing replaced: %s", exc.one_line())
        return []
    except TimeoutError:
        log.warning("hot-path update decision took over %gs, nothing replaced", budget)
        return []
    replaced: list[Fact] = []
    for decision in decisions:
        target = allowed.get(decision.new_index, {}).get(decision.target_id or "")
        if target is None or decision.action not in ("UPDATE", "DELETE"):
            continue
        if await facts.invalidate(target.id, at=at, reason=reason):
            replaced.append(target)
    return replaced


_CLAUSE_BREAK = re.compile(
    r"[;,]\s+(?=(?:i|i'm|i've|my|we|we're|our|now)\b)|\s+but\s+(?:now\s*,?\s+)?", re.I
)


def split_correction(statement: str | None, negated: str | None) -> tuple[str | None, str | None]:
    """Separate what stopped being true from what is true now, in a sentence that says
    both ("I don't love Thai food anymore, I love Korean food now")."""
    if not statement:
        return statement, negated
    positive: list[str] = []
    for part in (p.strip() for p in _CLAUSE_BREAK.split(statement)):
        if not part:
            continue
        sub = detect_correction(part)
        if sub is not None and sub.negated:
            negated = negated or sub.negated
        else:
            positive.append(re.sub(r"\s+now$", "", part, flags=re.I))
    if not positive:
        return statement, negated
    return " ".join(positive), negated
