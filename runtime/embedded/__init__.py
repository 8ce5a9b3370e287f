"""Embedded MongoDB-wire and Redis servers, for when no MONGODB_URI / REDIS_URL is set.

Alfred starts them itself, under the data folder, shared by every Alfred process that
uses the same folder and stopped shortly after the last one exits. :func:`acquire`
returns a lease with the server's URL; the supervisor (``python -m
runtime.embedded.supervisor``) owns the server process.
"""

from runtime.embedded.lease import EmbeddedLease, acquire, stop_before_removal
from runtime.embedded.state import Kind

__all__ = ["EmbeddedLease", "Kind", "acquire", "stop_before_removal"]
