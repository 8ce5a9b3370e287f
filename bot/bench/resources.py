"""What a benchmark run costs besides time: database operations and memory.

Sizing a deployment (docs/scaling.md) needs the database load per message and the
memory of a process, and both are cheaper to count here than to infer from a server's
counters: PyMongo's command monitoring sees every command Alfred sends, whichever server
answers (the embedded one, Atlas Local or Atlas).
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bson
from pymongo import monitoring
from redis.asyncio.connection import AbstractConnection

#: Commands that only read; the writes are listed too, and anything else (handshakes,
#: ``ping``, ``endSessions``, ``listIndexes``) is counted as "other".
READS = frozenset({"find", "aggregate", "count", "distinct", "getMore"})
WRITES = frozenset({"insert", "update", "delete", "findAndModify", "bulkWrite"})


class DatabaseOps(monitoring.CommandListener):
    """Counts the commands every PyMongo client in this process sends while ``counting``.

    Register it before the clients are made (:func:`pymongo.monitoring.register` only
    reaches clients created after it), which suits a benchmark process.
    """

    def __init__(self) -> None:
        self.counting = False
        self.commands: Counter[str] = Counter()
        #: Requests sent to Redis (a pipeline is one), counted by :func:`count_redis_sends`.
        self.redis_sends = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.counting:
            self.commands[event.command_name] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Only the start of a command is counted."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Only the start of a command is counted."""

    def per(self, units: int) -> dict[str, Any]:
        """Reads, writes and other commands per unit (a message, a formation)."""
        reads = sum(n for name, n in self.commands.items() if name in READS)
        writes = sum(n for name, n in self.commands.items() if name in WRITES)
        other = sum(self.commands.values()) - reads - writes
        scale = max(units, 1)
        return {
            "reads": round(reads / scale, 2),
            "writes": round(writes / scale, 2),
            "other": round(other / scale, 2),
            "redis": round(self.redis_sends / scale, 2),
            # Every request to MongoDB or Redis waits for its answer: one round trip each.
            "round_trips": round((sum(self.commands.values()) + self.redis_sends) / scale, 2),
            "by_command": {name: round(n / scale, 2) for name, n in sorted(self.commands.items())},
        }


def count_database_ops() -> DatabaseOps:
    """A registered :class:`DatabaseOps`, not counting yet."""
    listener = DatabaseOps()
    monitoring.register(listener)
    return listener


@contextmanager
def count_redis_sends(ops: DatabaseOps) -> Iterator[None]:
    """Count every request this process sends to Redis while ``ops.counting``.

    redis-py has no command listener, so the connection's one send method is wrapped:
    a single command and a whole pipeline (arq enqueues with one) are each one send,
    and one round trip."""
    original = AbstractConnection.send_packed_command

    async def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        if ops.counting:
            ops.redis_sends += 1
        await original(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        AbstractConnection.send_packed_command = original  # type: ignore[method-assign]


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports kilobytes)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def restart_peak() -> bool:
    """Start the kernel's count of peak resident memory (``VmHWM``) again from what is
    resident now, so a bench can tell the peak of serving from that of loading its data
    (Linux 4.0 on; False where the kernel does not allow it). ``ru_maxrss`` is not reset."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def peak_since_restart_mb() -> float | None:
    """``VmHWM`` in MB: the peak since :func:`restart_peak` (None off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


async def mean_document_bytes(collection: Any, sample: int = 1000) -> float:
    """The mean BSON size of up to ``sample`` documents: storage per document before
    the server's compression and indexes."""
    sizes = [len(bson.encode(doc)) async for doc in collection.find({}).limit(sample)]
    return round(sum(sizes) / len(sizes), 1) if sizes else 0.0


async def database_bytes(db: Any) -> dict[str, int]:
    """BSON bytes of every document, per collection: what a run stored, before the
    server's compression and indexes (the same on any server, unlike ``collStats``)."""
    sizes: dict[str, int] = {}
    for name in sorted(await db.list_collection_names()):
        sizes[name] = sum([len(bson.encode(doc)) async for doc in db[name].find({})])
    return sizes
