"""What the calendar use cases (``services/calendar``) need from the outside world.

The use cases decide *what* happens — who may list or add events, which partition a
derived memory goes to, when a sync is retried, when a person is told their access is
gone — and reach Google, MongoDB and the encryption keys only through these ports.
The adapters live in ``integrations/google`` (the Calendar API, OAuth, Fernet) and
``integrations/mongo/calendar_store.py``; the composition root wires them together.

The records and errors are here too: they cross the boundary in both directions (the
store returns :class:`CalendarConnection`, the Google client raises
:class:`CalendarRevoked`, and the use cases act on both).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from memory.errors import AlfredError, BadInput, Denied, RateLimited
from memory.models import Circle, User

#: Sends a private message to a user (by Alfred's user id); raises if it cannot.
Notify = Callable[[str, str], Awaitable[None]]

#: How long a /calendar link stays usable.
STATE_TTL = timedelta(minutes=10)
#: Google's page size ceiling is 2,500; 250 keeps one page quick to process and store.
PAGE_SIZE = 250

#: ``unconfirmed``: tokens are stored but the person has not yet confirmed the Google
#: account they came from, so nothing is read from that calendar.
Status = Literal["new", "unconfirmed", "connected", "revoked"]


# --- errors ----------------------------------------------------------------------------


class CalendarRevoked(Denied):
    """The person revoked Alfred's access (or the refresh token expired): reconnect."""


class SyncTokenExpired(AlfredError):
    """Google answered 410 Gone: the sync token is no longer valid; do a full sync."""


class CalendarForbidden(Denied):
    """Google refused the operation (not a rate limit): retrying will not help."""


class CalendarBadRequest(BadInput):
    """Google rejected the request as malformed (e.g. an impossible event time)."""


class CalendarConflict(AlfredError):
    """Google answered 409: an event with this id exists already."""


class CalendarRateLimited(RateLimited):
    """Still rate limited after the retries: back off for longer."""


class InvalidState(AlfredError):
    """An OAuth ``state`` that is malformed, forged or expired."""


class UnreadableTokens(AlfredError):
    """Stored tokens that no configured key can decrypt (the key was changed or lost)."""


class ConnectRefused(AlfredError):
    """The person did not grant what Alfred needs, or Google refused the code."""


class ConnectionNotSaved(AlfredError):
    """Alfred's own storage failed while completing a connection (try again later)."""


# --- records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CalendarConnection:
    """A user's calendar connection, as stored (tokens still encrypted)."""

    user_id: str
    status: Status
    tokens: str | None = None
    sync_token: str | None = None
    page_token: str | None = None
    #: Bumped when a full sync starts; links not seen by the end of it are stale.
    generation: int = 0
    full_sync: bool = True
    allow_others_to_create: bool = False
    notified_revoked: bool = False
    #: Failed attempts to send the revocation notice, and when the sweep may try again.
    notice_attempts: int = 0
    notice_retry_at: datetime | None = None
    time_zone: str | None = None
    connected_at: datetime | None = None
    last_sync_at: datetime | None = None
    next_sync_at: datetime | None = None
    failures: int = 0
    last_error: str | None = None

    @property
    def connected(self) -> bool:
        return self.status == "connected" and self.tokens is not None

    @property
    def awaiting_confirmation(self) -> bool:
        return self.status == "unconfirmed" and self.tokens is not None


@dataclass(frozen=True)
class MemoryLink:
    """A context fact derived from an event, valid until ``expires_at``."""

    id: str
    fact_id: str
    owner_user_id: str
    event_id: str
    #: The fact's content hash when linked: a re-worded event no longer matches it.
    content_hash: str
    expires_at: datetime | None
    generation: int


class TokenBundle(BaseModel):
    """What is stored (encrypted) for a connected calendar."""

    access_token: str | None = None
    refresh_token: str | None = None
    #: When the access token expires (aware, UTC).
    expiry: datetime | None = None
    scopes: list[str] = Field(default_factory=list)
    account_email: str | None = None


@dataclass(frozen=True)
class StateClaims:
    """What a verified OAuth state says: who asked, and which pending request it answers."""

    user_id: str
    nonce: str
    expires_at: datetime


@dataclass
class EventsPage:
    """One page of a calendar's events (Google Calendar v3 resources)."""

    items: list[dict[str, Any]]
    next_page_token: str | None = None
    next_sync_token: str | None = None
    #: The calendar's own time zone (for times without an offset and all-day dates).
    time_zone: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a call is retried on rate limits and outages."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 32.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        wait = float(min(self.max_delay, self.base_delay * 2.0**attempt))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


#: The sync is patient; a tool call on the reply path is not.
SYNC_RETRY = RetryPolicy()
TOOL_RETRY = RetryPolicy(attempts=2, base_delay=0.5, max_delay=2.0)


# --- ports -----------------------------------------------------------------------------


class CalendarClient(Protocol):
    """One person's calendar, for one operation at a time (never shared by tasks).

    Errors come as the calendar errors above or :class:`memory.errors.Unavailable`;
    rate limits and outages are retried inside, following the client's RetryPolicy.
    """

    @property
    def tokens_changed(self) -> bool:
        """Whether the access token was refreshed: the caller stores current_tokens()."""
        ...

    def current_tokens(self) -> TokenBundle: ...

    def close(self) -> None: ...

    async def list_events(
        self,
        *,
        sync_token: str | None = None,
        page_token: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> EventsPage:
        """One page of a full (no token) or incremental (sync token) listing."""
        ...

    async def upcoming(self, *, start: datetime, end: datetime, limit: int) -> EventsPage:
        """Single occurrences between ``start`` and ``end``, soonest first."""
        ...

    async def create_event(self, body: dict[str, Any]) -> dict[str, Any]:
        """Insert an event; a retried insert never makes a second one."""
        ...


class CalendarProvider(Protocol):
    """Google as the use cases see it: the OAuth consent flow and per-person clients."""

    def client(self, tokens: TokenBundle, *, retry: RetryPolicy = SYNC_RETRY) -> CalendarClient:
        """A client for the calendar these tokens open (no network until a call)."""
        ...

    def consent_url(self, state: str) -> tuple[str, str]:
        """Google's consent URL carrying ``state``, and the PKCE verifier to keep."""
        ...

    async def exchange_code(self, code: str, verifier: str | None) -> TokenBundle:
        """The tokens for a code Google sent back; :class:`ConnectRefused` when the
        person did not grant what Alfred needs, ``Unavailable`` when Google is down."""
        ...

    async def revoke(self, token: str) -> bool:
        """Ask Google to revoke a token. Best effort: True if Google agreed."""
        ...


class TokenCipher(Protocol):
    """Secrets at rest and in flight: encrypted token bundles, signed OAuth states."""

    def encrypt(self, data: dict[str, Any]) -> str: ...

    def decrypt(self, token: str) -> dict[str, Any]:
        """The mapping back; :class:`UnreadableTokens` if no key can read it."""
        ...

    def sign_state(self, user_id: str, nonce: str, now: datetime) -> str:
        """A state for ``user_id``'s pending request ``nonce``, valid for STATE_TTL."""
        ...

    def verify_state(self, state: str, now: datetime) -> StateClaims:
        """The claims of a genuine, unexpired state; :class:`InvalidState` otherwise."""
        ...


class CalendarDirectory(Protocol):
    """The people the calendar use cases need to know about."""

    async def user(self, user_id: str) -> User | None: ...
    async def users(self, user_ids: list[str]) -> dict[str, User]: ...
    async def members(self, circle_id: str) -> list[User]: ...
    async def circles_of(self, user_id: str) -> list[Circle]: ...


class CalendarStore(Protocol):
    """Connections (one per user, tokens encrypted, sync position) and the links from
    derived context facts to their events. No event text is ever stored here."""

    # connections
    async def get(self, user_id: str) -> CalendarConnection | None: ...
    async def many(self, user_ids: list[str]) -> list[CalendarConnection]: ...
    async def set_pending(
        self, user_id: str, nonce: str, verifier: str, expires_at: datetime, now: datetime
    ) -> None: ...
    async def take_pending(self, user_id: str, nonce: str, now: datetime) -> str | None: ...
    async def save_unconfirmed(self, user_id: str, tokens: str, now: datetime) -> None:
        """Fresh tokens from Google, held until the person confirms the account."""
        ...

    async def confirm(self, user_id: str, now: datetime) -> bool:
        """An unconfirmed connection becomes connected and due for its first sync.
        False when there was none to confirm."""
        ...

    async def save_tokens(self, user_id: str, tokens: str) -> None: ...
    async def set_time_zone(self, user_id: str, zone: str) -> None: ...
    async def delete(self, user_id: str) -> CalendarConnection | None: ...
    async def set_allow(self, user_id: str, allow: bool) -> bool: ...
    async def mark_revoked(self, user_id: str, now: datetime, reason: str) -> bool: ...
    async def take_revoked_notice(self, user_id: str) -> bool: ...
    async def undo_revoked_notice(self, user_id: str, retry_at: datetime | None = None) -> None: ...
    async def revoked_unnotified(self, now: datetime, max_attempts: int) -> list[str]: ...
    async def due(self, now: datetime, limit: int = 100) -> list[str]: ...
    async def lease(self, user_id: str, now: datetime, until: datetime) -> bool: ...
    async def release(self, user_id: str) -> None: ...
    async def start_full_sync(self, user_id: str) -> int: ...
    async def save_progress(
        self,
        user_id: str,
        *,
        page_token: str | None,
        sync_token: str | None,
        full_sync: bool,
        time_zone: str | None,
    ) -> None: ...
    async def finish_run(
        self, user_id: str, now: datetime, next_sync_at: datetime, error: str | None = None
    ) -> None: ...

    # links
    async def link(
        self,
        *,
        fact_id: str,
        owner_user_id: str,
        event_id: str,
        expires_at: datetime | None,
        content_hash: str,
        generation: int,
        now: datetime,
    ) -> None: ...
    async def set_generation(self, link_ids: list[str], generation: int) -> None: ...
    async def links_for_events(
        self, owner_user_id: str, event_ids: list[str]
    ) -> dict[str, list[MemoryLink]]: ...
    async def expired(self, now: datetime, limit: int = 500) -> list[MemoryLink]: ...
    async def stale(self, owner_user_id: str, generation: int) -> list[MemoryLink]: ...
    async def deactivate(self, link_ids: list[str], now: datetime) -> None: ...

    # erasure
    async def delete_user(self, user_id: str) -> None: ...
    async def footprint(self, user_id: str) -> dict[str, int]:
        """How many records of the user each calendar collection holds (for a purge)."""
        ...
