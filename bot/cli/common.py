"""What every ``alfred`` command shares: reading settings and running a coroutine.

Every command reads settings once, runs, and turns an :class:`AlfredError` into one
line on stderr and a non-zero exit, never a bare traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from memory.errors import AlfredError
from runtime.settings import Settings, load_settings

T = TypeVar("T")

# soft_wrap: an error stays on one line whatever the terminal width (or none, in a pipe).
err = Console(stderr=True, soft_wrap=True)


def settings() -> Settings:
    """The settings, or one line naming the bad one and exit 2."""
    try:
        return load_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]).upper()
        message = str(first["msg"]).removeprefix("Value error, ")
        err.print(
            f"alfred: invalid setting {field}: {message} (see .env.example)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2) from None
    except AlfredError as exc:
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        raise typer.Exit(2) from None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine; print domain errors as one line and exit 1."""
    try:
        return asyncio.run(coro)
    except AlfredError as exc:
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("alfred: interrupted")
        raise typer.Exit(130) from None


def usage_error(message: str) -> NoReturn:
    """A wrong combination of options: one line on stderr, exit 2 (as for a bad option)."""
    err.print(f"alfred: {message}", markup=False, highlight=False)
    raise typer.Exit(2)
