"""Running replay scripts inside tests and collecting their output objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.bench.fake_openai import FakeOpenAI
from bot.replay import parse_script, run_script
from runtime.settings import Settings


async def replay_lines(
    settings: Settings, lines: list[Any], data_dir: Path
) -> list[dict[str, Any]]:
    """Run script lines (dicts or JSON strings) in a fresh store under ``data_dir``."""
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    out: list[dict[str, Any]] = []
    world = settings.model_copy(
        update={"alfred_data_dir": data_dir, "mongodb_database": f"replay_{data_dir.name}"}
    )
    await run_script(world, parse_script(text), out.append)
    return out


def with_model(settings: Settings, fake: FakeOpenAI) -> Settings:
    """``settings`` with the chat model and embeddings served by ``fake`` (the local
    embedder computes the vectors, so retrieval behaves as it does offline)."""
    overrides = fake.settings_overrides()
    return settings.model_copy(
        update={
            "openai_api_key": SecretStr(overrides["openai_api_key"]),
            "openai_base_url": overrides["openai_base_url"],
            "embeddings_provider": "local",
        }
    )


def replies(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["reply"] for o in out if "reply" in o]


def reply_texts(out: list[dict[str, Any]]) -> list[str]:
    """The text of every reply, in order."""
    return [r["text"] for r in replies(out)]


def current_facts(dump: dict[str, Any]) -> list[str]:
    """The contents of a dump's facts still current (not invalidated)."""
    return [f["content"] for f in dump["facts"] if f["invalid_at"] is None]


def dumps(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["dump"] for o in out if "dump" in o]


def probes(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["probe"] for o in out if "probe" in o]


def assert_shows_nothing_of(word: str, *found: dict[str, Any]) -> None:
    """No probe in ``found`` shows ``word`` (any case), in its memories or in the whole
    memory text that would enter the prompt: a leak test's check."""
    for probed in found:
        assert word.lower() not in probed["context"].lower(), probed
        assert all(word.lower() not in m["content"].lower() for m in probed["memories"]), probed


def formed_overnight(then: str = "+1d") -> list[dict[str, Any]]:
    """Background formation runs that night (eight hours on), and the replay goes on
    ``then`` after it."""
    return [{"clock": "+8h"}, {"jobs": "drain"}, {"clock": then}]


def say(who: str, where: str, text: str) -> dict[str, Any]:
    return {"say": {"from": who, "in": where, "text": text}}


def probe(who: str, where: str, query: str) -> dict[str, Any]:
    return {"probe": {"as": who, "in": where, "query": query}}
