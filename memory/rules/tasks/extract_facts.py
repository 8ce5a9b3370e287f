"""Formation step 1 without a model: facts from the user lines, by rules.

Per user line (agent and tool lines are ignored: the offline provider cannot tell whether a
user confirmed them, and seed 002 trusts them least):

1. a line asking to forget something teaches nothing;
2. an explicit "remember that …" payload becomes a fact (importance at least 7);
3. a correction's statement becomes a fact (importance at least 7);
4. every clause of every statement sentence goes through :mod:`.statements`.

Explicit payloads and corrections that no statement rule understands are still kept,
rewritten to third person, because the user asked; unprompted sentences are kept only when
a rule matches. Non-English lines give nothing ("never garbage"). In a group, a "we/our"
fact is about the circle; in a DM never (DESIGN.md §3).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from memory.constants import FACT_MAX_WORDS
from memory.models import Category, Role, ThreadKind
from memory.prompts.common import JournalLine
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts, ExtractFactsContext
from memory.rules.intents.correct import detect_correction
from memory.rules.intents.forget import detect_forget
from memory.rules.intents.reference import detect_ambiguous_reference
from memory.rules.intents.remember import detect_remember
from memory.rules.language import (
    clip_words,
    is_latin,
    looks_english,
    norm_key,
    strip_end,
)
from memory.rules.person import Voice, uses_group
from memory.rules.statements import classify, clauses, match_statement, only_asks, render
from memory.rules.text import clean_text, split_sentences

#: Formation reads at most this much of one message: facts come early, and rules on a
#: pasted 100 KB log would cost time and find nothing atomic.
MAX_LINE_CHARS: Final = 20_000
#: Something the user explicitly asked to keep matters at least this much.
EXPLICIT_MIN_IMPORTANCE: Final = 7

#: (content, category, importance, about the group?)
_Found = tuple[str, Category, int, bool]


def extract_facts(ctx: ExtractFactsContext) -> ExtractedFacts:
    """The facts of a conversation, deduplicated, in conversation order."""
    found: dict[tuple[str | None, str, str], ExtractedFact] = {}
    for line in ctx.lines:
        if line.role is not Role.USER:
            continue
        for fact in _line_facts(line, ctx):
            # Per speaker and scope: the same words from two people are two partitions.
            key = (fact.speaker_id, fact.about, norm_key(fact.content))
            if key in found:
                _merge(found[key], fact)
            else:
                found[key] = fact
    return ExtractedFacts(facts=list(found.values()))


def _merge(kept: ExtractedFact, fact: ExtractedFact) -> None:
    for message_id in fact.source_message_ids:
        if message_id not in kept.source_message_ids:
            kept.source_message_ids.append(message_id)
    kept.importance = max(kept.importance, fact.importance)


def _speaker(line: JournalLine, ctx: ExtractFactsContext) -> tuple[str | None, str | None]:
    """(speaker id, speaker name); a DM's unnamed speaker is its owner.

    The name is the line's, else the one ``ctx.people`` gives; with neither, the name is
    None and the line is skipped: a fact about "u-123" would be garbage.
    """
    speaker_id = line.speaker_id
    if speaker_id is None and ctx.thread_kind is ThreadKind.DM:
        speaker_id = ctx.thread_owner_id
    name = line.speaker_name
    if not name:
        name = next((p.name for p in ctx.people if p.id == speaker_id and p.name), None)
    return speaker_id, name or None


def _line_facts(line: JournalLine, ctx: ExtractFactsContext) -> list[ExtractedFact]:
    speaker_id, name = _speaker(line, ctx)
    text = clean_text(line.text, limit=MAX_LINE_CHARS)
    # Latin script is the gate; the rules themselves only understand English.
    if name is None or not is_latin(text) or detect_forget(text) is not None:
        return []
    voice = Voice.for_speaker(name, ctx.thread_kind, ctx.people)
    # "Tomorrow" and "on Friday" mean days from when the line was said, not from when
    # formation reads it (hours later, or the next day).
    said_at = line.said_at(ctx.now)
    found: list[tuple[str, _Found]] = []
    for source in _explicit_statements(text):
        found.extend((source, item) for item in _explicit_facts(source, voice, said_at))
    for sentence in split_sentences(text):
        if only_asks(sentence):
            continue
        for clause in clauses(sentence):
            statement = match_statement(clause, voice, said_at)
            if statement is not None:
                found.append(
                    (
                        clause,
                        (
                            statement.content,
                            statement.category,
                            statement.importance,
                            statement.about_group,
                        ),
                    )
                )
    return [_to_fact(source, item, line, speaker_id, ctx) for source, item in found]


def _to_fact(
    source: str,
    found: _Found,
    line: JournalLine,
    speaker_id: str | None,
    ctx: ExtractFactsContext,
) -> ExtractedFact:
    """The response object; ``source`` (the speaker's words) is checked for ambiguity."""
    content, category, importance, about_group = found
    group = ctx.thread_kind is ThreadKind.GROUP
    about: Literal["speaker", "circle"] = "circle" if group and about_group else "speaker"
    return ExtractedFact(
        content=content,
        category=category,
        importance=importance,
        about=about,
        speaker_id=speaker_id,
        source_message_ids=[line.message_id],
        ambiguous_reference=detect_ambiguous_reference(source, ctx.thread_kind),
    )


def _explicit_statements(text: str) -> list[str]:
    """What the user explicitly asked to keep, or corrected, in their own words."""
    out: list[str] = []
    remember = detect_remember(text)
    if remember is not None:
        out.append(remember.payload)
    correction = detect_correction(text)
    if correction is not None and correction.statement:
        out.append(correction.statement)
    return out


def _explicit_facts(text: str, voice: Voice, now: datetime) -> list[_Found]:
    """Facts for an explicit payload or correction: by rule where one fits, else the whole
    statement rewritten to third person (the user asked for it to be kept)."""
    found: list[_Found] = []
    for clause in clauses(text):
        statement = match_statement(clause, voice, now)
        if statement is not None:
            importance = max(statement.importance, EXPLICIT_MIN_IMPORTANCE)
            found.append((statement.content, statement.category, importance, statement.about_group))
    if found:
        return found
    cleaned = strip_end(text)
    if not is_latin(cleaned) or not (looks_english(cleaned) or cleaned[:1].isupper()):
        return []
    content = clip_words(render(cleaned, voice, now), FACT_MAX_WORDS)
    if not any(c.isalpha() for c in content):
        return []
    category, importance = classify(cleaned)
    return [(content, category, max(importance, EXPLICIT_MIN_IMPORTANCE), uses_group(cleaned))]
