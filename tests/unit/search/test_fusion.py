"""Fusion and blending: crafted legs whose right answer is known; plus cosine top-k."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from memory.search.fusion import (
    AbsoluteScale,
    BlendConfig,
    FusionConfig,
    FusionMethod,
    MemorySignals,
    absolute_blend,
    absolute_relevance,
    blend,
    fuse,
    fuse_arrays,
    importance_score,
    min_max_array,
    min_max_normalise,
    recency_score,
    rrf_fusion,
    strength_score,
    top_n,
    weighted_fusion,
)
from memory.search.vector import VectorIndex, top_k_cosine, top_k_indices

# --- normalisation ---------------------------------------------------------------------


def test_min_max_maps_best_to_one_and_worst_to_zero() -> None:
    assert min_max_normalise({"a": 3.0, "b": 1.0, "c": 2.0}) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert min_max_normalise({}) == {}


def test_min_max_of_equal_scores() -> None:
    assert min_max_normalise({"only": 0.3}) == {"only": 1.0}
    assert min_max_normalise({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}
    np.testing.assert_array_equal(min_max_array(np.zeros(3, np.float32)), [0, 0, 0])
    np.testing.assert_array_equal(min_max_array(np.full(2, 2.0, np.float32)), [1, 1])


# --- weighted sum ----------------------------------------------------------------------

DENSE = {"a": 0.9, "b": 0.5, "c": 0.1}
KEYWORD = {"b": 8.0, "c": 6.0, "d": 2.0}


def test_weighted_fusion_by_hand() -> None:
    fused = weighted_fusion((DENSE, KEYWORD), (0.6, 0.4))
    # dense normalised: a 1, b .5, c 0; keyword: b 1, c .667, d 0; missing counts 0.
    assert fused == pytest.approx({"a": 0.6, "b": 0.6 * 0.5 + 0.4, "c": 0.4 * 4 / 6, "d": 0.0})


def test_weights_decide_which_leg_wins() -> None:
    dense_heavy = fuse(DENSE, KEYWORD, FusionConfig(dense_weight=0.9, keyword_weight=0.1))
    keyword_heavy = fuse(DENSE, KEYWORD, FusionConfig(dense_weight=0.1, keyword_weight=0.9))
    assert top_n(dense_heavy, 1)[0][0] == "a"
    assert top_n(keyword_heavy, 1)[0][0] == "b"


def test_weighted_fusion_stays_in_unit_interval_and_tolerates_empty_legs() -> None:
    fused = weighted_fusion((DENSE, {}), (0.5, 0.5))
    assert fused == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.0})
    assert all(0.0 <= v <= 1.0 for v in fuse(DENSE, KEYWORD).values())
    assert fuse({}, {}) == {}


def test_zero_weight_leg_still_contributes_its_documents() -> None:
    fused = weighted_fusion((DENSE, KEYWORD), (1.0, 0.0))
    assert set(fused) == {"a", "b", "c", "d"} and fused["d"] == 0.0


# --- reciprocal rank fusion ------------------------------------------------------------


def test_rrf_by_hand_and_scaled_to_one() -> None:
    fused = rrf_fusion((DENSE, KEYWORD), k=60)
    best = 2 / 61
    assert fused == pytest.approx(
        {
            "a": (1 / 61) / best,
            "b": (1 / 62 + 1 / 61) / best,
            "c": (1 / 63 + 1 / 62) / best,
            "d": (1 / 63) / best,
        }
    )
    assert rrf_fusion(({"x": 1.0}, {"x": 5.0})) == {"x": pytest.approx(1.0)}


def test_rrf_rewards_agreement_and_ignores_score_magnitudes() -> None:
    # "both" is second in each leg; "solo" first in one leg only: agreement wins.
    dense = {"solo": 0.99, "both": 0.2, "x": 0.1}
    keyword = {"y": 50.0, "both": 0.1}
    fused = fuse(dense, keyword, FusionConfig(method=FusionMethod.RRF))
    assert top_n(fused, 1)[0][0] == "both"
    rescaled = fuse(
        {k: v * 100 for k, v in dense.items()}, keyword, FusionConfig(method=FusionMethod.RRF)
    )
    assert rescaled == pytest.approx(fused)


def test_weighted_keeps_magnitudes_that_rrf_throws_away() -> None:
    # Keyword leg is sure about "hit" (far ahead); dense barely prefers "near".
    dense = {"near": 0.52, "hit": 0.50, "other": 0.10}
    keyword = {"hit": 20.0, "near": 1.0}
    weighted = fuse(dense, keyword, FusionConfig(FusionMethod.WEIGHTED, 0.5, 0.5))
    assert top_n(weighted, 1)[0][0] == "hit"


def test_fusion_method_is_a_string_enum() -> None:
    assert FusionMethod("weighted") is FusionMethod.WEIGHTED
    assert FusionMethod("rrf") is FusionMethod.RRF
    assert FusionConfig().method is FusionMethod.WEIGHTED
    with pytest.raises(ValueError):
        FusionConfig(dense_weight=0.0, keyword_weight=0.0)
    with pytest.raises(ValueError):
        weighted_fusion((DENSE,), (0.5, 0.5))


def test_array_fusion_matches_mapping_fusion_over_all_candidates() -> None:
    ids = ["a", "b", "c", "d", "e"]
    dense = np.array([0.9, 0.5, 0.1, -0.2, 0.3], dtype=np.float32)
    keyword = np.array([0.0, 8.0, 6.0, 2.0, 0.0], dtype=np.float32)
    dense_map = dict(zip(ids, dense.tolist(), strict=True))
    weighted = fuse_arrays(dense, keyword)
    expected = fuse(dense_map, dict(zip(ids, keyword.tolist(), strict=True)))
    np.testing.assert_allclose(weighted, [expected[i] for i in ids], rtol=1e-6)
    # For RRF a zero keyword score is "not returned": it earns no rank.
    rrf = FusionConfig(method=FusionMethod.RRF)
    hits = {i: s for i, s in zip(ids, keyword.tolist(), strict=True) if s > 0}
    expected_rrf = fuse(dense_map, hits, rrf)
    np.testing.assert_allclose(
        fuse_arrays(dense, keyword, rrf), [expected_rrf[i] for i in ids], rtol=1e-6
    )
    with pytest.raises(ValueError):
        fuse_arrays(dense, keyword[:2])


# --- blend -----------------------------------------------------------------------------


def test_recency_decays_softly_and_never_reaches_zero() -> None:
    assert recency_score(0, 30, 0.1) == pytest.approx(1.0)
    assert recency_score(30, 30, 0.1) == pytest.approx(0.1 + 0.9 / 2)
    assert recency_score(60, 30, 0.1) < recency_score(30, 30, 0.1)
    assert recency_score(1e9, 30, 0.1) == pytest.approx(0.1)
    assert recency_score(math.inf, 30, 0.1) == pytest.approx(0.1)
    assert recency_score(-5, 30, 0.1) == pytest.approx(1.0)  # clock skew: not "fresher"


def test_strength_slows_decay() -> None:
    assert strength_score(0) == 0.0
    assert 0 < strength_score(1) < strength_score(5) < strength_score(10) == 1.0
    assert strength_score(1000) == 1.0
    weak = recency_score(30, 30, 0.1, strength=0.0)
    strong = recency_score(30, 30, 0.1, strength=1.0, strength_half_life_boost=1.0)
    assert strong > weak


def test_importance_maps_one_to_ten_onto_unit_interval() -> None:
    assert importance_score(1) == 0.0
    assert importance_score(10) == 1.0
    assert importance_score(5) == pytest.approx(4 / 9)
    assert importance_score(0) == 0.0 and importance_score(42) == 1.0


def test_blend_never_zeroes_an_old_unimportant_memory() -> None:
    scores = blend(
        {
            "ancient": MemorySignals(relevance=0.0, age_days=10_000, importance=1),
            "fresh": MemorySignals(relevance=1.0, age_days=0, importance=10),
        }
    )
    assert scores["ancient"] > 0
    assert 0 < scores["ancient"] < scores["fresh"] <= 1.0


def test_relevance_dominates_recency_and_importance() -> None:
    scores = blend(
        {
            "relevant_old": MemorySignals(relevance=0.9, age_days=365, importance=3),
            "fresh_irrelevant": MemorySignals(relevance=0.2, age_days=0, importance=9),
        }
    )
    assert scores["relevant_old"] > scores["fresh_irrelevant"]


def test_recency_and_importance_break_close_calls() -> None:
    scores = blend(
        {
            "old": MemorySignals(relevance=0.8, age_days=200),
            "new": MemorySignals(relevance=0.8, age_days=1),
            "important": MemorySignals(relevance=0.8, age_days=200, importance=9),
        }
    )
    assert scores["new"] > scores["old"]
    assert scores["important"] > scores["old"]


def test_blend_normalises_relevance_by_the_best_candidate() -> None:
    # RRF-scale relevance (small numbers) blends like the same ratios at full scale.
    small = blend({"a": MemorySignals(0.03, 5), "b": MemorySignals(0.015, 5)})
    large = blend({"a": MemorySignals(1.0, 5), "b": MemorySignals(0.5, 5)})
    assert small == pytest.approx(large)
    assert blend({}) == {}


def test_blend_weights_are_configurable_and_validated() -> None:
    only_recency = BlendConfig(relevance_weight=0, recency_weight=1, importance_weight=0)
    scores = blend({"old": MemorySignals(1.0, 100), "new": MemorySignals(0.1, 0)}, only_recency)
    assert scores["new"] > scores["old"]
    with pytest.raises(ValueError):
        BlendConfig(recency_floor=0.0)
    with pytest.raises(ValueError):
        BlendConfig(relevance_weight=-1)


# --- cosine top-k (the dense leg feeding fusion) ----------------------------------------


def _unit(rng: np.random.Generator, n: int, d: int = 8) -> npt.NDArray[np.float32]:
    m = rng.normal(size=(n, d)).astype(np.float32)
    unit: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit


def test_top_k_cosine_matches_a_full_sort() -> None:
    rng = np.random.default_rng(1)
    matrix, query = _unit(rng, 200), _unit(rng, 1)[0]
    rows, scores = top_k_cosine(matrix, query, 10)
    expected = np.argsort(-(matrix @ query))[:10]
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_allclose(scores, (matrix @ query)[expected], rtol=1e-6)
    subset = np.array([5, 17, 42, 99], dtype=np.int64)
    rows, _ = top_k_cosine(matrix, query, 2, subset)
    assert set(rows) <= set(subset.tolist())
    assert list(rows) == sorted(subset.tolist(), key=lambda r: -float(matrix[r] @ query))[:2]
    assert len(top_k_indices(np.zeros(3, np.float32), 10)) == 3
    assert len(top_k_indices(np.zeros(0, np.float32), 10)) == 0


def test_vector_index_add_remove_and_search() -> None:
    rng = np.random.default_rng(2)
    vectors = _unit(rng, 40)
    index = VectorIndex(8)
    index.add_many([f"v{i}" for i in range(40)], vectors)
    assert index.top_k(vectors[7], 1)[0][0] == "v7"
    assert index.remove("v7") and not index.remove("v7")
    assert len(index) == 39 and "v7" not in index
    assert index.top_k(vectors[7], 1)[0][0] != "v7"
    assert index.top_k(vectors[39], 1)[0][0] == "v39"  # the row moved into the hole
    assert index.top_k(vectors[3], 5, candidates={"v3", "v4"})[0][0] == "v3"
    index.add("v3", vectors[4])  # replace
    assert index.scores(vectors[4])["v3"] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError):
        index.add_many(["x"], np.zeros((1, 3), np.float32))


def test_pinned_memories_do_not_decay() -> None:
    """Seed 001: a pinned memory keeps full recency at any age; unpinned, it fades."""
    scores = blend(
        {
            "pinned_old": MemorySignals(relevance=0.8, age_days=3650, pinned=True),
            "fresh": MemorySignals(relevance=0.8, age_days=0),
            "old": MemorySignals(relevance=0.8, age_days=3650),
        }
    )
    assert scores["pinned_old"] == pytest.approx(scores["fresh"])
    assert scores["old"] < scores["pinned_old"]


def test_absolute_relevance_is_fixed_per_leg_and_ignores_the_other_hits() -> None:
    """DESIGN §6.3: a fixed, query-independent scale per leg. A document's relevance
    depends on its own raw scores only, never on which other documents were found
    (unlike min-max, which maps whatever is best to 1)."""
    scale = AbsoluteScale()
    alone = absolute_relevance([{"a": 0.55}, {"a": 0.5}], ["dense", "keyword"], [0.5, 0.5])
    crowd = absolute_relevance(
        [{"a": 0.55, "b": 0.9, "c": 0.4}, {"a": 0.5, "b": 1.0}],
        ["dense", "keyword"],
        [0.5, 0.5],
    )
    assert alone["a"] == pytest.approx(crowd["a"])
    assert alone["a"] == pytest.approx(0.5 * scale.dense(0.55) + 0.5 * 0.5)
    assert min_max_normalise({"a": 0.55})["a"] == 1.0  # what a lone weak hit used to get
    assert scale.dense(0.1) == 0.0 and scale.dense(0.95) == 1.0
    assert scale.keyword(0.0) == 0.0 and scale.keyword(1.0) == 1.0
    assert 0.0 < crowd["c"] < crowd["a"] < crowd["b"] <= 1.0


def test_absolute_blend_keeps_relevance_as_it_is() -> None:
    weak = MemorySignals(relevance=0.2, age_days=0)
    alone = absolute_blend({"weak": weak})
    relative = blend({"weak": weak})
    assert alone["weak"] < relative["weak"]
    assert absolute_blend({"weak": weak, "strong": MemorySignals(relevance=0.9, age_days=0)})[
        "weak"
    ] == pytest.approx(alone["weak"])
