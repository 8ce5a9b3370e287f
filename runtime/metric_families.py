"""What Alfred measures: every Prometheus metric family, declared in one place.

:class:`runtime.metrics.AlfredMetrics` records into these; keeping the declarations
apart keeps the names, help texts and buckets (the public face of ``/metrics``) easy to
review on their own.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Seconds. Dense below 500 ms (the retrieval budget, DESIGN.md §6) so p50/p95/p99
#: interpolate well where it matters; a few wide buckets above catch the stragglers.
LATENCY_BUCKETS: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
)
#: Seconds. Background jobs run from milliseconds (a cron with nothing to do) to minutes
#: (a formation with three LLM calls, a re-embed of a large user).
JOB_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: Memories formed by one formation; a Fibonacci-ish spread over what a formation yields.
COUNT_BUCKETS: Final = (0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0)


class MetricFamilies:
    """The metric families of one registry (filled in by :func:`declare_families`)."""

    formation_clarifications: Counter
    formation_facts: Counter
    formation_failed_steps: Counter
    formation_llm_calls: Counter
    formation_memories: Histogram
    formation_messages: Counter
    formation_reflections: Counter
    formation_set_aside: Counter
    formations: Counter
    job_duration: Histogram
    job_failures: Counter
    jobs: Counter
    legacy_imported: Counter
    llm_calls: Counter
    llm_tokens: Counter
    mem0_deletes: Counter
    mem0_dropped: Counter
    mem0_errors: Counter
    mem0_fallbacks: Counter
    mem0_hits: Counter
    mem0_latency: Histogram
    mem0_latency_window: Gauge
    mem0_partial: Counter
    mem0_searches: Counter
    mem0_timeouts: Counter
    mem0_writes: Counter
    queue_depth: Gauge
    retrieval_facts: Histogram
    retrieval_hit_rate: Gauge
    retrieval_hits: Counter
    retrieval_latency: Histogram
    retrieval_leg_failures: Counter
    retrieval_leg_latency: Histogram
    retrieval_requests: Counter
    retrieval_skipped: Counter
    up: Gauge


def declare_families(m: MetricFamilies, registry: CollectorRegistry) -> None:
    """Create every family in ``registry`` and set it on ``m``."""
    reg = registry
    # --- liveness of dependencies, refreshed at scrape time -----------------------
    m.up = Gauge(
        "alfred_up",
        "1 when the component answered its last ping (refreshed at every scrape), else 0",
        ["component"],
        registry=reg,
    )
    # --- mem0 ---------------------------------------------------------------------
    m.mem0_latency = Histogram(
        "alfred_mem0_latency_seconds",
        "Latency of completed mem0 retrieval-leg calls",
        buckets=LATENCY_BUCKETS,
        registry=reg,
    )
    m.mem0_latency_window = Gauge(
        "alfred_mem0_latency_window_seconds",
        "Percentiles of the last mem0 latency samples kept in process (SemanticMetrics)",
        ["quantile"],
        registry=reg,
    )
    m.mem0_searches = Counter("alfred_mem0_searches", "mem0 retrieval-leg calls", registry=reg)
    m.mem0_timeouts = Counter(
        "alfred_mem0_timeouts", "mem0 leg calls that ran out of time", registry=reg
    )
    m.mem0_errors = Counter(
        "alfred_mem0_errors", "Failed mem0 calls (search, add or delete)", registry=reg
    )
    m.mem0_fallbacks = Counter(
        "alfred_mem0_fallbacks",
        "mem0 leg calls that contributed nothing: retrieval fell back to local search",
        registry=reg,
    )
    m.mem0_partial = Counter(
        "alfred_mem0_partial",
        "mem0 leg calls where some partition searches failed and others answered",
        registry=reg,
    )
    m.mem0_hits = Counter("alfred_mem0_hits", "Facts mem0 contributed", registry=reg)
    m.mem0_dropped = Counter(
        "alfred_mem0_dropped",
        "mem0 hits dropped: unknown locally, or foreign (failed the privacy re-check)",
        ["reason"],
        registry=reg,
    )
    m.mem0_writes = Counter(
        "alfred_mem0_writes", "Facts mirrored to mem0, by outcome", ["outcome"], registry=reg
    )
    m.mem0_deletes = Counter(
        "alfred_mem0_deletes", "mem0 copies deleted (forget cascade)", registry=reg
    )
    # --- retrieval ----------------------------------------------------------------
    m.retrieval_requests = Counter(
        "alfred_retrieval_requests",
        "Retrievals that searched (the heuristic asked for facts)",
        registry=reg,
    )
    m.retrieval_hits = Counter(
        "alfred_retrieval_hits", "Retrievals that found at least one fact", registry=reg
    )
    m.retrieval_skipped = Counter(
        "alfred_retrieval_skipped",
        "Messages for which the heuristic skipped fact retrieval",
        registry=reg,
    )
    m.retrieval_hit_rate = Gauge(
        "alfred_retrieval_hit_rate",
        "Hits / requests since the process started (use the counters for windows)",
        registry=reg,
    )
    m.retrieval_facts = Histogram(
        "alfred_retrieval_facts",
        "Facts returned per retrieval",
        buckets=(0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 15.0),
        registry=reg,
    )
    m.retrieval_latency = Histogram(
        "alfred_retrieval_seconds",
        "End-to-end retrieval latency (budget 500 ms)",
        buckets=LATENCY_BUCKETS,
        registry=reg,
    )
    m.retrieval_leg_latency = Histogram(
        "alfred_retrieval_leg_seconds",
        "Latency of one retrieval step: prepare, embed, dense, keyword, mem0",
        ["leg"],
        buckets=LATENCY_BUCKETS,
        registry=reg,
    )
    m.retrieval_leg_failures = Counter(
        "alfred_retrieval_leg_failures",
        "Retrieval legs that did not answer, by reason (timeout, error, skipped)",
        ["leg", "reason"],
        registry=reg,
    )
    # --- formation ----------------------------------------------------------------
    m.formations = Counter(
        "alfred_formations",
        "Formations by outcome: formed, partial (a step failed), failed (the batch stays "
        "unformed and is retried), set_aside (failed too often) or skipped",
        ["outcome"],
        registry=reg,
    )
    m.formation_messages = Counter(
        "alfred_formation_messages", "Messages read by formations", registry=reg
    )
    m.formation_facts = Counter(
        "alfred_formation_facts",
        "Fact decisions of formations: added, updated, invalidated, unchanged",
        ["action"],
        registry=reg,
    )
    m.formation_reflections = Counter(
        "alfred_formation_reflections", "Reflections added by formations", registry=reg
    )
    m.formation_clarifications = Counter(
        "alfred_formation_clarifications",
        "Clarifications queued by formations (contradictions, ambiguous references)",
        registry=reg,
    )
    m.formation_llm_calls = Counter(
        "alfred_formation_llm_calls",
        "LLM calls made by formations (at most 3 each)",
        registry=reg,
    )
    m.formation_failed_steps = Counter(
        "alfred_formation_failed_steps",
        "Formation steps that failed (extract_facts, decide_updates, reflect)",
        ["step"],
        registry=reg,
    )
    m.formation_set_aside = Counter(
        "alfred_formation_set_aside_messages",
        "Messages set aside after their batch failed formation 3 times (the model's answer "
        "invalid each time); alfred admin retry-formation forms them again",
        registry=reg,
    )
    m.formation_memories = Histogram(
        "alfred_formation_memories",
        "Memories formed per formation (facts added + updated + reflections added)",
        buckets=COUNT_BUCKETS,
        registry=reg,
    )
    # --- LLM ------------------------------------------------------------------------
    m.llm_calls = Counter("alfred_llm_calls", "LLM calls by purpose", ["purpose"], registry=reg)
    m.llm_tokens = Counter(
        "alfred_llm_tokens",
        "LLM tokens by purpose and kind (prompt, completion)",
        ["purpose", "kind"],
        registry=reg,
    )
    # --- jobs -----------------------------------------------------------------------
    m.job_duration = Histogram(
        "alfred_job_seconds",
        "Duration of background jobs by name",
        ["job"],
        buckets=JOB_BUCKETS,
        registry=reg,
    )
    m.jobs = Counter(
        "alfred_jobs",
        "Finished background jobs by name and outcome (ok, failed, retry, cancelled)",
        ["job", "outcome"],
        registry=reg,
    )
    m.job_failures = Counter(
        "alfred_job_failures", "Background jobs that raised, by name", ["job"], registry=reg
    )
    m.queue_depth = Gauge(
        "alfred_queue_depth", "Jobs waiting in the queue (read at scrape time)", registry=reg
    )
    # --- legacy import --------------------------------------------------------------
    m.legacy_imported = Counter(
        "alfred_legacy_imported",
        "Legacy memories imported, by kind",
        ["kind"],
        registry=reg,
    )
