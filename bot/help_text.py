"""One line per command in ``alfred --help``'s list of commands.

Typer's rich help keeps a docstring's line breaks in that list, so a first paragraph
wrapped at the source's line length came out ragged ("… through Alfred's write and" /
"retrieval paths."). The list now shows each first paragraph as one line, which the
terminal wraps; a command's own ``--help`` was already right.
"""

from __future__ import annotations

import inspect
from typing import Protocol, TypeVar

import typer


class Described(Protocol):
    """A built command (Typer builds them from its own copy of click's classes)."""

    help: str | None
    short_help: str | None


C = TypeVar("C", bound=Described)


def summary_line(help_text: str | None) -> str | None:
    """The first paragraph of ``help_text`` on one line (None when there is none)."""
    if not help_text:
        return None
    first = inspect.cleandoc(help_text).split("\n\n", 1)[0]
    return " ".join(first.split()) or None


def one_line_summaries(app: typer.Typer) -> None:
    """Give each command registered on ``app``, and on the apps added to it, a one-line
    summary for the list."""
    for info in app.registered_commands:
        if info.short_help is None:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            info.short_help = summary_line(doc)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            one_line_summaries(group.typer_instance)


def summarise(command: C) -> C:
    """The same for a command built apart (the benches, loaded when asked for)."""
    if command.short_help is None:
        command.short_help = summary_line(command.help)
    return command
