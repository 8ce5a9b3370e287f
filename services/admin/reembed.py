"""``re-embed``: give every fact a vector from the configured embedder.

After switching embedding models (or dimensions), facts embedded with the old one are
found by keywords only (vectors of different models are not comparable). This job
embeds them again in batches and stores each vector with
the fact store's ``set_embedding``, which bumps the partition's version so every
process's search cache reloads.

Resumable by construction: each batch is *queried* ("facts whose model or dims differ
from the configured ones"), never taken from a list computed at the start, so a run
that was killed, timed out or stopped at ``max_batches`` continues where it stopped
when started again, and a finished run finds nothing to do. History versions are
re-embedded too, so that a stats count of stale vectors reaches zero.

On Atlas, a change of *dimensions* also needs the vector index rebuilt
(``alfred migrate`` after changing the embedder); a model change at the same size
does not.
"""

from __future__ import annotations

from typing import Any

from memory.errors import ConfigurationError
from services.admin.context import AdminContext

DEFAULT_BATCH = 64


async def re_embed(
    ctx: AdminContext, *, batch_size: int = DEFAULT_BATCH, max_batches: int | None = None
) -> dict[str, Any]:
    """Re-embed stale facts, ``batch_size`` at a time, at most ``max_batches`` batches
    (None: until none is left). Returns counts and whether anything is left."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    embedder = ctx.stores.embedder
    model, dims = embedder.model_name, embedder.dimensions
    queries = ctx.queries
    before = await queries.count_stale_embeddings(model, dims)
    await ctx.progress.phase_start(f"re-embedding with {model}", before)
    done = batches = 0
    vanished: list[str] = []  # deleted while we worked: they match no more, but skip them
    while max_batches is None or batches < max_batches:
        batch = await queries.stale_embeddings(model, dims, limit=batch_size, skip_ids=vanished)
        if not batch:
            break
        vectors = await embedder.embed([content for _, content in batch])
        if len(vectors) != len(batch) or (len(batch) and len(vectors[0]) != dims):
            # Storing such vectors would leave the facts matching forever: stop loudly.
            raise ConfigurationError(
                f"the embedder {model} returned vectors of the wrong shape",
                hint=f"expected {len(batch)} x {dims}",
            )
        for (fact_id, _), vector in zip(batch, vectors, strict=True):
            if await ctx.stores.facts.set_embedding(fact_id, vector.tolist(), model):
                done += 1
            else:
                vanished.append(fact_id)
        batches += 1
        await ctx.progress.set(done, max(ctx.progress.total, done))
    left = await queries.count_stale_embeddings(model, dims)
    await ctx.progress.finish("done" if left == 0 else "stopped: more left")
    return {
        "model": model,
        "dims": dims,
        "stale_before": before,
        "re_embedded": done,
        "batches": batches,
        "left": left,
        "complete": left == 0,
    }
