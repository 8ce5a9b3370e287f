"""Identifiers and content hashes for stored records."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def new_id() -> str:
    """A fresh random id (32 hex characters): unguessable, sortable by nothing."""
    return uuid.uuid4().hex


def derived_id(*parts: str) -> str:
    """An id that the same ``parts`` always give (32 hex characters, like :func:`new_id`):
    what a message creates is named after the message, so its replay finds it again
    instead of creating it twice."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def normalise_content(text: str) -> str:
    """Content reduced for duplicate detection: NFKC, lower case, single spaces, no edge
    punctuation. "Alice likes tea." and "alice likes  tea" are the same fact."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _SPACE.sub(" ", text).strip()
    return _EDGE_PUNCT.sub("", text)


def content_hash(text: str) -> str:
    """The dedup key of a fact within its partition."""
    return hashlib.sha256(normalise_content(text).encode("utf-8")).hexdigest()
