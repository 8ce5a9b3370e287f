"""The driver's failures that mean "the database is down or slow", for the composition
root to hand to the use cases (which retry them and never import the driver)."""

from __future__ import annotations

from typing import Final

from pymongo.errors import ConnectionFailure, ExecutionTimeout, WTimeoutError

#: AutoReconnect, NetworkTimeout and ServerSelectionTimeoutError are ConnectionFailures.
TRANSIENT_ERRORS: Final = (ConnectionFailure, ExecutionTimeout, WTimeoutError)
