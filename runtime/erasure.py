"""What a forget cleans outside the memory stores: the bot's spool files, Redis's
append-only file and any oplog entries an older version left in the embedded database
(the :class:`memory.reply_ports.ErasureResidue` port)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from redis.asyncio import Redis

from integrations.mongo.connection import MongoHandle, prune_oplog
from integrations.redis.connection import rewrite_append_only_file
from integrations.redis.queue import drop_results_naming
from integrations.spool_files import scrub_spool

log = logging.getLogger(__name__)


class ErasureFiles:
    """Spooled updates under ``spool_dir`` and the Redis that ``redis()`` returns (read at
    each erase: the client changes when the bot reconnects)."""

    def __init__(
        self,
        spool_dir: Path | None,
        redis: Callable[[], Redis | None],
        mongo: MongoHandle | None = None,
    ) -> None:
        self.spool_dir = spool_dir
        self.redis = redis
        self.mongo = mongo

    async def scrub(
        self,
        telegram_user_id: int | None,
        needles: Sequence[str] | None,
        user_id: str | None = None,
    ) -> dict[str, int]:
        counts = {"spooled_updates": 0, "aof_rewrites": 0, "oplog_entries": 0}
        if self.mongo is not None:
            counts["oplog_entries"] = await prune_oplog(self.mongo)
        if self.spool_dir is not None and telegram_user_id is not None:
            counts["spooled_updates"] = await asyncio.to_thread(
                scrub_spool, self.spool_dir, telegram_user_id, needles
            )
        client = self.redis()
        ids = {str(i) for i in (user_id, telegram_user_id) if i is not None}
        if client is not None and ids:
            counts["job_results"] = await drop_results_naming(client, ids)
        if client is not None:
            if await rewrite_append_only_file(client):
                counts["aof_rewrites"] = 1
            else:
                log.warning("Redis did not rewrite its append-only file after an erase")
        return counts
