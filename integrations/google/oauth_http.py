"""Alfred's OAuth redirect endpoint: where Google sends the browser after consent.

1. ``/calendar`` in a DM gives the person Google's consent URL (the calendar use case
   ``services.calendar.connect.start_connect``), carrying a signed, expiring ``state``.
2. Google sends the browser to ``GOOGLE_REDIRECT_URL`` → the aiohttp handler from
   :func:`make_oauth_routes` → the ``complete`` use case it was handed (check the state,
   exchange the code, store the tokens for the right user, tell them in Telegram).
3. The handler answers the browser with a small page; every failure the use case can
   name (a used or forged link, a refused permission, Google or the database down) gets
   its own page, never a 500.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from memory.calendar_ports import ConnectRefused, InvalidState, UnreadableTokens
from memory.errors import AlfredError, ConfigurationError, Unavailable

log = logging.getLogger(__name__)

DEFAULT_PATH = "/oauth/google"

#: Completes a connection from Google's redirect (``state``, ``code``); returns the user
#: id connected, or raises one of the errors the handler turns into a page.
CompleteConnection = Callable[[str, str], Awaitable[str]]


def oauth_path(redirect_url: str | None) -> str:
    """The path of Alfred's redirect endpoint, from the public redirect URL."""
    if not redirect_url:
        return DEFAULT_PATH
    path = urlsplit(redirect_url).path
    return path if path and path != "/" else DEFAULT_PATH


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


def make_oauth_routes(
    complete: CompleteConnection, *, redirect_url: str | None
) -> list[web.RouteDef]:
    """The redirect endpoint (GET, at the path of ``redirect_url``), to add to Alfred's
    aiohttp application."""

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
            await complete(state, code)
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
        except AlfredError as exc:  # our database (ConnectionNotSaved): a page, never a 500
            log.warning("calendar connection not saved: %s", type(exc).__name__)
            return _page(
                503,
                "Calendar not connected",
                "Alfred couldn't save the connection just now. Please send /calendar to me "
                "again in a minute.",
            )
        return _page(
            200,
            "Almost done",
            "Go back to Telegram: Alfred asks you there to confirm which Google account you "
            "signed in with, and reads nothing from your calendar until you do.",
        )

    return [web.get(oauth_path(redirect_url), redirect)]


async def start_oauth_server(routes: list[web.RouteDef], *, host: str, port: int) -> web.AppRunner:
    """A small web server for the redirect alone (``routes`` from
    :func:`make_oauth_routes`), for polling mode (no webhook server runs then). The
    caller must ``await runner.cleanup()``."""
    app = web.Application()
    app.add_routes(routes)

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
    routes: list[web.RouteDef], *, host: str, port: int
) -> web.AppRunner | None:
    """:func:`start_oauth_server` for the polling bot: if the address is taken, say so
    clearly in the log and return None — the bot keeps answering; only completing a
    calendar connection waits until the redirect can be served."""
    try:
        return await start_oauth_server(routes, host=host, port=port)
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
