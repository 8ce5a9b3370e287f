"""``python -m bot.cli``: the same as the ``alfred`` console script."""

from bot.cli.main import main

main()
