"""Knowing, cheaply and at once, that a dependency is down, and noticing when it is back.

Without this, every message that arrives while the database is down waits for the
driver's server-selection timeout before it fails. The watch pings each dependency on
its own (a ``ping`` bounded by ``probe_timeout``, every ``interval`` seconds), so a
handler can ask :meth:`DependencyWatch.down` before it starts: a known-down database
means "spool the message and say so" in well under the 2 s a person waits. A handler
whose call failed asks for a probe at once (:meth:`DependencyWatch.check_soon`), which
is the failure detector: the flag is set by a probe, never by a guess, so a failure the
probe does not confirm (a bug, a bad document) does not take the bot offline.

When a dependency that was down answers again, the callbacks given to
:meth:`DependencyWatch.on_recovery` run (the bot replays its spool there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from runtime.background import BackgroundLoop

log = logging.getLogger(__name__)

Probe = Callable[[], Awaitable[object]]
Recovery = Callable[[str], Awaitable[None]]

#: Seconds between probes. A dead dependency is noticed within this plus
#: ``PROBE_TIMEOUT`` (a ping to a killed server waits for the driver's server selection,
#: so it ends by the timeout): 1.05 s, which leaves a message that was already waiting on
#: the database when it died room to be told so within the 2 s a person waits.
PROBE_INTERVAL = 0.25
#: A probe that takes longer than this counts as down (a healthy local ping takes
#: milliseconds, a loaded machine's a few hundred at most).
PROBE_TIMEOUT = 0.8


class DependencyWatch(BackgroundLoop):
    """Which dependencies are down right now, kept current by a background task."""

    task_name = "alfred-dependency-watch"

    def __init__(
        self,
        probes: dict[str, Probe],
        *,
        interval: float = PROBE_INTERVAL,
        probe_timeout: float = PROBE_TIMEOUT,
    ) -> None:
        super().__init__()
        self._probes = probes
        self._interval = interval
        self._timeout = probe_timeout
        self._down: set[str] = set()
        self._recovery: list[Recovery] = []
        self._wake = asyncio.Event()
        #: Set while the dependency is down; replaced by a fresh one when it is back.
        self._went_down: dict[str, asyncio.Event] = {name: asyncio.Event() for name in probes}
        self.outages = 0  # how many times a dependency was seen going down

    def down(self) -> frozenset[str]:
        """The dependencies the last probe found down."""
        return frozenset(self._down)

    def is_down(self, name: str) -> bool:
        return name in self._down

    async def wait_down(self, name: str) -> None:
        """Return once a probe has found ``name`` down (at once if it is down now): a
        handler waiting on the database races its call against this, so a person whose
        message was in flight when the database died hears so at once."""
        await self._went_down.setdefault(name, asyncio.Event()).wait()

    def on_recovery(self, callback: Recovery) -> None:
        """Run ``callback(name)`` each time ``name`` answers again after being down."""
        self._recovery.append(callback)

    def check_soon(self) -> None:
        """Probe now rather than at the next tick (a call just failed)."""
        self._wake.set()

    async def probe_all(self) -> None:
        """One round of probes; recovery callbacks run for what came back."""
        for name, probe in self._probes.items():
            ok = await self._answers(probe)
            if not ok and name not in self._down:
                self._down.add(name)
                self._went_down.setdefault(name, asyncio.Event()).set()
                self.outages += 1
                log.warning("%s is down: new messages are spooled until it is back", name)
            elif ok and name in self._down:
                self._down.discard(name)
                self._went_down[name] = asyncio.Event()
                log.info("%s is back", name)
                for callback in self._recovery:
                    try:
                        await callback(name)
                    except Exception:
                        log.exception("recovery step after %s came back failed", name)

    async def _answers(self, probe: Probe) -> bool:
        try:
            async with asyncio.timeout(self._timeout):
                await probe()
        except Exception:  # any failure or the timeout: it does not answer
            return False
        return True

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            await self.probe_all()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
