"""A script file for ``alfred replay``: read and checked before anything runs, then run,
printing JSON lines (or readable text)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bot.replay.script import ScriptError, parse_script
from bot.replay.world import data_folder, run_script
from runtime.settings import Settings


def pretty(obj: dict[str, Any]) -> str:
    """One output object as readable text."""
    ((kind, value),) = obj.items()
    if kind == "reply":
        return f"[{value['in']}] Alfred → {value['to']}: {value['text']}"
    if kind == "edit":
        buttons = "".join(f" [{b}]" for b in value.get("buttons", []))
        return f"[{value['in']}] Alfred edits its message: {value['text']}{buttons}"
    if kind == "probe":
        head = (
            f"[probe] {value['as']} in {value['in']}: {value['query']!r} "
            f"(retrieval {'ran' if value['retrieved'] else 'skipped'})"
        )
        rows = [
            f"    {m['score']:.3f}  {m['content']}  [{m['visibility']}, owner {m['owner']}]"
            for m in value["memories"]
        ]
        return "\n".join([head, *rows] if rows else [head, "    (no facts)"])
    if kind == "reaction":
        return f"[{value['in']}] Alfred reacts {value['emoji']} to {value['to']}'s message"
    if kind == "document":
        head = f"[{value['in']}] Alfred → {value['to']}: a file, {value['name']}"
        if value.get("caption"):
            head += f" ({value['caption']})"
        body = value.get("text")
        return (
            head
            if body is None
            else head + "\n" + "\n".join(f"    {line}" for line in str(body).splitlines())
        )
    if kind == "job":
        return f"[job] {value['name']}: {value['status']}"
    if kind == "dump":
        counts = ", ".join(f"{len(v)} {k}" for k, v in value.items())
        return f"[dump] {counts}\n" + json.dumps(value, indent=2, default=str)
    return f"[{kind}] {json.dumps(value, default=str)}"


async def replay_file(
    settings: Settings, script: Path, *, data_dir: Path | None, as_text: bool
) -> int:
    try:
        data = await asyncio.to_thread(script.read_bytes)
    except OSError as exc:
        print(f"alfred replay: cannot read {script}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        # Only "\n" ends a line: JSON strings may hold U+2028 or U+0085 unescaped.
        lines = data.decode("utf-8-sig").split("\n")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        print(f"alfred replay: {script}:line {line}: not UTF-8 text", file=sys.stderr)
        return 2
    try:
        events = parse_script(lines)
    except ScriptError as exc:
        print(f"alfred replay: {script}:{exc.message}", file=sys.stderr)
        return 2

    def emit(obj: dict[str, Any]) -> None:
        print(
            pretty(obj) if as_text else json.dumps(obj, ensure_ascii=False, default=str), flush=True
        )

    async with data_folder(data_dir) as folder:
        run_settings = settings.model_copy(update={"alfred_data_dir": folder})
        await run_script(run_settings, events, emit)
    return 0
