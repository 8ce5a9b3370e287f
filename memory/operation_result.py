"""What an explicit memory operation did, and what to tell the person."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.models import Fact


@dataclass
class OperationResult:
    """What an operation did, and what to tell the person."""

    text: str
    facts: list[Fact] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    #: A "which should I forget?" question: the fact ids of each numbered memory (the
    #: memory first, then versions of it kept as history). Nothing was deleted.
    choices: list[list[str]] = field(default_factory=list)
