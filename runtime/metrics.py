"""Prometheus metrics for Alfred, in a registry of their own.

Why a dedicated :class:`~prometheus_client.CollectorRegistry` instead of the global one:
tests build as many :class:`AlfredMetrics` as they like without "duplicated timeseries"
errors, and nothing a third-party library registers globally leaks into ``/metrics``.
Each process (webhook replica, arq worker) exposes its own registry; Prometheus
aggregates across replicas (see ``docs/scaling.md``).

What is measured, and why (DESIGN.md §9, seed 004 "Monitoring Points"):

* **mem0**: a latency histogram whose buckets crowd around the 500 ms reply-path budget,
  so ``histogram_quantile(0.5|0.95|0.99, …)`` gives p50/p95/p99; counters of searches,
  timeouts, errors, fallbacks, dropped hits and writes; and the in-process window
  percentiles :class:`memory.semantic.SemanticMetrics` keeps, as gauges.
* **retrieval**: requests, hits (a retrieval that found ≥ 1 fact) and the hit rate;
  end-to-end and per-leg latency; per-leg failures by reason.
* **formation**: outcomes, facts added/updated/invalidated/unchanged, reflections,
  clarifications, failed steps, and memories formed per formation (seed 004's
  "extraction rate").
* **LLM**: calls and tokens per purpose, from :class:`memory.llm.Usage` deltas.
* **jobs**: duration and failures by job name; the queue depth, read by a callback at
  scrape time.
* **up**: ``alfred_up{component="database"|"queue"}``, refreshed at every scrape, so a
  scrape while MongoDB is down still answers and says so.

Recording never raises: a metric must not be able to break a reply or a job.

Useful PromQL (also in ``docs/docker.md``)::

    histogram_quantile(0.95, sum by (le) (rate(alfred_mem0_latency_seconds_bucket[5m])))
    sum(rate(alfred_retrieval_hits_total[5m])) / sum(rate(alfred_retrieval_requests_total[5m]))
    sum(rate(alfred_mem0_fallbacks_total[5m])) / sum(rate(alfred_mem0_searches_total[5m]))
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Counter, generate_latest

from memory.semantic import SemanticMetrics
from runtime.metric_families import MetricFamilies, declare_families

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from memory.formation import FormationReport
    from memory.llm import Usage
    from memory.search.results import RetrievalResult
    from runtime.bundle import Services

log = logging.getLogger(__name__)

#: How long a scrape waits for one refresh callback (queue depth, pings) before giving up.
REFRESH_TIMEOUT_S: Final = 1.0

#: The component names of ``alfred_up``.
DATABASE: Final = "database"
QUEUE: Final = "queue"

#: Counters read from :meth:`SemanticMetrics.snapshot` → (metric attribute, labels).
_SEMANTIC_COUNTERS: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "searches": ("mem0_searches", {}),
    "timeouts": ("mem0_timeouts", {}),
    "errors": ("mem0_errors", {}),
    "fallbacks": ("mem0_fallbacks", {}),
    "partial": ("mem0_partial", {}),
    "hits": ("mem0_hits", {}),
    "dropped_unknown": ("mem0_dropped", {"reason": "unknown"}),
    "dropped_foreign": ("mem0_dropped", {"reason": "foreign"}),
    "writes": ("mem0_writes", {"outcome": "ok"}),
    "write_errors": ("mem0_writes", {"outcome": "error"}),
    "writes_pending": ("mem0_writes", {"outcome": "pending"}),
    "deletes": ("mem0_deletes", {}),
}

RefreshCallback = Callable[[], Awaitable[None]]


def leg_outcome(status: str) -> str:
    """The failure reason of a retrieval leg status string ("ok" when it answered).

    :class:`memory.retrieval.Retriever` writes ``"ok (N)"``, ``"timeout"``,
    ``"failed: Type"``, ``"skipped: why"`` or ``"wrong shape …"``; the label keeps the
    kind only, so the label set stays small whatever the exception type.
    """
    if status.startswith("ok"):
        return "ok"
    if status.startswith("timeout"):
        return "timeout"
    if status.startswith("skipped"):
        return "skipped"
    return "error"


@dataclass
class _UsageSeen:
    """What was last exported from one :class:`Usage`, to export only the difference."""

    calls: dict[str, int] = field(default_factory=dict)
    prompt: dict[str, int] = field(default_factory=dict)
    completion: dict[str, int] = field(default_factory=dict)


def _delta(now: int, before: int) -> int:
    """Growth of a cumulative count; a count that went down was reset, so all of it is new."""
    return now - before if now >= before else now


class AlfredMetrics(MetricFamilies):
    """Every Alfred metric, in its own registry, plus helpers that record domain results.

    One instance per process is the norm (:func:`get_metrics`); tests build their own.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        declare_families(self, self.registry)
        self._retrieval_counts = [0, 0]  # requests, hits: for the in-process hit rate
        self._semantic_seen: dict[str, int] = {}
        self._usage_seen: dict[int, _UsageSeen] = {}
        self._refreshers: dict[str, RefreshCallback] = {}

    # --- exposition -----------------------------------------------------------------

    def render(self) -> bytes:
        """The registry in Prometheus text format (no refresh; see :meth:`refresh`)."""
        return generate_latest(self.registry)

    def add_refresher(self, name: str, callback: RefreshCallback) -> None:
        """Run ``callback`` before every scrape (replaces one of the same name).

        For values that are cheap to read but live elsewhere: the queue depth in Redis,
        a :class:`SemanticMetrics` object, an LLM's usage. Each runs with a time limit;
        a failing one is logged and skipped, the scrape still answers.
        """
        self._refreshers[name] = callback

    def remove_refresher(self, name: str) -> None:
        self._refreshers.pop(name, None)

    async def refresh(self, timeout_s: float = REFRESH_TIMEOUT_S) -> dict[str, str]:
        """Run every refresher concurrently; returns name → "ok" or why it failed."""
        names = list(self._refreshers)
        outcomes = await asyncio.gather(
            *(asyncio.wait_for(self._refreshers[n](), timeout_s) for n in names),
            return_exceptions=True,
        )
        result: dict[str, str] = {}
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                kind = "timeout" if isinstance(outcome, TimeoutError) else "error"
                result[name] = f"{kind}: {type(outcome).__name__}"
                log.warning("metrics refresher %s failed (%s)", name, type(outcome).__name__)
            else:
                result[name] = "ok"
        return result

    def set_up(self, component: str, is_up: bool) -> None:
        self.up.labels(component=component).set(1.0 if is_up else 0.0)

    # --- queue depth ------------------------------------------------------------------

    def set_queue_depth_source(self, source: Callable[[], Awaitable[int]]) -> None:
        """Read the queue depth from ``source`` at every scrape (e.g. :func:`arq_queue_depth`).

        The queue lives in Redis, so a synchronous ``Gauge.set_function`` cannot read it;
        the async callback runs in :meth:`refresh` instead. When it fails the gauge keeps
        its last value and ``alfred_up{component="queue"}`` drops to 0.
        """

        async def _read() -> None:
            try:
                depth = await source()
            except Exception:
                self.set_up(QUEUE, False)
                raise
            self.queue_depth.set(float(depth))
            self.set_up(QUEUE, True)

        self.add_refresher("queue_depth", _read)

    # --- retrieval ----------------------------------------------------------------------

    def record_retrieval(self, result: RetrievalResult) -> None:
        """Count one retrieval on the reply path: skipped, or searched (hit or not),
        with the latency of each step and the failure of each leg."""
        try:
            if not result.retrieved:
                self.retrieval_skipped.inc()
                return
            self.retrieval_requests.inc()
            self._retrieval_counts[0] += 1
            found = len(result.facts)
            if found:
                self.retrieval_hits.inc()
                self._retrieval_counts[1] += 1
            self.retrieval_facts.observe(found)
            requests, hits = self._retrieval_counts
            self.retrieval_hit_rate.set(hits / requests)
            for step, ms in result.timings_ms.items():
                if step == "total":
                    self.retrieval_latency.observe(ms / 1000.0)
                else:
                    self.retrieval_leg_latency.labels(leg=step).observe(ms / 1000.0)
            for leg, status in result.legs.items():
                outcome = leg_outcome(status)
                if outcome != "ok":
                    self.retrieval_leg_failures.labels(leg=leg, reason=outcome).inc()
        except Exception as exc:  # a metric must never break a reply
            log.warning("recording a retrieval failed (%s)", type(exc).__name__)

    # --- formation ----------------------------------------------------------------------

    def record_formation(self, report: FormationReport) -> None:
        """Count one formation: its outcome, fact decisions, reflections and failures."""
        try:
            if report.skipped:
                self.formations.labels(outcome="skipped").inc()
                return
            if report.set_aside or report.batch_failed:
                self.formations.labels(outcome="set_aside" if report.set_aside else "failed").inc()
                self.formation_set_aside.inc(report.set_aside)
                self.formation_llm_calls.inc(report.llm_calls)
                for step in report.failed_steps:
                    self.formation_failed_steps.labels(step=step).inc()
                return
            outcome = "partial" if report.failed_steps else "formed"
            self.formations.labels(outcome=outcome).inc()
            self.formation_messages.inc(report.messages)
            for action, n in (
                ("added", report.facts_added),
                ("updated", report.facts_updated),
                ("invalidated", report.facts_invalidated),
                ("unchanged", report.facts_unchanged),
            ):
                if n:
                    self.formation_facts.labels(action=action).inc(n)
            self.formation_reflections.inc(report.reflections_added)
            self.formation_clarifications.inc(report.clarifications)
            self.formation_llm_calls.inc(report.llm_calls)
            for step in report.failed_steps:
                self.formation_failed_steps.labels(step=step).inc()
            self.formation_memories.observe(
                report.facts_added + report.facts_updated + report.reflections_added
            )
        except Exception as exc:
            log.warning("recording a formation failed (%s)", type(exc).__name__)

    # --- LLM usage ----------------------------------------------------------------------

    def record_llm_usage(self, usage: Usage) -> None:
        """Export what ``usage`` (cumulative, per purpose) spent since the last call.

        :class:`memory.llm.Usage` only grows, so the exporter remembers what it last saw
        of each ``Usage`` object and adds the difference; call it as often as you like
        (after each formation, or from a refresher via :meth:`watch_llm_usage`).
        """
        try:
            seen = self._usage_seen.setdefault(id(usage), _UsageSeen())
            for purpose, calls in dict(usage.calls).items():
                d = _delta(calls, seen.calls.get(purpose, 0))
                if d:
                    self.llm_calls.labels(purpose=purpose).inc(d)
                seen.calls[purpose] = calls
            for kind, now_counts, before in (
                ("prompt", dict(usage.prompt_tokens), seen.prompt),
                ("completion", dict(usage.completion_tokens), seen.completion),
            ):
                for purpose, tokens in now_counts.items():
                    d = _delta(tokens, before.get(purpose, 0))
                    if d:
                        self.llm_tokens.labels(purpose=purpose, kind=kind).inc(d)
                    before[purpose] = tokens
        except Exception as exc:
            log.warning("recording LLM usage failed (%s)", type(exc).__name__)

    def watch_llm_usage(self, get_usage: Callable[[], Usage], name: str = "llm_usage") -> None:
        """Export the usage returned by ``get_usage`` (e.g. ``lambda: services.llm.usage``)
        at every scrape."""

        async def _read() -> None:
            self.record_llm_usage(get_usage())

        self.add_refresher(name, _read)

    # --- mem0 ---------------------------------------------------------------------------

    def observe_mem0_latency(self, ms: float) -> None:
        """One completed mem0 leg call, in milliseconds (what SemanticMetrics records)."""
        self.mem0_latency.observe(ms / 1000.0)

    def record_semantic_snapshot(self, snapshot: Mapping[str, float | int | None]) -> None:
        """Export a :meth:`SemanticMetrics.snapshot`: counter growth since the last one,
        and the in-process window percentiles as gauges.

        Snapshots are cumulative; only the difference since the previous snapshot is
        added, so calling this at every scrape is right. A counter that went down means
        a new ``SemanticMetrics`` object (restart of the layer): all of it counts.
        """
        try:
            for key, (attr, labels) in _SEMANTIC_COUNTERS.items():
                value = snapshot.get(key)
                if value is None:
                    continue
                now = int(value)
                d = _delta(now, self._semantic_seen.get(key, 0))
                self._semantic_seen[key] = now
                if d:
                    metric: Counter = getattr(self, attr)
                    (metric.labels(**labels) if labels else metric).inc(d)
            for key, quantile in (("50", "0.5"), ("95", "0.95"), ("99", "0.99")):
                ms = snapshot.get(f"latency_p{key}_ms")
                if ms is not None:
                    self.mem0_latency_window.labels(quantile=quantile).set(float(ms) / 1000.0)
        except Exception as exc:
            log.warning("recording mem0 metrics failed (%s)", type(exc).__name__)

    def watch_semantic(self, semantic: SemanticMetrics, name: str = "mem0") -> None:
        """Export ``semantic``'s counters at every scrape (see :meth:`record_semantic_snapshot`).

        For the latency histogram, build the layer with :class:`ExportingSemanticMetrics`
        instead of a plain :class:`SemanticMetrics`: the histogram needs every sample, and
        the plain object keeps only a window of them.
        """

        async def _read() -> None:
            self.record_semantic_snapshot(semantic.snapshot())

        self.add_refresher(name, _read)

    # --- jobs ---------------------------------------------------------------------------

    @asynccontextmanager
    async def time_job(
        self, job: str, *, retry_types: tuple[type[BaseException], ...] = ()
    ) -> AsyncIterator[None]:
        """Time a background job and count its outcome::

            async with metrics.time_job("form_thread", retry_types=(arq.Retry,)):
                ...

        An exception of ``retry_types`` (arq's ``Retry``: the job asked to run again) is a
        ``retry``, not a failure; a cancellation is ``cancelled``. Exceptions propagate.
        """
        started = time.perf_counter()
        outcome = "ok"
        try:
            yield
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except BaseException as exc:
            if retry_types and isinstance(exc, retry_types):
                outcome = "retry"
            else:
                outcome = "failed"
                self.job_failures.labels(job=job).inc()
            raise
        finally:
            self.job_duration.labels(job=job).observe(time.perf_counter() - started)
            self.jobs.labels(job=job, outcome=outcome).inc()


@dataclass
class ExportingSemanticMetrics(SemanticMetrics):
    """A :class:`SemanticMetrics` that also feeds every latency sample to the Prometheus
    histogram. Use it where the container builds ``SemanticMetrics()``: the plain object
    keeps only the last 2048 samples, which is enough for its own percentiles but not for
    a cumulative histogram."""

    exporter: AlfredMetrics | None = field(default=None, repr=False, compare=False)

    def observe_latency(self, ms: float) -> None:
        super().observe_latency(ms)
        exporter = self.exporter if self.exporter is not None else get_metrics()
        try:
            exporter.observe_mem0_latency(ms)
        except Exception as exc:  # never break a search over a metric
            log.warning("exporting a mem0 latency failed (%s)", type(exc).__name__)


async def arq_queue_depth(redis: Any, queue_name: str) -> int:
    """Jobs waiting in an arq queue: arq keeps its queue as a sorted set under its name."""
    return int(await redis.zcard(queue_name))


def watch_services(
    services: Services,
    *,
    redis: Redis | None = None,
    queue_name: str | None = None,
    metrics: AlfredMetrics | None = None,
) -> AlfredMetrics:
    """Export what a process's services count by themselves, at every scrape: the LLM's
    usage (``services.llm.usage``), the mem0 layer's :class:`SemanticMetrics`
    (``services.semantic_metrics``) and, given a Redis client and the arq queue name,
    the queue depth. One call per process, after the services are built.
    """
    m = metrics if metrics is not None else get_metrics()
    llm = services.llm
    m.watch_llm_usage(lambda: llm.usage)
    if services.semantic_metrics is not None:
        m.watch_semantic(services.semantic_metrics)
    if redis is not None and queue_name:
        m.set_queue_depth_source(lambda: arq_queue_depth(redis, queue_name))
    return m


_default: AlfredMetrics | None = None


def get_metrics() -> AlfredMetrics:
    """The process-wide metrics (created on first use). Tests build their own instead."""
    global _default
    if _default is None:
        _default = AlfredMetrics()
    return _default


def set_metrics(metrics: AlfredMetrics | None) -> None:
    """Replace the process-wide metrics (tests; ``None`` resets to a fresh one on next use)."""
    global _default
    _default = metrics


class ProcessMetrics:
    """The process-wide metrics as the services' observer ports: each call goes to
    whatever :func:`get_metrics` holds at that moment (tests swap it with
    :func:`set_metrics`)."""

    def record_retrieval(self, result: RetrievalResult) -> None:
        get_metrics().record_retrieval(result)

    def record_formation(self, report: FormationReport) -> None:
        get_metrics().record_formation(report)


__all__ = [
    "DATABASE",
    "QUEUE",
    "AlfredMetrics",
    "ExportingSemanticMetrics",
    "arq_queue_depth",
    "get_metrics",
    "leg_outcome",
    "set_metrics",
    "watch_services",
]
