"""Erasure in the bot's spool files (``<data>/spool/*.jsonl``): updates kept on disk
because a dependency was down (``updates.jsonl``) or because they could not be read
(``unreadable.jsonl``). They hold Telegram updates as received, message text included,
so a forget must reach them like any store.

Each file is rewritten whole (to a temporary file, then renamed over it), keeping every
line that is not the person's: an update from them is dropped when they asked to erase
everything, or when it mentions what they asked to forget.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memory.erasure import mentions

#: The keys under which a Telegram update names a person (the sender, a member).
_PERSON_KEYS = frozenset({"from", "user", "new_chat_member", "old_chat_member", "sender_chat"})


def _people(value: Any) -> Iterator[int]:
    """Every person id an update names, at any depth."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in _PERSON_KEYS and isinstance(inner, dict) and isinstance(inner.get("id"), int):
                yield inner["id"]
            yield from _people(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _people(inner)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)


def _doomed(line: str, telegram_user_id: int, needles: Sequence[str] | None) -> bool:
    try:
        update = json.loads(line)
    except ValueError:
        # a line cut short: no structure to read, so its raw text decides
        theirs = str(telegram_user_id) in line
        return theirs and (needles is None or any(mentions(n, line) for n in needles))
    if telegram_user_id not in set(_people(update)):
        return False
    return needles is None or any(mentions(n, t) for t in _texts(update) for n in needles)


def scrub_spool(folder: Path, telegram_user_id: int, needles: Sequence[str] | None) -> int:
    """Drop the person's updates from every spool file in ``folder`` (all of them when
    ``needles`` is None, else those that mention a needle); returns how many went."""
    if not folder.is_dir():
        return 0
    dropped = 0
    for path in sorted(folder.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if not _doomed(line, telegram_user_id, needles)]
        if len(kept) == len(lines):
            continue
        dropped += len(lines) - len(kept)
        temporary = path.with_suffix(".jsonl.scrub")
        temporary.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        os.replace(temporary, path)
    return dropped
