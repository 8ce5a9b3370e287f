"""``alfred demo``: the bundled scenario, replayed through the real bot and printed readably."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from bot.replay.script import parse_script
from bot.replay.world import data_folder, replay_world
from runtime.settings import Settings

console = Console(highlight=False)


def demo_script() -> list[str]:
    return (
        resources.files("bot.replay.scenarios")
        .joinpath("demo.jsonl")
        .read_text("utf-8")
        .splitlines()
    )


def _show(obj: dict[str, Any]) -> None:
    ((kind, value),) = obj.items()
    if kind == "reply":
        to = value["to"] or "everyone"
        buttons = "".join(f" [reverse] {escape(b)} [/]" for b in value.get("buttons", []))
        console.print(
            f"    [bold green]Alfred[/] → {to} ({value['in']}): {escape(value['text'])}{buttons}"
        )
    elif kind == "edit":
        buttons = "".join(f" [reverse] {escape(b)} [/]" for b in value.get("buttons", []))
        console.print(
            f"    [bold green]Alfred[/] edits its message ({value['in']}): "
            f"{escape(value['text'])}{buttons}"
        )
    elif kind == "reaction":
        console.print(
            f"    [bold green]Alfred[/] reacts {value['emoji']} to {value['to']}'s message "
            f"({value['in']}): stored, quietly"
        )
    elif kind == "probe":
        status = "searched" if value["retrieved"] else "no search needed"
        console.print(
            f"    [magenta]probe[/] what would {value['as']} in {value['in']} see for "
            f"{escape(repr(value['query']))}? ({status})"
        )
        if not value["memories"]:
            console.print("      [dim](nothing)[/]")
        for m in value["memories"][:5]:
            console.print(
                f"      • {escape(m['content'])} [dim]({m['visibility']}, "
                f"owner {m['owner'] or 'the circle'}, score {m['score']:.2f})[/]"
            )
    elif kind == "job":
        console.print(f"    [yellow]background job[/] {value['name']}: {value['status']}")
    else:
        console.print(f"    [dim]{escape(json.dumps(value, default=str))}[/]")


async def run_demo(settings: Settings, *, data_dir: Path | None = None) -> None:
    lines = demo_script()
    events = {number: (kind, value) for number, kind, value in parse_script(lines)}
    console.print(
        "[bold]Alfred demo[/] — a couple, their shared group, and two private chats.\n"
        "[dim]Everything below runs the real bot (handlers, memory, background jobs) "
        "on embedded defaults, offline, with a simulated clock.[/]\n"
    )
    async with data_folder(data_dir) as folder:
        world_settings = settings.model_copy(update={"alfred_data_dir": folder})
        async with replay_world(world_settings) as replay:
            for number, raw in enumerate(lines, start=1):
                text = raw.strip()
                if text.startswith("#"):
                    console.print(f"\n[bold cyan]{escape(text.lstrip('# '))}[/]")
                    continue
                if number not in events:
                    continue
                kind, value = events[number]
                if kind == "say":
                    console.print(
                        f"  [bold]{value['from']}[/] in {value['in']}: {escape(value['text'])}"
                    )
                elif kind == "clock":
                    console.print(f"  [dim]… the clock moves {value}[/]")
                elif kind == "jobs":
                    console.print("  [dim]… background jobs run[/]")
                elif kind == "press":
                    console.print(
                        f"  [bold]{value['as']}[/] in {value['in']} presses "
                        f"[reverse] {escape(value['button'])} [/]"
                    )
                for obj in await replay.run_event(kind, value):
                    _show(obj)
            notes = await replay.services.notes.all_for_audit()
            blobs = notes["consolidated"]
            console.print("\n[bold cyan]What Alfred keeps in mind after the cold session[/]")
            for blob in blobs:
                owner = replay.names.user_name(blob.partition.owner_user_id) or "the circle"
                console.print(
                    f"  • {blob.scope.value} note ({owner}, {blob.partition.visibility.value}): "
                    f"{escape(blob.content)}"
                )
            if not blobs:
                console.print("  [dim](no consolidated notes)[/]")
    console.print(
        "\n[dim]Try it yourself: `alfred chat` (type /help inside), or write a script "
        "for `alfred replay` (see docs/replay.md).[/]"
    )
