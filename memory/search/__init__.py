"""Pure-numpy retrieval building blocks: keyword terms, BM25, cosine top-k, fusion, blend.

Used where the database cannot score (self-hosted MongoDB, the embedded server) and by the
LoCoMo benchmark. Nothing here performs I/O or imports an adapter.
"""

from memory.search.bm25 import BM25Index
from memory.search.fusion import (
    BlendConfig,
    FusionConfig,
    FusionMethod,
    MemorySignals,
    blend,
    fuse,
    fuse_arrays,
    min_max_array,
    min_max_normalise,
    rrf_fusion,
    top_n,
    weighted_fusion,
)
from memory.search.text import porter_stem, tokenize
from memory.search.vector import VectorIndex, cosine_scores, top_k_cosine, top_k_indices

__all__ = [
    "BM25Index",
    "BlendConfig",
    "FusionConfig",
    "FusionMethod",
    "MemorySignals",
    "VectorIndex",
    "blend",
    "cosine_scores",
    "fuse",
    "fuse_arrays",
    "min_max_array",
    "min_max_normalise",
    "porter_stem",
    "rrf_fusion",
    "tokenize",
    "top_k_cosine",
    "top_k_indices",
    "top_n",
    "weighted_fusion",
]
