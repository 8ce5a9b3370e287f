"""LoCoMo evidence recall@k of the retrieval building blocks in ``memory.search``.

Method (/work/shared/benchmarks/locomo/README.md): every turn of a conversation is one
document with its ``dia_id``; each question of categories 1-4 with evidence is a query
scoped to its own conversation; recall@k is the fraction of the question's evidence ids
found among the k results, averaged per category and overall.

Compared: BM25 alone, MiniLM alone, RRF (k = 60), and weighted sums of min-max-normalised
scores at several weights, each with and without the session date prefixed to each turn,
plus a few cheap keyword-side variants (stopword list, stemming, photo captions). Also the
p50/p95 latency of one query through the recommended pipeline: query embedding + cosine
top-N + BM25 top-N + fusion + top-k.

The data is CC BY-NC 4.0 and is read from where it lives (or ``--data``), never copied.
This script only wires data to ``memory.search`` and ``integrations.onnx_embedder``; the
retrieval logic lives there.

    .venv/bin/python scripts/locomo_eval.py [--data PATH] [--leg-depth 50]
        [--quick | --latency-only]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from integrations.onnx_embedder import OnnxMiniLMEmbedder  # noqa: E402
from memory.search.bm25 import BM25Index  # noqa: E402
from memory.search.fusion import (  # noqa: E402
    FusionConfig,
    FusionMethod,
    fuse,
    fuse_arrays,
    top_n,
)
from memory.search.text import CHAT_STOPWORDS, ENGLISH_STOPWORDS, tokenize  # noqa: E402
from memory.search.vector import VectorIndex, cosine_scores, top_k_indices  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo-dev.json"
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: Lucene's classic 33-word English list, to reproduce the README's stopword comparison.
_LUCENE_STOPWORDS_TEXT = """a an and are as at be but by for if in into is it no not of on or such
that the their then there these they this to was will with"""
LUCENE_STOPWORDS = frozenset(_LUCENE_STOPWORDS_TEXT.split())
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    date: str
    caption: str | None


@dataclass(frozen=True)
class Question:
    sample: int
    text: str
    evidence: frozenset[str]
    category: int


@dataclass(frozen=True)
class DocFormat:
    """How a turn becomes a document's text."""

    date: bool = False
    speaker: bool = True
    caption: bool = False

    def render(self, turn: Turn) -> str:
        text = f"{turn.speaker}: {turn.text}" if self.speaker else turn.text
        if self.caption and turn.caption:
            text = f"{text} [shared a photo: {turn.caption}]"
        return f"[{turn.date}] {text}" if self.date else text

    @property
    def label(self) -> str:
        parts = ["date" if self.date else "nodate"]
        if self.caption:
            parts.append("caption")
        if not self.speaker:
            parts.append("nospeaker")
        return "+".join(parts)


@dataclass
class Result:
    """Per-question recall@k, grouped by category."""

    hits: dict[int, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        for k in KS:
            found = len(question.evidence.intersection(ranked[:k]))
            self.hits[k][question.category].append(found / len(question.evidence))

    def recall(self, k: int, category: int | None = None) -> float:
        if category is None:
            values = [v for per in self.hits[k].values() for v in per]
        else:
            values = self.hits[k][category]
        return float(np.mean(values)) if values else float("nan")


def load(path: Path) -> tuple[list[list[Turn]], list[Question]]:
    """Turns per sample, and the questions of categories 1-4 that have evidence."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    corpora: list[list[Turn]] = []
    questions: list[Question] = []
    for index, sample in enumerate(samples):
        conversation = sample["conversation"]
        turns: list[Turn] = []
        sessions = sorted(
            (int(key.split("_")[1]), value)
            for key, value in conversation.items()
            if re.fullmatch(r"session_\d+", key)
        )
        for number, session in sessions:
            stamp = conversation.get(f"session_{number}_date_time", "")
            date = stamp.split(" on ", 1)[-1].replace(",", "")
            turns.extend(
                Turn(t["dia_id"], t["speaker"], t["text"], date, t.get("blip_caption"))
                for t in session
            )
        corpora.append(turns)
        for qa in sample["qa"]:
            evidence = frozenset(
                f"D{a}:{b}" for a, b in _EVIDENCE.findall(" ".join(qa.get("evidence", [])))
            )
            if qa["category"] in CATEGORIES and evidence:
                questions.append(Question(index, qa["question"], evidence, qa["category"]))
    return corpora, questions


Tokenizer = Callable[[str], list[str]]


@dataclass(frozen=True)
class Scored:
    """Both legs' scores of every turn of the question's conversation (aligned arrays)."""

    ids: list[str]
    dense: npt.NDArray[np.float32]
    keyword: npt.NDArray[np.float32]

    def leg(self, depth: int, which: str) -> dict[str, float]:
        """One leg truncated to its top-``depth`` hits, as a database leg returns them."""
        scores = self.dense if which == "dense" else self.keyword
        best = top_k_indices(scores, depth)
        if which == "keyword":
            best = best[scores[best] > 0]
        return {self.ids[i]: float(scores[i]) for i in best}


def score_all(
    corpora: list[list[Turn]],
    questions: list[Question],
    question_vectors: npt.NDArray[np.float32],
    doc_vectors: list[npt.NDArray[np.float32]],
    keyword_format: DocFormat,
    tokenizer: Tokenizer,
) -> list[Scored]:
    """Every turn scored by both legs, per question, with the modules under test."""
    indexes: list[tuple[VectorIndex, BM25Index]] = []
    for turns, vectors in zip(corpora, doc_vectors, strict=True):
        vector_index = VectorIndex(vectors.shape[1])
        vector_index.add_many([t.dia_id for t in turns], vectors)
        bm25 = BM25Index(tokenizer=tokenizer)
        bm25.add_many((t.dia_id, keyword_format.render(t)) for t in turns)
        indexes.append((vector_index, bm25))
    out: list[Scored] = []
    for question, vector in zip(questions, question_vectors, strict=True):
        vector_index, bm25 = indexes[question.sample]
        ids = vector_index.ids
        dense = cosine_scores(vector_index.matrix, vector)
        out.append(Scored(ids, dense, bm25.score_array(question.text, ids)))
    return out


Method = Callable[[Scored], Sequence[str]]
#: Plain reciprocal rank fusion: both legs weigh the same.
RRF = FusionConfig(FusionMethod.RRF, dense_weight=1.0, keyword_weight=1.0)
W64 = FusionConfig(FusionMethod.WEIGHTED, dense_weight=0.6, keyword_weight=0.4)


def truncated(config: FusionConfig, depth: int) -> Method:
    """Fusion of the legs' top-``depth`` hits (memory.retrieval's path)."""

    def run(scored: Scored) -> Sequence[str]:
        fused = fuse(scored.leg(depth, "dense"), scored.leg(depth, "keyword"), config)
        return [doc_id for doc_id, _ in top_n(fused, max(KS))]

    return run


def full(config: FusionConfig) -> Method:
    """Fusion over every candidate (aligned arrays, memory.search.fusion.fuse_arrays)."""

    def run(scored: Scored) -> Sequence[str]:
        fused = fuse_arrays(scored.dense, scored.keyword, config)
        return [scored.ids[i] for i in top_k_indices(fused, max(KS))]

    return run


def single(which: str) -> Method:
    def run(scored: Scored) -> Sequence[str]:
        return list(scored.leg(max(KS), which))

    return run


def evaluate(scored: list[Scored], questions: list[Question], method: Method) -> Result:
    result = Result()
    for question, item in zip(questions, scored, strict=True):
        result.add(question, method(item))
    return result


def methods(weights: Sequence[float], depth: int) -> dict[str, Method]:
    table: dict[str, Method] = {
        "bm25": single("keyword"),
        "dense": single("dense"),
        f"rrf k=60, top-{depth} legs": truncated(RRF, depth),
        "rrf k=60, all scored": full(RRF),
    }
    for w in weights:
        config = FusionConfig(FusionMethod.WEIGHTED, dense_weight=w, keyword_weight=1 - w)
        table[f"weighted {w:.1f}/{1 - w:.1f}, top-{depth} legs"] = truncated(config, depth)
    for w in weights:
        config = FusionConfig(FusionMethod.WEIGHTED, dense_weight=w, keyword_weight=1 - w)
        table[f"weighted {w:.1f}/{1 - w:.1f}, all scored"] = full(config)
    return table


def fmt(value: float) -> str:
    return f"{value:.3f}"


def print_table(rows: list[tuple[str, str, Result]]) -> None:
    header = ["setup", "method", *(f"R@{k}" for k in KS)]
    header += [f"{CATEGORIES[c]} @10" for c in CATEGORIES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for setup, method, result in rows:
        cells = [setup, method, *(fmt(result.recall(k)) for k in KS)]
        cells += [fmt(result.recall(10, c)) for c in CATEGORIES]
        print("| " + " | ".join(cells) + " |")


def print_categories(label: str, result: Result) -> None:
    print(f"\nPer category, {label}:")
    print("| category | n | R@5 | R@10 | R@20 |\n|---|---|---|---|---|")
    for c, name in CATEGORIES.items():
        n = len(result.hits[10][c])
        cells = [fmt(result.recall(k, c)) for k in KS]
        print(f"| {c} {name} | {n} | " + " | ".join(cells) + " |")
    n_all = sum(len(v) for v in result.hits[10].values())
    print(f"| all | {n_all} | " + " | ".join(fmt(result.recall(k)) for k in KS) + " |")


def measure_latency(
    embedder: OnnxMiniLMEmbedder,
    turns: list[Turn],
    vectors: npt.NDArray[np.float32],
    questions: list[str],
    doc_format: DocFormat,
    config: FusionConfig,
    depth: int,
    copies: int = 1,
) -> tuple[int, tuple[float, float], tuple[float, float]]:
    """Over ``len(turns) * copies`` documents: p50/p95 ms end to end, and of the search
    alone (everything after the query embedding)."""
    vector_index = VectorIndex(vectors.shape[1])
    bm25 = BM25Index()
    for copy in range(copies):
        ids = [f"{copy}/{i}" for i in range(len(turns))]
        vector_index.add_many(ids, vectors)
        bm25.add_many(zip(ids, (doc_format.render(t) for t in turns), strict=True))
    for question in questions[:5]:  # warm caches and the session
        embedder.embed_sync([question])
    totals: list[float] = []
    searches: list[float] = []
    for question in questions:
        start = time.perf_counter()
        query = embedder.embed_sync([question])[0]
        embedded = time.perf_counter()
        dense = dict(vector_index.top_k(query, depth))
        keyword = dict(bm25.top_k(question, depth))
        top_n(fuse(dense, keyword, config), 10)
        end = time.perf_counter()
        totals.append((end - start) * 1000)
        searches.append((end - embedded) * 1000)

    def p50_p95(values: list[float]) -> tuple[float, float]:
        quantiles = statistics.quantiles(values, n=100)
        return quantiles[49], quantiles[94]

    return len(vector_index), p50_p95(totals), p50_p95(searches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--leg-depth", type=int, default=50, help="hits per leg (memory.retrieval's leg_k)"
    )
    parser.add_argument("--quick", action="store_true", help="main grid only")
    parser.add_argument("--latency-only", action="store_true", help="skip the recall tables")
    args = parser.parse_args()
    depth = args.leg_depth

    corpora, questions = load(args.data)
    embedder = OnnxMiniLMEmbedder()
    start = time.perf_counter()
    question_vectors = embedder.embed_sync([q.text for q in questions])
    date, nodate = DocFormat(date=True), DocFormat(date=False)
    date_caption = DocFormat(date=True, caption=True)
    formats = [nodate, date] if args.quick else [nodate, date, date_caption]
    if args.latency_only:
        formats = [date]
    vectors = {
        f: [embedder.embed_sync([f.render(t) for t in turns]) for turns in corpora] for f in formats
    }
    print(
        f"{len(corpora)} conversations, {sum(map(len, corpora))} turns, "
        f"{len(questions)} questions (categories 1-4 with evidence); "
        f"embedded in {time.perf_counter() - start:.1f} s\n"
    )

    if not args.latency_only:
        report_recall(corpora, questions, question_vectors, vectors, depth, quick=args.quick)
    report_latency(embedder, corpora, questions, vectors[date], depth)


def report_recall(
    corpora: list[list[Turn]],
    questions: list[Question],
    question_vectors: npt.NDArray[np.float32],
    vectors: dict[DocFormat, list[npt.NDArray[np.float32]]],
    depth: int,
    *,
    quick: bool,
) -> None:
    """The recall tables: the main grid, per-category details, cheap variants."""
    date, nodate = DocFormat(date=True), DocFormat(date=False)
    date_caption = DocFormat(date=True, caption=True)
    porter: Tokenizer = tokenize
    weights = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    rows: list[tuple[str, str, Result]] = []
    results: dict[tuple[str, str], Result] = {}
    for label, doc_format in (("no date", nodate), ("date", date)):
        scored = score_all(
            corpora, questions, question_vectors, vectors[doc_format], doc_format, porter
        )
        for name, method in methods(weights, depth).items():
            result = evaluate(scored, questions, method)
            rows.append((label, name, result))
            results[(label, name)] = result
    print("Main grid (keyword side: 179 stopwords + Porter stemming; speaker name in text):\n")
    print_table(rows)

    recommended = f"weighted 0.5/0.5, top-{depth} legs"
    for key in (
        ("date", recommended),
        ("date", "weighted 0.6/0.4, all scored"),
        ("date", f"weighted 0.6/0.4, top-{depth} legs"),
        ("date", f"rrf k=60, top-{depth} legs"),
        ("date", "bm25"),
        ("date", "dense"),
        ("no date", recommended),
    ):
        print_categories(f"{key[0]} / {key[1]}", results[key])

    if not quick:
        plain = partial(tokenize, stem=False)
        lucene = partial(tokenize, stopwords=LUCENE_STOPWORDS)
        chat = partial(tokenize, stopwords=ENGLISH_STOPWORDS | CHAT_STOPWORDS)
        variants: list[tuple[str, DocFormat, DocFormat, Tokenizer]] = [
            ("date (baseline)", date, date, porter),
            ("no stemming", date, date, plain),
            ("33 stopwords", date, date, lucene),
            ("+ chat stopwords", date, date, chat),
            ("date in BM25 only", nodate, date, porter),
            ("no speaker in BM25", date, DocFormat(date=True, speaker=False), porter),
            ("photo caption, both legs", date_caption, date_caption, porter),
            ("photo caption, BM25 only", date, date_caption, porter),
        ]
        picked = {
            "bm25": single("keyword"),
            "weighted 0.5/0.5 top-legs": truncated(FusionConfig(), depth),
            "weighted 0.6/0.4 top-legs": truncated(W64, depth),
            "weighted 0.6/0.4 all": full(W64),
        }
        variant_rows: list[tuple[str, str, Result]] = []
        for label, dense_format, keyword_format, tokenizer in variants:
            scored = score_all(
                corpora,
                questions,
                question_vectors,
                vectors[dense_format],
                keyword_format,
                tokenizer,
            )
            for name, method in picked.items():
                variant_rows.append((label, name, evaluate(scored, questions, method)))
        print("\nCheap keyword-side and document variants (all with the date prefix):\n")
        print_table(variant_rows)


def report_latency(
    embedder: OnnxMiniLMEmbedder,
    corpora: list[list[Turn]],
    questions: list[Question],
    date_vectors: list[npt.NDArray[np.float32]],
    depth: int,
) -> None:
    """p50/p95 of one query through the default pipeline at three corpus sizes."""
    date = DocFormat(date=True)
    print(f"\nLatency of one query (embed + cosine top-{depth} + BM25 top-{depth} + fusion +")
    print("top-10), over the date-prefixed turns; larger sets repeat the five conversations:")
    largest = max(range(len(corpora)), key=lambda i: len(corpora[i]))
    all_turns = [t for turns in corpora for t in turns]
    all_vectors = np.concatenate(date_vectors)
    config = FusionConfig()  # the default: weighted, 0.5/0.5
    texts = [q.text for q in questions]
    for turns, vecs, copies in (
        (corpora[largest], date_vectors[largest], 1),
        (all_turns, all_vectors, 4),
        (all_turns, all_vectors, 36),
    ):
        n, total, search = measure_latency(
            embedder, turns, vecs, texts, date, config, depth, copies
        )
        print(
            f"  {n:>6} documents: p50 {total[0]:.1f} ms, p95 {total[1]:.1f} ms "
            f"(search without embedding: p50 {search[0]:.1f} ms, p95 {search[1]:.1f} ms)"
        )


if __name__ == "__main__":
    main()
