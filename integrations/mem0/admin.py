"""Listing what mem0 holds under one partition, for the ``reconcile-mem0`` admin job.

:class:`memory.semantic.SemanticIndex` has no "list" on purpose (the reply path never
needs one), and mem0 offers no global listing (every list needs an entity filter), so
orphan hunting goes partition by partition: for each partition key Alfred knows (the
mem0 ``user_id`` it stores under), list the entries and compare with local facts.

An index may offer ``list_entries(partition_key)`` itself; otherwise the two indexes of
:mod:`integrations.mem0` are listed through the mem0 client they wrap (the
Platform's paginated ``get_all``; the OSS library's ``get_all`` with a ``top_k``).
An index that can be listed neither way answers None ("cannot tell").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from integrations.mem0.cloud import Mem0CloudIndex
from integrations.mem0.common import _results, _translate
from integrations.mem0.mirror import Mem0IdStore, mirror_fact
from integrations.mem0.oss import Mem0OssIndex
from memory.admin_ports import MirrorListing
from memory.models import Fact
from memory.semantic import FACT_ID_KEY, SemanticIndex, SemanticMetrics

#: Page size of the Platform listing, and the OSS listing's cap per partition.
PAGE_SIZE = 100
OSS_LIMIT = 10_000
#: A partition with more pages than this is listed partly (and reported as such).
MAX_PAGES = 1_000


@dataclass(frozen=True)
class Mem0Entry:
    """One mem0 memory: its id and the local fact id its metadata names (if any)."""

    id: str
    fact_id: str | None


@dataclass(frozen=True)
class Mem0Listing:
    """The entries of one partition; ``complete`` is False when the listing was capped."""

    entries: list[Mem0Entry]
    complete: bool


def _entries(items: list[Any]) -> list[Mem0Entry]:
    out = []
    for item in items:
        if not isinstance(item, Mapping) or not item.get("id"):
            continue
        metadata = item.get("metadata") or {}
        fact_id = metadata.get(FACT_ID_KEY) if isinstance(metadata, Mapping) else None
        out.append(Mem0Entry(str(item["id"]), str(fact_id) if fact_id else None))
    return out


async def list_partition(index: SemanticIndex, partition_key: str) -> Mem0Listing | None:
    """Every mem0 entry stored under ``partition_key``, or None if this index cannot list."""
    own = getattr(index, "list_entries", None)
    if callable(own):
        listing = await own(partition_key)
        return listing if isinstance(listing, Mem0Listing) else None
    if isinstance(index, Mem0CloudIndex):
        return await _list_cloud(index, partition_key)
    if isinstance(index, Mem0OssIndex):
        return await _list_oss(index, partition_key)
    return None


async def _list_cloud(index: Mem0CloudIndex, partition_key: str) -> Mem0Listing:
    client = index._client
    entries: list[Mem0Entry] = []
    for page in range(1, MAX_PAGES + 1):
        try:
            response = await client.get_all(
                filters={"user_id": partition_key}, page=page, page_size=PAGE_SIZE
            )
        except Exception as exc:
            raise _translate(exc, "list") from exc
        items = _results(response)
        entries += _entries(items)
        more = isinstance(response, Mapping) and response.get("next")
        if not items or not more:
            return Mem0Listing(entries, complete=True)
    return Mem0Listing(entries, complete=False)


async def _list_oss(index: Mem0OssIndex, partition_key: str) -> Mem0Listing:
    try:
        response = await index._memory.get_all(filters={"user_id": partition_key}, top_k=OSS_LIMIT)
    except Exception as exc:
        raise _translate(exc, "list") from exc
    items = _results(response)
    return Mem0Listing(_entries(items), complete=len(items) < OSS_LIMIT)


class Mem0Maintenance:
    """The mem0 copy as the operator repairs and erases it (implements
    :class:`memory.admin_ports.Mem0Maintenance` over a :class:`SemanticIndex`)."""

    def __init__(
        self, index: SemanticIndex, store: Mem0IdStore, metrics: SemanticMetrics | None
    ) -> None:
        self.index = index
        self.store = store
        self.metrics = metrics

    @property
    def name(self) -> str:
        return self.index.name

    async def list_partition(self, partition_key: str) -> MirrorListing | None:
        listing = await list_partition(self.index, partition_key)
        if listing is None:
            return None
        return MirrorListing([e.id for e in listing.entries], listing.complete)

    async def mirror(self, fact: Fact) -> bool:
        return bool(await mirror_fact(self.store, self.index, fact, self.metrics))

    async def delete(self, mem0_ids: Sequence[str]) -> None:
        await self.index.delete(mem0_ids)
