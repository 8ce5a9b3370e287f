"""Marking content in log arguments, so any layer can log safely.

A user's words or a memory must never reach a log line at INFO and above (DESIGN.md §3
and §9: logs travel further than the database, and would outlive a "forget"). Code in
every layer wraps such values with :func:`sensitive`; the runtime's log filter renders
them as ``[redacted]`` above DEBUG. The marker lives in the domain so adapters and
services can use it without depending on how logging is set up.
"""

from __future__ import annotations


class Sensitive:
    """A value that may appear in DEBUG logs only; renders as ``[redacted]`` at INFO+."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


def sensitive(value: object) -> Sensitive:
    """Mark a log argument as content: ``log.debug("text %s", sensitive(text))``."""
    return Sensitive(value)
