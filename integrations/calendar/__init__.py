"""Google Calendar for Alfred: connecting (OAuth), agent tools, the sync, and the
memories derived from events. The entry points (bot, jobs, replay) use these names."""

from integrations.calendar.commands import calendar_command
from integrations.calendar.core import (
    REVOKED_NOTICE,
    CalendarSetup,
    Notify,
    check_configuration,
    take_revoked_notice,
    telegram_notifier,
)
from integrations.calendar.deliver import (
    DeliveryReport,
    deliver_event,
    event_partition,
    expire_calendar_memories,
)
from integrations.calendar.oauth import (
    disconnect,
    finish_connect,
    forget_calendar_user,
    make_oauth_routes,
    oauth_path,
    serve_oauth_redirect,
    start_connect,
    start_oauth_server,
)
from integrations.calendar.sync import SweepReport, SyncConfig, SyncReport, sync_due, sync_user
from integrations.calendar.tools import CREATE_EVENT, LIST_EVENTS, CalendarTools

__all__ = [
    "CREATE_EVENT",
    "LIST_EVENTS",
    "REVOKED_NOTICE",
    "CalendarSetup",
    "CalendarTools",
    "DeliveryReport",
    "Notify",
    "SweepReport",
    "SyncConfig",
    "SyncReport",
    "calendar_command",
    "check_configuration",
    "deliver_event",
    "disconnect",
    "event_partition",
    "expire_calendar_memories",
    "finish_connect",
    "forget_calendar_user",
    "make_oauth_routes",
    "oauth_path",
    "serve_oauth_redirect",
    "start_connect",
    "start_oauth_server",
    "sync_due",
    "sync_user",
    "take_revoked_notice",
    "telegram_notifier",
]
