"""Reminder delivery as arq jobs: one deferred ``deliver_reminder`` per occurrence, and
the every-minute ``reminder_sweep`` that queues anything due whose job was lost.

The message goes out through Telegram: the running bot's (the in-process worker and the
replay preset :data:`SENDER_KEY`) or, in a worker of its own, a Bot API client built
from the bot token. Done/Snooze buttons ride on each delivery as an inline keyboard.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from arq import cron, func
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity
from telegram import User as TelegramUser
from telegram.error import BadRequest, ChatMigrated, Forbidden

from integrations.redis.queue import DELIVER_REMINDER, REMINDER_SWEEP, JobQueue
from jobs.config import JobsConfig
from jobs.tasks import Ctx, runtime
from memory.reminders import Mention, ReminderScheduler, ReminderSender, Undeliverable
from runtime.reminders import QueueScheduler, build_reminders
from runtime.settings import Settings

log = logging.getLogger(__name__)

#: ``ctx`` keys a caller may preset: how to send, and how to schedule the next occurrence.
SENDER_KEY = "reminder_sender"
SCHEDULER_KEY = "reminder_scheduler"
#: The inline buttons under a delivered reminder, and their callback data prefix.
DONE, SNOOZE = "Done", "Snooze 10 min"
CALLBACK_PREFIX = "rem"


def keyboard(reminder_id: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(DONE, callback_data=f"{CALLBACK_PREFIX}:done:{reminder_id}"),
                InlineKeyboardButton(
                    SNOOZE, callback_data=f"{CALLBACK_PREFIX}:snooze:{reminder_id}"
                ),
            ]
        ]
    )


def _entities(mention: Mention | None) -> list[MessageEntity] | None:
    """A ``text_mention`` over the name the text starts with: how Telegram notifies a
    person without a username (a plain name would notify nobody)."""
    if mention is None:
        return None
    person = TelegramUser(id=mention.telegram_user_id, first_name=mention.name, is_bot=False)
    return [MessageEntity(MessageEntity.TEXT_MENTION, offset=0, length=mention.length, user=person)]


class BotSender:
    """:class:`memory.reminders.ReminderSender` through a PTB ``Bot``."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    async def send(
        self,
        chat_id: int,
        text: str,
        *,
        reminder_id: str,
        to_user_id: str | None,
        mention: Mention | None = None,
    ) -> int | None:
        try:
            sent = await self.bot.send_message(
                chat_id=chat_id,
                text=text,
                reply_markup=keyboard(reminder_id),
                entities=_entities(mention),
            )
        except (Forbidden, ChatMigrated) as exc:
            raise Undeliverable(type(exc).__name__) from None
        except BadRequest as exc:
            if "chat not found" in exc.message.lower():
                raise Undeliverable("chat not found") from None
            raise
        return sent.message_id


class TokenSender:
    """A sender of a worker without a bot: a Bot API client per delivery."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def send(
        self,
        chat_id: int,
        text: str,
        *,
        reminder_id: str,
        to_user_id: str | None,
        mention: Mention | None = None,
    ) -> int | None:
        token = self.settings.telegram_bot_token
        if token is None:
            raise RuntimeError("no TELEGRAM_BOT_TOKEN: this worker cannot deliver reminders")
        options: dict[str, Any] = {}
        if self.settings.telegram_api_base_url:
            options["base_url"] = self.settings.telegram_api_base_url
        async with Bot(token.get_secret_value(), **options) as bot:
            return await BotSender(bot).send(
                chat_id, text, reminder_id=reminder_id, to_user_id=to_user_id, mention=mention
            )


def _scheduler(ctx: Ctx) -> ReminderScheduler:
    preset: ReminderScheduler | None = ctx.get(SCHEDULER_KEY)
    return preset if preset is not None else QueueScheduler(JobQueue(ctx["redis"]))


async def deliver_reminder_job(ctx: Ctx, reminder_id: str, occurrence: str) -> dict[str, Any]:
    """Deliver one occurrence (a no-op when another delivery already has it)."""
    services = runtime(ctx).services
    sender: ReminderSender = ctx.get(SENDER_KEY) or TokenSender(services.settings)
    reminders = build_reminders(services, _scheduler(ctx))
    sent = await reminders.deliver(reminder_id, datetime.fromisoformat(occurrence), sender)
    return {"sent": sent}


async def sweep(services: Any, queue: JobQueue) -> int:
    """Queue a delivery for every reminder due now; how many were queued (a job that is
    still waiting keeps its place: the id is the occurrence's)."""
    queued = 0
    for reminder_id, occurrence in await build_reminders(services).due():
        queued += int(await queue.schedule_reminder(reminder_id, occurrence, now=True))
    return queued


async def reminder_sweep_job(ctx: Ctx) -> dict[str, Any]:
    """Cron: the sweep (counts only: arq keeps results in Redis)."""
    return {"queued": await sweep(runtime(ctx).services, JobQueue(ctx["redis"]))}


def reminder_functions(config: JobsConfig | None = None, *, with_sweep: bool = False) -> list[Any]:
    config = config or JobsConfig()
    out = [func(deliver_reminder_job, name=DELIVER_REMINDER, max_tries=5)]
    if with_sweep:
        out.append(
            func(reminder_sweep_job, name=REMINDER_SWEEP, timeout=config.cron_timeout, max_tries=1)
        )
    return out


def reminder_cron_jobs(config: JobsConfig | None = None) -> list[Any]:
    """Every minute at :45 (cold sessions :00, calendar :15, outbox requeue :30)."""
    config = config or JobsConfig()
    return [cron(reminder_sweep_job, name=REMINDER_SWEEP, second=45, timeout=config.cron_timeout)]
