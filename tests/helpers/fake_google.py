"""A local Google (Calendar v3 REST + OAuth token endpoint) for tests, on 127.0.0.1.

The real ``google-api-python-client`` (httplib2, static discovery), ``google-auth``
(token refresh) and ``google-auth-oauthlib`` (code exchange) talk to this server, so
tests check what production sends and receives. It speaks:

* ``GET /calendar/v3/calendars/primary/events`` — full and incremental sync
  (``syncToken``; 410 Gone ``fullSyncRequired`` for an expired token), pagination
  (``pageToken``, ``maxResults``), and the agent's listing (``timeMin``/``timeMax``,
  ``singleEvents``, ``orderBy=startTime``);
* ``POST /calendar/v3/calendars/primary/events`` — insert, with a client-chosen ``id``
  (base32hex ``0-9a-v``, 5-1024 characters: 400 otherwise) and 409 ``duplicate`` when
  that id exists; ``GET …/events/{eventId}`` — one event;
* ``POST /token`` — ``authorization_code`` (with PKCE) and ``refresh_token`` grants,
  ``invalid_grant`` for a revoked refresh token; ``POST /revoke``.

Requests need ``Authorization: Bearer`` with a live access token (401 otherwise, which
makes google-auth refresh and retry). Faults are scripted with :meth:`FakeGoogle.fail`
(e.g. 403 ``rateLimitExceeded`` twice, then normal answers; ``after=True``: the
request is carried out first, then answered with the fault, as when Google stored an
event but the answer was lost), :meth:`FakeGoogle.stall` makes requests hang until
:meth:`FakeGoogle.resume` (a slow Google), and every request is recorded in
:attr:`FakeGoogle.requests`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

EVENTS_PATH = "/calendar/v3/calendars/primary/events"
_EVENT_ID = re.compile(r"^[0-9a-v]{5,1024}$")


@dataclass
class Account:
    """One Google account with its primary calendar."""

    email: str
    time_zone: str = "Europe/Paris"
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: event id → the change number at which it last changed
    changed_at: dict[str, int] = field(default_factory=dict)
    version: int = 0
    #: sync tokens issued before this change number are expired (410)
    valid_from: int = 0


@dataclass
class Fault:
    status: int
    reason: str | None
    times: int
    path: str
    retry_after: str | None = None
    #: The request is carried out, then answered with this fault.
    after: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any = None


def _jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def _error(status: int, reason: str, message: str) -> web.Response:
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"domain": "global", "reason": reason, "message": message}],
        }
    }
    return web.json_response(body, status=status)


class FakeGoogle:
    """The fake server; ``async with FakeGoogle() as google: google.url …``."""

    def __init__(self, client_id: str = "client-id", client_secret: str = "client-secret"):
        self.client_id = client_id
        self.client_secret = client_secret
        self.accounts: dict[str, Account] = {}
        self.access: dict[str, tuple[str, datetime]] = {}
        self.refresh: dict[str, str] = {}
        self.codes: dict[str, tuple[str, str | None]] = {}
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self.down = False
        #: Set while requests hang (cleared: they wait; :meth:`resume` lets them go).
        self._flowing = asyncio.Event()
        self._flowing.set()
        #: Set when a request starts hanging (clear it to wait for the next one).
        self.held = asyncio.Event()
        self.granted_scope = (
            "openid https://www.googleapis.com/auth/userinfo.email "
            "https://www.googleapis.com/auth/calendar.events"
        )
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # --- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> FakeGoogle:
        app = web.Application()
        app.router.add_get(EVENTS_PATH, self._list)
        app.router.add_post(EVENTS_PATH, self._insert)
        app.router.add_get(EVENTS_PATH + "/{event_id}", self._get)
        app.router.add_post("/token", self._token)
        app.router.add_post("/revoke", self._revoke)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.resume()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"{self.url}/calendar/v3/"

    # --- scripting -----------------------------------------------------------------

    def account(self, email: str, time_zone: str = "Europe/Paris") -> Account:
        if email not in self.accounts:
            self.accounts[email] = Account(email=email, time_zone=time_zone)
        return self.accounts[email]

    def issue_code(self, email: str, challenge: str | None = None) -> str:
        """What Google would put in the redirect after ``email`` consented to a consent
        URL carrying PKCE ``challenge`` (checked against the verifier at exchange)."""
        self.account(email)
        code = f"code-{secrets.token_hex(6)}"
        self.codes[code] = (email, challenge)
        return code

    def grant(self, email: str, *, expires_in: float = 3600) -> tuple[str, str]:
        """Tokens for ``email`` directly (access, refresh), as after a consent."""
        self.account(email)
        access, refresh = f"at-{secrets.token_hex(8)}", f"rt-{secrets.token_hex(8)}"
        self.access[access] = (email, datetime.now(UTC) + timedelta(seconds=expires_in))
        self.refresh[refresh] = email
        return access, refresh

    def revoke_account(self, email: str) -> None:
        """The person removed Alfred's access in their Google account."""
        self.refresh = {k: v for k, v in self.refresh.items() if v != email}
        self.access = {k: v for k, v in self.access.items() if v[0] != email}

    def expire_access_tokens(self) -> None:
        self.access = {}

    def expire_sync_tokens(self, email: str) -> None:
        acc = self.account(email)
        acc.valid_from = acc.version + 1

    def fail(
        self,
        status: int,
        reason: str | None = None,
        *,
        times: int = 1,
        path: str = EVENTS_PATH,
        retry_after: str | None = None,
        after: bool = False,
    ) -> None:
        """The next ``times`` requests to ``path`` get ``status`` (then normal answers);
        ``after``: each is carried out first and only its answer is the fault."""
        self.faults.append(Fault(status, reason, times, path, retry_after, after))

    def stall(self) -> None:
        """Calendar requests hang from now on (Google is slow), until :meth:`resume`."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    async def _hold(self) -> None:
        """Hang while stalled; :attr:`held` tells a test a request is hanging now."""
        if not self._flowing.is_set():
            self.held.set()
            await self._flowing.wait()

    def put_event(self, email: str, event: dict[str, Any]) -> dict[str, Any]:
        """Add or change an event (as the person would in Google Calendar)."""
        acc = self.account(email)
        acc.version += 1
        stored = {
            "kind": "calendar#event",
            "status": "confirmed",
            "updated": datetime.now(UTC).isoformat(),
            **event,
        }
        stored.setdefault("id", f"ev{next(self._ids)}")
        acc.events[stored["id"]] = stored
        acc.changed_at[stored["id"]] = acc.version
        return stored

    def cancel_event(self, email: str, event_id: str) -> None:
        acc = self.account(email)
        acc.version += 1
        acc.events[event_id] = {"id": event_id, "status": "cancelled"}
        acc.changed_at[event_id] = acc.version

    def count(self, method: str, path: str = EVENTS_PATH) -> int:
        return sum(1 for r in self.requests if r.method == method and r.path == path)

    # --- handlers ------------------------------------------------------------------

    def _fault(self, path: str, *, after: bool = False) -> web.Response | None:
        if self.down and not after:
            return web.Response(status=503, text="down")
        for fault in self.faults:
            if fault.path == path and fault.times > 0 and fault.after == after:
                fault.times -= 1
                if fault.reason:
                    response = _error(fault.status, fault.reason, fault.reason)
                else:
                    response = web.json_response(
                        {"error": {"code": fault.status, "message": "fault"}},
                        status=fault.status,
                    )
                if fault.retry_after:
                    response.headers["Retry-After"] = fault.retry_after
                return response
        return None

    def _account(self, request: web.Request) -> Account | None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        entry = self.access.get(token)
        if entry is None or entry[1] <= datetime.now(UTC):
            return None
        return self.accounts[entry[0]]

    async def _list(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.requests.append(Recorded("GET", EVENTS_PATH, query))
        await self._hold()
        if (fault := self._fault(EVENTS_PATH)) is not None:
            return fault
        acc = self._account(request)
        if acc is None:
            return _error(401, "authError", "Invalid Credentials")
        size = int(query.get("maxResults", "250"))
        page_token = query.get("pageToken")
        sync_token = query.get("syncToken")
        if page_token:
            since_s, offset_s, snapshot_s = page_token.split(":")[1:]
            since, offset, snapshot = int(since_s), int(offset_s), int(snapshot_s)
        else:
            offset, snapshot = 0, acc.version
            since = -1
            if sync_token:
                since = int(sync_token.split(":")[1])
        if since >= 0 and since < acc.valid_from:
            return _error(410, "fullSyncRequired", "Sync token is no longer valid.")
        if since >= 0:
            items = [e for eid, e in acc.events.items() if since < acc.changed_at[eid] <= snapshot]
        else:
            items = [e for e in acc.events.values() if e.get("status") != "cancelled"]
        if "timeMin" in query or "timeMax" in query:
            low = datetime.fromisoformat(query.get("timeMin", "1970-01-01T00:00:00Z"))
            high = datetime.fromisoformat(query.get("timeMax", "2999-01-01T00:00:00Z"))
            items = [e for e in items if low <= _start(e) < high or _start(e) <= low < _end(e)]
            items.sort(key=_start)
        else:
            items.sort(key=lambda e: acc.changed_at.get(e["id"], 0))
        chunk = items[offset : offset + size]
        body: dict[str, Any] = {
            "kind": "calendar#events",
            "summary": acc.email,
            "timeZone": acc.time_zone,
            "items": chunk,
        }
        if offset + size < len(items):
            body["nextPageToken"] = f"p:{since}:{offset + size}:{snapshot}"
        elif "timeMin" not in query:
            body["nextSyncToken"] = f"s:{snapshot}"
        return web.json_response(body)

    async def _insert(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(Recorded("POST", EVENTS_PATH, dict(request.query), body))
        await self._hold()
        if (fault := self._fault(EVENTS_PATH)) is not None:
            return fault
        acc = self._account(request)
        if acc is None:
            return _error(401, "authError", "Invalid Credentials")
        if not body.get("start") or not body.get("end"):
            return _error(400, "required", "Missing end time.")
        if "id" in body and not _EVENT_ID.match(str(body["id"])):
            return _error(400, "invalid", "Invalid resource id value.")
        if body.get("id") in acc.events:
            return _error(409, "duplicate", "The requested identifier already exists.")
        event = self.put_event(
            acc.email,
            {
                **body,
                "organizer": {"email": acc.email, "self": True},
                "creator": {"email": acc.email, "self": True},
            },
        )
        if (fault := self._fault(EVENTS_PATH, after=True)) is not None:
            return fault  # stored, but the answer is lost
        return web.json_response(event)

    async def _get(self, request: web.Request) -> web.Response:
        event_id = request.match_info["event_id"]
        self.requests.append(Recorded("GET", f"{EVENTS_PATH}/{event_id}", dict(request.query)))
        await self._hold()
        if (fault := self._fault(EVENTS_PATH)) is not None:
            return fault
        acc = self._account(request)
        if acc is None:
            return _error(401, "authError", "Invalid Credentials")
        event = acc.events.get(event_id)
        if event is None:
            return _error(404, "notFound", "Not Found")
        return web.json_response(event)

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.requests.append(Recorded("POST", "/token", {}, {**form, "code_verifier": "…"}))
        if (fault := self._fault("/token")) is not None:
            return fault
        client_id, secret = str(form.get("client_id", "")), str(form.get("client_secret", ""))
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        if client_id != self.client_id or secret != self.client_secret:
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = self.codes.pop(str(form.get("code", "")), None)
            if entry is None:
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "Bad code"}, status=400
                )
            verifier = str(form.get("code_verifier", ""))
            if not verifier or (entry[1] is not None and not pkce_ok(verifier, entry[1])):
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "Missing verifier"},
                    status=400,
                )
            email = entry[0]
            access, refresh = self.grant(email)
            return web.json_response(
                {
                    "access_token": access,
                    "refresh_token": refresh,
                    "expires_in": 3599,
                    "scope": self.granted_scope,
                    "token_type": "Bearer",
                    "id_token": _jwt({"email": email, "email_verified": True}),
                }
            )
        if grant == "refresh_token":
            email = self.refresh.get(str(form.get("refresh_token", "")))
            if email is None:
                return web.json_response(
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    },
                    status=400,
                )
            access = f"at-{secrets.token_hex(8)}"
            self.access[access] = (email, datetime.now(UTC) + timedelta(hours=1))
            return web.json_response(
                {"access_token": access, "expires_in": 3599, "token_type": "Bearer"}
            )
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    async def _revoke(self, request: web.Request) -> web.Response:
        token = request.query.get("token", "")
        self.requests.append(Recorded("POST", "/revoke", {"token": "…"}))
        email = self.refresh.pop(token, None) or self.access.pop(token, ("", None))[0]
        if not email:
            return web.json_response({"error": "invalid_token"}, status=400)
        self.revoke_account(email)
        return web.json_response({})


def _when(value: Any) -> datetime:
    if not isinstance(value, dict):
        return datetime.max.replace(tzinfo=UTC)
    if "dateTime" in value:
        moment = datetime.fromisoformat(value["dateTime"])
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if "date" in value:
        return datetime.fromisoformat(value["date"]).replace(tzinfo=UTC)
    return datetime.max.replace(tzinfo=UTC)


def _start(event: dict[str, Any]) -> datetime:
    return _when(event.get("start"))


def _end(event: dict[str, Any]) -> datetime:
    return _when(event.get("end"))


def pkce_ok(verifier: str, challenge: str) -> bool:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=") == challenge
