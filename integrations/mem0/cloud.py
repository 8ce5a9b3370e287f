"""mem0 Platform (cloud) as Alfred's semantic index: ``mem0.AsyncMemoryClient``, one mem0
user per privacy partition. See :mod:`integrations.mem0` for the honest notes on its API."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from integrations.mem0.common import (
    COMPONENT,
    _added_ids,
    _hits,
    _is_not_found,
    _message,
    _results,
    _translate,
    import_mem0,
)
from memory.errors import Unavailable
from memory.models import Fact
from memory.semantic import (
    FACT_ID_KEY,
    semantic_metadata,
    semantic_user_id,
)

log = logging.getLogger(__name__)

# --- the cloud index ------------------------------------------------------------------


class Mem0CloudIndex:
    """The mem0 Platform behind :class:`SemanticIndex`, through ``AsyncMemoryClient``."""

    name = "mem0-cloud"

    def __init__(
        self,
        client: Any,
        *,
        id_wait_s: float = 5.0,
        poll_interval_s: float = 0.05,
        search_threshold: float | None = None,
        list_page_size: int = 100,
        max_list_pages: int = 10,
    ) -> None:
        """``client`` is a connected ``mem0.AsyncMemoryClient`` (see :meth:`connect`).

        ``id_wait_s`` bounds how long :meth:`add` waits for mem0's background processing
        to name the new memory; adds run off the reply path, so seconds are fine.
        ``search_threshold`` is mem0's minimum score (``None``: the service default).
        """
        self._client = client
        self.id_wait_s = id_wait_s
        self.poll_interval_s = poll_interval_s
        self.search_threshold = search_threshold
        self.list_page_size = list_page_size
        self.max_list_pages = max_list_pages

    @classmethod
    async def connect(
        cls,
        api_key: str,
        *,
        host: str | None = None,
        data_dir: Path | None = None,
        timeout_s: float = 10.0,
        **options: Any,
    ) -> Mem0CloudIndex:
        """Build the client (which pings ``/v1/ping/`` to check the key) off the loop.

        ``host`` defaults to mem0's (``https://api.mem0.ai``); tests pass a local fake.
        The client gets its own httpx session with ``timeout_s`` (the SDK's default is
        300 s, far beyond any use Alfred has for an answer).
        """
        mem0 = import_mem0(data_dir)
        http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s))
        try:
            client = await asyncio.wait_for(
                asyncio.to_thread(mem0.AsyncMemoryClient, api_key=api_key, host=host, client=http),
                timeout=timeout_s + 1.0,
            )
        except (Exception, asyncio.CancelledError) as exc:
            await http.aclose()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise _translate(exc, "connect") from exc
        return cls(client, **options)

    async def add(self, fact: Fact) -> str | None:
        user_id = semantic_user_id(fact.partition)
        try:
            response = await self._client.add(
                _message(fact),
                user_id=user_id,
                metadata=semantic_metadata(fact),
                infer=False,
            )
        except Exception as exc:
            raise _translate(exc, "add") from exc
        ids = _added_ids(response)
        if ids:
            return ids[0]
        deadline = time.monotonic() + self.id_wait_s
        event_id = response.get("event_id") if isinstance(response, Mapping) else None
        if event_id:
            ids = await self._event_ids(str(event_id), deadline)
            if ids:
                return ids[0]
        return await self._find_by_fact_id(user_id, fact.id)

    async def _event_ids(self, event_id: str, deadline: float) -> list[str]:
        """Poll the add's event until it settles; the ids in its results, if any."""
        delay = self.poll_interval_s
        while True:
            try:
                response = await self._client.async_client.get(f"/v1/event/{event_id}/")
                response.raise_for_status()
                event = response.json()
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code == 404:
                    return []  # no event API here: fall back to listing
                raise _translate(exc, "add (event)") from exc
            except (httpx.HTTPError, ValueError) as exc:
                raise _translate(exc, "add (event)") from exc
            status = str(event.get("status", "")).upper() if isinstance(event, Mapping) else ""
            if status == "SUCCEEDED":
                return _added_ids(event)
            if status == "FAILED":
                raise Unavailable(COMPONENT, "add failed (event FAILED)")
            if time.monotonic() + delay > deadline:
                return []
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    async def _find_by_fact_id(self, user_id: str, fact_id: str) -> str | None:
        """The memory carrying ``fact_id`` in its metadata, by listing the partition.

        Filtering on metadata server-side is not documented for the Platform's list
        endpoint, so this lists by ``user_id`` (which is) and matches here.
        """
        for page in range(1, self.max_list_pages + 1):
            try:
                response = await self._client.get_all(
                    filters={"user_id": user_id}, page=page, page_size=self.list_page_size
                )
            except Exception as exc:
                raise _translate(exc, "add (lookup)") from exc
            items = _results(response)
            for item in items:
                if not isinstance(item, Mapping):
                    continue
                metadata = item.get("metadata") or {}
                found = isinstance(metadata, Mapping) and metadata.get(FACT_ID_KEY) == fact_id
                if found and item.get("id"):
                    return str(item["id"])
            more = isinstance(response, Mapping) and response.get("next")
            if not items or not more:
                break
        return None

    async def delete(self, mem0_ids: Sequence[str]) -> None:
        unique = list(dict.fromkeys(i for i in mem0_ids if i))
        limit = asyncio.Semaphore(8)

        async def one(mem0_id: str) -> None:
            async with limit:
                try:
                    await self._client.delete(mem0_id)
                except Exception as exc:
                    if not _is_not_found(exc):
                        raise

        outcomes = await asyncio.gather(*(one(i) for i in unique), return_exceptions=True)
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            raise _translate(failures[0], "delete") from failures[0]

    async def search(self, partition_key: str, query: str, k: int) -> list[tuple[str, float]]:
        return await _scoped_search(
            self._client.search, partition_key, query, k, self.search_threshold
        )

    async def aclose(self) -> None:
        await self._client.async_client.aclose()


async def _scoped_search(
    search: Callable[..., Awaitable[Any]],
    partition_key: str,
    query: str,
    k: int,
    threshold: float | None,
) -> list[tuple[str, float]]:
    """One partition's mem0 search, the same for the Platform and OSS clients: scoped by
    ``user_id`` = the partition key, errors translated to Alfred's."""
    if k <= 0 or not query.strip():
        return []
    options: dict[str, Any] = {"filters": {"user_id": partition_key}, "top_k": k}
    if threshold is not None:
        options["threshold"] = threshold
    try:
        response = await search(query, **options)
    except Exception as exc:
        raise _translate(exc, "search") from exc
    return _hits(response)
