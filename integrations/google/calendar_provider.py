"""Google as the calendar use cases see it: OAuth consent, code exchange, revocation, and
a :class:`GoogleCalendarClient` per person (a :class:`memory.calendar_ports.CalendarProvider`).

The consent URL and the code exchange use google-auth-oauthlib's ``Flow`` with PKCE;
the verifier is handed back to the caller, who keeps it (encrypted) until Google
redirects. The exchange is blocking (requests), so it runs in a worker thread.

The account's address comes from the ID token Google returns with the tokens. It is
read without checking its signature, which OpenID Connect allows for a token received
directly from the token endpoint over TLS; it only serves to keep the owner's own
address out of their contacts.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any

from integrations.google.calendar_client import SCOPES, GoogleCalendarClient, GoogleEndpoints
from memory.calendar_ports import SYNC_RETRY, ConnectRefused, RetryPolicy, TokenBundle
from memory.errors import Unavailable

if TYPE_CHECKING:  # loaded on a connection's first use, as the client's libraries are
    from google_auth_oauthlib.flow import Flow

log = logging.getLogger(__name__)

CALENDAR_SCOPE = "https://www.googleapis.com/auth/calendar.events"


@dataclass(frozen=True)
class GoogleCalendarProvider:
    """One OAuth client of Google's (id, secret, redirect URL) and where Google is."""

    client_id: str
    client_secret: str
    redirect_url: str
    endpoints: GoogleEndpoints = field(default_factory=GoogleEndpoints)
    #: Seconds an HTTP call to the Calendar API may take.
    timeout: float = 30.0
    #: Seconds the best-effort revocation on disconnect may take.
    revoke_timeout: float = 10.0

    def client(
        self, tokens: TokenBundle, *, retry: RetryPolicy = SYNC_RETRY
    ) -> GoogleCalendarClient:
        return GoogleCalendarClient(
            tokens=tokens,
            client_id=self.client_id,
            client_secret=self.client_secret,
            endpoints=self.endpoints,
            retry=retry,
            timeout=self.timeout,
        )

    def _flow(self, code_verifier: str | None = None) -> Flow:
        from google_auth_oauthlib.flow import Flow

        config = {
            "web": {
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "auth_uri": self.endpoints.auth_uri,
                "token_uri": self.endpoints.token_uri,
                "redirect_uris": [self.redirect_url],
            }
        }
        return Flow.from_client_config(
            config,
            scopes=list(SCOPES),
            redirect_uri=self.redirect_url,
            code_verifier=code_verifier,
            autogenerate_code_verifier=code_verifier is None,
        )

    def consent_url(self, state: str) -> tuple[str, str]:
        flow = self._flow()
        url, _ = flow.authorization_url(
            state=state, access_type="offline", prompt="consent", include_granted_scopes="false"
        )
        return str(url), flow.code_verifier or ""

    async def exchange_code(self, code: str, verifier: str | None) -> TokenBundle:
        return await asyncio.to_thread(_exchange, self._flow(verifier), code)

    async def revoke(self, token: str) -> bool:
        import httplib2

        endpoints, wait = self.endpoints, self.revoke_timeout

        def run() -> bool:
            http = httplib2.Http(timeout=wait)
            url = f"{endpoints.revoke_uri}?{urllib.parse.urlencode({'token': token})}"
            response, _ = http.request(
                url, "POST", headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
            return int(response.status) == 200

        try:
            return await asyncio.to_thread(run)
        except (httplib2.HttpLib2Error, OSError) as exc:
            log.info("token revocation failed: %s", type(exc).__name__)
            return False


def _email_from_id_token(id_token: Any) -> str | None:
    if not isinstance(id_token, str) or id_token.count(".") < 2:
        return None
    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, TypeError):
        return None
    email = claims.get("email") if isinstance(claims, dict) else None
    return email.lower() if isinstance(email, str) else None


def _exchange(flow: Flow, code: str) -> TokenBundle:
    """The blocking code exchange (run in a thread)."""
    import requests
    from oauthlib.oauth2.rfc6749.errors import OAuth2Error

    try:
        flow.fetch_token(code=code)
    except Warning as exc:  # oauthlib: "Scope has changed": a permission was unticked
        raise ConnectRefused(
            "Alfred needs permission to see and add events in your calendar; it was not "
            "granted. Send /calendar to try again and leave the calendar box ticked."
        ) from exc
    except OAuth2Error as exc:
        raise ConnectRefused(f"Google refused the sign-in ({exc.error})") from exc
    except requests.RequestException as exc:
        raise Unavailable("google oauth", type(exc).__name__) from exc
    creds = flow.credentials
    granted = creds.granted_scopes or creds.scopes or []
    if isinstance(granted, str):
        granted = granted.split()
    if CALENDAR_SCOPE not in granted:
        raise ConnectRefused("Alfred was not given access to your calendar events.")
    if not creds.refresh_token:
        raise ConnectRefused("Google gave no refresh token; send /calendar to try again.")
    expiry = creds.expiry.replace(tzinfo=UTC) if creds.expiry else None
    return TokenBundle(
        access_token=creds.token,
        refresh_token=creds.refresh_token,
        expiry=expiry,
        scopes=list(granted),
        account_email=_email_from_id_token(creds.id_token),
    )
