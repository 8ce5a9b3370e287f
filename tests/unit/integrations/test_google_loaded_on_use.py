"""Google's client libraries load when a calendar is used, not with the bot.

Every bot and worker builds the calendar feature (it answers "calendars are not set up"
when they are not), and most never connect one; the libraries held 12.6 MB of each
replica's memory. Checked in a fresh interpreter, since this test session has loaded
them for the calendar tests.
"""

from __future__ import annotations

from tests.helpers.fresh_interpreter import probe

GOOGLE = ("googleapiclient", "google.auth", "google_auth_oauthlib", "httplib2", "oauthlib")

PROBE = f"""
import json, sys
import bot.cli.main, bot.telegram.run, jobs.worker, runtime.container
from runtime.calendar import google_endpoints
from integrations.google.calendar_provider import GoogleCalendarProvider
from runtime.settings import CalendarSettings

google = {GOOGLE!r}
loaded = lambda: sorted(m for m in google if m in sys.modules)
provider = GoogleCalendarProvider(
    client_id="id", client_secret="secret", redirect_url="http://127.0.0.1:1/cb",
    endpoints=google_endpoints(CalendarSettings()),
)
before = loaded()
url, verifier = provider.consent_url("state")
print(json.dumps({{"before": before, "after": loaded(), "url": url, "verifier": verifier}}))
"""


def test_the_entry_points_and_the_calendar_feature_load_no_google_library() -> None:
    seen = probe(PROBE)
    assert seen["before"] == []
    # First use loads them, and works: a consent URL with PKCE.
    assert "googleapiclient" not in seen["after"]  # the Calendar API is not used yet
    assert "google_auth_oauthlib" in seen["after"]
    assert seen["url"].startswith("https://accounts.google.com/o/oauth2/auth?")
    assert "code_challenge=" in seen["url"] and seen["verifier"]
