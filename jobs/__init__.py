"""Background jobs on arq: the entry points only.

arq is in maintenance mode upstream (DESIGN.md §7), so it stays behind this package and
the Redis adapters (:mod:`integrations.redis`): the operator runs
``arq jobs.worker.WorkerSettings``, the bot and replays use :mod:`jobs.inprocess`. The
work itself is in :mod:`services.formation_duties`, :mod:`services.trigger` and
:mod:`services.admin`, which know nothing of arq; :mod:`runtime.jobs` wires them.
"""
