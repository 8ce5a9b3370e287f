"""Formation step 2 without a model: ADD / UPDATE / NONE against similar facts.

The rules, per new fact, over its candidates (most similar first):

1. a candidate with the same normalised text → NONE (already known);
2. a candidate that fills the same slot (:mod:`.slots`) with a contradicting value
   ("Alice likes coffee" → "Alice dislikes coffee", "… sister's name is Jane" → "… is
   Anna") → UPDATE with ``contradiction=True``: the old version is kept as history;
3. same slot, same polarity, other words ("likes" → "loves") → UPDATE, no contradiction;
4. same slot and value → NONE;
5. a candidate with similarity ≥ 0.95 → NONE (a near-identical wording), unless the two
   fill one slot with different values ("a meeting on Wednesday", "a meeting on Thursday");
6. otherwise → ADD.

Slots are checked before the 0.95 rule on purpose: "likes X" and "dislikes X" embed almost
identically and must not be dropped as duplicates. DELETE is never chosen: a negation
("Alice is no longer vegetarian") is stored as an UPDATE, so the history shows what changed.
Only candidates at or above the candidate similarity (0.7) are considered, and those that
fill the same single-valued slot (a new city for "lives in") whatever their similarity.
"""

from __future__ import annotations

from typing import Final

from memory.constants import FACT_MAX_WORDS, UPDATE_CANDIDATE_SIMILARITY
from memory.prompts.decide_updates import (
    CandidateFact,
    DecideUpdatesContext,
    UpdateDecision,
    UpdateDecisions,
)
from memory.rules.language import clip_words, norm_key
from memory.rules.slots import other_value, parse_slot, relate, shares_slot, with_its_day

#: Above this, two facts are the same fact in other words.
NEAR_IDENTICAL: Final = 0.95


def decide_updates(ctx: DecideUpdatesContext) -> UpdateDecisions:
    """One decision per new fact, in order."""
    return UpdateDecisions(
        decisions=[_decide(i, fact, ctx.candidates) for i, fact in enumerate(ctx.new_facts)]
    )


def _decide(index: int, fact: str, candidates: list[CandidateFact]) -> UpdateDecision:
    mine = sorted(
        (
            c
            for c in candidates
            if c.new_index == index
            and (c.similarity >= UPDATE_CANDIDATE_SIMILARITY or shares_slot(fact, c.content))
        ),
        key=lambda c: -c.similarity,
    )
    key = norm_key(fact)
    for candidate in mine:
        if norm_key(candidate.content) == key:
            return UpdateDecision(new_index=index, action="NONE", target_id=candidate.id)
    slot = parse_slot(fact)
    # Each candidate's slot, read once for both passes (none to read without the fact's).
    read = [(c, parse_slot(c.content) if slot is not None else None) for c in mine]
    for candidate, old in read:
        relation = relate(slot, old) if slot is not None and old is not None else None
        if relation == "same":
            return UpdateDecision(new_index=index, action="NONE", target_id=candidate.id)
        if relation is not None:
            return UpdateDecision(
                new_index=index,
                action="UPDATE",
                target_id=candidate.id,
                content=clip_words(with_its_day(fact, candidate.content), FACT_MAX_WORDS),
                contradiction=relation == "contradicts",
            )
    for candidate, old in read:
        two_values = slot is not None and old is not None and other_value(slot, old)
        if candidate.similarity >= NEAR_IDENTICAL and not two_values:
            return UpdateDecision(new_index=index, action="NONE", target_id=candidate.id)
    return UpdateDecision(new_index=index, action="ADD")
