"""mem0 as Alfred's optional semantic layer: the cloud client, the OSS library, the
privacy-filtered lookup that maps mem0 hits back to local facts, and the mirror helpers.

Two implementations of :class:`memory.semantic.SemanticIndex`:

* :class:`Mem0CloudIndex` wraps ``mem0.AsyncMemoryClient`` (the Platform REST API,
  ``MEM0_API_KEY``, optional ``MEM0_HOST``).
* :class:`Mem0OssIndex` wraps ``mem0.AsyncMemory`` with a local qdrant store (on disk
  under the data dir, or in memory) and mem0's ``openai`` embedder pointed at an
  OpenAI-compatible endpoint (``OPENAI_BASE_URL``/``OPENAI_API_KEY``, or injected).

Both store each fact verbatim (``infer=False``: Alfred already decided what to store)
under ``user_id = partition key``, with the partition fields and the local fact id in
metadata, so every mem0 search is scoped to one partition.

Telemetry: mem0 sends usage events to PostHog unless ``MEM0_TELEMETRY`` is false when it
is *imported*. This module sets it on import and imports mem0 lazily, and refuses to run
if mem0 was imported earlier with telemetry on. mem0 also writes a config file under
``MEM0_DIR`` (default ``~/.mem0``) at import; it is pointed at the data dir.

Honest notes on mem0 2.2.1's API, which shape the code below:

* ``POST /v3/memories/add/`` is asynchronous: it answers ``{"status": "PENDING",
  "event_id": …}``, not memory ids. The SDK has no call for the event, so the cloud
  index polls ``GET /v1/event/{event_id}/`` (documented) through the client's own httpx
  session, reads the id from the event's results when present, and otherwise lists the
  partition's memories and matches ``metadata.alfred_fact_id``. If neither names the id
  within ``id_wait_s``, ``add`` returns ``None`` (the write is accepted, the id unknown)
  and the fact keeps ``mem0_id = None``: its copy cannot be found by the leg until it
  is mirrored again.
* The client validates its key with a blocking ``requests.get`` in its constructor;
  it is built in a worker thread.
* OSS ``delete`` leaves the deleted text in mem0's SQLite history table; Alfred keeps
  that history in memory and scrubs the deleted ids, so "forget" leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import httpx
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from integrations.openai_embedder import KNOWN_DIMENSIONS
from memory.constants import FACTS
from memory.errors import AlfredError, ConfigurationError, RateLimited, Unavailable
from memory.models import Fact, Partition, Viewer
from memory.privacy import and_visible, is_visible
from memory.semantic import (
    FACT_ID_KEY,
    SemanticIndex,
    SemanticLeg,
    SemanticMetrics,
    semantic_metadata,
    semantic_user_id,
)
from runtime.settings import Settings

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


# --- the OSS index --------------------------------------------------------------------


class _Serialized:
    """A proxy taking one lock around every call to the wrapped vector store.

    mem0 calls its vector store from worker threads (``asyncio.to_thread``); qdrant's
    local mode is not written for concurrent writers and readers. Serialising the store
    calls (sub-millisecond in process) keeps the slow part, embedding, concurrent.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked


class Mem0OssIndex:
    """mem0's open-source library behind :class:`SemanticIndex`, all local but embeddings."""

    name = "mem0-oss"

    def __init__(self, memory: Any, *, search_threshold: float | None = None) -> None:
        """``memory`` is a ``mem0.AsyncMemory`` (see :meth:`create`)."""
        self._memory = memory
        self.search_threshold = search_threshold

    @staticmethod
    def config(
        *,
        embedder_base_url: str | None,
        embedder_api_key: str | None,
        embedder_model: str,
        embedding_dims: int,
        vector_path: Path | None,
        collection_name: str = "alfred_facts",
        vector_store: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``AsyncMemory.from_config`` dict.

        ``vector_path=None`` keeps vectors in memory; ``vector_store`` replaces the
        whole qdrant block (a qdrant server, say). The LLM block is required by mem0's
        constructor but never called: every add is ``infer=False``.
        """
        api_key = embedder_api_key or "unused"  # local endpoints (Ollama, vLLM) ignore it
        store = (
            dict(vector_store)
            if vector_store is not None
            else {
                "provider": "qdrant",
                "config": {
                    "collection_name": collection_name,
                    "embedding_model_dims": embedding_dims,
                    "path": str(vector_path) if vector_path is not None else ":memory:",
                    "on_disk": vector_path is not None,
                },
            }
        )
        openai_config: dict[str, Any] = {"api_key": api_key}
        if embedder_base_url:
            openai_config["openai_base_url"] = embedder_base_url
        return {
            "vector_store": store,
            "embedder": {
                "provider": "openai",
                "config": {
                    **openai_config,
                    "model": embedder_model,
                    "embedding_dims": embedding_dims,
                },
            },
            "llm": {"provider": "openai", "config": {**openai_config, "model": "gpt-4o-mini"}},
            # In memory: mem0 keeps the text of deleted memories in its history table,
            # which must not outlive a "forget". Alfred keeps its own history in MongoDB.
            "history_db_path": ":memory:",
        }

    @classmethod
    async def create(
        cls,
        *,
        embedder_base_url: str | None,
        embedder_api_key: str | None,
        embedder_model: str = "text-embedding-3-small",
        embedding_dims: int | None = None,
        vector_path: Path | None = None,
        data_dir: Path | None = None,
        embed_timeout_s: float = 10.0,
        collection_name: str = "alfred_facts",
        vector_store: Mapping[str, Any] | None = None,
        search_threshold: float | None = None,
    ) -> Mem0OssIndex:
        """Build ``AsyncMemory`` off the loop (it opens qdrant and SQLite synchronously).

        ``embedder_base_url`` is any OpenAI-compatible ``/v1`` URL; tests inject a local
        fake. A local qdrant ``vector_path`` is locked by the process that opens it, so
        only one process (bot *or* worker) can use it; use ``vector_store`` with a qdrant
        server when several processes need the layer.
        """
        dims = embedding_dims or KNOWN_DIMENSIONS.get(embedder_model)
        if dims is None:
            raise ConfigurationError(
                f"unknown embedding size for {embedder_model!r}",
                hint="pass embedding_dims for this model",
            )
        mem0 = import_mem0(data_dir)
        config = cls.config(
            embedder_base_url=embedder_base_url,
            embedder_api_key=embedder_api_key,
            embedder_model=embedder_model,
            embedding_dims=dims,
            vector_path=vector_path,
            collection_name=collection_name,
            vector_store=vector_store,
        )

        def open_memory() -> Any:
            if vector_path is not None:
                vector_path.mkdir(parents=True, exist_ok=True)
            return mem0.AsyncMemory.from_config(config)

        try:
            memory = await asyncio.to_thread(open_memory)
        except Exception as exc:
            raise _translate(exc, "open") from exc
        _bound_embedder(memory, embedder_base_url, embedder_api_key, embed_timeout_s)
        memory.vector_store = _Serialized(memory.vector_store)
        return cls(memory, search_threshold=search_threshold)

    async def add(self, fact: Fact) -> str | None:
        try:
            response = await self._memory.add(
                _message(fact),
                user_id=semantic_user_id(fact.partition),
                metadata=semantic_metadata(fact),
                infer=False,
            )
        except Exception as exc:
            raise _translate(exc, "add") from exc
        ids = _added_ids(response)
        if not ids:
            raise Unavailable(COMPONENT, "add returned no memory id")
        return ids[0]

    async def delete(self, mem0_ids: Sequence[str]) -> None:
        unique = list(dict.fromkeys(i for i in mem0_ids if i))
        for mem0_id in unique:
            try:
                await self._memory.delete(mem0_id)
            except ValueError:
                pass  # "not found": already gone
            except Exception as exc:
                raise _translate(exc, "delete") from exc
        await asyncio.to_thread(self._scrub_history, unique)

    def _scrub_history(self, mem0_ids: Sequence[str]) -> None:
        """Remove the deleted memories' rows (with their text) from mem0's history."""
        db = getattr(self._memory, "db", None)
        connection = getattr(db, "connection", None)
        if connection is None or not mem0_ids:
            return
        lock = getattr(db, "_lock", None) or contextlib.nullcontext()
        marks = ",".join("?" * len(mem0_ids))
        with lock:
            connection.execute(f"DELETE FROM history WHERE memory_id IN ({marks})", list(mem0_ids))
            connection.commit()

    async def search(self, partition_key: str, query: str, k: int) -> list[tuple[str, float]]:
        return await _scoped_search(
            self._memory.search, partition_key, query, k, self.search_threshold
        )

    async def aclose(self) -> None:
        def close() -> None:
            self._memory.close()
            client = getattr(self._memory.vector_store, "client", None)
            if client is not None and hasattr(client, "close"):
                client.close()

        await asyncio.to_thread(close)


def _bound_embedder(
    memory: Any, base_url: str | None, api_key: str | None, timeout_s: float
) -> None:
    """Give mem0's embedder a client with a short timeout and no retries.

    mem0 builds ``openai.OpenAI`` with the library defaults (600 s, 2 retries) and calls
    it from worker threads: a hung endpoint would pin threads of the shared default
    executor long after the retrieval leg gave up, and a retry (after a 0.5 s backoff)
    could never land inside the reply budget anyway.
    """
    import openai

    embedder = getattr(memory, "embedding_model", None)
    if embedder is None or not isinstance(getattr(embedder, "client", None), openai.OpenAI):
        return
    embedder.client = openai.OpenAI(
        api_key=api_key or "unused",
        base_url=base_url or embedder.client.base_url,
        timeout=timeout_s,
        max_retries=0,
    )


# --- mapping hits back to local facts -------------------------------------------------


class MongoSemanticLookup:
    """The resolver and partition lister :class:`SemanticLeg` needs, over MongoDB.

    Both carry the viewer's privacy filter inside their queries.
    """

    def __init__(self, db: AsyncDatabase[Document], store: MongoFactStore | None = None) -> None:
        self._facts = db[FACTS]
        self._store = store or MongoFactStore(db)

    async def resolve(
        self, viewer: Viewer, mem0_ids: Sequence[str]
    ) -> dict[str, tuple[str, Partition]]:
        """``mem0_id -> (fact id, partition)`` for current facts the viewer may see."""
        if not mem0_ids:
            return {}
        query = and_visible(viewer, {"mem0_id": {"$in": list(mem0_ids)}, "current": True})
        out: dict[str, tuple[str, Partition]] = {}
        async for doc in self._facts.find(query, _RESOLVE_PROJECTION):
            try:
                partition = Partition.from_fields(doc)
            except (KeyError, ValueError):
                continue
            out[str(doc["mem0_id"])] = (str(doc["_id"]), partition)
        return out

    async def partitions(self, viewer: Viewer) -> list[Partition]:
        """The partitions holding facts the viewer may see."""
        return [
            stored.partition
            for stored in await self._store.visible_partitions(viewer)
            if is_visible(stored.partition, viewer)
        ]


def semantic_leg(
    index: SemanticIndex,
    db: AsyncDatabase[Document],
    metrics: SemanticMetrics | None = None,
    *,
    timeout_s: float | None = None,
) -> SemanticLeg:
    """The mem0 leg for :class:`memory.retrieval.Retriever`'s ``extra_legs``."""
    lookup = MongoSemanticLookup(db)
    return SemanticLeg(index, lookup.resolve, lookup.partitions, metrics, timeout_s=timeout_s)


# --- writes ---------------------------------------------------------------------------


class Mem0IdStore(Protocol):
    """Where the mem0 id of a fact is kept (``MongoFactStore``)."""

    async def set_mem0_id(self, fact_id: str, mem0_id: str | None) -> None: ...


async def mirror_fact(
    store: Mem0IdStore,
    index: SemanticIndex,
    fact: Fact,
    metrics: SemanticMetrics | None = None,
) -> str | None:
    """Copy ``fact`` to mem0 and keep the mem0 id on it. Fails soft, never raises.

    The local fact is the truth and is already stored: a mem0 failure is logged and
    counted, and the fact simply has no semantic copy (``mem0_id`` unchanged). A
    reworded fact that had a copy gets a new one; the old copy is then deleted.
    """
    metrics = metrics if metrics is not None else SemanticMetrics()
    try:
        mem0_id = await index.add(fact)
    except Exception as exc:  # mirroring is best effort by design
        metrics.errors += 1
        metrics.write_errors += 1
        log.warning("%s: mirroring fact %s failed (%s)", index.name, fact.id, _why(exc))
        return None
    if mem0_id is None:
        metrics.writes_pending += 1
        log.info("%s: fact %s accepted, its id is not known yet", index.name, fact.id)
        return None
    try:
        await store.set_mem0_id(fact.id, mem0_id)
    except Exception as exc:  # the copy is useless unlinked
        metrics.write_errors += 1
        log.warning("recording the mem0 id of fact %s failed (%s)", fact.id, _why(exc))
        with contextlib.suppress(Exception):
            await index.delete([mem0_id])
        return None
    metrics.writes += 1
    if fact.mem0_id and fact.mem0_id != mem0_id:
        try:
            await index.delete([fact.mem0_id])
            metrics.deletes += 1
        except Exception as exc:  # an unlinked copy is never shown
            metrics.errors += 1
            log.warning(
                "%s: deleting the old copy of fact %s failed (%s)", index.name, fact.id, _why(exc)
            )
    return mem0_id


async def delete_mirrors(
    index: SemanticIndex, facts: Sequence[Fact], metrics: SemanticMetrics | None = None
) -> int:
    """Delete the mem0 copies of ``facts`` (the "forget" cascade). Raises on failure.

    Unlike mirroring this must not fail soft: a forgotten fact's text must not stay in
    mem0, so the caller (an idempotent job) retries on :class:`Unavailable`.
    """
    ids = [f.mem0_id for f in facts if f.mem0_id]
    if not ids:
        return 0
    try:
        await index.delete(ids)
    except Exception:
        if metrics is not None:
            metrics.errors += 1
        raise
    if metrics is not None:
        metrics.deletes += len(ids)
    return len(ids)


def _why(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AlfredError) else type(exc).__name__


# --- from settings --------------------------------------------------------------------


async def build_semantic_index(
    settings: Settings,
    *,
    embedder_base_url: str | None = None,
    embedder_api_key: str | None = None,
    embedding_dims: int | None = None,
    vector_path: Path | None = None,
    in_memory: bool = False,
) -> SemanticIndex | None:
    """The semantic index the settings ask for, or ``None`` when mem0 is off.

    ``MEM0_MODE``: ``off``; ``cloud`` (needs ``MEM0_API_KEY``; ``MEM0_HOST`` optional);
    ``oss`` (local qdrant under the data dir, embeddings from ``OPENAI_BASE_URL`` /
    ``OPENAI_API_KEY``); ``auto`` (the default: cloud when a key is set, else off).
    The keyword arguments override the embeddings endpoint and the vector location
    (tests point them at local fakes and in-memory stores).
    """
    mode = settings.mem0_mode
    key = settings.mem0_api_key.get_secret_value() if settings.mem0_api_key else None
    if mode not in ("auto", "off", "cloud", "oss"):
        raise ConfigurationError(f"unknown MEM0_MODE {mode!r}", hint="use auto, off, cloud or oss")
    if mode == "off" or (mode == "auto" and not key):
        return None
    data_dir = settings.data_dir()
    if mode in ("auto", "cloud"):
        if not key:
            raise ConfigurationError("MEM0_MODE=cloud needs MEM0_API_KEY")
        return await Mem0CloudIndex.connect(key, host=settings.mem0_host, data_dir=data_dir)
    base_url = embedder_base_url or settings.openai_base_url
    api_key = embedder_api_key or (
        settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    )
    if not base_url and not api_key:
        raise ConfigurationError(
            "MEM0_MODE=oss needs an embeddings endpoint",
            hint="set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server",
        )
    path = None if in_memory else (vector_path or data_dir / "mem0" / "qdrant")
    return await Mem0OssIndex.create(
        embedder_base_url=base_url,
        embedder_api_key=api_key,
        embedder_model=settings.embeddings_model,
        embedding_dims=embedding_dims,
        vector_path=path,
        data_dir=data_dir,
        embed_timeout_s=min(settings.llm_timeout, OSS_EMBED_TIMEOUT_S),
    )
