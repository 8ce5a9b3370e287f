"""The ``alfred`` command line: the Typer app, with one module per command.

The commands are registered here, in the order ``alfred --help`` lists them; a command
module never imports this one back (each takes what it shares from
:mod:`bot.cli.common`).
"""

from __future__ import annotations

import sys

import typer

from bot.cli.admin import admin_app
from bot.cli.bench import bench_app
from bot.cli.chat import chat
from bot.cli.common import err
from bot.cli.demo import demo
from bot.cli.doctor import doctor
from bot.cli.migrate import migrate
from bot.cli.replay import replay
from bot.cli.run import run
from bot.help_text import one_line_summaries
from memory.errors import AlfredError

app = typer.Typer(
    name="alfred",
    help="Alfred: a Telegram assistant that remembers, with per-chat privacy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for command in (doctor, migrate, replay, demo, chat, run):
    app.command()(command)
app.add_typer(bench_app, name="bench")
app.add_typer(admin_app, name="admin")
one_line_summaries(app)


def main() -> None:
    """Entry point of the ``alfred`` console script."""
    try:
        app()
    except AlfredError as exc:  # raised outside run(), e.g. while building services
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
