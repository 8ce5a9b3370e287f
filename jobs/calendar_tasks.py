"""The calendar sync as an arq job (cron), beside the formation jobs.

Every minute the cron runs :func:`services.calendar.sync_due`: context memories of
events that are over are invalidated, and each connected calendar whose next sync is
due (every ``CALENDAR_SYNC_MINUTES``, sooner after a partial run, later after failures)
is synced. Ticking every minute costs one indexed query; it makes a new connection's
first sync start within a minute. The sweep ends itself before the job's time limit
(:func:`sync_config`), so a slow Google delays one user, never the whole sweep. The
job never raises for a user's failure (the sync reschedules that user); only a crash of
the sweep itself is an arq failure.

Revocation notices go to the person's DM through Telegram when the worker has a bot
token; without one they are delivered on the person's next DM message instead.
"""

from __future__ import annotations

import logging
from typing import Any

from arq import cron, func

from jobs.config import JobsConfig
from jobs.tasks import Ctx, runtime
from memory.calendar_ports import Notify
from runtime.settings import Settings
from services.calendar import SyncConfig, sync_due

log = logging.getLogger(__name__)

CALENDAR_SYNC = "calendar_sync"
#: ``ctx`` key a caller may preset with its own :data:`Notify` (the in-process worker
#: passes one sending through the running bot).
NOTIFY_KEY = "calendar_notify"


def settings_notifier(settings: Settings) -> Notify | None:
    """A notifier that sends a DM through the Bot API, or None without a bot token."""
    token = settings.telegram_bot_token
    if token is None:
        return None

    async def notify(user_id: str, text: str) -> None:
        from telegram import Bot

        options: dict[str, Any] = {}
        if settings.telegram_api_base_url:
            options["base_url"] = settings.telegram_api_base_url
        async with Bot(token.get_secret_value(), **options) as bot:
            await bot.send_message(chat_id=int(user_id), text=text)

    return notify


async def calendar_sync_job(ctx: Ctx) -> dict[str, Any]:
    """Cron: expire ended events' memories and sync due calendars. Returns counts only
    (arq keeps results in Redis: no ids, no addresses)."""
    rt = runtime(ctx)
    services = rt.services
    if not services.settings.flags().calendar:
        return {"calendars": 0, "skipped": "MEMORY_CALENDAR is off"}
    notify = ctx.get(NOTIFY_KEY) or settings_notifier(services.settings)
    sweep = await sync_due(services.calendar, notify=notify, config=sync_config(rt.config))
    statuses: dict[str, int] = {}
    for user in sweep.users:
        statuses[user.status] = statuses.get(user.status, 0) + 1
    return {
        "calendars": len(sweep.users),
        "statuses": statuses,
        "events": sum(u.events for u in sweep.users),
        "stored": sum(u.stored for u in sweep.users),
        "expired": sweep.expired,
        "notices": sweep.notices,
    }


def sync_config(config: JobsConfig) -> SyncConfig:
    """The sweep's time limits under the job's: arq cancels the job at
    ``cron_timeout``, so the sweep starts no user after 5/6 of it and gives one user at
    most half of it (120 s → 100 s and 60 s); a user cut short is retried with back-off."""
    limit = config.cron_timeout
    return SyncConfig(sweep_budget=limit * 5 / 6, user_deadline=limit / 2)


def calendar_functions(config: JobsConfig | None = None) -> list[Any]:
    """The job as a plain function (for burst drains that run crons as functions)."""
    config = config or JobsConfig()
    return [func(calendar_sync_job, name=CALENDAR_SYNC, timeout=config.cron_timeout, max_tries=1)]


def calendar_cron_jobs(config: JobsConfig | None = None) -> list[Any]:
    """Every minute at :15 (cold sessions run at :00, the outbox requeue at :30)."""
    config = config or JobsConfig()
    return [cron(calendar_sync_job, name=CALENDAR_SYNC, second=15, timeout=config.cron_timeout)]
