"""``alfred chat``: talk to Alfred in a terminal, as anyone, in any thread.

It runs the real bot (the same application, handlers and memory) on the embedded
defaults, like a replay typed live. Lines starting with ``/`` are console commands;
anything else is a message from the current person in the current thread.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from bot.replay.script import may_act_in
from bot.replay.world import Replay, data_folder, replay_world
from runtime.settings import Settings

HELP = """\
Console commands:
  /as USER in THREAD     speak as USER in THREAD (group:NAME or dm:USER), e.g. /as bob in group:fam
  /circle NAME U1 U2 …   create a circle NAME with its group and members
  /probe QUERY           show what memory would be used for QUERY here
  /retrieved on|off      show the retrieved memories with every reply
  /clock +15m            move the simulated clock (s, m, h, d), then due jobs can run
  /jobs                  run every queued and due background job
  /dump                  print every stored memory artefact (operator view)
  /help                  this text
  /quit                  leave
Anything else is a message. Start with e.g.: /circle fam alice bob, then /as alice in group:fam"""


class ChatConsole:
    def __init__(self, replay: Replay, out: Console) -> None:
        self.replay = replay
        self.out = out
        self.who = "alice"
        self.where = "dm:alice"
        self.show_retrieved = False

    def prompt(self) -> str:
        return f"{self.who}@{self.where}> "

    async def handle(self, line: str) -> bool:
        """Handle one input line; False when the user wants to leave."""
        line = line.strip()
        if not line:
            return True
        if not line.startswith("/") or line.startswith("//"):
            await self._say(line.removeprefix("/") if line.startswith("//") else line)
            return True
        try:
            parts = shlex.split(line)
        except ValueError:
            parts = line.split()
        command, args = parts[0].lower(), parts[1:]
        if command in ("/quit", "/exit"):
            return False
        if command == "/help":
            self.out.print(HELP, markup=False)
        elif (
            command == "/as"
            and len(args) == 3
            and args[1] == "in"
            and args[2].split(":")[0] in ("group", "dm")
        ):
            who, where = args[0].lower(), args[2]
            if not may_act_in(who, where):  # as in a script
                owner = where.partition(":")[2]
                self.out.print(f"[red]only {escape(owner)} can speak in {escape(where)}[/]")
                return True
            self.who, self.where = who, where
            self.out.print(f"[dim]now speaking as {self.who} in {self.where}[/]")
        elif command == "/circle" and len(args) >= 1:
            await self.replay.run_event("circle", {"name": args[0], "members": args[1:]})
            self.out.print(
                f"[dim]circle {args[0]} with {', '.join(args[1:]) or 'no members yet'}[/]"
            )
        elif command == "/probe" and args:
            (obj,) = await self.replay.run_event(
                "probe", {"as": self.who, "in": self.where, "query": " ".join(args)}
            )
            self._show_probe(obj["probe"])
        elif command == "/retrieved" and args and args[0] in ("on", "off"):
            self.show_retrieved = args[0] == "on"
        elif command == "/clock" and args:
            try:
                self.replay.advance(args[0])
            except ValueError:
                self.out.print("[red]use +15m, +2h, +1d or an ISO time[/]")
            else:
                self.out.print(f"[dim]clock: {self.replay.clock.now():%Y-%m-%d %H:%M} UTC[/]")
        elif command == "/jobs":
            for obj in await self.replay.drain():
                self.out.print(f"[yellow]job[/] {obj['job']['name']}: {obj['job']['status']}")
        elif command == "/dump":
            (obj,) = await self.replay.run_event("dump", "all")
            for kind, items in obj["dump"].items():
                self.out.print(f"[bold]{kind}[/] ({len(items)})")
                for item in items:
                    text = item.get("content") or item.get("text") or item.get("question")
                    self.out.print(
                        f"  - {escape(str(text))} [dim]({item.get('visibility')}, "
                        f"owner {item.get('owner_user_id')})[/]"
                    )
        else:
            self.out.print("[red]unknown or malformed command[/] — /help lists them")
        return True

    async def _say(self, text: str) -> None:
        if self.show_retrieved:
            (obj,) = await self.replay.run_event(
                "probe", {"as": self.who, "in": self.where, "query": text}
            )
            self._show_probe(obj["probe"])
        said = await self.replay.say(self.who, self.where, text)
        replies = [o for o in said if "reply" in o]
        for obj in said:
            if "reaction" in obj:
                self.out.print(f"[dim](Alfred reacted {obj['reaction']['emoji']}: done)[/]")
        for reply in replies:
            where = reply["reply"]["in"]
            to = "" if where == self.where else f" [dim](in {where})[/]"
            self.out.print(f"[bold green]Alfred[/]{to}: {escape(reply['reply']['text'])}")
        for obj in said:
            if "document" in obj:
                doc = obj["document"]
                self.out.print(
                    f"[bold green]Alfred[/] [dim](a file in {doc['in']})[/]: "
                    f"{escape(doc['name'])} ({len(doc.get('text') or '')} characters)"
                )
        if not said and self.where.startswith("group:"):
            self.out.print(
                "[dim](Alfred read it but was not addressed: mention @alfred to talk)[/]"
            )

    def _show_probe(self, probe: dict[str, Any]) -> None:
        state = "retrieval ran" if probe["retrieved"] else "retrieval skipped by the heuristic"
        self.out.print(f"[magenta]memory here[/] ({state}):")
        for m in probe["memories"]:
            self.out.print(f"  {m['score']:.2f} {escape(m['content'])} [dim]({m['visibility']})[/]")
        if not probe["memories"]:
            self.out.print("  [dim](no facts)[/]")


async def run_console(
    settings: Settings, *, data_dir: Path | None, stdin: TextIO = sys.stdin
) -> None:
    out = Console(highlight=False)
    interactive = stdin.isatty()
    async with data_folder(data_dir) as folder:
        world = settings.model_copy(update={"alfred_data_dir": folder})
        async with replay_world(world) as replay:
            console = ChatConsole(replay, out)
            out.print("[bold]Alfred console[/] — /help for commands, /quit to leave.")
            while True:
                try:
                    if interactive:
                        line = await asyncio.to_thread(input, console.prompt())
                    else:
                        line = await asyncio.to_thread(stdin.readline)
                except EOFError:
                    break
                if not interactive and line == "":
                    break
                if not await console.handle(line):
                    break
