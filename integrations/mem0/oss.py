"""mem0 OSS as Alfred's semantic index: ``mem0.AsyncMemory`` with a local qdrant store
and an OpenAI-compatible embedder. See :mod:`integrations.mem0` for the notes on its API."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from integrations.mem0.cloud import _scoped_search
from integrations.mem0.common import COMPONENT, _added_ids, _message, _translate, import_mem0
from integrations.openai_embedder import KNOWN_DIMENSIONS
from memory.errors import ConfigurationError, Unavailable
from memory.models import Fact
from memory.semantic import (
    semantic_metadata,
    semantic_user_id,
)

log = logging.getLogger(__name__)

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
