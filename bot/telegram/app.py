"""The python-telegram-bot application: Alfred's handlers wired in, for polling,
webhook or replay.

The handlers are thin around the :class:`Assistant`: they turn updates into
:class:`Incoming` (:mod:`bot.telegram.updates`), call it, and send what it returns
(:mod:`bot.telegram.sending`). Each feature has its own module in
:mod:`bot.telegram.handlers`; updates are deduplicated and spooled by
:mod:`bot.telegram.delivery`, and unreadable ones kept by :mod:`bot.telegram.unreadable`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from telegram import Update
from telegram.ext import (
    Application,
    ApplicationBuilder,
    BaseRateLimiter,
    CallbackQueryHandler,
    ChatMemberHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)
from telegram.request import BaseRequest, HTTPXRequest

from bot.telegram.delivery import Spool, UpdateDeduplicator
from bot.telegram.handlers.callbacks import LIST_PATTERN, Callbacks
from bot.telegram.handlers.callbacks import PATTERN as CALLBACK_PATTERN
from bot.telegram.handlers.commands import Commands
from bot.telegram.handlers.membership import MembershipHandlers
from bot.telegram.handlers.messages import Messages
from bot.telegram.ordering import ChatOrderedProcessor, ChatRateLimiter
from bot.telegram.sending import Replier
from bot.telegram.unreadable import ReadableUpdates
from runtime.watch import DependencyWatch
from services.reply.assistant import Assistant

log = logging.getLogger(__name__)

#: How often a send refused with 429 "retry after N" is retried after waiting N seconds.
RATE_RETRIES = 3


async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    log.error(
        "unhandled error in a handler: %s", type(context.error).__name__, exc_info=context.error
    )


def build_application(
    token: str,
    assistant: Assistant,
    *,
    base_url: str | None = None,
    request: BaseRequest | None = None,
    rate_limiter: BaseRateLimiter[Any] | None = None,
    spool: Spool | None = None,
    unreadable: Path | None = None,
    concurrency: int = 1,
    watch: DependencyWatch | None = None,
    post_init: Callable[[Application[Any, Any, Any, Any, Any, Any]], Coroutine[Any, Any, None]]
    | None = None,
) -> Application[Any, Any, Any, Any, Any, Any]:
    """Alfred's PTB application, with its handlers, for polling, webhook or replay.

    ``concurrency`` above 1 handles updates of different chats side by side (each chat's
    in order, see :mod:`bot.telegram.ordering`); 1 keeps PTB's one at a time, in arrival
    order. Either way :meth:`Application.process_update` (the replay) handles one update
    to the end before returning. ``watch`` says when the database is known to be down:
    messages are then spooled and answered at once (:mod:`bot.telegram.handlers.messages`)."""
    builder: ApplicationBuilder[Any, Any, Any, Any, Any, Any] = ApplicationBuilder().token(token)
    if base_url:
        builder = builder.base_url(base_url)
    if request is not None:
        builder = builder.request(request).get_updates_request(request)
    else:  # PTB's own default for polling (one connection), screened by ReadableUpdates
        polling = HTTPXRequest(connection_pool_size=1)
        builder = builder.get_updates_request(ReadableUpdates(polling, unreadable))
    # max_retries: PTB's default (0) raises RetryAfter instead of waiting and retrying.
    # A 429 pauses only its own chat (PTB's AIORateLimiter would pause the whole bot).
    limiter = rate_limiter if rate_limiter is not None else ChatRateLimiter(RATE_RETRIES)
    builder = builder.rate_limiter(limiter)
    if concurrency > 1:
        builder = builder.concurrent_updates(ChatOrderedProcessor(concurrency))
    if post_init is not None:
        builder = builder.post_init(post_init)
    application = builder.build()
    replier = Replier(assistant)
    membership = MembershipHandlers(assistant, spool, watch)
    dedup = UpdateDeduplicator()
    if spool is not None:
        spool.on_add.append(dedup.forget)
    application.add_handler(TypeHandler(Update, dedup.gate), group=-1)
    application.add_handler(
        ChatMemberHandler(membership.bot_membership, ChatMemberHandler.MY_CHAT_MEMBER)
    )
    application.add_handler(ChatMemberHandler(membership.members, ChatMemberHandler.CHAT_MEMBER))
    application.add_handler(
        MessageHandler(
            filters.StatusUpdate.NEW_CHAT_MEMBERS | filters.StatusUpdate.LEFT_CHAT_MEMBER,
            membership.members,
        )
    )
    application.add_handler(MessageHandler(filters.StatusUpdate.MIGRATE, membership.migrated))
    application.add_handler(MessageHandler(filters.COMMAND, Commands(assistant, replier).handle))
    application.add_handler(
        CallbackQueryHandler(Callbacks(assistant, replier).handle, pattern=CALLBACK_PATTERN)
    )
    application.add_handler(
        CallbackQueryHandler(Callbacks(assistant, replier).handle, pattern=LIST_PATTERN)
    )
    application.add_handler(
        MessageHandler(
            (filters.UpdateType.MESSAGES | filters.UpdateType.EDITED_MESSAGE)
            & ~filters.StatusUpdate.ALL
            & ~filters.COMMAND,
            Messages(assistant, replier, spool, watch).handle,
        )
    )
    application.add_error_handler(on_error)
    return application
