"""Membership: joins, leaves and group upgrades keep the circles right.

A member who leaves loses the circle's memories in their DM at once (the viewer is
computed from membership on every read), and a group that removes the bot is archived.
A group upgraded to a supergroup takes its circle along to the new chat id.

A change that arrives while the database is known to be down, or fails, is spooled like
a message (:mod:`bot.telegram.delivery`) and replayed when the database is back: a
member who left while it was down must still lose the circle's memories.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from telegram import Chat, Update
from telegram.constants import ChatMemberStatus
from telegram.ext import ContextTypes

from bot.telegram.delivery import Spool, log_spooled_failure
from bot.telegram.handlers.messages import DATABASE
from bot.telegram.updates import chat_title, sender_of
from runtime.watch import DependencyWatch
from services.reply.assistant import Assistant

log = logging.getLogger(__name__)


class MembershipHandlers:
    """The membership handlers of one assistant."""

    def __init__(
        self, assistant: Assistant, spool: Spool | None, watch: DependencyWatch | None = None
    ) -> None:
        self.assistant = assistant
        self.spool = spool
        self.watch = watch

    async def _kept(
        self, update: Update, change: Callable[[], Awaitable[object]], what: str
    ) -> bool:
        """Apply ``change``; spool ``update`` instead while the database is known to be
        down, or when it fails (it is replayed once the database is back). True when it
        was applied now."""
        if self.spool is not None:
            self.spool.replayed(update.update_id)  # a replay is applied like the original
            if self.watch is not None and self.watch.is_down(DATABASE):
                log.info("update %s (%s) spooled: the database is down", update.update_id, what)
                await self.spool.add(update)
                return False
        try:
            await change()
        except Exception as exc:
            log_spooled_failure(
                log, exc, "update %s (%s) failed; spooled for retry", update.update_id, what
            )
            if self.spool is not None:
                await self.spool.add(update)
            if self.watch is not None:
                self.watch.check_soon()
            return False
        return True

    async def migrated(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A group upgraded to a supergroup: the circle follows the new chat id. Telegram
        sends this twice (in the old group, naming the new id, and in the supergroup,
        naming the old one); the move is idempotent. A failure is spooled and retried."""
        message, chat = update.effective_message, update.effective_chat
        if message is None or chat is None:
            return
        if message.migrate_to_chat_id:
            old, new = chat.id, message.migrate_to_chat_id
        elif message.migrate_from_chat_id:
            old, new = message.migrate_from_chat_id, chat.id
        else:
            return
        membership = self.assistant.membership
        await self._kept(
            update,
            lambda: membership.group_upgraded(old, new, chat_title(chat)),
            "a group upgrade",
        )

    async def members(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Join/leave service messages and chat_member updates keep the circle right."""
        chat = update.effective_chat
        if chat is None or chat.type not in (Chat.GROUP, Chat.SUPERGROUP):
            return
        message = update.effective_message
        joined = list(message.new_chat_members) if message and message.new_chat_members else []
        left = [message.left_chat_member] if message and message.left_chat_member else []
        if update.chat_member is not None:
            member = update.chat_member.new_chat_member
            if member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
                left.append(member.user)
            elif member.status in (
                ChatMemberStatus.MEMBER,
                ChatMemberStatus.ADMINISTRATOR,
                ChatMemberStatus.OWNER,
                ChatMemberStatus.RESTRICTED,
            ):
                joined.append(member.user)
        membership = self.assistant.membership
        await self._kept(
            update,
            lambda: membership.members_changed(
                chat.id,
                chat_title(chat),
                [sender_of(user) for user in joined],
                [sender_of(user) for user in left],
                bot_id=context.bot.id,
            ),
            "members joined or left",
        )

    async def bot_membership(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The bot added to a group (a new circle) or removed (the circle is archived)."""
        change = update.my_chat_member
        if change is None or change.chat.type not in (Chat.GROUP, Chat.SUPERGROUP):
            return
        membership = self.assistant.membership
        title = chat_title(change.chat)
        status = change.new_chat_member.status
        chat_id = change.chat.id
        if status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
            await self._kept(update, lambda: membership.bot_removed(chat_id, title), "bot removed")
            return
        by = sender_of(change.from_user) if change.from_user else None
        if not await self._kept(
            update, lambda: membership.bot_added(chat_id, title, by), "bot added"
        ):
            return  # greeted when the replay applies it
        if change.old_chat_member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
            await context.bot.send_message(
                change.chat.id,
                "Hello! I'm Alfred. I'll remember what you share here for the whole group, and "
                "what each of you tells me in a private chat stays private. Mention me "
                "(@" + (context.bot.username or "alfred") + ") or reply to me to talk.",
            )
