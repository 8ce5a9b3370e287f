"""Fusing the dense and keyword legs, then blending relevance with recency and importance.

DESIGN.md §6.3: the legs are fused either by reciprocal rank (k = 60, as seed 002 says)
or by a weighted sum of min-max-normalised scores, whichever LoCoMo shows better. On the
LoCoMo development conversations (scripts/locomo_eval.py) the weighted sum wins clearly:
recall@10 0.68 against 0.62 for RRF, which is even below BM25 alone (0.63). RRF throws
away *how much* better a leg's first hit is than its tenth, and with a weak dense leg
(MiniLM) that flattening lets its noise outvote a confident keyword match.

The default weights are 0.5 dense / 0.5 keyword because they are the robust choice:
fusing each leg's top-50 hits (how :mod:`memory.retrieval` calls :func:`fuse`) they score
0.684 where 0.6/0.4 drops to 0.662 (a truncated leg's min-max stretches its scores, which
over-weights the dense leg), and scoring every candidate (:func:`fuse_arrays`) they score
0.682, within noise of the best there (0.6/0.4, 0.686).

Measured through ``alfred bench locomo`` (Alfred's own write and retrieval paths, the
760 questions of the 5 dev conversations, each leg's top-50, BM25 k1 = 0.9 / b = 0.4):
weighted 0.5/0.5 recall@5/10/20 0.606 / 0.705 / 0.771, RRF 0.556 / 0.654 / 0.760. Also
measured on the same footing and not adopted (recall@10): z-score normalisation 0.705
(no gain), distribution-based (mean ± 3σ) 0.678, dividing by the leg's best instead of
min-max 0.674, leg pools of 100 / 200 / all 0.709 / 0.707 / 0.708 (none gains on both
conversations 0-2 and 3-4, and bigger pools cost latency), dense weight 0.45 / 0.55
0.708 / 0.698 (0.45 gains on 0-2 only), pseudo-relevance feedback on the query vector
0.707 and MMR diversification 0.700.

With each turn embedded with the turn it answered (memory/search/context.py: 0.750) the
weights were measured again and stay: dense 0.45 / 0.55 / 0.6 give 0.745 / 0.751 / 0.739,
and 0.55 moves neither half by more than 0.001 (it loses a little on 0-1); docs/scaling.md
has the table.

Both fusions return relevance in [0, 1] so that :func:`blend` can mix it with the other
signals on one scale ("normalise before blending").

Each leg is a mapping ``doc_id -> raw score``, typically that leg's top-N hits among the
viewer's pre-filtered candidates. A document a leg did not return counts as that leg's
worst (0 after normalisation), which is what "not found by keyword search" means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import numpy as np
import numpy.typing as npt

from memory.constants import RRF_K

FloatArray = npt.NDArray[np.float32]

DEFAULT_DENSE_WEIGHT: Final = 0.5
DEFAULT_KEYWORD_WEIGHT: Final = 0.5


class FusionMethod(StrEnum):
    """How the legs' results are combined."""

    WEIGHTED = "weighted"
    RRF = "rrf"


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """The fusion method and its parameters; defaults from the LoCoMo evaluation."""

    method: FusionMethod = FusionMethod.WEIGHTED
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    keyword_weight: float = DEFAULT_KEYWORD_WEIGHT
    rrf_k: int = RRF_K

    def __post_init__(self) -> None:
        if self.dense_weight < 0 or self.keyword_weight < 0:
            raise ValueError("fusion weights must not be negative")
        if self.dense_weight + self.keyword_weight <= 0:
            raise ValueError("at least one fusion weight must be positive")
        if self.rrf_k < 0:
            raise ValueError("rrf_k must not be negative")


def min_max_normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores rescaled to [0, 1]: the leg's best becomes 1, its worst 0.

    When every score is equal (a single hit, say) they are all equally the best: 1.0 if
    the scores are positive, else 0.0 (e.g. keyword scores that are all zero mean no
    keyword match at all, which must not count as a perfect one).
    """
    if not scores:
        return {}
    low = min(scores.values())
    high = max(scores.values())
    spread = high - low
    if spread <= 0 or not math.isfinite(spread):
        value = 1.0 if high > 0 else 0.0
        return dict.fromkeys(scores, value)
    return {doc_id: (score - low) / spread for doc_id, score in scores.items()}


def weighted_fusion(
    legs: Sequence[Mapping[str, float]], weights: Sequence[float]
) -> dict[str, float]:
    """Σ wᵢ · minmax(legᵢ)(d) / Σ wᵢ over the union of the legs' documents, in [0, 1]."""
    if len(legs) != len(weights):
        raise ValueError("one weight per leg")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("at least one weight must be positive")
    fused: dict[str, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        if weight == 0:
            for doc_id in leg:
                fused.setdefault(doc_id, 0.0)
            continue
        for doc_id, value in min_max_normalise(leg).items():
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * value / total
    return fused


def ranking(scores: Mapping[str, float]) -> list[str]:
    """Doc ids by descending score; equal scores by id, so rankings are deterministic."""
    return sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))


def rrf_fusion(
    legs: Sequence[Mapping[str, float]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Reciprocal rank fusion, Σ wᵢ / (k + rankᵢ(d)) with 1-based ranks, scaled to [0, 1].

    The scale divides by the best possible sum (first in every leg), so a document ranked
    first by every leg scores 1.0. Only ranks matter: pass each leg's hits, not padding.
    """
    weights = [1.0] * len(legs) if weights is None else list(weights)
    if len(weights) != len(legs):
        raise ValueError("one weight per leg")
    best = sum(w / (k + 1) for w in weights)
    if best <= 0:
        raise ValueError("at least one weight must be positive")
    fused: dict[str, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        for rank, doc_id in enumerate(ranking(leg), start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank) / best
    return fused


def fuse(
    dense: Mapping[str, float],
    keyword: Mapping[str, float],
    config: FusionConfig = FusionConfig(),
) -> dict[str, float]:
    """The fused relevance in [0, 1] of every document either leg returned."""
    weights = (config.dense_weight, config.keyword_weight)
    if config.method is FusionMethod.RRF:
        return rrf_fusion((dense, keyword), k=config.rrf_k, weights=weights)
    return weighted_fusion((dense, keyword), weights)


def top_n(scores: Mapping[str, float], n: int) -> list[tuple[str, float]]:
    """The ``n`` best ``(doc_id, score)``, best first, ties by id."""
    if n <= 0:
        return []
    return [(doc_id, scores[doc_id]) for doc_id in ranking(scores)[:n]]


# --- the same fusions over aligned arrays ---------------------------------------------


def min_max_array(scores: FloatArray) -> FloatArray:
    """:func:`min_max_normalise` for an array (same rule when all scores are equal)."""
    scores = np.asarray(scores, dtype=np.float32)
    if scores.size == 0:
        return scores.copy()
    low, high = float(scores.min()), float(scores.max())
    spread = high - low
    if spread <= 0 or not np.isfinite(spread):
        return np.full(scores.shape, 1.0 if high > 0 else 0.0, dtype=np.float32)
    result: FloatArray = ((scores - np.float32(low)) / np.float32(spread)).astype(np.float32)
    return result


def _rrf_array(scores: FloatArray, k: int, returned: npt.NDArray[np.bool_]) -> FloatArray:
    """1 / (k + rank) for each returned entry (1-based rank by score), 0 for the others."""
    out = np.zeros(scores.shape, dtype=np.float32)
    (hit,) = np.nonzero(returned)
    if hit.size:
        order = hit[np.argsort(-scores[hit], kind="stable")]
        out[order] = 1.0 / (k + np.arange(1, order.size + 1, dtype=np.float32))
    return out


def fuse_arrays(
    dense: FloatArray, keyword: FloatArray, config: FusionConfig = FusionConfig()
) -> FloatArray:
    """Fused relevance in [0, 1] when both legs scored *every* candidate (aligned arrays).

    This is the embedded path of DESIGN.md §6.4: cosine and BM25 over all pre-filtered
    candidates, so min-max sees each leg's true range. A keyword score of 0 means "no
    shared term": it normalises to 0 and, for RRF, earns no rank at all.
    """
    dense = np.asarray(dense, dtype=np.float32)
    keyword = np.asarray(keyword, dtype=np.float32)
    if dense.shape != keyword.shape:
        raise ValueError("the legs must be aligned arrays of the same shape")
    wd, wk = config.dense_weight, config.keyword_weight
    if config.method is FusionMethod.RRF:
        best = (wd + wk) / (config.rrf_k + 1)
        fused = wd * _rrf_array(dense, config.rrf_k, np.isfinite(dense))
        fused += wk * _rrf_array(keyword, config.rrf_k, keyword > 0)
        result: FloatArray = (fused / np.float32(best)).astype(np.float32)
        return result
    fused = wd * min_max_array(dense) + wk * min_max_array(keyword)
    result = (fused / np.float32(wd + wk)).astype(np.float32)
    return result


# --- blending with recency, strength and importance -----------------------------------


@dataclass(frozen=True, slots=True)
class BlendConfig:
    """Weights and shapes of the final blend; the defaults favour relevance.

    Relevance dominates (0.8) because a memory that does not answer the message is noise
    however fresh or important; recency and importance only reorder close calls.
    """

    relevance_weight: float = 0.8
    recency_weight: float = 0.1
    importance_weight: float = 0.1
    strength_weight: float = 0.0
    #: Age at which the decaying part of recency halves.
    half_life_days: float = 30.0
    #: Recency never falls below this: old memories rank lower but never vanish.
    recency_floor: float = 0.1
    #: Accesses at which strength saturates at 1 (log-scaled before that).
    strength_saturation: int = 10
    #: A fully strengthened memory decays (1 + boost) times slower (spacing effect).
    strength_half_life_boost: float = 1.0

    def __post_init__(self) -> None:
        weights = (
            self.relevance_weight,
            self.recency_weight,
            self.importance_weight,
            self.strength_weight,
        )
        if min(weights) < 0 or sum(weights) <= 0:
            raise ValueError("blend weights must be non-negative with a positive sum")
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0.0 < self.recency_floor < 1.0:
            raise ValueError("recency_floor must be in (0, 1) so old memories never vanish")
        if self.strength_saturation < 1 or self.strength_half_life_boost < 0:
            raise ValueError("strength_saturation >= 1 and strength_half_life_boost >= 0")


@dataclass(frozen=True, slots=True)
class MemorySignals:
    """What :func:`blend` knows about one candidate.

    ``age_days`` is the time since the memory was last reinforced: stated, updated or
    recalled, whichever is latest (the caller decides; negative ages count as 0).
    """

    relevance: float
    age_days: float
    importance: int = 5
    access_count: int = 0
    #: Pinned (seed 001): the memory does not decay, so recency is always 1.
    pinned: bool = False


def strength_score(access_count: int, saturation: int = 10) -> float:
    """Access strength in [0, 1]: log-scaled so the first recalls matter most."""
    if access_count <= 0:
        return 0.0
    return min(1.0, math.log1p(access_count) / math.log1p(saturation))


def recency_score(
    age_days: float,
    half_life_days: float = 30.0,
    floor: float = 0.1,
    *,
    strength: float = 0.0,
    strength_half_life_boost: float = 1.0,
) -> float:
    """Soft exponential decay in (floor, 1]: ``floor + (1 - floor) · 2^(-age / half_life)``.

    The half-life stretches with access strength, so often recalled memories fade slower.
    The floor keeps the score positive at any age: decay reorders, it never deletes.
    """
    age = max(0.0, age_days) if math.isfinite(age_days) else math.inf
    half_life = half_life_days * (1.0 + strength_half_life_boost * max(0.0, min(1.0, strength)))
    return floor + (1.0 - floor) * math.pow(2.0, -age / half_life)


def importance_score(importance: int | float) -> float:
    """Importance 1-10 mapped linearly onto [0, 1] (values outside are clipped)."""
    return (max(1.0, min(10.0, float(importance))) - 1.0) / 9.0


@dataclass(frozen=True, slots=True)
class Standing:
    """A candidate's blend terms that do not depend on the query (recency, importance,
    strength), each already in [0, 1]. A search blends its candidates twice (relative
    and absolute relevance): the standing is computed once for both."""

    recency: float
    importance: float
    strength: float


def standing(
    *,
    age_days: float,
    importance: int,
    access_count: int,
    pinned: bool,
    config: BlendConfig,
) -> Standing:
    """A candidate's query-independent terms under ``config`` (the fields of
    :class:`MemorySignals` but relevance)."""
    strength = strength_score(access_count, config.strength_saturation)
    recency = (
        1.0
        if pinned
        else recency_score(
            age_days,
            config.half_life_days,
            config.recency_floor,
            strength=strength,
            strength_half_life_boost=config.strength_half_life_boost,
        )
    )
    return Standing(recency, importance_score(importance), strength)


def _split(
    candidates: Mapping[str, MemorySignals], config: BlendConfig
) -> tuple[dict[str, float], dict[str, Standing]]:
    """Each candidate's relevance, and its standing."""
    relevance = {doc_id: signal.relevance for doc_id, signal in candidates.items()}
    standings = {
        doc_id: standing(
            age_days=signal.age_days,
            importance=signal.importance,
            access_count=signal.access_count,
            pinned=signal.pinned,
            config=config,
        )
        for doc_id, signal in candidates.items()
    }
    return relevance, standings


def blend(
    candidates: Mapping[str, MemorySignals], config: BlendConfig = BlendConfig()
) -> dict[str, float]:
    """The final score of each candidate, in [0, 1], as a weighted mean of its signals.

    Relevance is divided by the best candidate's relevance, so the best match is 1 and
    ratios are kept (a min-max would push the weakest candidate to 0 and let recency
    alone decide its place). Recency, strength and importance are already in [0, 1].
    """
    return blend_standings(*_split(candidates, config), config)


def blend_standings(
    relevance: Mapping[str, float],
    standings: Mapping[str, Standing],
    config: BlendConfig = BlendConfig(),
    *,
    absolute: bool = False,
) -> dict[str, float]:
    """:func:`blend` (or :func:`absolute_blend`, with ``absolute``) of the candidates of
    ``standings``, each with its relevance from ``relevance`` (0 where it has none)."""
    if not standings:
        return {}
    best = 1.0 if absolute else max(relevance.get(doc_id, 0.0) for doc_id in standings)
    top = max(best, 0.0)
    total = (
        config.relevance_weight
        + config.recency_weight
        + config.importance_weight
        + config.strength_weight
    )
    out: dict[str, float] = {}
    for doc_id, held in standings.items():
        raw = relevance.get(doc_id, 0.0)
        scaled = max(0.0, raw) / top if top > 0 else 0.0
        out[doc_id] = (
            config.relevance_weight * min(1.0, scaled)
            + config.recency_weight * held.recency
            + config.importance_weight * held.importance
            + config.strength_weight * held.strength
        ) / total
    return out


# --- absolute relevance ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AbsoluteScale:
    """A fixed, query-independent scale per leg (DESIGN.md §6.3), so a relevance means
    the same for every query and a floor can drop unrelated memories.

    Ranking keeps the per-query fusion above (measured better: recall@10 0.705 on the
    LoCoMo dev set against at most 0.691 for any fixed scale of cosine and BM25 tried);
    this scale gives each result its absolute relevance, which is the
    score reported and what the relevance floor reads.

    * dense (and mem0's similarity): cosine mapped linearly from ``dense_zero`` (0) to
      ``dense_one`` (1), clipped: MiniLM puts unrelated sentences below 0.3 and close
      paraphrases above 0.8.
    * keyword: the share of the query's content terms (stemmed, stopwords dropped, as
      BM25 reads them) that the memory holds, in [0, 1]. Raw BM25 is no scale: its
      idf depends on how many memories the viewer has (a single memory matching "name"
      scores 0.29, the same match among thousands about 5), so it ranks but cannot be
      compared.
    """

    dense_zero: float = 0.3
    dense_one: float = 0.8

    def __post_init__(self) -> None:
        if not self.dense_one > self.dense_zero:
            raise ValueError("dense_one must be above dense_zero")

    def dense(self, cosine: float) -> float:
        return min(1.0, max(0.0, (cosine - self.dense_zero) / (self.dense_one - self.dense_zero)))

    @staticmethod
    def keyword(coverage: float) -> float:
        return min(1.0, max(0.0, coverage)) if math.isfinite(coverage) else 0.0


def absolute_relevance(
    legs: Sequence[Mapping[str, float]],
    kinds: Sequence[str],
    weights: Sequence[float],
    scale: AbsoluteScale = AbsoluteScale(),
) -> dict[str, float]:
    """Σ wᵢ · scaleᵢ(legᵢ(d)) / Σ wᵢ over the union of the legs' documents, in [0, 1].

    ``kinds`` says how each leg's scores read: ``"keyword"`` (the share of the query's
    terms the document holds, in [0, 1]) or anything else (a similarity in [-1, 1]). A leg
    that did not return a document adds 0 for it.
    """
    if not (len(legs) == len(kinds) == len(weights)):
        raise ValueError("one kind and one weight per leg")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("at least one weight must be positive")
    out: dict[str, float] = {}
    for leg, kind, weight in zip(legs, kinds, weights, strict=True):
        mapping = scale.keyword if kind == "keyword" else scale.dense
        for doc_id, raw in leg.items():
            out[doc_id] = out.get(doc_id, 0.0) + weight * mapping(raw) / total
    return out


def strongest_leg(
    legs: Sequence[Mapping[str, float]],
    kinds: Sequence[str],
    scale: AbsoluteScale = AbsoluteScale(),
) -> dict[str, float]:
    """Each document's best single-leg relevance on the fixed scales: what the relevance
    floor reads. A memory is worth offering when one leg finds it clearly related (a
    close paraphrase, or most of the words in common); a weighted mean would also drop
    long memories that answer a long question with different words."""
    out: dict[str, float] = {}
    for leg, kind in zip(legs, kinds, strict=True):
        for doc_id, raw in leg.items():
            value = scale.keyword(raw) if kind == "keyword" else scale.dense(raw)
            out[doc_id] = max(out.get(doc_id, 0.0), value)
    return out


def absolute_blend(
    candidates: Mapping[str, MemorySignals], config: BlendConfig = BlendConfig()
) -> dict[str, float]:
    """:func:`blend` with each relevance taken as it is (absolute, already in [0, 1])
    instead of divided by the best candidate's: the final score then means the same
    for every query."""
    return blend_standings(*_split(candidates, config), config, absolute=True)
