"""A loop an object runs in the background between its ``start`` and its ``aclose``.

The dependency watch and the spool's retry each keep one such task: started once (a
second ``start`` is a no-op), cancelled and awaited on close, so nothing they started
outlives the bot.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import ClassVar

from memory.tasks import cancel_and_wait


class BackgroundLoop(ABC):
    """Runs :meth:`_loop` as one task from :meth:`start` until :meth:`aclose`."""

    #: The task's name, as ``asyncio`` lists it (and a stuck shutdown's traceback shows).
    task_name: ClassVar[str]

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=self.task_name)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    @abstractmethod
    async def _loop(self) -> None:
        """Runs until cancelled."""
