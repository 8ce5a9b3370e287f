"""Updates python-telegram-bot cannot read: kept on disk, never allowed to stop the bot.

PTB parses a polled batch as a whole, and Telegram redelivers a webhook update that was
refused: either way one unreadable update would hold back every update after it.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

from telegram import Update
from telegram.request import BaseRequest, RequestData

log = logging.getLogger(__name__)


def keep_unreadable(path: Path | None, data: dict[str, Any], exc: Exception) -> None:
    """Log (id and error type only: an update holds message text) and keep on disk an
    update python-telegram-bot cannot read, so it is not lost and can be looked at."""
    log.warning(
        "update %s cannot be read (%s); kept in %s",
        data.get("update_id"),
        type(exc).__name__,
        path or "nowhere (no data folder)",
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(data) + "\n")


class ReadableUpdates(BaseRequest):
    """``getUpdates`` through ``inner``, each update checked before PTB sees the batch.

    PTB parses a batch as a whole: one update it cannot read (a field this PTB version
    does not expect, a broken proxy) fails the batch, and polling asks for the same batch
    again, forever — the bot stops answering anyone. Such an update is replaced by a bare
    ``{"update_id": …}`` (so polling moves past it) and kept by :func:`keep_unreadable`.
    """

    def __init__(self, inner: BaseRequest, unreadable: Path | None = None) -> None:
        self.inner = inner
        self.unreadable = unreadable

    @property
    def read_timeout(self) -> float | None:
        return self.inner.read_timeout

    async def initialize(self) -> None:
        await self.inner.initialize()

    async def shutdown(self) -> None:
        await self.inner.shutdown()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = BaseRequest.DEFAULT_NONE,
        write_timeout: Any = BaseRequest.DEFAULT_NONE,
        connect_timeout: Any = BaseRequest.DEFAULT_NONE,
        pool_timeout: Any = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        code, payload = await self.inner.do_request(
            url, method, request_data, read_timeout, write_timeout, connect_timeout, pool_timeout
        )
        if code != 200 or not url.endswith("/getUpdates"):
            return code, payload
        try:
            body = json.loads(payload)
            updates = body["result"]
        except (ValueError, TypeError, KeyError):
            return code, payload  # PTB reports a broken response itself
        if not isinstance(updates, list):
            return code, payload
        changed = False
        for i, data in enumerate(updates):
            if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
                continue
            try:
                Update.de_json(copy.deepcopy(data), None)
            except Exception as exc:
                keep_unreadable(self.unreadable, data, exc)
                updates[i] = {"update_id": data["update_id"]}
                changed = True
        return code, json.dumps(body).encode() if changed else payload
