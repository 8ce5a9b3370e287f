"""BM25: exact scores, and staying exact while documents come and go."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from memory.search.bm25 import BM25Index

#: The documented defaults (Anserini's short-passage setting), checked by hand below.
K1, B = 0.9, 0.4


def _split(text: str) -> list[str]:
    return text.split()


def _index(docs: dict[str, str]) -> BM25Index:
    index = BM25Index(tokenizer=_split)
    index.add_many(docs.items())
    return index


TINY = {"d1": "a b a", "d2": "b c", "d3": "c c c d"}


def _term(idf: float, tf: int, dl: int, avgdl: float, k1: float = K1, b: float = B) -> float:
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def test_scores_match_a_hand_computation() -> None:
    index = _index(TINY)
    n, avgdl = 3, 3.0
    idf_a = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf_bc = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))

    assert index.average_length == pytest.approx(avgdl)
    assert index.score("a") == pytest.approx({"d1": _term(idf_a, 2, 3, avgdl)})
    assert index.score("b c") == pytest.approx(
        {
            "d1": _term(idf_bc, 1, 3, avgdl),
            "d2": _term(idf_bc, 1, 2, avgdl) + _term(idf_bc, 1, 2, avgdl),
            "d3": _term(idf_bc, 3, 4, avgdl),
        },
        rel=1e-6,
    )


def test_explicit_parameters_are_used_instead_of_the_defaults() -> None:
    index = BM25Index(k1=1.2, b=0.75, tokenizer=_split)
    index.add_many(TINY.items())
    idf_c = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = {
        "d2": _term(idf_c, 1, 2, 3.0, k1=1.2, b=0.75),
        "d3": _term(idf_c, 3, 4, 3.0, k1=1.2, b=0.75),
    }
    assert index.score("c") == pytest.approx(expected, rel=1e-6)
    assert index.score("c") != pytest.approx(_index(TINY).score("c"))


def test_repeated_query_terms_count_once() -> None:
    index = _index(TINY)
    assert index.score("a a a") == pytest.approx(index.score("a"))


def test_unknown_terms_and_empty_queries_score_nothing() -> None:
    index = _index(TINY)
    assert index.score("zzz") == {}
    assert index.score("") == {}
    assert index.top_k("zzz", 5) == []
    assert BM25Index().score("anything") == {}


def test_top_k_orders_best_first_and_keeps_only_matches() -> None:
    index = _index(TINY)
    ranked = index.top_k("c", 10)
    assert [doc_id for doc_id, _ in ranked] == ["d3", "d2"]  # tf 3 beats tf 1
    assert all(score > 0 for _, score in ranked)
    assert index.top_k("b c", 1) == [max(index.score("b c").items(), key=lambda kv: kv[1])]
    assert index.top_k("c", 0) == []


def test_equal_scores_are_ordered_by_id() -> None:
    index = _index({"z": "x y", "a": "x y", "m": "x y"})
    assert [doc_id for doc_id, _ in index.top_k("x", 3)] == ["a", "m", "z"]


def test_removing_a_document_changes_results_and_statistics() -> None:
    index = _index(TINY)
    before = index.score("b")
    assert index.remove("d1") is True
    assert "d1" not in index and len(index) == 2
    after = index.score("b")
    assert set(after) == {"d2"}
    # With d1 gone, b's df, N and avgdl change: the score equals a fresh index's.
    assert after == pytest.approx(_index({"d2": "b c", "d3": "c c c d"}).score("b"))
    assert after["d2"] != pytest.approx(before["d2"])
    assert index.remove("d1") is False
    assert index.document_frequency("a") == 0


def test_adding_an_existing_id_replaces_its_text() -> None:
    index = _index(TINY)
    index.add("d1", "e f")
    assert len(index) == 3
    assert index.score("a") == {}
    assert index.score("e") == pytest.approx(
        _index({"d1": "e f", "d2": "b c", "d3": "c c c d"}).score("e")
    )


def test_random_edits_stay_equal_to_a_fresh_index() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(12)]
    index = BM25Index(tokenizer=_split)
    live: dict[str, str] = {}
    for step in range(400):
        doc_id = f"doc{rng.randrange(40)}"
        if rng.random() < 0.35 and live:
            victim = rng.choice(sorted(live))
            index.remove(victim)
            del live[victim]
        else:
            text = " ".join(rng.choices(vocabulary, k=rng.randint(1, 8)))
            index.add(doc_id, text)
            live[doc_id] = text
        if step % 50 == 0:
            index.score("w1")  # populate the array caches, which edits must invalidate
    fresh = _index(live)
    for query in ("w1", "w2 w3", "w4 w5 w6 w11", "nothing"):
        assert index.score(query) == pytest.approx(fresh.score(query), rel=1e-5)
    assert sorted(index.doc_ids) == sorted(live)


def test_candidate_subset_keeps_whole_index_statistics() -> None:
    index = _index(TINY)
    full = index.score("b c")
    subset = index.score("b c", candidates=["d2", "d3", "unknown"])
    assert subset == pytest.approx({"d2": full["d2"], "d3": full["d3"]})
    # An indexed candidate without a match is reported as 0, not left out.
    assert index.score("a", candidates=["d1", "d2"]) == pytest.approx(
        {"d1": full_score_a(index), "d2": 0.0}
    )
    assert [d for d, _ in index.top_k("b c", 5, candidates={"d1", "d3"})] == ["d3", "d1"]


def full_score_a(index: BM25Index) -> float:
    return index.score("a")["d1"]


def test_score_array_is_aligned_with_the_given_ids() -> None:
    index = _index(TINY)
    full = index.score("b c")
    arr = index.score_array("b c", ["d3", "nope", "d1", "d2"])
    assert arr.dtype == np.float32
    np.testing.assert_allclose(arr, [full["d3"], 0.0, full["d1"], full["d2"]], rtol=1e-6)


def test_freed_slots_are_reused_and_clear_forgets_everything() -> None:
    index = _index(TINY)
    index.remove("d2")
    index.add("d4", "b b")
    assert len(index) == 3
    assert set(index.score("b")) == {"d1", "d4"}
    index.clear()
    assert len(index) == 0 and index.score("b") == {}
    index.add("x", "b")
    assert set(index.score("b")) == {"x"}


def test_default_tokenizer_stems_and_handles_unicode() -> None:
    index = BM25Index()
    index.add("1", "Melanie painted a sunrise last year")
    index.add("2", "Caroline is going to the café in Zürich")
    index.add("3", "東京に行きました")
    assert [d for d, _ in index.top_k("When did Melanie paint?", 3)] == ["1"]
    assert [d for d, _ in index.top_k("Café in ZÜRICH?", 3)] == ["2"]
    assert [d for d, _ in index.top_k("東京", 3)] == ["3"]


def test_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index(k1=-1)
    with pytest.raises(ValueError, match="b"):
        BM25Index(b=1.5)


def test_terms_of_is_the_token_set_of_the_current_text() -> None:
    """Retrieval reads a memory's terms from here instead of tokenizing it again, so
    they must be exactly what tokenizing the current text gives."""
    from memory.search.text import tokenize

    index = BM25Index()
    first = "Painting, paintings: she PAINTED the café's walls in Zürich (東京) twice, twice"
    index.add("a", first)
    assert index.terms_of("a") == set(tokenize(first))
    index.add("a", "Bob likes ramen")
    assert index.terms_of("a") == set(tokenize("Bob likes ramen"))
    index.remove("a")
    assert index.terms_of("a") is None
    assert index.terms_of("never indexed") is None
