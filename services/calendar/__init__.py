"""Google Calendar for Alfred, as use cases: connecting (OAuth), the chat model's tools,
the sync, the memories derived from events, and the /calendar command.

Everything here works on :class:`CalendarFeature` (the ports of
``memory/calendar_ports.py``, wired by the composition root to the adapters in
``integrations/google`` and ``integrations/mongo/calendar_store.py``).
"""

from services.calendar.commands import calendar_command
from services.calendar.connect import (
    CONNECTED_NOTICE,
    complete_connect,
    confirm_connect,
    confirm_question,
    connection_completer,
    disconnect,
    finish_connect,
    forget_calendar_user,
    start_connect,
)
from services.calendar.deliver import (
    DeliveryReport,
    deliver_event,
    event_partition,
    expire_calendar_memories,
)
from services.calendar.feature import (
    REVOKED_NOTICE,
    CalendarFeature,
    take_revoked_notice,
)
from services.calendar.reply import CalendarForReply
from services.calendar.sync import SweepReport, SyncConfig, SyncReport, sync_due, sync_user
from services.calendar.tools import CREATE_EVENT, LIST_EVENTS, CalendarTools

__all__ = [
    "CONNECTED_NOTICE",
    "CREATE_EVENT",
    "LIST_EVENTS",
    "REVOKED_NOTICE",
    "CalendarFeature",
    "CalendarForReply",
    "CalendarTools",
    "DeliveryReport",
    "SweepReport",
    "SyncConfig",
    "SyncReport",
    "calendar_command",
    "complete_connect",
    "confirm_connect",
    "confirm_question",
    "connection_completer",
    "deliver_event",
    "disconnect",
    "event_partition",
    "expire_calendar_memories",
    "finish_connect",
    "forget_calendar_user",
    "start_connect",
    "sync_due",
    "sync_user",
    "take_revoked_notice",
]
