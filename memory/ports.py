"""The interfaces the memory domain needs from the outside world.

Adapters in ``integrations/`` implement these; the domain never imports an adapter.
Each port exists because a second implementation really does (a production one and an
embedded/offline one, or a test fake).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory.models import Fact, Partition, Viewer

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Clock(Protocol):
    """Time as the domain sees it: real in production, simulated in replays."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension."""

    @property
    def model_name(self) -> str:
        """The model id stored beside every vector, so a model switch is detected."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector this embedder returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch: an array of shape ``(len(texts), dimensions)``, rows L2-normalised."""
        ...


class LoadedFact(NamedTuple):
    """A fact as a search index's first load reads it: the fact without its embedding,
    and the embedding as the float32 row the index keeps (None when it has none).
    Decoded straight from storage: as Python floats on the way, 10,000 vectors cost
    about 0.5 s of the load, against 0.01 s."""

    fact: Fact
    vector: Vector | None

    @property
    def id(self) -> str:
        return self.fact.id


class PartitionVersion(Protocol):
    """A partition and the version its facts are at (bumped after every fact change)."""

    @property
    def partition(self) -> Partition: ...

    @property
    def version(self) -> int: ...

    @property
    def recent_changes(self) -> Sequence[Sequence[str] | None] | None:
        """The fact ids each of the partition's last versions changed, oldest first, the
        last entry for :attr:`version` (an entry is None where one write changed too
        many to list); None when the record cannot vouch for them. Lets a cache that
        holds an earlier version load just those facts instead of listing the partition."""
        ...


@runtime_checkable
class FactIndexSource(Protocol):
    """What the application-side search needs from storage to keep its caches correct.

    Every method takes the viewer and applies the privacy filter inside its query.
    """

    async def visible_partitions(self, viewer: Viewer) -> Sequence[PartitionVersion]:
        """The partitions holding facts the viewer may see, with their versions."""
        ...

    async def fact_revisions(
        self, viewer: Viewer, partition_keys: Sequence[str]
    ) -> dict[str, tuple[str, int]]:
        """Current fact ids of those partitions → (partition key, revision)."""
        ...

    async def indexable_facts(self, viewer: Viewer, ids: Sequence[str]) -> list[LoadedFact]:
        """The current, visible facts among ``ids``, each with its embedding beside it
        (an index catching up on the facts a change named)."""
        ...

    def partition_facts(
        self, viewer: Viewer, partition_keys: Sequence[str], *, batch: int
    ) -> AsyncIterator[LoadedFact]:
        """Every current fact of those partitions that the viewer may see, each with its
        embedding beside it, read ``batch`` at a time (an index's first load of a
        partition)."""
        ...
