"""What every calendar entry point shares: configuration, keys, the store, clients.

:class:`CalendarSetup` is built from :class:`runtime.container.Services` on demand
(it is a few small objects; the container stays unaware of the calendar). It answers
"can calendars be connected here at all, and if not, why?" in one place, so the
command, the tools and the jobs give the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from integrations.calendar.crypto import CalendarCrypto
from integrations.calendar.google_client import (
    SYNC_RETRY,
    CalendarClient,
    GoogleEndpoints,
    RetryPolicy,
    TokenBundle,
)
from integrations.calendar.store import CalendarConnection, CalendarStore
from memory.errors import ConfigurationError
from runtime.container import Services
from runtime.settings import Settings

log = logging.getLogger(__name__)

#: Sends a private message to a user (by Alfred's user id); raises if it cannot.
Notify = Callable[[str, str], Awaitable[None]]

NOT_CONFIGURED = (
    "Google Calendar isn't set up on this Alfred. Whoever runs it needs to set "
    "GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET and GOOGLE_REDIRECT_URL (see the README)."
)
NO_KEY = (
    "I can't connect calendars yet: calendar tokens must be stored encrypted, and no "
    "encryption key is configured. Whoever runs me needs to set CALENDAR_ENCRYPTION_KEY "
    "(see the README)."
)
BAD_KEY = (
    "I can't connect calendars: CALENDAR_ENCRYPTION_KEY is not a valid key. Whoever runs "
    "me needs to fix it (see the README)."
)
#: The sweep tries to send a revocation notice this often at most (then it waits for the
#: person's next DM, whose reply carries it), waiting NOTICE_BACKOFF * 2**(n-1) between.
NOTICE_ATTEMPTS = 5
NOTICE_BACKOFF = timedelta(minutes=5)
REVOKED_NOTICE = (
    "I've lost access to your Google Calendar (the permission was removed or has expired), "
    "so I've stopped syncing it. Send /calendar here to connect it again."
)


@dataclass
class CalendarSetup:
    """The calendar configuration of one Alfred, with its store and keys."""

    services: Services
    store: CalendarStore
    endpoints: GoogleEndpoints
    crypto: CalendarCrypto | None
    key_problem: str | None = None

    @classmethod
    def of(cls, services: Services) -> CalendarSetup:
        settings = services.settings
        crypto: CalendarCrypto | None = None
        problem: str | None = None
        try:
            crypto = CalendarCrypto.from_settings(settings)
        except ConfigurationError:
            problem = BAD_KEY
        if crypto is None and problem is None:
            problem = NO_KEY
        return cls(
            services=services,
            store=CalendarStore(services.mongo.db),
            endpoints=GoogleEndpoints.from_settings(settings),
            crypto=crypto,
            key_problem=problem,
        )

    @property
    def configured(self) -> bool:
        """Whether an OAuth client is configured (the key is checked separately)."""
        s = self.services.settings
        return bool(s.google_client_id and s.google_client_secret and s.google_redirect_url)

    def problem(self) -> str | None:
        """Why calendars cannot be used here, in words for the person; None if they can."""
        if not self.configured:
            return NOT_CONFIGURED
        return self.key_problem

    @property
    def client_id(self) -> str:
        return self.services.settings.google_client_id or ""

    @property
    def client_secret(self) -> str:
        secret = self.services.settings.google_client_secret
        return secret.get_secret_value() if secret else ""

    def tokens(self, connection: CalendarConnection) -> TokenBundle:
        """Decrypt a connection's tokens (raises ``UnreadableTokens`` if the key changed)."""
        if self.crypto is None or connection.tokens is None:
            raise ConfigurationError(self.key_problem or "the calendar is not connected")
        return TokenBundle.model_validate(self.crypto.decrypt(connection.tokens))

    def encrypt_tokens(self, tokens: TokenBundle) -> str:
        if self.crypto is None:
            raise ConfigurationError(self.key_problem or NO_KEY)
        return self.crypto.encrypt(tokens.model_dump(mode="json"))

    def client(self, tokens: TokenBundle, *, retry: RetryPolicy = SYNC_RETRY) -> CalendarClient:
        return CalendarClient(
            tokens=tokens,
            client_id=self.client_id,
            client_secret=self.client_secret,
            endpoints=self.endpoints,
            retry=retry,
        )

    async def save_refreshed(self, user_id: str, client: CalendarClient) -> None:
        """Store the client's tokens if google-auth refreshed them meanwhile."""
        if client.tokens_changed:
            await self.store.save_tokens(user_id, self.encrypt_tokens(client.current_tokens()))

    async def account_email(self, connection: CalendarConnection) -> str | None:
        """The Google address of a connection, or None (not connected, unreadable)."""
        if connection.tokens is None or self.crypto is None:
            return None
        try:
            return self.tokens(connection).account_email
        except Exception:  # an unreadable bundle just gives no address
            return None

    async def tell_revoked(self, user_id: str, notify: Notify | None) -> bool:
        """Tell the person, once, that their calendar access is gone. True if told."""
        if notify is None:
            return False
        if not await self.store.take_revoked_notice(user_id):
            return False
        try:
            await notify(user_id, REVOKED_NOTICE)
        except Exception as exc:
            log.warning("could not tell user about the revoked calendar: %s", type(exc).__name__)
            connection = await self.store.get(user_id)
            failed = (connection.notice_attempts if connection else 0) + 1
            retry_at = self.services.clock.now() + NOTICE_BACKOFF * 2 ** (failed - 1)
            await self.store.undo_revoked_notice(user_id, retry_at)
            return False
        return True


async def take_revoked_notice(services: Services, user_id: str) -> str | None:
    """For the reply path in the user's DM: the one-time notice that their calendar was
    disconnected by Google, or None. Prepend it to the reply when not None."""
    setup = CalendarSetup.of(services)
    if not setup.configured:  # no calendars here: no database round trip either
        return None
    store = setup.store
    if await store.take_revoked_notice(user_id):
        return REVOKED_NOTICE
    return None


def telegram_notifier(bot: object) -> Notify:
    """A :data:`Notify` sending through a PTB ``Bot`` (a user's DM chat id is their id)."""

    async def notify(user_id: str, text: str) -> None:
        send = getattr(bot, "send_message")  # noqa: B009 - duck-typed PTB Bot
        await send(chat_id=int(user_id), text=text)

    return notify


def check_configuration(settings: Settings) -> tuple[bool, str]:
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
        CalendarCrypto.from_settings(settings)
    except ConfigurationError as exc:
        return False, exc.message
    redirect = settings.google_redirect_url or ""
    if not redirect.startswith("https://") and "://localhost" not in redirect:
        return False, "GOOGLE_REDIRECT_URL must be an https:// URL (Google refuses others)"
    from googleapiclient.discovery import build

    build("calendar", "v3", static_discovery=True, developerKey="offline-check").close()
    return True, f"configured; Google redirects to {redirect}"
