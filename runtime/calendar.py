"""The calendar's wiring: settings → Google, Fernet and MongoDB adapters → the use cases'
:class:`services.calendar.CalendarFeature`, built once by the composition root.

Also what entry points need around it: the OAuth redirect routes bound to the use
case, a notifier through a Telegram bot, and ``alfred doctor``'s offline check.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web
from pymongo.asynchronous.database import AsyncDatabase

from integrations.google.calendar_client import GoogleEndpoints, check_offline
from integrations.google.calendar_provider import GoogleCalendarProvider
from integrations.google.crypto import CalendarCrypto
from integrations.google.oauth_http import make_oauth_routes
from integrations.mongo.calendar_store import MongoCalendarStore
from integrations.mongo.time_zones import MongoTimeZones
from memory.calendar_ports import CalendarDirectory, Notify
from memory.errors import ConfigurationError
from memory.facts import FactWriter
from memory.ports import Clock
from memory.stores import FactStore, SemanticMirror
from runtime.settings import CalendarSettings
from services.calendar import CalendarFeature, connection_completer
from services.calendar.feature import BAD_KEY, NO_KEY


def google_endpoints(settings: CalendarSettings) -> GoogleEndpoints:
    """Where Google is: the real endpoints, or a proxy or test server."""
    base = (settings.google_oauth_base_url or "").rstrip("/")
    api = settings.google_calendar_api_url
    if api and not api.endswith("/"):
        api += "/"
    if not base:
        return GoogleEndpoints(calendar_api=api or None)
    return GoogleEndpoints(
        auth_uri=f"{base}/auth",
        token_uri=f"{base}/token",
        revoke_uri=f"{base}/revoke",
        calendar_api=api or None,
    )


def token_cipher(settings: CalendarSettings) -> CalendarCrypto | None:
    """The cipher for the configured key, or None when no key is set (connecting is then
    refused: tokens are never stored unencrypted). Raises ConfigurationError for a bad key."""
    if settings.calendar_encryption_key is None:
        return None
    material = settings.calendar_encryption_key.get_secret_value()
    return CalendarCrypto(material) if material.strip() else None


def build_calendar(
    settings: CalendarSettings,
    *,
    db: AsyncDatabase[dict[str, Any]],
    clock: Clock,
    directory: CalendarDirectory,
    writer: FactWriter,
    facts: FactStore,
    mirror: SemanticMirror | None = None,
) -> CalendarFeature:
    """The calendar feature for these settings (a few small objects; no network)."""
    cipher: CalendarCrypto | None = None
    problem: str | None = None
    try:
        cipher = token_cipher(settings)
    except ConfigurationError:
        problem = BAD_KEY
    if cipher is None and problem is None:
        problem = NO_KEY
    secret = settings.google_client_secret
    provider = GoogleCalendarProvider(
        client_id=settings.google_client_id or "",
        client_secret=secret.get_secret_value() if secret else "",
        redirect_url=settings.google_redirect_url or "",
        endpoints=google_endpoints(settings),
    )
    return CalendarFeature(
        store=MongoCalendarStore(db),
        google=provider,
        cipher=cipher,
        clock=clock,
        directory=directory,
        writer=writer,
        facts=facts,
        mirror=mirror,
        configured=bool(
            settings.google_client_id
            and settings.google_client_secret
            and settings.google_redirect_url
        ),
        key_problem=problem,
        redirect_url=settings.google_redirect_url,
        sync_interval=timedelta(minutes=settings.calendar_sync_minutes),
        zones=MongoTimeZones(db),
    )


def oauth_routes(calendar: CalendarFeature, *, notify: Notify | None = None) -> list[web.RouteDef]:
    """Google's redirect endpoint, completing connections of this calendar. ``notify``
    asks the person in Telegram to confirm the account."""
    complete = connection_completer(calendar, notify=notify)
    return make_oauth_routes(complete, redirect_url=calendar.redirect_url)


def telegram_notifier(bot: object) -> Notify:
    """A :data:`Notify` sending through a PTB ``Bot`` (a user's DM chat id is their id)."""

    async def notify(user_id: str, text: str) -> None:
        send = getattr(bot, "send_message")  # noqa: B009 - duck-typed PTB Bot
        await send(chat_id=int(user_id), text=text)

    return notify


def check_configuration(settings: CalendarSettings) -> tuple[bool, str]:
    """For ``alfred doctor``: whether the calendar settings can work, without any network
    (the Calendar client is built from the discovery document inside the library)."""
    missing = [
        name
        for name, value in (
            ("GOOGLE_CLIENT_ID", settings.google_client_id),
            ("GOOGLE_CLIENT_SECRET", settings.google_client_secret),
            ("GOOGLE_REDIRECT_URL", settings.google_redirect_url),
            ("CALENDAR_ENCRYPTION_KEY", settings.calendar_encryption_key),
        )
        if not value
    ]
    if missing:
        return False, f"Google Calendar needs {', '.join(missing)} as well"
    try:
        token_cipher(settings)
    except ConfigurationError as exc:
        return False, exc.message
    redirect = settings.google_redirect_url or ""
    if not redirect.startswith("https://") and "://localhost" not in redirect:
        return False, "GOOGLE_REDIRECT_URL must be an https:// URL (Google refuses others)"
    check_offline()
    return True, f"configured; Google redirects to {redirect}"
