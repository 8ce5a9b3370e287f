"""The webhook server: Telegram posts updates here; ``/healthz`` answers beside it.

Every update must carry the secret Telegram was given in ``setWebhook`` (header
``X-Telegram-Bot-Api-Secret-Token``); anything else is refused with 403 and never
reaches the bot. The check is a constant-time comparison.
"""

from __future__ import annotations

import hmac
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from telegram import Update
from telegram.ext import Application

from bot.telegram.unreadable import keep_unreadable

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1024 * 1024


def webhook_path(webhook_url: str) -> str:
    """The path Telegram will post to, taken from the public URL (default ``/telegram``)."""
    path = urlsplit(webhook_url).path
    return path if path and path != "/" else "/telegram"


def make_web_app(
    application: Application[Any, Any, Any, Any, Any, Any],
    path: str,
    secret: str,
    unreadable: Path | None = None,
) -> web.Application:
    """The server. A body that is no update is refused (400); an update PTB cannot read
    is accepted and kept in ``unreadable``: refused, Telegram would deliver it again and
    again, holding back every update after it."""

    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            log.warning("webhook call with a missing or wrong secret refused")
            return web.json_response({"ok": False, "error": "forbidden"}, status=403)
        try:
            data = json.loads(await request.read())
            if not isinstance(data, dict):
                raise TypeError("an update is a JSON object")
        except (ValueError, TypeError):
            return web.json_response({"ok": False, "error": "malformed update"}, status=400)
        try:
            update = Update.de_json(data, application.bot)
        except Exception as exc:
            # PTB may have taken the dict apart: keep the update as it came (aiohttp
            # keeps the body), rather than copying every update that parses fine.
            data = json.loads(await request.read())
            if not isinstance(data.get("update_id"), int):
                return web.json_response({"ok": False, "error": "malformed update"}, status=400)
            keep_unreadable(unreadable, data, exc)
            return web.json_response({"ok": True})
        if update is None:
            return web.json_response({"ok": False, "error": "malformed update"}, status=400)
        await application.update_queue.put(update)
        return web.json_response({"ok": True})

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post(path, receive)
    app.router.add_get("/healthz", healthz)
    return app
