"""Operator use cases: consolidate, re-embed, purge or export a user, stats and the mem0
reconciliation (DESIGN.md §9).

Each is a coroutine over an :class:`~services.admin.context.AdminContext` (the stores,
the operator queries, a progress reporter and the optional mem0, calendar and queue
ports), with no queue in sight: the arq jobs (:mod:`jobs.admin.tasks`) add retries and
the ``job_runs`` record, the composition root (:mod:`runtime.jobs`) builds the context.
"""
