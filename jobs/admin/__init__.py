"""Operator jobs on the queue: consolidate, re-embed, purge or export a user, stats and
the mem0 reconciliation (DESIGN.md §9).

* the work, without arq: :mod:`.consolidate`, :mod:`.reembed`, :mod:`.purge`,
  :mod:`.export`, :mod:`.stats`, :mod:`.mem0` (each a coroutine over an
  :class:`~jobs.admin.common.AdminContext`);
* the arq jobs (registered in ``WorkerSettings``): :mod:`.tasks`;
* progress in Redis: :mod:`.progress`; queueing and waiting (``alfred admin``):
  :mod:`.runner`.
"""
