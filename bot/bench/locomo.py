"""``alfred bench locomo``: evidence recall@k on LoCoMo through Alfred's own paths.

Every turn of a conversation is stored as a fact through the normal write path
(embedded, hashed, in one partition per conversation, prefixed with its session date
and speaker, with the turn it answered as its context: the previous turn of its
session, which memory.search.context embeds with it), and every question of categories
1-4 goes through the normal retrieval path (heuristic bypassed) as the conversation's
owner, with the reply path's retrieval settings (relevance floors included; only the
time limits are lifted, so a loaded machine does not drop legs). A question scores the
share of its evidence turns found among the k results. Recall is reported overall, per
category, per conversation and on two halves of the development set (conversations 0-1
and 2-4): a change to ranking is worth keeping only if it helps both. The data file is
read where it lies.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.bench.common import (
    DataDirOption,
    JsonOption,
    bench_world,
    emit,
    percentiles,
    progress,
    stderr,
)
from memory.clock import ManualClock
from memory.facts import FactWriter
from memory.models import Category, Partition, Provenance, Thread, ThreadKind, Viewer
from memory.search.config import RetrievalConfig
from memory.search.fusion import FusionConfig, FusionMethod
from runtime.settings import load_settings

DEFAULT_DATA = Path("../shared/benchmarks/locomo/locomo-dev.json")
CATEGORIES = ("1", "2", "3", "4")
#: The two halves of the development set that a change must improve both of.
HALVES = {"0-1": frozenset({0, 1}), "2-4": frozenset({2, 3, 4})}


def parse_range(text: str) -> list[int]:
    """``"0-4"`` or ``"0,2,3"`` → indices."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def _said(turn: dict[str, Any]) -> str:
    """A turn as one line: speaker, words and the caption of a photo it shares."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def turns(sample: dict[str, Any], *, dated: bool) -> list[tuple[str, str]]:
    """(dia_id, text) for every turn, with the session date and speaker in front."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        date = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            text = _said(turn)
            out.append((turn["dia_id"], f"[{date}] {text}" if dated and date else text))
        n += 1
    return out


def replied_to(sample: dict[str, Any]) -> dict[str, str]:
    """dia_id -> the turn it answered: the previous turn of the same session (a
    session's first turn answers nothing)."""
    conv = sample["conversation"]
    out: dict[str, str] = {}
    n = 1
    while f"session_{n}" in conv:
        session = conv[f"session_{n}"]
        for before, turn in pairwise(session):
            out[turn["dia_id"]] = _said(before)
        n += 1
    return out


class NotLocomo(ValueError):
    """The data file is not in LoCoMo's layout (the message says why)."""


def load_samples(data: Path) -> list[dict[str, Any]]:
    """The conversations of a LoCoMo file, or a clear error naming what is wrong with it."""
    try:
        samples = json.loads(data.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotLocomo(f"{data} is not a LoCoMo JSON file ({exc})") from None
    if not isinstance(samples, list):
        raise NotLocomo(f"{data} is not a LoCoMo file: expected a list of samples")
    for i, sample in enumerate(samples):
        ok = (
            isinstance(sample, dict)
            and "sample_id" in sample
            and isinstance(sample.get("conversation"), dict)
            and isinstance(sample.get("qa"), list)
        )
        if not ok:
            raise NotLocomo(
                f"{data} is not a LoCoMo file: sample {i} needs sample_id, conversation and qa"
            )
    return samples


async def run_locomo(
    data: Path,
    conversations: list[int],
    ks: list[int],
    fusion: FusionConfig,
    *,
    dated: bool,
    context: bool = True,
    data_dir: Path | None,
) -> dict[str, Any]:
    samples = await asyncio.to_thread(load_samples, data)
    chosen = [samples[i] for i in conversations if 0 <= i < len(samples)]
    if not chosen:
        raise typer.BadParameter(f"no conversations {conversations} in {data}")
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    # The reply path's retrieval (floors included); only the time limits are lifted.
    config = RetrievalConfig(fusion=fusion, leg_timeout_s=30, embed_timeout_s=30)
    max_k = max(ks)
    hits: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_conversation: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies: list[float] = []
    async with bench_world(
        load_settings(),
        data_dir=data_dir,
        clock=clock,
        retrieval=config,
        database="alfred_bench_locomo",
    ) as s:
        writer = FactWriter(s.facts, s.embedder, clock, max_words=None)
        with progress() as bar:
            total_turns = sum(len(turns(x, dated=dated)) for x in chosen)
            task = bar.add_task("storing turns", total=total_turns)
            dia_of: dict[str, dict[str, set[str]]] = {}
            index_of: dict[str, int] = {}
            for number, sample in zip(conversations, chosen, strict=False):
                owner = f"locomo-{sample['sample_id']}"
                index_of[owner] = number
                partition = Partition.dm(owner)
                mapping: dict[str, set[str]] = defaultdict(set)
                rows = turns(sample, dated=dated)
                answered = replied_to(sample) if context else {}
                for start in range(0, len(rows), 64):
                    batch = rows[start : start + 64]
                    stored = await writer.add_many(
                        [
                            (
                                text,
                                Category.FACT,
                                5,
                                partition,
                                Provenance(message_ids=[dia], context=answered.get(dia)),
                            )
                            for dia, text in batch
                        ]
                    )
                    for (dia, _), (fact, _) in zip(batch, stored, strict=True):
                        mapping[fact.id].add(dia)
                    bar.advance(task, len(batch))
                dia_of[owner] = mapping
            questions = [
                (f"locomo-{x['sample_id']}", q)
                for x in chosen
                for q in x["qa"]
                if str(q.get("category")) in CATEGORIES and q.get("evidence")
            ]
            task = bar.add_task("asking questions", total=len(questions))
            for owner, q in questions:
                thread = Thread(id=f"dm-{owner}", kind=ThreadKind.DM, user_id=owner)
                viewer = Viewer(user_id=owner, thread=thread)
                started = time.perf_counter()
                result = await s.retriever.search(viewer, str(q["question"]), limit=max_k)
                latencies.append((time.perf_counter() - started) * 1000)
                found: list[set[str]] = [dia_of[owner].get(f.fact.id, set()) for f in result.facts]
                evidence = set(q["evidence"])
                category = str(q["category"])
                for k in ks:
                    seen = set().union(*found[:k]) if found[:k] else set()
                    share = len(evidence & seen) / len(evidence)
                    hits[category][k].append(share)
                    by_conversation[index_of[owner]][k].append(share)
                bar.advance(task)
    all_scores = {k: [v for c in hits.values() for v in c[k]] for k in ks}

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    halves = {
        name: {
            str(k): mean([v for n, row in by_conversation.items() if n in members for v in row[k]])
            for k in ks
        }
        for name, members in HALVES.items()
        if members & by_conversation.keys()
    }
    return {
        "questions": len(questions),
        "recall": {str(k): round(sum(v) / len(v), 4) if v else 0.0 for k, v in all_scores.items()},
        "by_half": halves,
        "by_conversation": {
            str(n): {str(k): mean(row[k]) for k in ks} for n, row in sorted(by_conversation.items())
        },
        "by_category": {
            c: {
                str(k): round(sum(hits[c][k]) / len(hits[c][k]), 4) if hits[c][k] else 0.0
                for k in ks
            }
            for c in CATEGORIES
            if c in hits
        },
        "latency_ms": percentiles(latencies, (50, 95)),
        "fusion": {
            "method": fusion.method.value,
            "dense_weight": fusion.dense_weight,
            "keyword_weight": fusion.keyword_weight,
        },
        "conversations": conversations,
        "date_prefix": dated,
        "turn_context": context,
    }


def register(app: typer.Typer) -> None:
    @app.command("locomo")
    def locomo(
        data: Annotated[
            Path, typer.Option("--data", help="LoCoMo JSON (read in place).")
        ] = DEFAULT_DATA,
        conversations: Annotated[str, typer.Option(help="Which conversations, e.g. 0-4.")] = "0-4",
        k: Annotated[str, typer.Option("--k", help="Cut-offs, e.g. 5,10,20.")] = "5,10,20",
        fusion: Annotated[
            FusionMethod, typer.Option(help="weighted or rrf.")
        ] = FusionMethod.WEIGHTED,
        dense_weight: Annotated[
            float, typer.Option(help="Weight of the vector leg.")
        ] = FusionConfig().dense_weight,
        no_date: Annotated[
            bool, typer.Option("--no-date", help="Do not prefix session dates.")
        ] = False,
        no_context: Annotated[
            bool,
            typer.Option(
                "--no-context",
                help="Embed each turn alone, without the turn it answered.",
            ),
        ] = False,
        data_dir: DataDirOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Evidence recall@k on the LoCoMo development set, through Alfred's write and
        retrieval paths."""
        import asyncio

        if not data.is_file():
            stderr.print(f"alfred bench locomo: no data file at {data} (pass --data FILE)")
            raise typer.Exit(2)
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
        config = FusionConfig(
            method=fusion, dense_weight=dense_weight, keyword_weight=max(0.0, 1.0 - dense_weight)
        )
        try:
            result = asyncio.run(
                run_locomo(
                    data,
                    parse_range(conversations),
                    ks,
                    config,
                    dated=not no_date,
                    context=not no_context,
                    data_dir=data_dir,
                )
            )
        except NotLocomo as exc:
            stderr.print(f"alfred bench locomo: {exc}", soft_wrap=True, markup=False)
            raise typer.Exit(2) from None
        lines = [
            f"LoCoMo evidence recall over {result['questions']} questions "
            f"({fusion.value}, dense {dense_weight:.2f})"
        ]
        lines += [f"  recall@{kk}: {v:.3f}" for kk, v in result["recall"].items()]
        for c, row in result["by_category"].items():
            lines.append(f"  category {c}: " + ", ".join(f"@{kk} {v:.3f}" for kk, v in row.items()))
        for name, row in result["by_half"].items():
            lines.append(
                f"  conversations {name}: " + ", ".join(f"@{kk} {v:.3f}" for kk, v in row.items())
            )
        lines.append(
            f"  latency p50 {result['latency_ms']['p50']} ms, p95 {result['latency_ms']['p95']} ms"
        )
        emit(result, as_json=as_json, summary="\n".join(lines))
