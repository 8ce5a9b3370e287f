"""Operator jobs on the queue: consolidate, re-embed, purge or export a user, stats and
the mem0 reconciliation (DESIGN.md §9).

* the work, without arq: :mod:`services.admin` (each a coroutine over an
  :class:`~services.admin.context.AdminContext`);
* the arq jobs (registered in ``WorkerSettings``): :mod:`.tasks`;
* the command names: :mod:`.names`; queueing and waiting (``alfred admin``):
  :mod:`jobs.admin_client`, beside the worker it may start (so this package, which the
  worker registers, never imports the worker back).
"""
