"""``alfred run``: the Telegram bot."""

from __future__ import annotations

from bot.cli.common import run as run_coroutine
from bot.cli.common import settings


def run() -> None:
    """Run the Telegram bot (long polling, or a webhook server when WEBHOOK_URL is set)."""
    from bot.telegram.run import run_bot
    from runtime.logs import configure_logging

    loaded = settings()
    configure_logging(loaded.log_level)
    run_coroutine(run_bot(loaded))
