"""``alfred doctor``: which parts run where, and whether each one answers.

Each check is independent and bounded in time, so one broken part never hides the
state of the others. A part that is configured or embedded and does not answer makes
the command exit non-zero.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import httpx

from integrations.mongo.capabilities import detect_capabilities
from integrations.mongo.connection import redact
from memory.errors import AlfredError
from runtime.connections import open_mongo, open_redis
from runtime.settings import Mode, Settings

COMPONENTS = ("database", "job_queue", "llm", "embeddings", "mem0", "calendar", "telegram")
CHECK_TIMEOUT = 45.0


@dataclass
class ComponentReport:
    """The doctor's verdict on one component."""

    mode: str
    ok: bool
    detail: str


async def _database(settings: Settings) -> ComponentReport:
    started = time.perf_counter()
    handle = await open_mongo(settings)
    try:
        caps = await detect_capabilities(handle.db)
        where = (
            f"embedded server at {handle.url_for_display}, data in {settings.data_dir() / 'mongo'}"
            if handle.mode is Mode.EMBEDDED
            else f"MongoDB at {handle.url_for_display}"
        )
        took = (time.perf_counter() - started) * 1000
        return ComponentReport(
            handle.mode.value,
            True,
            f"{where}; version {caps.server_version}; {caps.detail}; answered in {took:.0f} ms",
        )
    finally:
        await handle.close()


async def _job_queue(settings: Settings) -> ComponentReport:
    started = time.perf_counter()
    handle = await open_redis(settings)
    try:
        info = await handle.client.info("server")
        version = info.get("valkey_version") or info.get("redis_version") or "?"
        where = (
            f"embedded server at {handle.url_for_display}"
            if handle.mode is Mode.EMBEDDED
            else f"Redis at {handle.url_for_display}"
        )
        took = (time.perf_counter() - started) * 1000
        return ComponentReport(
            handle.mode.value, True, f"{where}; version {version}; answered in {took:.0f} ms"
        )
    finally:
        await handle.close()


async def _llm(settings: Settings) -> ComponentReport:
    if settings.openai_api_key is None:
        return ComponentReport(
            Mode.EMBEDDED.value,
            True,
            "offline provider: deterministic rules, no language model; "
            "replies say so when they cannot do better (set OPENAI_API_KEY to use a model)",
        )
    base = (settings.openai_base_url or "https://api.openai.com/v1").rstrip("/")
    headers = {"Authorization": f"Bearer {settings.openai_api_key.get_secret_value()}"}
    async with httpx.AsyncClient(timeout=10.0) as client:
        response = await client.get(f"{base}/models", headers=headers)
    if response.status_code >= 400:
        return ComponentReport(
            Mode.CONFIGURED.value,
            False,
            f"{redact(base)} answered HTTP {response.status_code} to GET /models "
            "(check OPENAI_API_KEY and OPENAI_BASE_URL)",
        )
    return ComponentReport(
        Mode.CONFIGURED.value,
        True,
        f"{redact(base)}; models fast={settings.llm_fast_model} slow={settings.llm_slow_model} "
        f"chat={settings.llm_chat_model}",
    )


async def _embeddings(settings: Settings) -> ComponentReport:
    from runtime.builders import build_embedder

    embedder = build_embedder(settings)
    started = time.perf_counter()
    vectors = await embedder.embed(["Alfred checks that embeddings work."])
    took = (time.perf_counter() - started) * 1000
    if vectors.shape != (1, embedder.dimensions):
        return ComponentReport(
            settings.embeddings_mode.value,
            False,
            f"{embedder.model_name} returned shape {vectors.shape}, "
            f"expected (1, {embedder.dimensions})",
        )
    return ComponentReport(
        settings.embeddings_mode.value,
        True,
        f"{embedder.model_name}, {embedder.dimensions} dimensions; first embedding {took:.0f} ms",
    )


async def _mem0(settings: Settings) -> ComponentReport:
    mode = settings.mem0_enabled_mode
    if mode is Mode.OFF:
        return ComponentReport(Mode.OFF.value, True, "off (set MEM0_API_KEY or MEM0_MODE=oss)")
    from runtime.builders import build_semantic_index

    started = time.perf_counter()
    index = await build_semantic_index(settings)
    if index is None:
        return ComponentReport(Mode.OFF.value, True, "off")
    try:
        await index.search("doctor:probe", "ping", 1)
    finally:
        await index.aclose()
    took = (time.perf_counter() - started) * 1000
    return ComponentReport(
        mode.value, True, f"{index.name} answered a search in {took:.0f} ms (infer=False)"
    )


async def _calendar(settings: Settings) -> ComponentReport:
    if settings.calendar_mode is Mode.OFF:
        return ComponentReport(Mode.OFF.value, True, "off (set GOOGLE_CLIENT_ID to connect)")
    from runtime.calendar import check_configuration

    ok, detail = check_configuration(settings)
    return ComponentReport(Mode.CONFIGURED.value, ok, detail)


async def _telegram(settings: Settings) -> ComponentReport:
    if settings.telegram_bot_token is None:
        return ComponentReport(
            Mode.OFF.value,
            True,
            "off: no TELEGRAM_BOT_TOKEN (replay and console work without it)",
        )
    base = (settings.telegram_api_base_url or "https://api.telegram.org/bot").rstrip("/")
    token = settings.telegram_bot_token.get_secret_value()
    async with httpx.AsyncClient(timeout=10.0) as client:
        response = await client.get(f"{base}{token}/getMe")
    body = (
        response.json()
        if response.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    if response.status_code != 200 or not body.get("ok"):
        return ComponentReport(
            Mode.CONFIGURED.value,
            False,
            f"Telegram rejected the token (HTTP {response.status_code}); check TELEGRAM_BOT_TOKEN",
        )
    return ComponentReport(
        Mode.CONFIGURED.value, True, f"bot @{body['result'].get('username', '?')}"
    )


CHECKS: dict[str, Callable[[Settings], Awaitable[ComponentReport]]] = {
    "database": _database,
    "job_queue": _job_queue,
    "llm": _llm,
    "embeddings": _embeddings,
    "mem0": _mem0,
    "calendar": _calendar,
    "telegram": _telegram,
}

_MODES: dict[str, Callable[[Settings], Mode]] = {
    "database": lambda s: s.database_mode,
    "job_queue": lambda s: s.queue_mode,
    "llm": lambda s: s.llm_mode,
    "embeddings": lambda s: s.embeddings_mode,
    "mem0": lambda s: s.mem0_enabled_mode,
    "calendar": lambda s: s.calendar_mode,
    "telegram": lambda s: s.telegram_mode,
}


async def _run_one(name: str, settings: Settings) -> ComponentReport:
    try:
        return await asyncio.wait_for(CHECKS[name](settings), timeout=CHECK_TIMEOUT)
    except AlfredError as exc:
        return ComponentReport(_MODES[name](settings).value, False, exc.one_line())
    except TimeoutError:
        return ComponentReport(
            _MODES[name](settings).value, False, f"no answer within {CHECK_TIMEOUT:.0f} s"
        )
    except (httpx.HTTPError, OSError) as exc:
        return ComponentReport(
            _MODES[name](settings).value, False, f"cannot reach it: {type(exc).__name__}: {exc}"
        )


async def run_doctor(settings: Settings) -> dict[str, ComponentReport]:
    """Check every component concurrently; never raises for a broken component."""
    results = await asyncio.gather(*(_run_one(name, settings) for name in COMPONENTS))
    return dict(zip(COMPONENTS, results, strict=True))


def as_json(reports: dict[str, ComponentReport]) -> dict[str, object]:
    """The ``--json`` shape: ``{"components": {name: {mode, ok, detail}}}``."""
    return {"components": {name: asdict(report) for name, report in reports.items()}}
