"""The error tree of Alfred's domain.

Adapters translate driver exceptions (PyMongo, redis, OpenAI, Google) into these at
the boundary, so callers in the domain and the entry points only ever catch
``AlfredError`` families. Each family answers one question a caller has: is it
missing, is it forbidden, is something down, are we throttled, was the input bad?
"""

from __future__ import annotations


class AlfredError(Exception):
    """Base of every error Alfred raises on purpose.

    ``hint`` tells a person how to fix the problem; entry points print
    ``message`` and ``hint`` on one line instead of a traceback.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and its hint, as a single line for a terminal."""
        return f"{self.message} ({self.hint})" if self.hint else self.message


class NotFound(AlfredError):
    """A requested record does not exist (or is not visible to the asker)."""


class Denied(AlfredError):
    """The privacy rule or a permission forbids the operation."""


class Unavailable(AlfredError):
    """A dependency (database, queue, LLM, embedder, mem0, Google) cannot be reached."""

    def __init__(self, component: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{component}: {message}", hint=hint)
        self.component = component


class RateLimited(Unavailable):
    """A dependency asked us to slow down; retry after ``retry_after`` seconds."""

    def __init__(self, component: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(component, message)
        self.retry_after = retry_after


class BadInput(AlfredError):
    """Input that cannot be accepted as given (malformed, too large, wrong type)."""


class ConfigurationError(AlfredError):
    """Settings that cannot work together, or a value that cannot be used."""
