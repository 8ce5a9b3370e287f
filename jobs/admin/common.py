"""What every admin job is given: the services, a progress reporter and the operator
queries. Jobs are plain coroutines over this context (no arq), so tests and scripts can
run them directly and :mod:`jobs.admin.tasks` only adds the queue's concerns."""

from __future__ import annotations

from dataclasses import dataclass

from integrations.mongo.admin import MongoAdminQueries
from jobs.admin.progress import ProgressReporter
from runtime.container import Services


@dataclass
class AdminContext:
    """One run of one admin job."""

    services: Services
    progress: ProgressReporter
    queries: MongoAdminQueries

    @classmethod
    def of(cls, services: Services, progress: ProgressReporter | None = None) -> AdminContext:
        """A context; without a reporter, progress is kept in memory only."""
        return cls(
            services,
            progress or ProgressReporter(None, "in-memory"),
            MongoAdminQueries(services.mongo.db),
        )
