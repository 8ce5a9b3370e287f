"""The Google Calendar v3 client, off the event loop, with Google's errors translated.

``google-api-python-client`` is synchronous (httplib2), so every call runs in a worker
thread (:func:`asyncio.to_thread`) and the bot keeps answering while Google is slow.
The service is built from the discovery document shipped inside the library
(``static_discovery=True``): start-up and the first call never fetch anything.

Errors are sorted here, once, into what a caller can act on:

* token revoked or expired for good (``invalid_grant``, 401 after a refresh) →
  :class:`CalendarRevoked`: stop syncing, tell the person once;
* 410 Gone on a sync token → :class:`SyncTokenExpired`: do a full sync;
* 403 ``rateLimitExceeded`` / 429 / 5xx / network → retried here with exponential
  back-off (``Retry-After`` honoured); still failing → :class:`CalendarRateLimited` or
  :class:`memory.errors.Unavailable`, and the sync tries again later;
* other 403 → :class:`CalendarForbidden`; 400 → :class:`CalendarBadRequest`;
* 409 → :class:`CalendarConflict`: an inserted event's client-chosen id exists. On a
  retried insert that means the first attempt was stored (its answer was lost), so
  :meth:`GoogleCalendarClient.create_event` returns that event instead of making a
  second.

Access tokens are refreshed automatically by google-auth when they expire (or on a
401); :attr:`GoogleCalendarClient.tokens_changed` tells the caller to store the new ones.

Google's libraries are imported where they are used, not with this module: every bot
builds the calendar feature, and most never connect a calendar, yet the libraries held
12.6 MB of each replica's memory (measured on top of everything else a bot imports).

The errors and records (:class:`memory.calendar_ports.CalendarRevoked`,
:class:`~memory.calendar_ports.TokenBundle`, …) belong to the domain: the calendar use
cases act on them without knowing Google's libraries.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memory.calendar_ports import (
    PAGE_SIZE,
    SYNC_RETRY,
    CalendarBadRequest,
    CalendarConflict,
    CalendarForbidden,
    CalendarRateLimited,
    CalendarRevoked,
    EventsPage,
    RetryPolicy,
    SyncTokenExpired,
    TokenBundle,
)
from memory.errors import AlfredError, ConfigurationError, Unavailable

if TYPE_CHECKING:  # Google's libraries load when a calendar is used (see the docstring)
    from google.oauth2.credentials import Credentials
    from googleapiclient.errors import HttpError

log = logging.getLogger(__name__)

COMPONENT = "google calendar"
GOOGLE_AUTH_URI = "https://accounts.google.com/o/oauth2/auth"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
GOOGLE_REVOKE_URI = "https://oauth2.googleapis.com/revoke"
#: Read and write events (nothing else in the calendar), and the account's address, so
#: the owner's own address is never stored as one of their contacts.
SCOPES = (
    "openid",
    "https://www.googleapis.com/auth/userinfo.email",
    "https://www.googleapis.com/auth/calendar.events",
)
_RATE_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}
_QUOTA_REASONS = {"quotaExceeded", "dailyLimitExceeded"}


@dataclass(frozen=True)
class GoogleEndpoints:
    """Where Google is: the real endpoints, or a proxy or test server (settings)."""

    auth_uri: str = GOOGLE_AUTH_URI
    token_uri: str = GOOGLE_TOKEN_URI
    revoke_uri: str = GOOGLE_REVOKE_URI
    #: Base URL of the Calendar API (``…/calendar/v3/``); None: the discovery document's.
    calendar_api: str | None = None


def credentials(
    tokens: TokenBundle, client_id: str, client_secret: str, token_uri: str
) -> Credentials:
    """google-auth credentials for a stored bundle."""
    from google.oauth2.credentials import Credentials

    expiry = tokens.expiry.astimezone(UTC).replace(tzinfo=None) if tokens.expiry else None
    make: Any = Credentials  # google-auth's constructor is untyped
    creds: Credentials = make(
        token=tokens.access_token,
        refresh_token=tokens.refresh_token,
        token_uri=token_uri,
        client_id=client_id,
        client_secret=client_secret,
        scopes=list(tokens.scopes) or None,
        expiry=expiry,
    )
    return creds


def with_credentials(tokens: TokenBundle, creds: Credentials) -> TokenBundle:
    """The bundle updated from (possibly refreshed) credentials."""
    expiry = creds.expiry.replace(tzinfo=UTC) if creds.expiry else None
    return tokens.model_copy(
        update={
            "access_token": creds.token,
            "refresh_token": creds.refresh_token or tokens.refresh_token,
            "expiry": expiry,
        }
    )


class _Retryable(Exception):
    def __init__(self, final: AlfredError, retry_after: float | None = None) -> None:
        super().__init__(final.message)
        self.final = final
        self.retry_after = retry_after


def _http_error_details(exc: HttpError) -> tuple[int, str, str]:
    status = int(getattr(exc.resp, "status", 0) or 0)
    reason, message = "", ""
    try:
        body = json.loads(exc.content.decode("utf-8") if exc.content else "{}")
        error = body.get("error", {}) if isinstance(body, dict) else {}
        if isinstance(error, dict):
            message = str(error.get("message", ""))
            errors = error.get("errors") or []
            if errors and isinstance(errors[0], dict):
                reason = str(errors[0].get("reason", ""))
            reason = reason or str(error.get("status", ""))
        elif isinstance(error, str):
            reason = error
    except (ValueError, AttributeError):
        pass
    return status, reason, message or f"HTTP {status}"


def _retry_after(exc: HttpError) -> float | None:
    value = exc.resp.get("retry-after") if hasattr(exc.resp, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def translate(exc: BaseException) -> BaseException:
    """A library exception as one of Alfred's (``_Retryable`` for what may pass)."""
    import httplib2
    from google.auth.exceptions import RefreshError, TransportError
    from googleapiclient.errors import HttpError

    if isinstance(exc, HttpError):
        status, reason, message = _http_error_details(exc)
        if status == 410:
            return SyncTokenExpired("the calendar sync token expired: a full sync is needed")
        if status == 401:
            return CalendarRevoked("Google no longer accepts Alfred's access to this calendar")
        if status == 429 or (status == 403 and reason in _RATE_REASONS):
            return _Retryable(
                CalendarRateLimited(COMPONENT, f"rate limited ({reason or status})"),
                _retry_after(exc),
            )
        if status == 403 and reason in _QUOTA_REASONS:
            return CalendarRateLimited(COMPONENT, f"quota used up ({reason})", retry_after=3600)
        if status == 403:
            return CalendarForbidden(f"Google refused: {message}")
        if status == 400:
            return CalendarBadRequest(f"Google rejected the request: {message}")
        if status == 409:
            return CalendarConflict(f"Google already has this event: {message}")
        if status >= 500 or status in (408, 0):
            return _Retryable(Unavailable(COMPONENT, f"Google answered {status}"))
        return AlfredError(f"Google Calendar answered {status}: {message}")
    if isinstance(exc, RefreshError):
        text = str(exc)
        if "invalid_grant" in text or "necessary fields" in text:
            return CalendarRevoked("the calendar access was revoked or has expired")
        if "invalid_client" in text or "unauthorized_client" in text:
            return ConfigurationError(
                "Google refused Alfred's OAuth client",
                hint="check GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET",
            )
        return _Retryable(Unavailable(COMPONENT, "the token refresh failed"))
    if isinstance(exc, TransportError | httplib2.HttpLib2Error | OSError):
        return _Retryable(Unavailable(COMPONENT, f"cannot reach Google ({type(exc).__name__})"))
    return exc


Sleep = Callable[[float], Awaitable[None]]


@dataclass
class GoogleCalendarClient:
    """One person's Google Calendar (a :class:`memory.calendar_ports.CalendarClient`),
    for one operation at a time (not shared by tasks).

    The httplib2 connection is not thread-safe; each client is used by one coroutine,
    one call after another, each call in a worker thread.
    """

    tokens: TokenBundle
    client_id: str
    client_secret: str
    endpoints: GoogleEndpoints = field(default_factory=GoogleEndpoints)
    retry: RetryPolicy = SYNC_RETRY
    timeout: float = 30.0
    sleep: Sleep = asyncio.sleep
    _creds: Credentials | None = field(default=None, init=False, repr=False)
    _service: Any = field(default=None, init=False, repr=False)
    _initial: TokenBundle | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._initial = self.tokens
        self._creds = credentials(
            self.tokens, self.client_id, self.client_secret, self.endpoints.token_uri
        )

    @property
    def tokens_changed(self) -> bool:
        """Whether the access token was refreshed: the caller stores :meth:`current_tokens`."""
        return self.current_tokens() != self._initial

    def current_tokens(self) -> TokenBundle:
        if self._creds is None:  # set in __post_init__; None only before it ran
            return self.tokens
        return with_credentials(self.tokens, self._creds)

    def _build(self) -> Any:
        if self._service is None:
            import httplib2
            from google_auth_httplib2 import AuthorizedHttp
            from googleapiclient.discovery import build

            http = AuthorizedHttp(self._creds, http=httplib2.Http(timeout=self.timeout))
            options = (
                {"api_endpoint": self.endpoints.calendar_api}
                if self.endpoints.calendar_api
                else None
            )
            self._service = build(
                "calendar",
                "v3",
                http=http,
                static_discovery=True,
                cache_discovery=False,
                client_options=options,
            )
        return self._service

    async def _call(self, make: Callable[[Any], Any]) -> dict[str, Any]:
        """Run ``make(service).execute()`` in a thread, retrying what may pass."""

        def run() -> dict[str, Any]:
            try:
                result = make(self._build()).execute()
            except Exception as exc:
                translated = translate(exc)
                if translated is exc:
                    raise
                raise translated from exc
            return dict(result or {})

        for attempt in range(self.retry.attempts):
            try:
                return await asyncio.to_thread(run)
            except _Retryable as retryable:
                if attempt + 1 >= self.retry.attempts:
                    raise retryable.final from retryable
                wait = self.retry.delay(attempt, retryable.retry_after)
                log.info("google calendar: %s; retrying in %.1fs", retryable.final.message, wait)
                await self.sleep(wait)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the HTTP connections (sockets would otherwise linger until collected)."""
        service, self._service = self._service, None
        if service is not None:
            service.close()

    async def list_events(
        self,
        *,
        sync_token: str | None = None,
        page_token: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> EventsPage:
        """One page of the primary calendar's events, for a full or incremental sync.

        Recurring events come as series (``singleEvents=False``): one item per series
        instead of one per occurrence, so a daily stand-up is not 500 events.
        """
        params: dict[str, Any] = {
            "calendarId": "primary",
            "maxResults": page_size,
            "singleEvents": False,
        }
        if sync_token:
            params["syncToken"] = sync_token
        if page_token:
            params["pageToken"] = page_token
        body = await self._call(lambda s: s.events().list(**params))
        return EventsPage(
            items=[i for i in body.get("items", []) if isinstance(i, dict)],
            next_page_token=body.get("nextPageToken"),
            next_sync_token=body.get("nextSyncToken"),
            time_zone=body.get("timeZone"),
        )

    async def upcoming(self, *, start: datetime, end: datetime, limit: int) -> EventsPage:
        """Occurrences between ``start`` and ``end``, soonest first (for the agent)."""
        params: dict[str, Any] = {
            "calendarId": "primary",
            "timeMin": start.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "timeMax": end.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "singleEvents": True,
            "orderBy": "startTime",
            "maxResults": limit,
        }
        body = await self._call(lambda s: s.events().list(**params))
        return EventsPage(
            items=[i for i in body.get("items", []) if isinstance(i, dict)],
            time_zone=body.get("timeZone"),
        )

    async def create_event(self, body: dict[str, Any]) -> dict[str, Any]:
        """Insert an event in the primary calendar; guests are not emailed.

        The event carries an id chosen here, so a retried insert cannot make a second
        event: if Google stored the first attempt but its answer was lost (time-out,
        5xx), the retry gets 409 for that id, and the stored event is fetched instead.
        """
        body = {**body, "id": body.get("id") or new_event_id()}
        attempts = 0

        def insert(s: Any) -> Any:
            nonlocal attempts
            attempts += 1
            return s.events().insert(calendarId="primary", body=body, sendUpdates="none")

        try:
            return await self._call(insert)
        except CalendarConflict:
            if attempts < 2:  # a 409 on the first try: the id really was taken
                raise
            log.info("google calendar: a retried insert had already been stored")
            return await self._call(
                lambda s: s.events().get(calendarId="primary", eventId=body["id"])
            )


def new_event_id() -> str:
    """A client-chosen event id: Google accepts base32hex (``0-9``, ``a-v``), 5-1024
    characters; 128 random bits in hex (a subset) after a readable prefix."""
    return f"alfred{secrets.token_hex(16)}"


def check_offline() -> None:
    """Build the Calendar service from the discovery document inside the library, without
    any network (``alfred doctor``: the installed client can work)."""
    from googleapiclient.discovery import build

    build("calendar", "v3", static_discovery=True, developerKey="offline-check").close()
