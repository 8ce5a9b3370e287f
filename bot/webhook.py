"""The webhook server: Telegram posts updates here; ``/healthz`` answers beside it.

Every update must carry the secret Telegram was given in ``setWebhook`` (header
``X-Telegram-Bot-Api-Secret-Token``); anything else is refused with 403 and never
reaches the bot. The check is a constant-time comparison.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from telegram import Update
from telegram.ext import Application

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1024 * 1024


def webhook_path(webhook_url: str) -> str:
    """The path Telegram will post to, taken from the public URL (default ``/telegram``)."""
    path = urlsplit(webhook_url).path
    return path if path and path != "/" else "/telegram"


def make_web_app(
    application: Application[Any, Any, Any, Any, Any, Any], path: str, secret: str
) -> web.Application:
    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            log.warning("webhook call with a missing or wrong secret refused")
            return web.json_response({"ok": False, "error": "forbidden"}, status=403)
        try:
            data = json.loads(await request.read())
            if not isinstance(data, dict):
                raise TypeError("an update is a JSON object")
            update = Update.de_json(data, application.bot)
        except (ValueError, TypeError, KeyError, AttributeError):
            return web.json_response({"ok": False, "error": "malformed update"}, status=400)
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
