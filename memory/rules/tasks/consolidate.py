"""Consolidation without a model: an extractive merge, newest first, within the word limit.

The blob's sentences come first, then the new reflections in the order given (oldest to
newest). Walking from the newest back:

* a sentence whose normalised text was already kept is an older duplicate: dropped;
* a sentence whose slot (:mod:`.slots`) a newer sentence fills or contradicts is stale
  ("Alice wants Alfred to reply in Spanish." after "… in French."): dropped;
* sentences are kept while they fit the word limit; when the newest one alone is longer,
  it is cut at a word boundary.

The kept sentences are joined in their original order. With any non-blank input the result
is never empty.
"""

from __future__ import annotations

from memory.prompts.consolidate import ConsolidateContext, ConsolidatedBlob
from memory.rules.language import clip_words, end_sentence, norm_key, word_count
from memory.rules.slots import Slot, parse_slot, relate
from memory.rules.text import clean_text, split_sentences


def consolidate(ctx: ConsolidateContext) -> ConsolidatedBlob:
    """The merged note for one (scope, partition)."""
    limit = max(ctx.word_limit, 1)
    units = _sentences(ctx.current_blob or "")
    for reflection in ctx.reflections:
        units.extend(_sentences(reflection))
    kept_newest_first: list[str] = []
    keys: set[str] = set()
    slots: list[Slot] = []
    for unit in reversed(units):
        key = norm_key(unit)
        if not key or key in keys:
            continue
        slot = parse_slot(unit)
        if slot is not None and any(relate(newer, slot) is not None for newer in slots):
            continue
        keys.add(key)
        if slot is not None:
            slots.append(slot)
        kept_newest_first.append(unit)
    chosen: list[str] = []
    words = 0
    for unit in kept_newest_first:
        size = word_count(unit)
        if words + size <= limit:
            chosen.append(unit)
            words += size
        elif not chosen:
            chosen.append(clip_words(unit, limit))
            break
    return ConsolidatedBlob(content=" ".join(reversed(chosen)))


def _sentences(text: str) -> list[str]:
    cleaned = clean_text(text, limit=None)
    return [end_sentence(s) for s in split_sentences(cleaned) if any(c.isalnum() for c in s)]
