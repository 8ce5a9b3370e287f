"""What every calendar use case shares: the ports, the configuration, and the rules for
tokens and revocation notices.

The composition root builds one :class:`CalendarFeature` (adapters for Google, MongoDB
and the encryption keys, plus the domain's directory and fact writer) and hands it to
the entry points; every use case in this package takes it as its first argument. It
answers "can calendars be connected here at all, and if not, why?" in one place, so
the command, the tools and the jobs give the same reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from memory.calendar_ports import (
    SYNC_RETRY,
    CalendarClient,
    CalendarConnection,
    CalendarDirectory,
    CalendarProvider,
    CalendarStore,
    Notify,
    RetryPolicy,
    TokenBundle,
    TokenCipher,
)
from memory.errors import ConfigurationError
from memory.facts import FactWriter
from memory.ports import Clock
from memory.stores import FactStore, SemanticMirror
from memory.timezones import ZoneStore

log = logging.getLogger(__name__)

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
class CalendarFeature:
    """The calendar of one Alfred: its ports, and whether it can be used."""

    store: CalendarStore
    google: CalendarProvider
    #: None when no usable key is configured (``key_problem`` says why).
    cipher: TokenCipher | None
    clock: Clock
    directory: CalendarDirectory
    writer: FactWriter
    facts: FactStore
    mirror: SemanticMirror | None = None
    #: Whether an OAuth client (id, secret, redirect URL) is configured.
    configured: bool = False
    key_problem: str | None = None
    #: Where Google sends the browser back (the OAuth endpoint is served at its path).
    redirect_url: str | None = None
    #: Time between two incremental syncs of a calendar.
    sync_interval: timedelta = timedelta(minutes=15)
    #: People's own time zones: events are worded and listed on their clock when set.
    zones: ZoneStore | None = None

    def problem(self) -> str | None:
        """Why calendars cannot be used here, in words for the person; None if they can."""
        if not self.configured:
            return NOT_CONFIGURED
        return self.key_problem

    def tokens(self, connection: CalendarConnection) -> TokenBundle:
        """Decrypt a connection's tokens (raises ``UnreadableTokens`` if the key changed)."""
        if self.cipher is None or connection.tokens is None:
            raise ConfigurationError(self.key_problem or "the calendar is not connected")
        return TokenBundle.model_validate(self.cipher.decrypt(connection.tokens))

    def encrypt_tokens(self, tokens: TokenBundle) -> str:
        if self.cipher is None:
            raise ConfigurationError(self.key_problem or NO_KEY)
        return self.cipher.encrypt(tokens.model_dump(mode="json"))

    def client(self, tokens: TokenBundle, *, retry: RetryPolicy = SYNC_RETRY) -> CalendarClient:
        return self.google.client(tokens, retry=retry)

    async def save_refreshed(self, user_id: str, client: CalendarClient) -> None:
        """Store the client's tokens if they were refreshed meanwhile."""
        if client.tokens_changed:
            await self.store.save_tokens(user_id, self.encrypt_tokens(client.current_tokens()))

    async def account_email(self, connection: CalendarConnection) -> str | None:
        """The Google address of a connection, or None (not connected, unreadable)."""
        if connection.tokens is None or self.cipher is None:
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
            retry_at = self.clock.now() + NOTICE_BACKOFF * 2 ** (failed - 1)
            await self.store.undo_revoked_notice(user_id, retry_at)
            return False
        return True


async def take_revoked_notice(calendar: CalendarFeature, user_id: str) -> str | None:
    """For the reply path in the user's DM: the one-time notice that their calendar was
    disconnected by Google, or None. Prepend it to the reply when not None."""
    if not calendar.configured:  # no calendars here: no database round trip either
        return None
    if await calendar.store.take_revoked_notice(user_id):
        return REVOKED_NOTICE
    return None
