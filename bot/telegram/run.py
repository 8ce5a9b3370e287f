"""``alfred run``: the Telegram bot, by long polling or behind a webhook.

Start-up builds the services, applies pending migrations (and, as every migrate run does,
reconciles the Atlas search indexes; migration 0004 imports what it can of a legacy
memory system and logs what it skipped), starts the background worker
in-process (unless ``RUN_WORKER=external``) and the Telegram application; it stops
cleanly on SIGINT/SIGTERM, letting go of the embedded servers last.

While it runs, a :class:`DependencyWatch` pings the database: while it is down, messages
are spooled and answered at once, and the spool is replayed as soon as it answers again
(the embedded server's supervisor restarts a dead server within seconds; the driver
reconnects by itself). A message that failed while every ping succeeded is retried
shortly after (:mod:`bot.telegram.spool_retry`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import re
import signal
from typing import Any

from aiohttp import web
from telegram import Update
from telegram.error import InvalidToken, NetworkError

from bot.telegram.app import build_application
from bot.telegram.delivery import Spool
from bot.telegram.handlers.messages import DATABASE
from bot.telegram.spool_retry import SpoolRetry, replay_spool
from bot.telegram.webhook import make_web_app, webhook_path
from jobs.config import queue_name
from memory.errors import ConfigurationError, Unavailable
from migrations import MigrationContext, migrate
from runtime.container import build_assistant, build_services, load_models
from runtime.erasure import ErasureFiles
from runtime.health import add_health_routes, start_health_server
from runtime.metrics import watch_services
from runtime.settings import Settings
from runtime.watch import DependencyWatch

log = logging.getLogger(__name__)

WEBHOOK_SECRET_CHARS = re.compile(r"[A-Za-z0-9_-]{1,256}")


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _release_signals() -> None:
    """Give SIGINT and SIGTERM back: a loop that outlives the bot (tests, an embedding
    program) would otherwise swallow them into an event nobody waits on."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(sig)


async def run_bot(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    if settings.telegram_bot_token is None:
        raise ConfigurationError(
            "TELEGRAM_BOT_TOKEN is not set",
            hint="get a token from @BotFather; without one, try `alfred demo` or `alfred chat`",
        )
    if settings.webhook_url:
        webhook_secret(settings)  # a bad WEBHOOK_SECRET fails here, before anything starts
    own_signals = stop is None
    stop = stop or _stop_event()
    try:
        await _serve(settings, settings.telegram_bot_token.get_secret_value(), stop)
    finally:
        if own_signals:
            _release_signals()


async def _serve(settings: Settings, token: str, stop: asyncio.Event) -> None:
    """Build, start, and run until ``stop`` is set; everything started is stopped."""
    services = await build_services(settings)
    background: Any = None
    health: Any = None
    retry: SpoolRetry | None = None
    watch = DependencyWatch({DATABASE: lambda: services.mongo.client.admin.command("ping")})
    try:
        await migrate(
            MigrationContext(
                services.mongo.db,
                services.capabilities.atlas_search,
                services.embedder.dimensions,
                log=log.info,
                embedder=services.embedder,
                clock=services.clock,
            )
        )
        await load_models(services)  # before the first update: its search needs the model
        from bot.telegram.background import start_background

        background = await start_background(services, settings)
        redis_client = background.redis.client if background.redis else None
        watch_services(services, redis=redis_client, queue_name=queue_name(settings))
        if settings.metrics_port:
            try:
                health = await start_health_server(
                    lambda: services,
                    lambda: redis_client,
                    host=settings.metrics_listen,
                    port=settings.metrics_port,
                    token=settings.metrics_token,
                )
            except OSError as exc:  # the bot is more important than its metrics
                log.warning(
                    "metrics server not started on port %d (%s); set METRICS_PORT",
                    settings.metrics_port,
                    exc.strerror,
                )
        spool = Spool(settings.data_dir() / "spool" / "updates.jsonl")
        residue = ErasureFiles(
            spool.path.parent,
            lambda: background.redis.client if background.redis else None,
            services.mongo,
        )
        from runtime.reminders import QueueScheduler

        assistant = build_assistant(
            services,
            after_message=background.after_message,
            residue=residue,
            reminder_scheduler=QueueScheduler(background.queue) if background.queue else None,
        )
        application = build_application(
            token,
            assistant,
            base_url=settings.telegram_api_base_url,
            spool=spool,
            unreadable=spool.path.with_name("unreadable.jsonl"),
            concurrency=settings.update_concurrency,
            watch=watch,
        )
        retry = SpoolRetry(
            spool,
            lambda: replay_spool(application, spool, retry=True),
            lambda: watch.is_down(DATABASE),
        )
        await _connect(application, settings)
        async with application:
            assistant.bot_username = (application.bot.username or "alfred").lower()
            await application.start()
            await replay_spool(application, spool)

            async def replay_after(name: str) -> None:
                await replay_spool(application, spool)

            watch.on_recovery(replay_after)
            watch.start()
            retry.start()
            from integrations.google.oauth_http import serve_oauth_redirect
            from runtime.calendar import oauth_routes, telegram_notifier

            notify = telegram_notifier(application.bot)
            calendar_on = services.calendar.configured
            if settings.webhook_url:
                routes = oauth_routes(services.calendar, notify=notify) if calendar_on else []
                await _serve_webhook(
                    application,
                    settings,
                    stop,
                    routes,
                    readiness=(lambda: services, lambda: redis_client),
                )
            else:
                oauth = None
                if calendar_on:  # the OAuth redirect needs a web server even when polling
                    # (a taken port is logged; the bot keeps running without it)
                    oauth = await serve_oauth_redirect(
                        oauth_routes(services.calendar, notify=notify),
                        host=settings.webhook_listen,
                        port=settings.webhook_port,
                    )
                if application.updater is None:
                    raise ConfigurationError("the Telegram application has no updater to poll")
                await application.updater.start_polling(allowed_updates=Update.ALL_TYPES)
                log.info("polling Telegram as @%s", application.bot.username)
                try:
                    await stop.wait()
                finally:
                    await application.updater.stop()
                    if oauth is not None:
                        await oauth.cleanup()
            await watch.aclose()  # no replay into a queue that is about to stop
            await retry.aclose()
            await application.stop()
    finally:
        await watch.aclose()
        if retry is not None:
            await retry.aclose()
        if health is not None:
            await health.cleanup()
        if background is not None:
            await background.aclose()
        await services.aclose()


async def _connect(application: Any, settings: Settings) -> None:
    """Initialise the application (``getMe``): a refused token or an unreachable Bot API
    is a one-line error at start, not a traceback."""
    try:
        await application.initialize()
    except InvalidToken:
        raise ConfigurationError(
            "Telegram refused TELEGRAM_BOT_TOKEN", hint="copy the token from @BotFather again"
        ) from None
    except NetworkError as exc:  # TimedOut included
        where = settings.telegram_api_base_url or "api.telegram.org"
        raise Unavailable(
            "telegram",
            f"cannot reach the Bot API at {where} ({type(exc).__name__})",
            hint="check the network, or TELEGRAM_API_BASE_URL",
        ) from None


def webhook_secret(settings: Settings) -> str:
    """``WEBHOOK_SECRET``, or one derived from the bot token: the same in every replica
    behind the webhook (a random one per process would make the others refuse updates)."""
    if settings.webhook_secret is not None:
        secret = settings.webhook_secret.get_secret_value()
        if not WEBHOOK_SECRET_CHARS.fullmatch(secret):
            raise ConfigurationError(
                "WEBHOOK_SECRET is not accepted by Telegram",
                hint="use 1-256 characters, only A-Z, a-z, 0-9, _ and -",
            )
        return secret
    if settings.telegram_bot_token is None:
        raise ConfigurationError(
            "TELEGRAM_BOT_TOKEN is not set", hint="a webhook needs WEBHOOK_SECRET or the token"
        )
    token = settings.telegram_bot_token.get_secret_value().encode()
    return hmac.new(token, b"alfred webhook secret", hashlib.sha256).hexdigest()


async def _serve_webhook(
    application: Any,
    settings: Settings,
    stop: asyncio.Event,
    routes: list[web.RouteDef] | None = None,
    readiness: tuple[Any, Any] | None = None,
) -> None:
    if settings.webhook_url is None:
        raise ConfigurationError("WEBHOOK_URL is not set", hint="set it to serve a webhook")
    secret = webhook_secret(settings)
    path = webhook_path(settings.webhook_url)
    app = make_web_app(
        application, path, secret, settings.data_dir() / "spool" / "unreadable.jsonl"
    )
    app.add_routes(routes or [])
    if readiness is not None:
        add_health_routes(app, *readiness, include_metrics=False)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, settings.webhook_listen, settings.webhook_port)
    await site.start()
    try:
        await application.bot.set_webhook(
            url=settings.webhook_url, secret_token=secret, allowed_updates=Update.ALL_TYPES
        )
        log.info("webhook on %s:%d%s", settings.webhook_listen, settings.webhook_port, path)
        await stop.wait()
    finally:
        await runner.cleanup()
