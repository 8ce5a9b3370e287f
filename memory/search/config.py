"""How retrieval runs (:class:`memory.retrieval.Retriever`): its legs, limits and floors."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.search.fusion import AbsoluteScale, BlendConfig, FusionConfig


@dataclass(frozen=True)
class RetrievalConfig:
    """How retrieval runs; the defaults are those the LoCoMo benchmark chose."""

    fusion: FusionConfig = field(default_factory=FusionConfig)
    blend: BlendConfig = field(default_factory=BlendConfig)
    #: How many hits each leg contributes to fusion.
    leg_k: int = 50
    #: Per-leg time limit; a late leg is dropped, the others answer.
    leg_timeout_s: float = 0.45
    #: Time limit for embedding the query (a slow embedder degrades to keywords only).
    embed_timeout_s: float = 0.4
    #: Weight of the mem0 leg when present (the local legs keep theirs).
    extra_weight: float = 0.3
    #: A fact no keyword matched needs at least this cosine to count as relevant at all:
    #: fusion normalises scores, so without a floor the best of many poor matches would
    #: look like a perfect one. 0 turns the floor off (the benchmarks measure pure ranking).
    min_dense: float = 0.25
    #: The fixed per-leg scales of absolute relevance.
    scale: AbsoluteScale = field(default_factory=AbsoluteScale)
    #: Facts that no single leg finds at least this related (on the fixed scales: a
    #: cosine of 0.4, or a fifth of the query's words) are not offered at all, however
    #: few candidates there are (a lone unrelated memory is not an answer). On LoCoMo it
    #: costs nothing (recall@10 0.692 on conversation 0 with and without it). 0 turns it
    #: off.
    min_relevance: float = 0.2
