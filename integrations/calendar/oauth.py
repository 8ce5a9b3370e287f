"""Connecting a Google Calendar: the OAuth web flow and Alfred's redirect endpoint.

1. ``/calendar`` in a DM → :func:`start_connect`: a google-auth-oauthlib ``Flow`` builds
   Google's consent URL with a signed, expiring ``state`` naming the Telegram user and a
   one-time nonce; the PKCE verifier is kept (encrypted) with the nonce.
2. Google sends the browser to ``GOOGLE_REDIRECT_URL`` → the aiohttp handler from
   :func:`make_oauth_routes` → :func:`finish_connect`: the state is checked (signature,
   expiry), the nonce is consumed (a link works once), the code is exchanged for tokens
   (in a thread: requests is synchronous), and the tokens are stored encrypted.

The account's address comes from the ID token Google returns with the tokens. It is
read without checking its signature, which OpenID Connect allows for a token received
directly from the token endpoint over TLS; it only serves to keep the owner's own
address out of their contacts.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

import requests
from aiohttp import web
from google_auth_oauthlib.flow import Flow
from oauthlib.oauth2.rfc6749.errors import OAuth2Error
from pymongo.errors import PyMongoError

from integrations.calendar.core import CalendarSetup, Notify
from integrations.calendar.crypto import STATE_TTL, InvalidState, UnreadableTokens
from integrations.calendar.google_client import SCOPES, TokenBundle, revoke_token
from memory.errors import AlfredError, ConfigurationError, Unavailable
from memory.ids import new_id
from runtime.container import Services

log = logging.getLogger(__name__)

CALENDAR_SCOPE = "https://www.googleapis.com/auth/calendar.events"
DEFAULT_PATH = "/oauth/google"
CONNECTED_NOTICE = (
    "Your Google Calendar is connected. I'll remember useful things from it (who you meet, "
    "upcoming appointments), and that stays in our private chat. Send /calendar to see the "
    "options, or /calendar off to disconnect."
)


class ConnectRefused(AlfredError):
    """The person did not grant what Alfred needs, or Google refused the code."""


def oauth_path(redirect_url: str | None) -> str:
    """The path of Alfred's redirect endpoint, from the public redirect URL."""
    if not redirect_url:
        return DEFAULT_PATH
    path = urlsplit(redirect_url).path
    return path if path and path != "/" else DEFAULT_PATH


def _flow(setup: CalendarSetup, code_verifier: str | None = None) -> Flow:
    redirect = setup.services.settings.google_redirect_url
    config = {
        "web": {
            "client_id": setup.client_id,
            "client_secret": setup.client_secret,
            "auth_uri": setup.endpoints.auth_uri,
            "token_uri": setup.endpoints.token_uri,
            "redirect_uris": [redirect],
        }
    }
    return Flow.from_client_config(
        config,
        scopes=list(SCOPES),
        redirect_uri=redirect,
        code_verifier=code_verifier,
        autogenerate_code_verifier=code_verifier is None,
    )


def _require(setup: CalendarSetup) -> None:
    problem = setup.problem()
    if problem is not None:
        raise ConfigurationError(problem)


async def start_connect(services: Services, user_id: str) -> str:
    """The consent URL for ``user_id``; valid for 10 minutes, once. Raises
    :class:`ConfigurationError` (with words for the person) when connecting is impossible."""
    setup = CalendarSetup.of(services)
    _require(setup)
    assert setup.crypto is not None
    now = services.clock.now()
    nonce = new_id()
    state = setup.crypto.sign_state(user_id, nonce, now)
    flow = _flow(setup)
    url, _ = flow.authorization_url(
        state=state, access_type="offline", prompt="consent", include_granted_scopes="false"
    )
    verifier = setup.crypto.encrypt({"v": flow.code_verifier or ""})
    await setup.store.set_pending(user_id, nonce, verifier, now + STATE_TTL, now)
    return str(url)


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


async def finish_connect(services: Services, state: str, code: str) -> str:
    """Complete a connection from Google's redirect; returns the user id connected.

    Raises :class:`InvalidState` (bad, expired or used link), :class:`ConnectRefused`
    or :class:`Unavailable` (Google's token endpoint is down).
    """
    setup = CalendarSetup.of(services)
    _require(setup)
    assert setup.crypto is not None
    now = services.clock.now()
    claims = setup.crypto.verify_state(state, now)
    sealed = await setup.store.take_pending(claims.user_id, claims.nonce, now)
    if sealed is None:
        raise InvalidState("the link was already used, or a newer one was asked for")
    verifier = str(setup.crypto.decrypt(sealed).get("v") or "") or None
    tokens = await asyncio.to_thread(_exchange, _flow(setup, verifier), code)
    await setup.store.save_connected(claims.user_id, setup.encrypt_tokens(tokens), now)
    log.info("calendar connected for a user")
    return claims.user_id


async def disconnect(services: Services, user_id: str) -> bool:
    """``/calendar off``: delete the tokens (and ask Google to revoke them). True if a
    calendar was connected. Memories already derived stay until the person forgets them."""
    setup = CalendarSetup.of(services)
    connection = await setup.store.delete(user_id)
    if connection is None or connection.tokens is None:
        return False
    try:
        tokens = setup.tokens(connection)
    except AlfredError:
        return True
    token = tokens.refresh_token or tokens.access_token
    if token:
        await revoke_token(token, setup.endpoints)
    return True


def _page(status: int, title: str, text: str) -> web.Response:
    title, text = html.escape(title, quote=False), html.escape(text, quote=False)
    body = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'></head>"
        "<body style='font-family: sans-serif; max-width: 32em; margin: 3em auto'>"
        f"<h1>{title}</h1><p>{text}</p></body></html>"
    )
    return web.Response(
        status=status,
        text=body,
        content_type="text/html",
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


OnConnected = Callable[[str], Awaitable[None]]


def make_oauth_routes(
    services: Services,
    *,
    notify: Notify | None = None,
    on_connected: OnConnected | None = None,
) -> list[web.RouteDef]:
    """The redirect endpoint (GET, at the path of ``GOOGLE_REDIRECT_URL``), to add to
    Alfred's aiohttp application. ``notify`` tells the person in Telegram that it worked;
    ``on_connected`` may start the first sync at once."""

    async def redirect(request: web.Request) -> web.Response:
        query = request.query
        if query.get("error"):
            return _page(
                200,
                "Calendar not connected",
                "You didn't connect your calendar. Send /calendar to me whenever you like.",
            )
        state, code = query.get("state", ""), query.get("code", "")
        if not state or not code:
            return _page(400, "Calendar not connected", "This page needs a link from Alfred.")
        try:
            user_id = await finish_connect(services, state, code)
        except InvalidState as exc:
            return _page(
                400,
                "This link can't be used",
                f"{exc.message[:1].upper()}{exc.message[1:]}. Send /calendar to me again "
                "for a fresh link.",
            )
        except ConnectRefused as exc:
            return _page(400, "Calendar not connected", exc.message)
        except ConfigurationError as exc:
            return _page(503, "Calendar not available", exc.message)
        except Unavailable:
            return _page(
                502, "Google didn't answer", "Please try again in a minute: send /calendar."
            )
        except UnreadableTokens:  # the encryption key changed since the link was made
            return _page(
                400,
                "This link can't be used",
                "Alfred's settings changed since this link was made. Send /calendar to me "
                "again for a fresh link.",
            )
        except (AlfredError, PyMongoError) as exc:  # our database: a page, never a 500
            log.warning("calendar connection not saved: %s", type(exc).__name__)
            return _page(
                503,
                "Calendar not connected",
                "Alfred couldn't save the connection just now. Please send /calendar to me "
                "again in a minute.",
            )
        if notify is not None:
            try:
                await notify(user_id, CONNECTED_NOTICE)
            except Exception as exc:
                log.warning("could not confirm the calendar connection: %s", type(exc).__name__)
        if on_connected is not None:
            try:
                await on_connected(user_id)
            except Exception:
                log.exception("first calendar sync could not start")
        return _page(
            200,
            "Calendar connected",
            "Your Google Calendar is connected to Alfred. You can close this page and go "
            "back to Telegram.",
        )

    return [web.get(oauth_path(services.settings.google_redirect_url), redirect)]


async def start_oauth_server(
    services: Services,
    *,
    host: str,
    port: int,
    notify: Notify | None = None,
    on_connected: OnConnected | None = None,
) -> web.AppRunner:
    """A small web server for the redirect alone, for polling mode (no webhook server
    runs then). The caller must ``await runner.cleanup()``."""
    app = web.Application()
    app.add_routes(make_oauth_routes(services, notify=notify, on_connected=on_connected))

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


async def serve_oauth_redirect(
    services: Services,
    *,
    host: str,
    port: int,
    notify: Notify | None = None,
    on_connected: OnConnected | None = None,
) -> web.AppRunner | None:
    """:func:`start_oauth_server` for the polling bot: if the address is taken, say so
    clearly in the log and return None — the bot keeps answering; only completing a
    calendar connection waits until the redirect can be served."""
    try:
        return await start_oauth_server(
            services, host=host, port=port, notify=notify, on_connected=on_connected
        )
    except OSError as exc:
        log.error(
            "cannot serve Google's calendar redirect on %s:%s (%s): the bot keeps running, "
            "but nobody can finish connecting a calendar until WEBHOOK_PORT is free or "
            "changed",
            host,
            port,
            exc.strerror or type(exc).__name__,
        )
        return None


async def forget_calendar_user(services: Services, user_id: str) -> None:
    """Part of "forget everything about me": the connection (tokens revoked at Google)
    and the event links go. The derived facts are the user's own and are erased by the
    usual cascade."""
    await disconnect(services, user_id)
    await CalendarSetup.of(services).store.delete_user(user_id)
