"""Alfred's hand-written BM25 keyword leg against ``bm25s`` (sparse-matrix BM25), side by side.

Usage (bm25s is not a dependency of Alfred: ``pip install bm25s`` first)::

    python scripts/keyword_leg_compare.py [--facts 10000] [--queries 200] [--json]

Why it is measured this way:

* **Same data, same terms, same formula.** Both index the synthetic facts of
  ``alfred bench retrieval`` (the viewer's scope at ``--facts``) and answer the same
  distinct synthetic questions. bm25s is given Alfred's own tokens (``memory.search.text``:
  stop words, Porter stems, distinct query terms) and Alfred's k1/b with its "lucene"
  idf, so any difference in what they return is the implementation's, not the analysis'.
* **Speed, interleaved.** Each query runs both legs, in alternating order, asking for the
  leg's 50 hits (``RetrievalConfig.leg_k``); the tokenising of the query is inside both
  timings (the leg does it too). Index build time is reported apart.
* **Recall, two ways.** On the synthetic data: how much of Alfred's top 10 / top 50 bm25s
  returns (agreement; ties at the cut can differ). On LoCoMo conversations 0-4 (when the
  data is there): evidence recall@10 of each leg alone, the measure the retrieval issue
  uses, with every turn stored as ``alfred bench locomo`` stores it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.bench.common import percentiles  # noqa: E402
from bot.bench.locomo import CATEGORIES, load_samples, turns  # noqa: E402
from bot.bench.synthetic import distinct_questions, facts  # noqa: E402
from memory.search.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index  # noqa: E402
from memory.search.text import tokenize  # noqa: E402

LEG_K = 50
LOCOMO = ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo-dev.json"


class Bm25sLeg:
    """bm25s over Alfred's tokens (or, with ``own_tokens``, bm25s' own English analysis:
    its stop words, no stemming); ids are positions in ``doc_ids``."""

    def __init__(self, doc_ids: list[str], texts: list[str], *, own_tokens: bool = False) -> None:
        import bm25s

        self.doc_ids = doc_ids
        self.analyse = _bm25s_tokens if own_tokens else tokenize
        self.retriever = bm25s.BM25(k1=DEFAULT_K1, b=DEFAULT_B, method="lucene")
        corpus = [self.analyse(t) or ["\x00"] for t in texts]  # an empty doc keeps its row
        self.retriever.index(corpus, show_progress=False)
        self.vocab: dict[str, int] = self.retriever.vocab_dict

    def top_k(self, query: str, k: int) -> list[tuple[str, float]]:
        terms = [t for t in dict.fromkeys(self.analyse(query)) if t in self.vocab]
        if not terms:
            return []
        ids = np.asarray([self.vocab[t] for t in terms], dtype=np.int64)
        scores = self.retriever.get_scores_from_ids(ids)
        (hits,) = np.nonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        ranked = sorted(
            ((self.doc_ids[int(i)], float(scores[i])) for i in hits),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked[:k]


def _bm25s_tokens(text: str) -> list[str]:
    import bm25s

    tokens = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)
    return list(tokens[0])


def _alfred(doc_ids: list[str], texts: list[str]) -> BM25Index:
    index = BM25Index()
    index.add_many(zip(doc_ids, texts, strict=True))
    return index


def speed(n: int, queries: int) -> dict[str, Any]:
    texts = facts(n)
    doc_ids = [f"f{i:06d}" for i in range(n)]
    started = time.perf_counter()
    alfred = _alfred(doc_ids, texts)
    alfred_build = time.perf_counter() - started
    started = time.perf_counter()
    other = Bm25sLeg(doc_ids, texts)
    other_build = time.perf_counter() - started
    asked = distinct_questions(queries)
    # warm both (lazy per-term arrays on Alfred's side, first-call costs on both)
    for q in asked[:5]:
        alfred.top_k(q, LEG_K)
        other.top_k(q, LEG_K)
    samples: dict[str, list[float]] = {"alfred": [], "bm25s": []}
    agree10: list[float] = []
    agree50: list[float] = []
    for turn, q in enumerate(asked):
        got: dict[str, list[tuple[str, float]]] = {}
        order = ("alfred", "bm25s") if turn % 2 == 0 else ("bm25s", "alfred")
        for name in order:
            leg = alfred if name == "alfred" else other
            t0 = time.perf_counter()
            got[name] = leg.top_k(q, LEG_K)
            samples[name].append((time.perf_counter() - t0) * 1000)
        mine = [i for i, _ in got["alfred"]]
        theirs = {i for i, _ in got["bm25s"]}
        theirs10 = {i for i, _ in got["bm25s"][:10]}
        if mine:
            agree10.append(len(set(mine[:10]) & theirs10) / len(mine[:10]))
            agree50.append(len(set(mine) & theirs) / len(mine))
    return {
        "facts": n,
        "queries": len(asked),
        "alfred": {
            "latency_ms": percentiles(samples["alfred"]),
            "build_s": round(alfred_build, 2),
        },
        "bm25s": {
            "latency_ms": percentiles(samples["bm25s"]),
            "build_s": round(other_build, 2),
        },
        "bm25s_agreement_top10": round(float(np.mean(agree10)), 4) if agree10 else 0.0,
        "bm25s_agreement_top50": round(float(np.mean(agree50)), 4) if agree50 else 0.0,
    }


def locomo_recall(path: Path, conversations: range) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    samples = load_samples(path)
    scores: dict[str, list[float]] = {"alfred": [], "bm25s": [], "bm25s_own_tokens": []}
    for index in conversations:
        if index >= len(samples):
            break
        sample = samples[index]
        rows = turns(sample, dated=True)
        doc_ids = [dia for dia, _ in rows]
        texts = [text for _, text in rows]
        legs = {
            "alfred": _alfred(doc_ids, texts),
            "bm25s": Bm25sLeg(doc_ids, texts),
            "bm25s_own_tokens": Bm25sLeg(doc_ids, texts, own_tokens=True),
        }
        for qa in sample["qa"]:
            if str(qa.get("category")) not in CATEGORIES or not qa.get("evidence"):
                continue
            evidence = set(qa["evidence"])
            for name, leg in legs.items():
                found = {i for i, _ in leg.top_k(str(qa["question"]), 10)}
                scores[name].append(len(evidence & found) / len(evidence))
    return {
        "conversations": f"{conversations.start}-{conversations.stop - 1}",
        "questions": len(scores["alfred"]),
        "keyword_only_recall_at_10": {
            name: round(float(np.mean(values)), 4) if values else 0.0
            for name, values in scores.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = speed(args.facts, args.queries)
    result["locomo"] = locomo_recall(args.locomo, range(0, 5))
    if args.json:
        print(json.dumps(result))
        return
    for name in ("alfred", "bm25s"):
        lat = result[name]["latency_ms"]
        print(
            f"{name:7s} at {result['facts']} facts: p50 {lat['p50']} ms, p95 {lat['p95']} ms, "
            f"p99 {lat['p99']} ms; build {result[name]['build_s']} s"
        )
    print(
        f"bm25s returns {result['bm25s_agreement_top10']:.3f} of Alfred's top 10 and "
        f"{result['bm25s_agreement_top50']:.3f} of its top 50"
    )
    if result["locomo"]:
        print(f"LoCoMo keyword-only recall@10: {result['locomo']['keyword_only_recall_at_10']}")


if __name__ == "__main__":
    main()
