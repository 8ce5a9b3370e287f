"""The Telegram program: the python-telegram-bot application, its handlers (one module
per feature in :mod:`bot.telegram.handlers`), the update conversion, the webhook and
``alfred run``."""
