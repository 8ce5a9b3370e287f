"""Structured logs: one JSON object per line, and never a message or a memory at INFO+.

DESIGN.md §9 asks for "structured logs without message text". Logs are shipped to
places with weaker access control than the database (log aggregators, support
tickets, screenshots), and a memory written into a log line would also survive a
"forget" (DESIGN.md §3). So:

**The convention** (for every ``log.info/warning/error/critical`` in Alfred):

* a log record at INFO and above carries ids, counts, durations, type names and
  states only: ``log.info("formed thread %s: %d facts", thread_id, n)``;
* user text, memory content, queries, prompts and model output are logged, if at
  all, at DEBUG, and only as extra fields or wrapped in :func:`sensitive`;
* exceptions at INFO+ are logged with their type and stack, never their message
  (driver and validation errors often echo the input back).

**The guarantee** (:class:`RedactingFilter`, installed on the handler by
:func:`configure_logging`, so it covers third-party loggers too), for records at
INFO and above:

* any extra field whose name is in :data:`SENSITIVE_KEYS` or ends with ``_text`` or
  ``_content`` becomes ``"[redacted]"``, also inside nested dicts;
* any argument wrapped in :func:`sensitive` renders as ``"[redacted]"``;
* the exception message is dropped (type and stack stay).

At DEBUG everything is shown: DEBUG is for a developer's machine, never production.

The JSON lines themselves come from ``python-json-logger`` (:func:`json_formatter`):
``time`` (UTC, milliseconds), ``level``, ``logger``, ``message``, then the extra fields,
and ``exception`` when there is one.
The filter cannot see free text pasted into a format string by hand
(``log.info(f"said {text}")``); the convention forbids that, and review enforces it.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final

from pythonjsonlogger.json import JsonFormatter

from memory.sensitive import Sensitive, sensitive

REDACTED: Final = "[redacted]"

#: Extra-field names that hold user or memory text. A name ending in ``_text`` or
#: ``_content`` counts too (``message_text``, ``fact_content``).
SENSITIVE_KEYS: Final = frozenset(
    {
        "text",
        "content",
        "query",
        "prompt",
        "completion",
        "reply",
        "message",
        "messages",
        "memory",
        "memories",
        "question",
        "answer",
        "body",
        "blob",
    }
)

#: Attributes every LogRecord has; anything else on a record is an ``extra`` field.
_RECORD_ATTRS: Final = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))
) | {"message", "asctime", "taskName"}

#: Loggers raised to WARNING. ``httpx`` logs every request URL at INFO, and the Bot API's
#: URLs contain the bot token; the others are chatty without telling an operator much.
QUIET_LOGGERS: Final = ("httpx", "httpcore", "openai", "pymongo", "apscheduler", "aiohttp.access")

_HANDLER_NAME: Final = "alfred-json"


def is_sensitive_key(key: str) -> bool:
    """Whether an extra field of this name holds content (see :data:`SENSITIVE_KEYS`)."""
    lowered = key.lower()
    return lowered in SENSITIVE_KEYS or lowered.endswith(("_text", "_content"))


def _redact_value(key: str, value: Any) -> Any:
    if is_sensitive_key(key) or isinstance(value, Sensitive):
        return REDACTED
    if isinstance(value, Mapping):
        return {str(k): _redact_value(str(k), v) for k, v in value.items()}
    return value


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra=`` fields of a record (everything that is not a standard attribute)."""
    return {
        k: v for k, v in vars(record).items() if k not in _RECORD_ATTRS and not k.startswith("_")
    }


class RedactingFilter(logging.Filter):
    """Removes content from records at INFO and above (see the module docstring).

    It rewrites the record in place (the same record goes to every handler), so it
    belongs on the handler, where it runs once per record, not on a logger.
    """

    def __init__(self, min_level: int = logging.INFO) -> None:
        super().__init__()
        self.min_level = min_level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.min_level:
            return True
        for key, value in extra_fields(record).items():
            setattr(record, key, _redact_value(key, value))
        if record.args:
            if isinstance(record.args, Mapping):
                record.args = {
                    k: REDACTED if isinstance(v, Sensitive) else v for k, v in record.args.items()
                }
            else:
                record.args = tuple(
                    REDACTED if isinstance(a, Sensitive) else a for a in record.args
                )
        if isinstance(record.msg, Sensitive):
            record.msg = REDACTED
        elif isinstance(record.msg, Mapping):  # the JSON formatter makes its keys fields
            record.msg = {str(k): _redact_value(str(k), v) for k, v in record.msg.items()}
        if record.exc_info and record.exc_info[1] is not None:
            # Keep the type and the stack; the message may echo user input.
            record.alfred_exc = _exception_summary(record.exc_info[1])
            record.exc_info = None
            record.exc_text = None
        return True


def _exception_summary(exc: BaseException) -> dict[str, Any]:
    """Type names of the exception and its causes, and the stack without messages."""
    chain: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 5:
        chain.append(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    frames = traceback.extract_tb(exc.__traceback__)
    return {
        "type": type(exc).__name__,
        "chain": chain,
        "stack": [f"{f.filename}:{f.lineno} in {f.name}" for f in frames[-10:]],
    }


class _AlfredJsonFormatter(JsonFormatter):
    """The library's formatter, with three of Alfred's rules on top: the core fields
    (time, level, logger, message) cannot be overwritten by an extra field or by the keys
    of a dict logged as the message; no ``stack_info`` (source lines are not for log
    aggregators); and an exception that reached it (a DEBUG record, which the filter
    leaves alone) is written as its type and its full text."""

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data["time"] = getattr(record, "asctime", log_data.get("time"))
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data["message"] = getattr(record, "message", "")
        log_data.pop("stack_info", None)
        text = log_data.pop("exc_info", None)
        if text is not None and "exception" not in log_data and record.exc_info:
            log_data["exception"] = {"type": type(record.exc_info[1]).__name__, "text": text}


def json_formatter() -> logging.Formatter:
    """One JSON object per line: time, level, logger, message, then the extra fields
    (the filter's exception summary as ``exception``). Values JSON cannot encode are
    written with ``str()``; text is written as is (no ``\\u`` escapes)."""
    formatter = _AlfredJsonFormatter(
        "{asctime}{levelname}{name}{message}",
        style="{",
        rename_fields={
            "asctime": "time",
            "levelname": "level",
            "name": "logger",
            "alfred_exc": "exception",
        },
        reserved_attrs=sorted(_RECORD_ATTRS),
        json_default=str,
        json_ensure_ascii=False,
    )
    # ISO 8601 in UTC with milliseconds, e.g. 2026-01-05T09:00:00.123+00:00.
    formatter.converter = time.gmtime
    formatter.default_time_format = "%Y-%m-%dT%H:%M:%S"
    formatter.default_msec_format = "%s.%03d+00:00"
    return formatter


def configure_logging(
    level: str | int = "INFO",
    *,
    stream: IO[str] | None = None,
    quiet: bool = True,
    capture: Sequence[str] = (),
) -> logging.Handler:
    """Send every log record to ``stream`` (stderr) as JSON lines, through the filter.

    Idempotent: calling it again replaces Alfred's handler instead of adding a second.
    ``quiet`` raises :data:`QUIET_LOGGERS` to WARNING. ``capture`` names loggers whose
    own handlers are removed so their records go through this one only (``"arq"``: the
    arq CLI installs a plain-text handler of its own before the worker starts). Returns
    the handler (tests attach to it).
    """
    for name in capture:
        captured = logging.getLogger(name)
        for own in list(captured.handlers):
            captured.removeHandler(own)
        captured.propagate = True
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == _HANDLER_NAME:
            root.removeHandler(existing)
            existing.close()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(json_formatter())
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    if quiet:
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
    return handler


__all__ = [
    "QUIET_LOGGERS",
    "REDACTED",
    "SENSITIVE_KEYS",
    "RedactingFilter",
    "Sensitive",
    "configure_logging",
    "extra_fields",
    "is_sensitive_key",
    "json_formatter",
    "sensitive",
]
