"""Versioned database migrations, applied in order by ``alfred migrate``.

Each module ``mNNNN_name.py`` defines ``VERSION``, ``NAME`` and ``async def up(ctx)``
(see :mod:`integrations.mongo.migrator`). Every ``up`` is idempotent.
"""
