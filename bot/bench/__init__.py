"""``alfred bench …``: benchmarks that print figures (never timed tests).

Each benchmark module defines ``register(app)``; with ``--json`` the last line on stdout
is one JSON object, and progress goes to stderr.

A benchmark module is imported only when its command runs or its help is shown. Every
``alfred`` command registers the benches, and importing them all builds the composition
root, the embedded servers' drivers and the fakes: about a second on a quiet 2-core
machine, paid before ``alfred --help`` or ``alfred doctor`` could print anything.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

from bot.help_text import summarise

#: The benchmarks, in the order ``alfred bench --help`` lists them; each name is both the
#: command and its module under :mod:`bot.bench`.
BENCHES = ("locomo", "retrieval", "formation", "bot", "telegram", "faults")


class LazyBenches(TyperGroup):
    """A command group that builds a bench's command from its module on first use.

    The context and command are typed ``Any``: within the pinned range, typer moved from
    depending on click to a private copy of it, so the two classes have no one public name.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        return list(BENCHES)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in BENCHES:
            return None
        if cmd_name not in self.commands:
            one = typer.Typer(add_completion=False)
            importlib.import_module(f"bot.bench.{cmd_name}").register(one)
            command = summarise(typer.main.get_command(one))
            command.name = cmd_name
            self.commands[cmd_name] = command
        return self.commands[cmd_name]


bench_app = typer.Typer(
    name="bench",
    cls=LazyBenches,
    help="Measure retrieval quality and speed, formation throughput and the reply path.",
    no_args_is_help=True,
)
