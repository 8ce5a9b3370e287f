"""Messages: text, captions, forwards and edits go to the assistant; anything else gets
a word saying Alfred reads text only.

An edited message is handled (the journal keeps the new text) but never answered: the
answer to the original was sent already. A message that fails because a dependency is
down is spooled for retry, and the person who asked is told so. While the database is
known to be down (:class:`runtime.watch.DependencyWatch`), a message is not even tried:
it is spooled and answered at once, instead of after the driver's server-selection
timeout, and replayed when the database is back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from typing import Any

from telegram import Update
from telegram.ext import ContextTypes

from bot.telegram.delivery import Spool, log_spooled_failure
from bot.telegram.sending import Replier
from bot.telegram.updates import bot_handle, to_incoming
from runtime.watch import DependencyWatch
from services.reply.assistant import MEMORY_DOWN, Assistant
from services.reply.turn import Turn

log = logging.getLogger(__name__)

#: The dependency whose outage stops the reply path (Redis only delays learning).
DATABASE = "database"
#: The answer to a message spooled while the database is known to be down.
MEMORY_RESTARTING = (
    "Sorry — my memory is restarting. I've kept your message and will answer it as soon "
    "as I'm back, in a moment."
)

NON_TEXT_REPLY = (
    "I can only read text (and the captions of photos and files) for now — could you write it down?"
)


class Messages:
    """The message handler of one assistant."""

    def __init__(
        self,
        assistant: Assistant,
        replier: Replier,
        spool: Spool | None,
        watch: DependencyWatch | None = None,
    ) -> None:
        self.assistant = assistant
        self.replier = replier
        self.spool = spool
        self.watch = watch

    async def handle(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        inc = to_incoming(update, context.bot.id, bot_handle(context.bot))
        if inc is None:
            await self.replier.refuse_anonymous(update, context)
            return
        if not inc.text.strip():
            if not inc.is_group or inc.addressed:
                await self.replier.send(
                    context,
                    inc.chat_id,
                    NON_TEXT_REPLY,
                    inc.message_id if inc.is_group else None,
                    inc.topic_id,
                )
            return
        replayed = self.spool is not None and self.spool.replayed(update.update_id)
        if replayed:  # handled again even if its journal entry was written before it failed
            spool = self.spool
            answers = spool.answered_before(update.update_id) if spool is not None else None
            inc = dataclasses.replace(inc, replayed=True, answers=answers)
        # Who asked gets one apology; a replayed message's person had theirs already.
        apologise = not replayed and (inc.addressed or not inc.is_group)
        if self.spool is not None and self.watch is not None and self.watch.is_down(DATABASE):
            log.info("update %s spooled: the database is down", update.update_id)
            await self.spool.add(update, answers=inc.answers)
            if apologise:
                await self.replier.send(context, inc.chat_id, MEMORY_RESTARTING, topic=inc.topic_id)
            return
        call = asyncio.ensure_future(self.assistant.handle(inc, deliver_first=True))
        try:
            if apologise and await self._went_down_first(call):
                # In flight when the database died: the driver waits for it to come back
                # (or for its timeout, and then the message is spooled): say so now.
                apologise = False
                try:
                    await self.replier.send(
                        context, inc.chat_id, MEMORY_RESTARTING, topic=inc.topic_id
                    )
                except Exception:  # the message itself is still being handled
                    log.warning("the apology for update %s was not sent", update.update_id)
            turn = await call
        except asyncio.CancelledError:
            call.cancel()
            raise
        except Exception as exc:
            log_spooled_failure(log, exc, "update %s failed; spooled for retry", update.update_id)
            if self.spool is not None:
                await self.spool.add(update, answers=inc.answers)
            if self.watch is not None:
                self.watch.check_soon()  # is it down? the next messages need not wait
            if apologise:
                # Spooled, it is answered once the database is back: the same words as
                # for a message that arrives while it is known to be down.
                text = MEMORY_RESTARTING if self.spool is not None else MEMORY_DOWN
                await self.replier.send(context, inc.chat_id, text, topic=inc.topic_id)
            return
        if inc.kind == "edited":
            return
        settle = functools.partial(self._settle, update, turn)
        try:
            for reaction in turn.reactions:
                await self.replier.react(context, reaction)
            for out in turn.replies:
                await self.replier.send_out(
                    context,
                    out,
                    out.reply_to_message_id if inc.is_group else None,
                    inc.topic_id if out.chat_id == inc.chat_id else None,
                    before_move=settle,
                )
            for delivery in turn.private:
                await self.replier.send_private(context, delivery, inc.topic_id)
        finally:  # journaled as before when a send fails: the answer was given
            await settle()

    async def _settle(self, update: Update, turn: Turn) -> None:
        """Journal the replies just sent. If that fails (the database went down in
        between), the update is spooled as answered, with those replies: its replay
        journals them and says nothing, even after a restart, and nobody is told "I've
        kept your message" about a message they have their answer to."""
        try:
            await self.assistant.settle(turn)
        except Exception as exc:
            log_spooled_failure(
                log, exc, "update %s answered, its journaling failed; spooled", update.update_id
            )
            if self.spool is not None:
                await self.spool.add(update, answers=turn.sent)
            if self.watch is not None:
                self.watch.check_soon()

    async def _went_down_first(self, call: asyncio.Future[Any]) -> bool:
        """Wait for ``call`` or for the watch to find the database down, whichever comes
        first; True if the database went down while ``call`` was still running."""
        if self.spool is None or self.watch is None:
            return False
        down: asyncio.Future[Any] = asyncio.ensure_future(self.watch.wait_down(DATABASE))
        try:
            await asyncio.wait({call, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            down.cancel()
        return not call.done()
