"""``alfred --help`` lists each command with its first paragraph on one line (the rich
help kept the docstring's line breaks, and the list came out ragged)."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from bot.cli.main import app
from bot.help_text import summary_line


def every_command() -> list[tuple[str, Any]]:
    """Every command under ``alfred``, the lazily loaded benches included (Typer's own
    copy of click's classes, hence the duck typing)."""
    found: list[tuple[str, Any]] = []
    groups: list[tuple[str, Any]] = [("", typer.main.get_command(app))]
    while groups:
        prefix, group = groups.pop()
        ctx = group.context_class(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            if hasattr(command, "list_commands"):
                groups.append((f"{prefix}{name} ", command))
            found.append((f"{prefix}{name}", command))
    return found


def test_every_command_has_a_one_line_summary() -> None:
    commands = every_command()
    assert {"migrate", "bench locomo", "bench bot", "admin purge-user"} <= dict(commands).keys()
    for name, command in commands:
        shown = command.short_help or command.help  # what the list of commands shows
        assert shown and "\n" not in shown, name
        assert shown == summary_line(command.help), name


def test_the_lists_show_each_summary_whole_on_a_wide_terminal() -> None:
    runner = CliRunner()
    commands = dict(every_command())
    for group in ("", "bench ", "admin "):
        done = runner.invoke(app, [*group.split(), "--help"], env={"COLUMNS": "400"})
        assert done.exit_code == 0, done.output
        lines = done.output.splitlines()
        for name, command in commands.items():
            if name.startswith(group) and " " not in name.removeprefix(group):
                row = f" {name.removeprefix(group)} "
                summary = command.short_help or command.help
                assert any(row in line and summary in line for line in lines), (name, summary)
