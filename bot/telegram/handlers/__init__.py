"""The Telegram handlers, one module per feature; :mod:`bot.telegram.app` wires them."""
