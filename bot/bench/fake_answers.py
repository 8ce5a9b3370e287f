"""What the fake OpenAI-compatible server answers: Alfred's JSON tasks read from their
prompts, and deterministic embeddings (:mod:`bot.bench.fake_openai` serves them).

Two sets of task answers, chosen by the marker in the task's system prompt:

* :data:`SIMPLE_RULES` (the tests' default): at most one fact, every new fact added,
  no reflections; small and predictable, so a test can say what was stored;
* :data:`SENSIBLE_RULES` (the benchmarks): what a sensible model would answer, so the
  formation pipeline does its real work (statements become up to three facts,
  near-duplicates are ``NONE``, one session note per batch).

Embeddings are either hash-seeded unit vectors (:func:`unit_vector`: the same text, the
same vector; different texts unrelated) or bag-of-words vectors (:func:`bag_of_words`:
texts that share words are similar, which makes the update step run as it does for
real). Token counts are estimated at four characters per token.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

#: ``prompt (the last user message) -> answer`` for one JSON task.
TaskRule = Callable[[str], Any]

_LINE = re.compile(
    r"^\[(?P<id>[^\]]+)\] \((?P<role>\w+), weight [\d.]+(?:, said [^)]*)?\) "
    r"(?P<who>[^:]+): (?P<text>.*)$"
)
_PERSON = re.compile(r"(?P<name>[^,()]+?) \(id (?P<id>[^)]+)\)")
_CANDIDATE = re.compile(r"^\s+existing (?P<id>\S+) \(similarity (?P<sim>[\d.]+)\)", re.M)
_NEW_FACT = re.compile(r"^New fact (\d+):", re.M)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --- embeddings -------------------------------------------------------------------------


def unit_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector for ``text`` (the same text, the same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    vector /= np.linalg.norm(vector) or 1.0
    return [float(x) for x in vector]


def bag_of_words(text: str, dimensions: int) -> list[float]:
    """A unit vector with one hashed dimension per word (deterministic)."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % dimensions] += 1.0
    norm = sum(x * x for x in vector) ** 0.5
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


# --- reading a formation prompt ---------------------------------------------------------


def prompt_lines(user: str) -> list[dict[str, str]]:
    """The journal lines of a formation prompt (``[id] (role, weight w) who: text``)."""
    return [m.groupdict() for raw in user.splitlines() if (m := _LINE.match(raw.strip()))]


def prompt_people(user: str) -> dict[str, str]:
    """Name → id from the prompt's ``People:`` line."""
    for raw in user.splitlines():
        if raw.startswith("People:"):
            return {m["name"].strip(): m["id"] for m in _PERSON.finditer(raw[7:])}
    return {}


def _statements(user: str, min_words: int) -> list[tuple[dict[str, str], str]]:
    """The user lines of at least ``min_words`` words that are no question, with their text."""
    found = []
    for line in prompt_lines(user):
        text = line["text"].strip()
        if line["role"] == "user" and len(text.split()) >= min_words and not text.endswith("?"):
            found.append((line, text))
    return found


def consolidated_answer(user: str) -> dict[str, Any]:
    """The consolidation task's answer: the current note and the new reflections, cut to
    the word limit."""
    limit = re.search(r"Word limit: (\d+)", user)
    current = re.search(r"<current_note>\n(.*?)\n</current_note>", user, re.S)
    new = re.search(r"<new_reflections>\n(.*?)\n</new_reflections>", user, re.S)
    parts = []
    if current and current.group(1).strip() != "(empty)":
        parts.append(current.group(1).strip())
    if new:
        parts += [r.removeprefix("- ").strip() for r in new.group(1).splitlines() if r.strip()]
    words = " ".join(parts).split()[: int(limit.group(1)) if limit else 200]
    return {"content": " ".join(words) or "Nothing to remember yet."}


# --- the simple answers (tests) ---------------------------------------------------------


def _one_fact(user: str) -> dict[str, Any]:
    """One fact from the first user line that is not a question, or none."""
    people = prompt_people(user)
    for line, text in _statements(user, 3)[:1]:
        who = line["who"].strip()
        words = text.split()[:24]
        return {
            "facts": [
                {
                    "content": f"{who} said: {' '.join(words)}",
                    "category": "fact",
                    "importance": 5,
                    "about": "speaker",
                    "speaker_id": people.get(who),
                    "source_message_ids": [line["id"]],
                    "ambiguous_reference": None,
                }
            ]
        }
    return {"facts": []}


def _decision(index: int, action: str) -> dict[str, Any]:
    """One decision with every key the strict schema requires (no target: ADD or NONE)."""
    return {
        "new_index": index,
        "action": action,
        "target_id": None,
        "content": None,
        "contradiction": False,
    }


def _add_all(user: str) -> dict[str, Any]:
    return {"decisions": [_decision(int(i), "ADD") for i in _NEW_FACT.findall(user)]}


SIMPLE_RULES: Mapping[str, TaskRule] = {
    '{"facts"': _one_fact,
    '{"decisions"': _add_all,
    '{"reflections"': lambda user: {"reflections": []},
    '{"content"': consolidated_answer,
}


# --- the sensible answers (benchmarks) --------------------------------------------------


def _facts(user: str) -> dict[str, Any]:
    """Up to three facts: user statements of four words or more (no questions)."""
    people = prompt_people(user)
    facts = []
    for line, text in _statements(user, 4)[:3]:
        who = line["who"].strip()
        circle = text.lower().startswith(("we ", "our "))
        facts.append(
            {
                "content": f"{who}: {' '.join(text.split()[:24])}",
                "category": "context" if circle else "fact",
                "importance": 6,
                "about": "circle" if circle else "speaker",
                "speaker_id": people.get(who),
                "source_message_ids": [line["id"]],
                "ambiguous_reference": None,
            }
        )
    return {"facts": facts}


def _decisions(user: str) -> dict[str, Any]:
    """NONE for a near-duplicate (similarity ≥ 0.95), ADD otherwise."""
    decisions = []
    for block in re.split(r"^(?=New fact \d+:)", user, flags=re.M):
        head = _NEW_FACT.match(block)
        if not head:
            continue
        best = max((float(m["sim"]) for m in _CANDIDATE.finditer(block)), default=0.0)
        decisions.append(_decision(int(head[1]), "NONE" if best >= 0.95 else "ADD"))
    return {"decisions": decisions}


def _reflections(user: str) -> dict[str, Any]:
    lines = [x for x in prompt_lines(user) if x["role"] == "user"]
    if not lines:
        return {"reflections": []}
    topics = sorted({w for x in lines for w in x["text"].split() if w.istitle()})[:6]
    about = ", ".join(topics) or "everyday plans"
    content = f"This conversation covers {about}."
    note = {"scope": "session", "content": content, "about_user_id": None}
    return {"reflections": [note]}


SENSIBLE_RULES: Mapping[str, TaskRule] = {
    '{"facts"': _facts,
    '{"decisions"': _decisions,
    '{"reflections"': _reflections,
    '{"content"': consolidated_answer,
}


def formation_answer(system: str, user: str) -> Any:
    """Answers Alfred's JSON tasks by the marker in their system prompt, as
    :data:`SENSIBLE_RULES` do; ``{}`` for anything else."""
    for marker, rule in SENSIBLE_RULES.items():
        if marker in system:
            return rule(user)
    return {}
