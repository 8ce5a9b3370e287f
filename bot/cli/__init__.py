"""The ``alfred`` command line (``alfred = "bot.cli.main:main"``; ``python -m bot.cli``)."""
