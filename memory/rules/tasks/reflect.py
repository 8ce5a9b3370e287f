"""Formation step 3 without a model: directives, group plans and an extractive summary.

* **user** reflections: each directive a user gives (:func:`memory.rules.intents.detect_directive`)
  becomes a note about that user ("Alice wants Alfred to reply in Spanish.").
* **circle** reflections, in a group only: the group's ongoing plans ("we're organising a
  dinner for Friday" → "Alice and Bob are organising a dinner for Friday."). Plans are
  always-in-context material (seed 002's own example), so they are kept even when the same
  sentence also became a fact. A DM never writes one (DESIGN.md §3).
* **session** reflections: a rolling summary made of the user's most informative
  sentences, scored by stemmed content words that are new with respect to the session's
  memory, the other scopes' recent notes, the facts just formed and the sentences already
  picked; at most :data:`MAX_SESSION_NOTES` per call, each at most 35 words. A sentence
  needs :data:`MIN_NOVEL_TERMS` new content words, so greetings and "ok thanks" never
  qualify.

Everything is extractive: the notes are the users' own sentences in third person (or
quoted, when not English), so nothing is invented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memory.constants import REFLECTION_MAX_WORDS
from memory.models import ReflectionScope, Role, ThreadKind
from memory.prompts.common import JournalLine
from memory.prompts.reflect import ExtractedReflection, ReflectContext, Reflections, ScopeMemory
from memory.rules.addressing import strip_addressing
from memory.rules.dates import resolve_relative_dates
from memory.rules.intents.directive import detect_directive
from memory.rules.intents.forget import detect_forget
from memory.rules.intents.kinds import DirectiveIntent
from memory.rules.intents.recall import detect_recall
from memory.rules.language import (
    capitalise,
    clip_words,
    content_terms,
    end_sentence,
    looks_english,
    norm_key,
    strip_end,
)
from memory.rules.person import Voice, only_introduces, to_third_person
from memory.rules.statements import clauses, is_group_plan
from memory.rules.text import clean_text, split_sentences

MAX_SESSION_NOTES: Final = 3
MAX_CIRCLE_NOTES: Final = 3
MIN_NOVEL_TERMS: Final = 3
#: A line longer than this is read only up to here (a pasted document is not a summary).
MAX_LINE_CHARS: Final = 20_000
_SHORT_WORDS: Final = frozenset(
    {"short", "shorter", "brief", "briefer", "concise", "succinct", "terse", "detailed", "long"}
)


@dataclass(frozen=True)
class _Sentence:
    order: int
    speaker_id: str | None
    voice: Voice
    text: str
    #: When it was said, on its speaker's clock: "tomorrow" in a note is counted from it.
    at: datetime


def reflect(ctx: ReflectContext) -> Reflections:
    """Directive, circle-plan and session-summary reflections for one conversation."""
    sentences = list(_user_sentences(ctx))
    out: list[ExtractedReflection] = []
    used: set[int] = set()
    seen_user = _known(ctx.user)
    for sentence in sentences:
        directive = detect_directive(sentence.text)
        if directive is None:
            continue
        used.add(sentence.order)
        note = render_directive(directive, sentence.voice)
        if norm_key(note) not in seen_user:
            seen_user.add(norm_key(note))
            out.append(
                ExtractedReflection(
                    scope=ReflectionScope.USER, content=note, about_user_id=sentence.speaker_id
                )
            )
    if ctx.thread_kind is ThreadKind.GROUP:
        out.extend(_circle_notes(sentences, ctx, used))
    out.extend(_session_notes(sentences, ctx, used, out))
    return Reflections(reflections=out)


def _user_sentences(ctx: ReflectContext) -> list[_Sentence]:
    sentences: list[_Sentence] = []
    for line in ctx.lines:
        if line.role is not Role.USER:
            continue
        name = _name(line, ctx)
        if name is None:
            continue
        text = clean_text(line.text, limit=MAX_LINE_CHARS)
        if not text or detect_forget(text) is not None or detect_recall(text) is not None:
            continue
        voice = Voice.for_speaker(name, ctx.thread_kind, ctx.people)
        speaker_id = line.speaker_id or (
            ctx.thread_owner_id if ctx.thread_kind is ThreadKind.DM else None
        )
        at = line.said_at(ctx.now)
        for sentence in split_sentences(text):
            sentences.append(_Sentence(len(sentences), speaker_id, voice, sentence, at))
    return sentences


def _name(line: JournalLine, ctx: ReflectContext) -> str | None:
    """The speaker's name (the line's, else from ``ctx.people``); None skips the line."""
    if line.speaker_name:
        return line.speaker_name
    speaker_id = line.speaker_id
    if speaker_id is None and ctx.thread_kind is ThreadKind.DM:
        speaker_id = ctx.thread_owner_id
    return next((p.name for p in ctx.people if p.id == speaker_id and p.name), None)


def render_directive(directive: DirectiveIntent, voice: Voice) -> str:
    """A directive as a note about the user, naming them instead of "me"."""
    name = voice.name
    if directive.topic == "language" and directive.value:
        return f"{name} wants Alfred to reply in {directive.value}."
    if directive.topic == "name" and directive.value:
        return f"{name} wants to be called {directive.value}."
    value = (directive.value or "").lower()
    if directive.topic == "length" and value in _SHORT_WORDS:
        return f"{name} wants {value} answers from Alfred."
    instruction = strip_end(directive.instruction)
    instruction = re.sub(r"\b(?:my|mine)\b", f"{name}'s", instruction, flags=re.IGNORECASE)
    instruction = re.sub(r"\b(?:me|myself)\b", name, instruction, flags=re.IGNORECASE)
    note = f"{name}'s instruction to Alfred: {instruction[:1].lower()}{instruction[1:]}."
    return clip_words(note, REFLECTION_MAX_WORDS)


def _known(memory: ScopeMemory) -> set[str]:
    keys = {norm_key(r) for r in memory.recent}
    if memory.blob:
        keys |= {norm_key(s) for s in split_sentences(memory.blob)}
    return keys


def _terms_of(texts: list[str]) -> set[str]:
    terms: set[str] = set()
    for text in texts:
        terms |= content_terms(text)
    return terms


def _circle_notes(
    sentences: list[_Sentence], ctx: ReflectContext, used: set[int]
) -> list[ExtractedReflection]:
    known = _known(ctx.circle)
    seen_terms = _terms_of([*ctx.circle.recent, ctx.circle.blob or ""])
    notes: list[ExtractedReflection] = []
    for sentence in sentences:
        if len(notes) >= MAX_CIRCLE_NOTES:
            break
        if sentence.order in used or not looks_english(sentence.text):
            continue
        for clause in clauses(sentence.text):
            if not is_group_plan(clause):
                continue
            # A note is kept in mind for days: "tomorrow" is written as the day it means.
            dated = resolve_relative_dates(clause, sentence.at)
            note = end_sentence(
                clip_words(capitalise(to_third_person(dated, sentence.voice)), REFLECTION_MAX_WORDS)
            )
            terms = content_terms(clause)
            if norm_key(note) in known or (terms and terms <= seen_terms):
                continue
            known.add(norm_key(note))
            seen_terms |= terms
            used.add(sentence.order)
            notes.append(ExtractedReflection(scope=ReflectionScope.CIRCLE, content=note))
            break
    return notes


def _session_notes(
    sentences: list[_Sentence],
    ctx: ReflectContext,
    used: set[int],
    earlier: list[ExtractedReflection],
) -> list[ExtractedReflection]:
    seen = _terms_of(
        [
            ctx.session.blob or "",
            *ctx.session.recent,
            *ctx.user.recent,
            *ctx.circle.recent,
            *ctx.new_facts,
            *(r.content for r in earlier),
        ]
    )
    known = _known(ctx.session)
    scored: list[tuple[int, int, _Sentence]] = []
    for sentence in sentences:
        if sentence.order in used:
            continue
        novel = content_terms(sentence.text) - seen
        if len(novel) >= MIN_NOVEL_TERMS:
            scored.append((len(novel), sentence.order, sentence))
    # Greedy: the most novel first (newer wins ties), re-scored against what is picked.
    picked: list[_Sentence] = []
    for _, _, sentence in sorted(scored, key=lambda item: (-item[0], -item[1])):
        if len(picked) >= MAX_SESSION_NOTES:
            break
        novel = content_terms(sentence.text) - seen
        if len(novel) < MIN_NOVEL_TERMS:
            continue
        seen |= novel
        picked.append(sentence)
    notes: list[ExtractedReflection] = []
    for sentence in sorted(picked, key=lambda s: s.order):
        note = summary_note(sentence.text, sentence.voice, sentence.at)
        if note and norm_key(note) not in known:
            known.add(norm_key(note))
            notes.append(ExtractedReflection(scope=ReflectionScope.SESSION, content=note))
    return notes


def summary_note(sentence: str, voice: Voice, at: datetime | None = None) -> str:
    """One sentence of the rolling summary, at most 35 words, attributed to its speaker,
    without the words that addressed Alfred ("@alfred", "Alfred,"): the note says what
    was asked or said, not whom it was said to. A statement's "tomorrow" is written as
    the day it means, counted from ``at`` (when it was said); a question is quoted as
    asked."""
    text = " ".join(strip_addressing(sentence).split())
    if not text or only_introduces(text, voice):
        return ""
    if not looks_english(text):
        note = f"{voice.name} wrote: {text}"
    elif text.rstrip().endswith("?"):
        note = f"{voice.name} asked: {text}"
    else:
        dated = resolve_relative_dates(text, at) if at is not None else text
        note = capitalise(to_third_person(dated, voice))
    return end_sentence(clip_words(note, REFLECTION_MAX_WORDS))
