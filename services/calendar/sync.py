"""The periodic calendar sync: per connected user, incremental with sync tokens.

The first sync of a calendar lists every event (a *full* sync) and ends with a sync
token; each later run asks Google only for what changed since (an *incremental* sync).
Pages are processed one at a time and the position (page token, then sync token) is
saved after each, so a crash or a time-out resumes where it stopped, and one run
handles at most :attr:`SyncConfig.max_events_per_run` events (the rest follows on the
next run, queued at once).

What goes wrong is kept to one user and one run, never the process:

* 410 Gone (sync token expired) → a full sync at once, in the same run; context facts
  of events the full sync no longer sees are invalidated when it completes;
* rate limits and outages are retried by the client; still failing → this user's next
  sync is pushed back exponentially (5 min … 6 h), the others go on;
* a run longer than its deadline (:attr:`SyncConfig.user_deadline`, below the cron
  job's time limit), or one cancelled by that limit → a failure as well: the lease is
  released and the next sync pushed back, so the other users' syncs go on;
* a revoked token → the connection is marked revoked, its tokens deleted, syncing
  stops, and the person is told once (now through ``notify``, or on their next DM);
  a notice that cannot be sent is tried again with back-off, a few times only
  (:data:`services.calendar.feature.NOTICE_ATTEMPTS`), and in any case on their next
  DM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory.calendar_ports import (
    PAGE_SIZE,
    SYNC_RETRY,
    CalendarConnection,
    CalendarRevoked,
    Notify,
    RetryPolicy,
    SyncTokenExpired,
    UnreadableTokens,
)
from memory.errors import AlfredError, RateLimited
from memory.models import Partition
from services.calendar.deliver import DeliveryReport, EventMemories, expire_calendar_memories
from services.calendar.feature import NOTICE_ATTEMPTS, CalendarFeature

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncConfig:
    """Tunables of the sync, each with its reason."""

    #: Events per Google page (Google's default is 250, its ceiling 2,500).
    page_size: int = PAGE_SIZE
    #: One run stops after this many events and continues on the next run, so a huge
    #: calendar never holds a worker past the cron's time limit.
    max_events_per_run: int = 2000
    #: A run holds the user's lease this long (a killed worker's lease lapses).
    lease: timedelta = timedelta(minutes=10)
    retry: RetryPolicy = SYNC_RETRY
    #: After a failed run, wait ``base * 2**(failures-1)``, at most ``max``.
    failure_backoff: timedelta = timedelta(minutes=5)
    max_failure_backoff: timedelta = timedelta(hours=6)
    #: Users synced per sweep (the rest are due on the next tick).
    users_per_sweep: int = 100
    #: One user's run ends after this long (a failure, retried with back-off): with a
    #: 30 s HTTP time-out and five attempts a call alone could take minutes, and the
    #: cron job is cancelled at ``JobsConfig.cron_timeout`` (120 s).
    user_deadline: float = 60.0
    #: A sweep starts no user after this long, and gives the last one only what is
    #: left, so the whole sweep ends before the cron's time limit.
    sweep_budget: float = 100.0

    def backoff(self, failures: int) -> timedelta:
        factor: int = 2 ** max(0, failures - 1)
        return min(self.max_failure_backoff, self.failure_backoff * factor)


@dataclass
class SyncReport:
    """One user's sync run."""

    user_id: str
    status: str = "synced"  # synced | partial | revoked | retry_later | skipped
    events: int = 0
    pages: int = 0
    full_sync: bool = False
    resynced: bool = False
    stored: int = 0
    invalidated: int = 0
    error: str | None = None


@dataclass
class SweepReport:
    """One run of the sync duty over every due user."""

    users: list[SyncReport] = field(default_factory=list)
    expired: int = 0
    notices: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "users": [asdict(u) for u in self.users],
            "expired": self.expired,
            "notices": self.notices,
        }


async def sync_user(
    calendar: CalendarFeature,
    user_id: str,
    *,
    notify: Notify | None = None,
    config: SyncConfig | None = None,
    deadline: float | None = None,
) -> SyncReport:
    """Sync one user's calendar now (if connected and not being synced elsewhere).

    The run is bounded by ``deadline`` seconds (default :attr:`SyncConfig.user_deadline`).
    Running out of time, or being cancelled (the cron job's own time limit), counts as a
    failed run: the user's next sync is pushed back with the usual back-off, so a slow
    calendar never blocks the sweep for everyone else minute after minute. What was
    synced so far is kept (the position is saved after every page).
    """
    config = config or SyncConfig()
    limit = config.user_deadline if deadline is None else deadline
    report = SyncReport(user_id)
    if calendar.problem() is not None:
        report.status, report.error = "skipped", "calendar not configured"
        return report
    now = calendar.clock.now()
    connection = await calendar.store.get(user_id)
    if connection is None or not connection.connected:
        report.status = "skipped"
        return report
    if not await calendar.store.lease(user_id, now, now + config.lease):
        report.status, report.error = "skipped", "another sync holds the lease"
        return report
    try:
        async with asyncio.timeout(limit):
            return await _run(calendar, connection, report, notify, config, now)
    except TimeoutError:
        report.status, report.error = "retry_later", f"the sync took longer than {limit:g}s"
        await _failed(calendar, connection, config, now, report.error)
        return report
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _failed(calendar, connection, config, now, "the sync was cancelled")
        raise
    except Exception:
        await calendar.store.release(user_id)
        raise


async def _failed(
    calendar: CalendarFeature,
    connection: CalendarConnection,
    config: SyncConfig,
    now: datetime,
    error: str,
    retry_after: float | None = None,
) -> timedelta:
    """Record a failed run: the lease goes, and the next try is pushed back."""
    wait = config.backoff(connection.failures + 1)
    if retry_after:
        wait = max(wait, timedelta(seconds=retry_after))
    await calendar.store.finish_run(connection.user_id, now, now + wait, error=error)
    return wait


async def _run(
    calendar: CalendarFeature,
    connection: CalendarConnection,
    report: SyncReport,
    notify: Notify | None,
    config: SyncConfig,
    now: datetime,
) -> SyncReport:
    """The run itself, with the lease held."""
    user_id = connection.user_id
    client = None
    try:
        try:
            tokens = calendar.tokens(connection)
        except UnreadableTokens as exc:
            raise CalendarRevoked(exc.message) from exc
        client = calendar.client(tokens, retry=config.retry)
        memories = await EventMemories(
            calendar, user_id, generation=connection.generation
        ).prepare()
        partition = Partition.dm(user_id)
        sync_token, page_token = connection.sync_token, connection.page_token
        full = connection.full_sync or (sync_token is None and page_token is None)
        report.full_sync = full
        zone = connection.time_zone
        processed = 0
        while True:
            try:
                page = await client.list_events(
                    sync_token=sync_token, page_token=page_token, page_size=config.page_size
                )
            except SyncTokenExpired:
                if report.resynced:
                    raise
                log.info("calendar sync token expired for a user: full sync")
                memories.generation = await calendar.store.start_full_sync(user_id)
                sync_token = page_token = None
                full = report.full_sync = report.resynced = True
                continue
            report.pages += 1
            zone = page.time_zone or zone
            delivered: DeliveryReport = await memories.deliver(
                page.items,
                partition=partition,
                creator_user_id=user_id,
                default_zone=zone,
            )
            report.events += len(page.items)
            report.stored += delivered.stored
            report.invalidated += delivered.invalidated
            processed += len(page.items)
            if page.next_page_token:
                page_token = page.next_page_token
                await calendar.store.save_progress(
                    user_id,
                    page_token=page_token,
                    sync_token=sync_token,
                    full_sync=full,
                    time_zone=zone,
                )
                if processed >= config.max_events_per_run:
                    report.status = "partial"
                    break
                continue
            await calendar.store.save_progress(
                user_id,
                page_token=None,
                sync_token=page.next_sync_token,
                full_sync=False,
                time_zone=zone,
            )
            if full:
                report.invalidated += await memories.sweep_stale(memories.generation)
            break
        await calendar.save_refreshed(user_id, client)
        next_at = now if report.status == "partial" else now + calendar.sync_interval
        await calendar.store.finish_run(user_id, now, next_at)
        return report
    except CalendarRevoked as exc:
        await calendar.store.mark_revoked(user_id, now, exc.message)
        await calendar.store.release(user_id)
        await calendar.tell_revoked(user_id, notify)
        report.status, report.error = "revoked", exc.message
        return report
    except AlfredError as exc:
        # Google down, rate limited, refused, or our database hiccuped: try later.
        if client is not None:
            with contextlib.suppress(AlfredError):
                await calendar.save_refreshed(user_id, client)
        retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
        wait = await _failed(calendar, connection, config, now, exc.message, retry_after)
        log.warning("calendar sync failed (%s); next try in %s", exc.message, wait)
        report.status, report.error = "retry_later", exc.message
        return report
    finally:
        if client is not None:
            client.close()


async def sync_due(
    calendar: CalendarFeature,
    *,
    notify: Notify | None = None,
    config: SyncConfig | None = None,
) -> SweepReport:
    """The cron duty: expire ended events' memories, sync every due calendar, and
    deliver revocation notices still owed. One user's failure never stops the others."""
    config = config or SyncConfig()
    sweep = SweepReport()
    sweep.expired = await expire_calendar_memories(calendar)
    if calendar.problem() is not None:
        return sweep
    loop = asyncio.get_running_loop()
    ends = loop.time() + config.sweep_budget
    for user_id in await calendar.store.due(calendar.clock.now(), limit=config.users_per_sweep):
        left = ends - loop.time()
        if left <= 0:  # the rest are still due: the next tick takes them
            break
        deadline = min(config.user_deadline, left)
        try:
            sweep.users.append(
                await sync_user(calendar, user_id, notify=notify, config=config, deadline=deadline)
            )
        except Exception as exc:  # a bug for one user must not starve the others
            log.exception("calendar sync of a user crashed")
            sweep.users.append(SyncReport(user_id, status="retry_later", error=repr(exc)))
            now = calendar.clock.now()
            await calendar.store.finish_run(user_id, now, now + config.backoff(1), error=repr(exc))
    if notify is not None:
        due_notices = await calendar.store.revoked_unnotified(
            calendar.clock.now(), max_attempts=NOTICE_ATTEMPTS
        )
        for user_id in due_notices:
            if await calendar.tell_revoked(user_id, notify):
                sweep.notices += 1
    return sweep
