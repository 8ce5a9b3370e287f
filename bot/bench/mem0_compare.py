"""The other two sides of ``alfred bench retrieval --compare mem0``: mem0 OSS and the floor.

Why each detail:

* **Same weights.** mem0 gets Alfred's own local ONNX embedder (all-MiniLM-L6-v2 int8)
  through a subclass of mem0's ``EmbeddingBase`` installed as ``Memory.embedding_model``.
  mem0 2.2.1's config accepts only its named providers (the ``langchain`` one would pull
  in LangChain; the others download weights or call a server), so the instance is built
  with the inert ``openai`` provider (a client object, never called) and its embedder is
  replaced before the first call. The comparison is then about storage and search.
* **Loading.** The memories are added one by one through ``Memory.add(..., infer=False)``
  (no LLM is ever called). Alfred has already embedded these exact texts with the same
  model while storing them, so the wrapper answers an *add* from those vectors instead of
  computing them again; a *search* is always embedded afresh (no cache can serve a query).
  mem0's faiss store rewrites its whole index and a JSON docstore after every insert,
  which makes a 19k load quadratic (hours); that write is deferred to one at the end, and
  its duration is reported (``save_ms``): each real ``add`` at that size pays it too.
* **Offline.** ``MEM0_TELEMETRY`` is off before mem0 is imported
  (:func:`integrations.mem0.common.import_mem0`); mem0's spaCy loaders, which would
  download a model if spaCy were installed, are marked as failed (mem0 then skips its
  lemmatised BM25 and entity boosts, which its faiss store does not support anyway); and
  for the whole comparison a guard refuses any connection that is not to this machine
  and counts the attempts (reported as ``network_attempts``).
* **The floor** is what no system can beat on this data: the query's embedding and one
  numpy scan of exactly the vectors the viewer may see, kept in RAM.
* **faiss's threads sleep when idle** (``OMP_WAIT_POLICY=PASSIVE``, unless set): by
  default its OpenMP threads spin on the cores after each search, so the search timed
  next (often mem0's own) found both cores taken. On 900 queries at 10k facts, p95 was
  mem0 10.9-12.5 ms and Alfred 9.6-9.9 ms with spinning, 6.5 and 7.2 ms without; the
  floor, one thread, hardly changed. OpenMP reads the policy once, when faiss loads,
  so it is set when this module is imported, before mem0 is.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bot.bench.common import progress
from integrations.mem0.common import import_mem0

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: The mem0 user id the viewer's memories are stored under: one scope, one search (the
#: kindest setup for mem0; Alfred's own mem0 leg stores one user per partition).
VIEWER_SCOPE = "viewer-scope"
#: Results asked of each system, and the size of the exact top list recall is measured on.
TOP_K = 10

Matrix = npt.NDArray[np.float32]


@dataclass
class NetworkGuard:
    """Refuses, and counts, connections to anything but this machine while active."""

    attempts: list[str] = field(default_factory=list)

    @contextmanager
    def active(self) -> Iterator[NetworkGuard]:
        original_connect = socket.socket.connect
        original_connect_ex = socket.socket.connect_ex
        guard = self

        def allowed(sock: socket.socket, address: Any) -> bool:
            if sock.family not in (socket.AF_INET, socket.AF_INET6):
                return True  # unix sockets: the embedded servers
            host = str(address[0]) if isinstance(address, tuple) else str(address)
            try:
                return ipaddress.ip_address(host).is_loopback
            except ValueError:
                return host == "localhost"

        def connect(sock: socket.socket, address: Any) -> None:
            if not allowed(sock, address):
                guard.attempts.append(str(address))
                raise OSError(f"alfred bench: network refused ({address})")
            original_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if not allowed(sock, address):
                guard.attempts.append(str(address))
                return 101  # ENETUNREACH
            return original_connect_ex(sock, address)

        socket.socket.connect = connect  # type: ignore[method-assign, assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
        try:
            yield self
        finally:
            socket.socket.connect = original_connect  # type: ignore[method-assign]
            socket.socket.connect_ex = original_connect_ex  # type: ignore[method-assign]


class Floor:
    """Query embedding plus one scan of exactly the viewer's visible vectors."""

    def __init__(self, embedder: Any, ids: Sequence[str], vectors: Matrix) -> None:
        self._embedder = embedder
        self._ids = list(ids)
        self._matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        # The reference in double precision, converted once: a 30 MB conversion per
        # query would churn the allocator and the caches between the timed searches.
        self._exact = self._matrix.astype(np.float64)

    def search(self, query: str, k: int = TOP_K) -> list[str]:
        vector = self._embedder.embed_sync([query])[0]
        scores = self._matrix @ vector
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return [self._ids[i] for i in top[np.argsort(-scores[top])]]

    def exact(self, vector: npt.NDArray[np.float32], k: int = TOP_K) -> list[str]:
        """The exact scoped top ``k`` by a full sort (the reference recall is measured on)."""
        scores = self._exact @ vector.astype(np.float64)
        return [self._ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


def _local_embedding_class(base: type) -> type:
    """A mem0 ``EmbeddingBase`` over Alfred's embedder (built once mem0 is imported)."""

    class AlfredLocalEmbedding(base):  # type: ignore[misc]
        def __init__(self, embedder: Any, known: Mapping[str, Any]) -> None:
            super().__init__(None)
            self.embedder = embedder
            self.known = dict(known)
            self.computed = 0

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            if memory_action == "add" and text in self.known:
                return [float(x) for x in self.known[text]]
            self.computed += 1
            return [float(x) for x in self.embedder.embed_sync([text])[0]]

    return AlfredLocalEmbedding


class Mem0Side:
    """mem0 OSS (``Memory``, faiss store) holding the viewer's memories among others'."""

    store = "faiss"

    def __init__(self, memory: Any, embedding: Any) -> None:
        self.memory = memory
        self.embedding = embedding
        self.load_s = 0.0
        self.add_ms = 0.0
        self.save_ms = 0.0
        self.count = 0

    @classmethod
    def create(cls, embedder: Any, folder: Path, known: Mapping[str, Any]) -> Mem0Side:
        if not hasattr(embedder, "embed_sync"):
            raise RuntimeError("--compare mem0 needs the local ONNX embedder (no OpenAI key)")
        folder.mkdir(parents=True, exist_ok=True)
        mem0 = import_mem0(folder)
        from mem0.embeddings.base import EmbeddingBase
        from mem0.utils import spacy_models

        # Never let mem0 fetch a spaCy model: it would download one if spaCy is installed.
        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True
        dims = int(embedder.dimensions)
        inert = {"api_key": "unused-offline"}  # builds a client object, never called
        memory = mem0.Memory.from_config(
            {
                "vector_store": {
                    "provider": "faiss",
                    "config": {
                        "collection_name": "alfred_bench",
                        "path": str(folder / "faiss"),
                        "embedding_model_dims": dims,
                    },
                },
                "embedder": {
                    "provider": "openai",
                    "config": {**inert, "model": embedder.model_name, "embedding_dims": dims},
                },
                "llm": {"provider": "openai", "config": {**inert, "model": "gpt-4o-mini"}},
                "history_db_path": ":memory:",
            }
        )
        embedding = _local_embedding_class(EmbeddingBase)(embedder, known)
        memory.embedding_model = embedding
        return cls(memory, embedding)

    def load(self, items: Sequence[tuple[str, str, str]]) -> None:
        """Add ``(fact id, text, mem0 user id)`` one by one with ``infer=False``."""
        store = self.memory.vector_store
        real_save = store._save
        store._save = lambda: None  # see the module docstring: one write at the end
        started = time.perf_counter()
        try:
            with progress() as bar:
                task = bar.add_task("mem0: add(infer=False)", total=len(items))
                for fact_id, text, user_id in items:
                    self.memory.add(
                        text, user_id=user_id, metadata={"alfred_fact_id": fact_id}, infer=False
                    )
                    bar.advance(task)
        finally:
            store._save = real_save
        self.load_s = time.perf_counter() - started
        self.add_ms = self.load_s * 1000 / max(1, len(items))
        saved = time.perf_counter()
        real_save()
        self.save_ms = (time.perf_counter() - saved) * 1000
        self.count = int(store.index.ntotal)
        self.embedding.known.clear()  # from here on every embedding is computed

    def search(self, query: str, k: int = TOP_K) -> list[str]:
        """The viewer's scoped search as a mem0 user would run it: local fact ids."""
        found = self.memory.search(query, filters={"user_id": VIEWER_SCOPE}, top_k=k)
        return [
            str((hit.get("metadata") or {}).get("alfred_fact_id", hit.get("id")))
            for hit in found.get("results", [])
        ]


def threads() -> dict[str, Any]:
    """What decides how many threads the scans use: on a busy 2-core machine, multithreaded
    BLAS (numpy's matrix-vector product) and OpenMP (faiss) wait on each other's cores and
    a scan of 19k vectors takes tens of ms instead of one (docs/scaling.md)."""
    import faiss

    return {
        "cpus": os.cpu_count(),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "faiss": int(faiss.omp_get_max_threads()),
    }


def recall(returned: Sequence[str], exact: Sequence[str], k: int) -> float:
    """The share of the exact top ``k`` among what a system returned when asked for ``k``."""
    wanted = set(exact[:k])
    return len(wanted & set(returned)) / len(wanted) if wanted else 1.0
