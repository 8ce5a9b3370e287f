"""Background jobs: formation, cold sessions, the outbox requeue and admin jobs, on arq.

arq is in maintenance mode upstream (DESIGN.md §7), so it stays behind this package:
the bot calls :class:`jobs.trigger.FormationTrigger` and :mod:`jobs.inprocess`, the
operator runs ``arq jobs.worker.WorkerSettings``; the work itself lives in
:mod:`jobs.duties`, which knows nothing of arq.
"""
