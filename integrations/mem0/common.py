"""Importing mem0 safely and reading its answers: shared by the cloud and OSS indexes.

Telemetry: mem0 sends usage events to PostHog unless ``MEM0_TELEMETRY`` is false when it
is *imported*. This module sets it on import and imports mem0 lazily, and refuses to run
if mem0 was imported earlier with telemetry on. mem0 also writes a config file under
``MEM0_DIR`` (default ``~/.mem0``) at import; it is pointed at the data dir.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from memory.errors import AlfredError, ConfigurationError, RateLimited, Unavailable
from memory.models import Fact

# Before mem0 can possibly be imported (it reads the variable once, at import).
os.environ["MEM0_TELEMETRY"] = "False"

log = logging.getLogger(__name__)

COMPONENT = "mem0"
Document = dict[str, Any]
#: Upper bound for one embedding request from mem0's OSS embedder (see _bound_embedder).
OSS_EMBED_TIMEOUT_S = 10.0
#: The fields the resolver reads: enough to name the fact and its partition.
_RESOLVE_PROJECTION = {"_id": 1, "mem0_id": 1, "circle_id": 1, "owner_user_id": 1, "visibility": 1}


# --- importing mem0 safely ------------------------------------------------------------


def import_mem0(data_dir: Path | None = None) -> ModuleType:
    """Import mem0 with telemetry off and its config dir under ``data_dir``.

    Raises :class:`ConfigurationError` if mem0 was already imported with telemetry on
    (someone imported it before this module): Alfred never sends usage data.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    if data_dir is not None and "mem0" not in sys.modules:
        mem0_dir = data_dir / "mem0"
        mem0_dir.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("MEM0_DIR", str(mem0_dir))
    mem0 = importlib.import_module("mem0")
    telemetry = importlib.import_module("mem0.memory.telemetry")

    if telemetry.MEM0_TELEMETRY:
        raise ConfigurationError(
            "mem0 was imported with telemetry on",
            hint="set MEM0_TELEMETRY=False in the environment before starting Alfred",
        )
    return mem0


def _translate(exc: BaseException, what: str) -> AlfredError:
    """A mem0/httpx/openai error as the domain's error family.

    The message names the operation and the exception type only: mem0's messages may
    quote memory text, and errors end up in logs.
    """
    if isinstance(exc, AlfredError):
        return exc
    code = getattr(exc, "error_code", None)
    detail = f"{what} failed ({type(exc).__name__}{f', {code}' if code else ''})"
    if type(exc).__name__ == "RateLimitError":
        info = getattr(exc, "debug_info", None) or {}
        retry = info.get("retry_after") if isinstance(info, dict) else None
        return RateLimited(
            COMPONENT, detail, retry_after=float(retry) if retry is not None else None
        )
    return Unavailable(COMPONENT, detail)


def _is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ == "MemoryNotFoundError" or (
        isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 404
    )


def _results(response: Any) -> list[Any]:
    """The list of items in a mem0 answer: a bare list, or ``{"results": [...]}``."""
    if isinstance(response, list):
        return response
    if isinstance(response, Mapping):
        items = response.get("results")
        if isinstance(items, list):
            return items
    return []


def _added_ids(response: Any) -> list[str]:
    """Memory ids created by an add (OSS answer, legacy platform answer, or event results)."""
    ids = []
    for item in _results(response):
        if not isinstance(item, Mapping):
            continue
        mid = item.get("id") or item.get("memory_id")
        if mid and item.get("event", "ADD") == "ADD":
            ids.append(str(mid))
    return ids


def _hits(response: Any) -> list[tuple[str, float]]:
    out = []
    for item in _results(response):
        if isinstance(item, Mapping) and item.get("id"):
            try:
                score = float(item.get("score") or 0.0)
            except (TypeError, ValueError):
                score = 0.0
            out.append((str(item["id"]), score))
    return out


def _message(fact: Fact) -> list[dict[str, str]]:
    return [{"role": "user", "content": fact.content}]
