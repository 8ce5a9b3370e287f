"""Google Calendar end to end: the real Google client libraries against a local Google.

The OAuth code exchange (google-auth-oauthlib), token refresh (google-auth) and the
Calendar v3 client (google-api-python-client, static discovery, httplib2) all talk to
:class:`tests.helpers.fake_google.FakeGoogle` on 127.0.0.1; storage is the real embedded
MongoDB. The clock is simulated; Google's own token expiry is real time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography.fernet import Fernet
from pydantic import SecretStr

from bot.bench.fake_openai import FakeOpenAI, RecordedRequest, completion, tool_call
from bot.replay import ScriptError, parse_script
from integrations.google.oauth_http import serve_oauth_redirect
from integrations.mongo.calendar_store import CONNECTIONS
from integrations.mongo.time_zones import MongoTimeZones
from integrations.redis.connection import RedisHandle
from memory.calendar_ports import InvalidState, RetryPolicy, TokenBundle
from memory.clock import ManualClock
from memory.errors import Denied
from memory.llm import ToolCall
from memory.models import Category, Fact, Partition, Thread, ThreadKind, Viewer
from memory.privacy import is_visible
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.calendar import build_calendar, oauth_routes
from runtime.container import build_assistant, build_services
from runtime.settings import Settings
from services.calendar import (
    CONNECTED_NOTICE,
    CREATE_EVENT,
    LIST_EVENTS,
    REVOKED_NOTICE,
    CalendarFeature,
    CalendarTools,
    SyncConfig,
    calendar_command,
    confirm_question,
    deliver_event,
    expire_calendar_memories,
    finish_connect,
    start_connect,
    sync_due,
    sync_user,
    take_revoked_notice,
)
from services.calendar.commands import IN_GROUP
from services.calendar.feature import NO_KEY, NOT_CONFIGURED, NOTICE_ATTEMPTS
from services.calendar.tools import GOOGLE_DOWN, LIST_ONLY_IN_DM
from services.messages import Incoming, Sender
from services.reply.assistant import Assistant
from tests.helpers.fake_google import EVENTS_PATH, FakeGoogle
from tests.helpers.fakes import HashEmbedder
from tests.helpers.replay import dumps, probe, probes, replay_lines, say

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE, BOB, CAROL = "1001", "1002", "1003"
FAM = "-100"
ALICE_MAIL, BOB_MAIL = "alice@example.com", "bob@example.com"
FAST = SyncConfig(retry=RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05))


def when(day: int, hour: int, minutes: int = 60, zone: str = "+01:00") -> dict[str, Any]:
    start = f"2026-03-{day:02d}T{hour:02d}:00:00{zone}"
    end_dt = datetime.fromisoformat(start) + timedelta(minutes=minutes)
    return {"start": {"dateTime": start}, "end": {"dateTime": end_dt.isoformat()}}


@dataclass
class World:
    s: Services
    clock: ManualClock
    google: FakeGoogle
    sent: list[tuple[str, str]] = field(default_factory=list)

    @property
    def cal(self) -> CalendarFeature:
        return self.s.calendar

    async def notify(self, user_id: str, text: str) -> None:
        self.sent.append((user_id, text))

    def thread(self, kind: str, who: str) -> Thread:
        if kind == "group":
            return Thread(id=FAM, kind=ThreadKind.GROUP, circle_id=FAM)
        return Thread(id=who, kind=ThreadKind.DM, user_id=who)

    async def viewer(self, user: str, where: str = "dm") -> Viewer:
        return await self.s.directory.viewer(user, self.thread(where, user))

    async def connect(self, user_id: str, email: str) -> None:
        """The whole consent flow: /calendar link → Google → redirect → tokens → the
        person confirms the account."""
        await self.sign_in(user_id, email)
        confirmed = await calendar_command(self.cal, await self.viewer(user_id), "confirm")
        assert confirmed == CONNECTED_NOTICE

    async def sign_in(self, user_id: str, email: str) -> None:
        """The consent flow up to the redirect: tokens stored, not yet confirmed."""
        url = await start_connect(self.cal, user_id)
        query = parse_qs(urlsplit(url).query)
        code = self.google.issue_code(email, challenge=query["code_challenge"][0])
        assert await finish_connect(self.cal, query["state"][0], code) == user_id

    async def tokens(self, user_id: str) -> TokenBundle:
        setup = self.cal
        connection = await setup.store.get(user_id)
        assert connection is not None
        return setup.tokens(connection)

    async def facts(self, partition: Partition | None = None) -> list[Fact]:
        found = [f for f in await self.s.facts.all_for_audit() if f.provenance.source == "calendar"]
        return [f for f in found if partition is None or f.partition == partition]

    async def search(self, viewer: Viewer, query: str) -> list[str]:
        result = await self.s.retriever.search(viewer, query, limit=50)
        return [f.fact.content for f in result.facts if is_visible(f.fact.partition, viewer)]


def calendar_with(s: Services, **changes: Any) -> CalendarFeature:
    """The calendar of ``s`` as other settings would build it."""
    return build_calendar(
        s.settings.model_copy(update=changes),
        db=s.mongo.db,
        clock=s.clock,
        directory=s.directory,
        writer=s.writer,
        facts=s.facts,
        mirror=s.mirror,
    )


def calendar_settings(base: Settings, google: FakeGoogle, **extra: Any) -> Settings:
    return base.model_copy(
        update={
            "mongodb_database": f"cal_{uuid.uuid4().hex[:10]}",
            "google_client_id": google.client_id,
            "google_client_secret": SecretStr(google.client_secret),
            "google_redirect_url": "https://alfred.example.com/oauth/google",
            "calendar_encryption_key": SecretStr(Fernet.generate_key().decode()),
            "google_oauth_base_url": google.url,
            "google_calendar_api_url": google.api_url,
            **extra,
        }
    )


@pytest.fixture
async def world(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with open_world(settings, monkeypatch) as made:
        yield made


@asynccontextmanager
async def open_world(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, **extra: Any
) -> AsyncIterator[World]:
    """Alice and Bob in circle Fam, Carol alone; ``extra`` settings (e.g. the chat model)."""
    # The local token endpoint is plain HTTP on loopback; oauthlib insists on HTTPS.
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    async with FakeGoogle() as google:
        clock = ManualClock(NOW)
        s = await build_services(
            calendar_settings(settings, google, **extra), clock=clock, embedder=HashEmbedder()
        )
        try:
            await migrate(MigrationContext(s.mongo.db, False, 64, log=lambda _: None))
            d = s.directory
            circle = await d.upsert_circle(int(FAM), "Fam", NOW)
            for tid, name in ((1001, "Alice"), (1002, "Bob"), (1003, "Carol")):
                await d.upsert_user(tid, name, name.lower(), NOW)
                await d.dm_thread(str(tid), tid, NOW)
            await d.add_member(circle.id, ALICE)
            await d.add_member(circle.id, BOB)
            yield World(s, clock, google)
        finally:
            await s.aclose()


# --- connecting -----------------------------------------------------------------------


async def test_connect_through_the_redirect_endpoint(world: World) -> None:
    reply = await calendar_command(world.cal, await world.viewer(ALICE), "")
    url = next(line for line in reply.splitlines() if line.startswith("http"))
    query = parse_qs(urlsplit(url).query)
    assert urlsplit(url).path == "/auth" and query["access_type"] == ["offline"]
    assert "https://www.googleapis.com/auth/calendar.events" in query["scope"][0]
    code = world.google.issue_code(ALICE_MAIL, challenge=query["code_challenge"][0])
    app = web.Application()
    app.add_routes(oauth_routes(world.cal, notify=world.notify))
    async with TestClient(TestServer(app)) as http:
        ok = await http.get("/oauth/google", params={"state": query["state"][0], "code": code})
        assert ok.status == 200, await ok.text()
        assert ok.headers["Cache-Control"] == "no-store"
        # the link works once
        again = await http.get("/oauth/google", params={"state": query["state"][0], "code": code})
        assert again.status == 400
        forged = query["state"][0][:-3] + "abc"
        bad = await http.get("/oauth/google", params={"state": forged, "code": code})
        assert bad.status == 400
        denied = await http.get("/oauth/google", params={"error": "access_denied"})
        assert denied.status == 200 and "didn't connect" in await denied.text()
    # Alice is asked, in her DM, to confirm the account Google sent back
    assert world.sent == [(ALICE, confirm_question(ALICE_MAIL))]
    doc = await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE})
    assert doc is not None and doc["status"] == "unconfirmed"
    confirmed = await calendar_command(world.cal, await world.viewer(ALICE), "confirm")
    assert confirmed == CONNECTED_NOTICE
    doc = await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE})
    assert doc is not None and doc["status"] == "connected"
    tokens = await world.tokens(ALICE)
    assert tokens.refresh_token and tokens.account_email == ALICE_MAIL
    # encrypted at rest: no token appears in the stored document
    assert tokens.refresh_token not in str(doc) and ALICE_MAIL not in str(doc)
    # PKCE: the verifier Alfred sent matches the challenge in its consent URL
    assert world.google.codes == {}
    status = await calendar_command(world.cal, await world.viewer(ALICE), "")
    assert "is connected" in status and ALICE_MAIL in status


async def test_another_persons_account_is_named_and_nothing_read_before_confirming(
    world: World,
) -> None:
    """Alice's link completed with Carol's Google account: Alice is asked about Carol's
    address; until she confirms, no sync, no tools and no events are read; ``off`` drops it."""
    await world.sign_in(ALICE, "carol@example.com")
    dinner = {"id": "e1", "summary": "Dinner with Dan", **when(3, 19)}
    world.google.put_event("carol@example.com", dinner)
    alice = await world.viewer(ALICE)
    asked = await calendar_command(world.cal, alice, "")
    assert asked == confirm_question("carol@example.com")
    assert "/calendar confirm" in asked and "/calendar off" in asked
    world.clock.advance(timedelta(hours=1))
    assert (await sync_due(world.cal, config=FAST)).users == []
    assert (await CalendarTools.for_viewer(world.cal, alice)).specs == []
    assert world.google.count("GET") == 0 and await world.facts() == []
    # not the account she meant: disconnecting drops the tokens, still nothing read
    assert (await calendar_command(world.cal, alice, "off")).startswith("Done")
    assert await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE}) is None
    assert "no calendar waiting" in await calendar_command(world.cal, alice, "confirm")
    assert world.google.count("GET") == 0
    # someone else's "confirm" never connects Alice's pending calendar
    await world.sign_in(ALICE, "carol@example.com")
    bob = await world.viewer(BOB)
    assert "no calendar waiting" in await calendar_command(world.cal, bob, "confirm")
    doc = await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE})
    assert doc is not None and doc["status"] == "unconfirmed"


async def test_expired_link_and_refusals(world: World) -> None:
    url = await start_connect(world.cal, ALICE)
    query = parse_qs(urlsplit(url).query)
    world.clock.advance(timedelta(minutes=11))
    code = world.google.issue_code(ALICE_MAIL, challenge=query["code_challenge"][0])
    with pytest.raises(InvalidState, match="expired"):
        await finish_connect(world.cal, query["state"][0], code)
    # groups are told to use a DM; nothing is started there
    assert await calendar_command(world.cal, await world.viewer(ALICE, "group"), "") == IN_GROUP
    # no key: connecting is refused, with the reason
    no_key = calendar_with(world.s, calendar_encryption_key=None)
    assert await calendar_command(no_key, await world.viewer(ALICE), "") == NO_KEY
    off = calendar_with(world.s, google_client_id=None)
    assert await calendar_command(off, await world.viewer(ALICE), "") == NOT_CONFIGURED
    assert (await CalendarTools.for_viewer(off, await world.viewer(ALICE))).specs == []


async def test_disconnect_deletes_tokens_and_revokes(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    reply = await calendar_command(world.cal, await world.viewer(ALICE), "off")
    assert reply.startswith("Done")
    assert await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE}) is None
    assert world.google.count("POST", "/revoke") == 1 and world.google.refresh == {}
    assert "isn't connected" in await calendar_command(world.cal, await world.viewer(ALICE), "off")
    assert (await sync_due(world.cal, config=FAST)).users == []


# --- the sync -------------------------------------------------------------------------


async def test_sync_remembers_in_the_owners_dm_only(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    await world.connect(BOB, BOB_MAIL)
    g = world.google
    g.put_event(
        ALICE_MAIL,
        {
            "id": "smith",
            "summary": "Meeting with Dr. Smith",
            **when(10, 15),
            "attendees": [
                {"email": ALICE_MAIL, "displayName": "Alice", "self": True},
                {"email": "Dr.Smith@Example.com", "displayName": "Dr. Smith"},
                {"email": BOB_MAIL, "displayName": "Robert B."},  # the partner: never
                {"email": "room-1@resource.calendar.google.com", "displayName": "Room 1"},
            ],
        },
    )
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and report.full_sync and report.events == 1
    facts = await world.facts()
    assert {(f.category, f.content) for f in facts} == {
        (Category.RELATIONSHIP, "Alice has a contact: Dr. Smith (dr.smith@example.com)"),
        (
            Category.CONTEXT,
            "Alice has a meeting with Dr. Smith on Tuesday 10 March 2026 at 15:00 Europe/Paris",
        ),
    }
    for f in facts:
        assert f.partition == Partition.dm(ALICE)
        assert f.provenance.calendar_event_id == "smith" and f.provenance.source == "calendar"
        assert f.subject_user_id == ALICE
    query = "who is Dr. Smith, meeting contact"
    assert len(await world.search(await world.viewer(ALICE), query)) == 2
    for who, where in ((BOB, "group"), (BOB, "dm"), (ALICE, "group"), (CAROL, "dm")):
        viewer = await world.viewer(who, where)
        assert not any(is_visible(f.partition, viewer) for f in facts)
        assert await world.search(viewer, query) == [], (who, where)


async def test_incremental_sync_follows_moves_and_cancellations(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    g = world.google
    g.put_event(ALICE_MAIL, {"id": "dent", "summary": "Dentist appointment", **when(10, 9)})
    g.put_event(ALICE_MAIL, {"id": "call", "summary": "Call with Mum", **when(11, 18)})
    await sync_user(world.cal, ALICE, config=FAST)
    assert len(await world.facts()) == 2
    # moved to another day, and the call cancelled
    g.put_event(ALICE_MAIL, {"id": "dent", "summary": "Dentist appointment", **when(12, 9)})
    g.cancel_event(ALICE_MAIL, "call")
    world.clock.advance(timedelta(minutes=20))
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and not report.full_sync and report.events == 2
    last = g.requests[-1]
    assert last.query.get("syncToken") and report.invalidated == 2
    current = [f.content for f in await world.facts() if f.current]
    assert current == [
        "Alice has a dentist appointment on Thursday 12 March 2026 at 09:00 Europe/Paris"
    ]
    # nothing changed: nothing stored, nothing invalidated
    world.clock.advance(timedelta(minutes=20))
    quiet = await sync_user(world.cal, ALICE, config=FAST)
    assert (quiet.events, quiet.stored, quiet.invalidated) == (0, 0, 0)


async def test_gone_sync_token_means_a_full_resync(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    g = world.google
    g.put_event(ALICE_MAIL, {"id": "a", "summary": "Lunch with Sam", **when(10, 12)})
    g.put_event(ALICE_MAIL, {"id": "b", "summary": "Call with Ana", **when(10, 16)})
    await sync_user(world.cal, ALICE, config=FAST)
    # while the token was stale, "b" vanished without a trace (no cancelled entry)
    g.expire_sync_tokens(ALICE_MAIL)
    del g.accounts[ALICE_MAIL].events["b"]
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and report.resynced and report.invalidated == 1
    statuses = [r for r in g.requests if r.method == "GET" and r.path == EVENTS_PATH and r.query][
        -2:
    ]
    assert "syncToken" in statuses[0].query and "syncToken" not in statuses[1].query
    assert [f.content for f in await world.facts() if f.current] == [
        "Alice has lunch with Sam on Tuesday 10 March 2026 at 12:00 Europe/Paris"
    ]


async def test_rate_limits_are_retried_with_backoff(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    g = world.google
    g.put_event(ALICE_MAIL, {"id": "x", "summary": "Meeting with Kim", **when(10, 10)})
    g.fail(403, "rateLimitExceeded")
    g.fail(429, times=1, retry_after="0")
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and g.count("GET") == 3
    # still limited after every retry: this user waits, nothing raises
    g.fail(403, "userRateLimitExceeded", times=10)
    world.clock.advance(timedelta(hours=1))
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "retry_later" and "rate limited" in (report.error or "")
    connection = await world.cal.store.get(ALICE)
    assert connection is not None and connection.failures == 1
    assert connection.next_sync_at == world.clock.now() + timedelta(minutes=5)


async def test_google_down_retries_later(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    world.google.put_event(ALICE_MAIL, {"id": "x", "summary": "Call with Lee", **when(10, 10)})
    world.google.down = True
    first = await sync_due(world.cal, config=FAST, notify=world.notify)
    assert [u.status for u in first.users] == ["retry_later"]
    # not due again before the back-off
    world.clock.advance(timedelta(minutes=1))
    assert (await sync_due(world.cal, config=FAST)).users == []
    world.google.down = False
    world.clock.advance(timedelta(minutes=5))
    again = await sync_due(world.cal, config=FAST)
    assert [u.status for u in again.users] == ["synced"] and again.users[0].stored == 1
    assert world.sent == []


async def test_refresh_is_stored_and_revocation_told_once(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    setup = world.cal
    before = await world.tokens(ALICE)
    world.google.expire_access_tokens()  # Google forgets the access token: 401 → refresh
    assert (await sync_user(world.cal, ALICE, config=FAST)).status == "synced"
    after = await world.tokens(ALICE)
    assert after.access_token != before.access_token
    assert after.refresh_token == before.refresh_token
    # the person removes Alfred in their Google account
    world.google.revoke_account(ALICE_MAIL)
    world.clock.advance(timedelta(hours=1))
    sweep = await sync_due(world.cal, config=FAST, notify=world.notify)
    assert [u.status for u in sweep.users] == ["revoked"]
    assert world.sent == [(ALICE, REVOKED_NOTICE)]
    connection = await setup.store.get(ALICE)
    assert connection is not None and connection.status == "revoked"
    assert connection.tokens is None
    world.clock.advance(timedelta(hours=1))
    later = await sync_due(world.cal, config=FAST, notify=world.notify)
    assert later.users == [] and len(world.sent) == 1
    assert await take_revoked_notice(world.cal, ALICE) is None
    # /calendar offers a new link
    assert "Open this link" in await calendar_command(world.cal, await world.viewer(ALICE), "")


async def test_revoked_without_a_messenger_is_told_on_the_next_dm(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    world.google.revoke_account(ALICE_MAIL)
    world.google.expire_access_tokens()
    assert (await sync_user(world.cal, ALICE, config=FAST)).status == "revoked"
    assert await take_revoked_notice(world.cal, ALICE) == REVOKED_NOTICE
    assert await take_revoked_notice(world.cal, ALICE) is None


async def test_two_thousand_events_in_one_sync(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    for i in range(2000):
        event: dict[str, Any] = {"id": f"e{i:04d}", "summary": f"Focus block {i}"}
        event.update(when(10 + i % 15, 8 + i % 10))
        if i % 40 == 0:
            event["summary"] = f"Call with Client {i}"
            event["attendees"] = [{"email": f"client{i}@example.com", "displayName": f"C {i}"}]
        world.google.put_event(ALICE_MAIL, event)
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and report.events == 2000 and report.pages == 8
    assert report.stored == 100
    # more than one run's worth: the rest follows on the next run, from the saved page
    for i in range(2000, 2300):
        world.google.put_event(ALICE_MAIL, {"id": f"e{i}", "summary": "x", **when(20, 9)})
    small = dataclasses.replace(FAST, max_events_per_run=250)
    world.clock.advance(timedelta(hours=1))
    partial = await sync_user(world.cal, ALICE, config=small)
    assert partial.status == "partial" and partial.events == 250
    rest = await sync_user(world.cal, ALICE, config=small)
    assert rest.status == "synced" and rest.events == 50


async def test_odd_events_never_break_a_sync(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    g = world.google
    odd: list[dict[str, Any]] = [
        {"id": "notitle", **when(10, 9)},
        {
            "id": "allday",
            "summary": "Vet appointment",
            "start": {"date": "2026-03-12"},
            "end": {"date": "2026-03-13"},
        },
        {
            "id": "series",
            "summary": "Weekly call with Mom",
            "start": {"dateTime": "2026-03-02T19:00:00", "timeZone": "America/New_York"},
            "end": {"dateTime": "2026-03-02T19:30:00", "timeZone": "America/New_York"},
            "recurrence": ["RRULE:FREQ=WEEKLY;UNTIL=20260601T000000Z"],
        },
        {
            "id": "noname",
            "summary": "Sync",
            **when(10, 11),
            "attendees": [{"email": "someone@example.com"}, {"displayName": "No Mail"}],
        },
        {
            "id": "broken",
            "summary": "Meeting with Zed",
            "start": {"dateTime": "not a time"},
            "end": {"dateTime": "also not"},
        },
        {
            "id": "zone",
            "summary": "Lunch with Ines",
            "start": {"dateTime": "2026-03-10T12:30:00"},
            "end": {"dateTime": "2026-03-10T13:30:00"},
        },  # no offset: the calendar's zone
    ]
    for event in odd:
        g.put_event(ALICE_MAIL, event)
    report = await sync_user(world.cal, ALICE, config=FAST)
    assert report.status == "synced" and report.events == len(odd)
    contents = sorted(f.content for f in await world.facts())
    assert contents == [
        "Alice has a call with Mom every Monday at 19:00 America/New_York, starting Monday "
        "2 March 2026, until Sunday 31 May 2026",
        "Alice has a sync on Tuesday 10 March 2026 at 11:00 Europe/Paris",
        "Alice has a vet appointment on Thursday 12 March 2026",
        "Alice has lunch with Ines on Tuesday 10 March 2026 at 12:30 Europe/Paris",
    ]


# --- expiry, delivery, replay ---------------------------------------------------------


async def test_context_expires_when_the_event_ends(world: World) -> None:
    event = {
        "id": "e1",
        "title": "Meeting with Dr. Smith",
        "start": "2026-03-01T15:00:00Z",
        "end": "2026-03-01T16:00:00Z",
        "attendees": [{"email": "dr.smith@example.com", "name": "Dr. Smith"}],
    }
    first = await deliver_event(world.cal, ALICE, event, None)
    assert first.stored == 2
    again = await deliver_event(world.cal, ALICE, event, None)
    assert (again.stored, again.already_known) == (0, 2)
    alice = await world.viewer(ALICE)
    assert len(await world.search(alice, "meeting Dr. Smith")) == 2
    world.clock.set(datetime(2026, 3, 1, 15, 30, tzinfo=UTC))
    assert await expire_calendar_memories(world.cal) == 0
    world.clock.set(datetime(2026, 3, 1, 16, 0, tzinfo=UTC))
    assert await expire_calendar_memories(world.cal) == 1
    assert await world.search(alice, "meeting Dr. Smith") == [
        "Alice has a contact: Dr. Smith (dr.smith@example.com)"
    ]
    history = [f for f in await world.facts() if not f.current]
    assert [f.category for f in history] == [Category.CONTEXT]


async def test_delivery_partitions_follow_the_thread(world: World) -> None:
    event = {"id": "g1", "title": "Dinner with the Lees", "start": "2026-03-07T19:00:00Z"}
    await deliver_event(world.cal, ALICE, event, world.thread("group", ALICE))
    await deliver_event(world.cal, ALICE, {**event, "id": "d1"}, world.thread("dm", ALICE))
    group = await world.facts(Partition.member(FAM, ALICE))
    dm = await world.facts(Partition.dm(ALICE))
    assert [f.content for f in group] == [
        "Alice has dinner with the Lees on Saturday 7 March 2026 at 19:00 UTC"
    ]
    assert group[0].provenance.thread_id == FAM and len(dm) == 1
    bob_group = await world.viewer(BOB, "group")
    assert await world.search(bob_group, "dinner Lees") == [group[0].content]
    assert await world.search(await world.viewer(BOB), "dinner Lees") == []
    # cancelled: its memories go, in every partition
    cancelled = await deliver_event(world.cal, ALICE, {"id": "g1", "status": "cancelled"}, None)
    assert cancelled.invalidated == 1
    assert await world.search(bob_group, "dinner Lees") == []


# --- agent tools ----------------------------------------------------------------------


async def test_tools_list_and_create_in_a_dm(world: World) -> None:
    viewer = await world.viewer(ALICE)
    assert (await CalendarTools.for_viewer(world.cal, viewer)).specs == []
    await world.connect(ALICE, ALICE_MAIL)
    world.google.put_event(ALICE_MAIL, {"id": "soon", "summary": "Yoga", **when(2, 8)})
    tools = await CalendarTools.for_viewer(world.cal, viewer)
    assert [t.name for t in tools.specs] == [LIST_EVENTS.name, CREATE_EVENT.name]
    listed = await tools.run(ToolCall(id="1", name="list_calendar_events", arguments={}))
    assert "Yoga on Monday 2 March 2026 at 08:00 Europe/Paris" in listed
    created = await tools.run(
        ToolCall(
            id="2",
            name="create_calendar_event",
            arguments={
                "title": "Appointment with Dr. Who",
                "start": "2026-03-05T14:00",
                "attendees": [{"email": "who@tardis.example", "name": "Dr. Who"}],
            },
        )
    )
    assert created.startswith('Created "Appointment with Dr. Who" on Thursday 5 March 2026')
    sent = [r for r in world.google.requests if r.method == "POST" and r.path == EVENTS_PATH]
    assert sent[-1].body["start"] == {
        "dateTime": "2026-03-05T14:00:00",
        "timeZone": "Europe/Paris",
    }
    assert sent[-1].query["sendUpdates"] == "none"
    mine = {f.content: f for f in await world.facts(Partition.dm(ALICE))}
    assert "Alice has a contact: Dr. Who (who@tardis.example)" in mine
    context = mine[
        "Alice has an appointment with Dr. Who on Thursday 5 March 2026 at 14:00 Europe/Paris"
    ]
    assert context.provenance.thread_id == ALICE and context.provenance.speaker_id == ALICE
    bad = await tools.run(
        ToolCall(id="3", name="create_calendar_event", arguments={"title": "x", "start": "soon"})
    )
    assert bad.startswith("error:")
    elsewhere = await tools.run(
        ToolCall(
            id="4",
            name="create_calendar_event",
            arguments={"title": "x", "start": "2026-03-05", "for_member": "Bob"},
        )
    )
    assert "own calendar" in elsewhere


async def test_group_creation_for_a_member_needs_their_permission(world: World) -> None:
    await world.connect(BOB, BOB_MAIL)
    alice_group = await world.viewer(ALICE, "group")
    # Bob has not allowed it: Alice (not connected) gets no tool at all
    assert (await CalendarTools.for_viewer(world.cal, alice_group)).specs == []
    bob_dm = await world.viewer(BOB)
    assert "now ask me" in await calendar_command(world.cal, bob_dm, "allow")
    tools = await CalendarTools.for_viewer(world.cal, alice_group)
    assert [t.name for t in tools.specs] == [CREATE_EVENT.name]
    args = {"title": "Dentist appointment", "start": "2026-03-06T10:00", "for_member": "bob"}
    done = await tools.run(ToolCall(id="1", name="create_calendar_event", arguments=args))
    assert done.endswith("in Bob's calendar.") and BOB_MAIL in world.google.accounts
    assert len(world.google.accounts[BOB_MAIL].events) == 1
    facts = await world.facts()
    assert [(f.partition, f.content) for f in facts] == [
        (
            Partition.member(FAM, ALICE),
            "Bob has a dentist appointment on Friday 6 March 2026 at 10:00 Europe/Paris",
        )
    ]
    assert facts[0].subject_user_id == BOB and facts[0].provenance.speaker_id == ALICE
    # listing is never offered for someone else's calendar
    assert LIST_EVENTS not in tools.specs
    # Bob changes his mind
    await calendar_command(world.cal, bob_dm, "deny")
    assert (await CalendarTools.for_viewer(world.cal, alice_group)).specs == []
    refused = await tools.run(ToolCall(id="2", name="create_calendar_event", arguments=args))
    assert refused.startswith("error:") and "allowed" in refused


async def test_tool_on_a_revoked_calendar_says_so(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    tools = await CalendarTools.for_viewer(world.cal, await world.viewer(ALICE))
    world.google.revoke_account(ALICE_MAIL)
    answer = await tools.run(ToolCall(id="1", name="list_calendar_events", arguments={}))
    assert "/calendar" in answer and answer.startswith("error:")
    connection = await world.cal.store.get(ALICE)
    assert connection is not None and connection.status == "revoked"
    assert await take_revoked_notice(world.cal, ALICE) is None  # the model told them already


async def test_client_start_needs_no_network(world: World) -> None:
    setup = world.cal
    client = setup.client(TokenBundle(access_token="x", refresh_token="y"))
    client._build()
    client.close()
    assert world.google.requests == []


async def test_replay_calendar_line_semantics(settings: Settings) -> None:
    """What the replay's ``calendar`` line does (REPLAY.md): deliver_event with the
    script's user and thread, then probes see it only where the privacy table allows."""
    import json

    from bot.replay import parse_script, replay_world

    world = settings.model_copy(update={"mongodb_database": f"calr_{uuid.uuid4().hex[:8]}"})
    script = [json.dumps({"circle": "fam", "members": ["alice", "bob"]})]
    async with replay_world(world) as replay:
        for _, kind, value in parse_script(script):
            await replay.run_event(kind, value)
        event = {
            "id": "e1",
            "title": "Appointment with Dr. Smith",
            "start": "2026-01-08T15:00:00Z",
            "end": "2026-01-08T16:00:00Z",
            "attendees": [{"email": "dr.smith@example.com", "name": "Dr. Smith"}],
        }
        alice = await replay.viewer("alice", "dm:alice")  # registers alice and her DM
        await deliver_event(replay.services.calendar, alice.user_id, event, None)  # "from": null
        group = (await replay.viewer("alice", "group:fam")).thread
        await deliver_event(
            replay.services.calendar,
            alice.user_id,
            {**event, "id": "e2", "title": "Call with Ann", "attendees": []},
            group,
        )
        query = "What appointment does Alice have with Dr. Smith? Any call with Ann?"
        own = await replay.probe("alice", "dm:alice", query)
        bob_group = await replay.probe("bob", "group:fam", query)
        bob_dm = await replay.probe("bob", "dm:bob", query)
    own_texts = " ".join(m["content"] for m in own["probe"]["memories"])
    assert "Dr. Smith" in own_texts and "call with Ann" in own_texts
    seen = [m["content"] for m in bob_group["probe"]["memories"]]
    assert seen == ["Alice has a call with Ann on Thursday 8 January 2026 at 15:00 UTC"]
    assert "Dr. Smith" not in bob_group["probe"]["context"]
    assert bob_dm["probe"]["memories"] == [] and "Smith" not in bob_dm["probe"]["context"]


async def test_redirect_server_for_polling_mode(world: World) -> None:
    import aiohttp

    from integrations.google.oauth_http import start_oauth_server

    runner = await start_oauth_server(oauth_routes(world.cal), host="127.0.0.1", port=0)
    try:
        host, port = runner.addresses[0][:2]
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://{host}:{port}/healthz") as health:
                assert health.status == 200
            async with http.get(f"http://{host}:{port}/oauth/google") as bare:
                assert bare.status == 400
    finally:
        await runner.cleanup()


# --- privacy of listing, replay lines, the guard ----------------------------------------

SECRET_TITLE = "Oncology appointment"  # only ever in Alice's calendar


def chat_model(request: RecordedRequest) -> Any:
    """The chat model: calls the calendar tool a message names (LIST, CREATE) once, even
    when it is not offered, then repeats everything it was given (the worst case: a model
    that leaks whatever is in its prompt and tool results)."""
    if not request.tools:
        return completion("{}")
    answered = any(m.get("role") == "tool" for m in request.messages)
    text = request.last_user_text
    if not answered and "LIST" in text:
        return completion(None, tool_calls=[tool_call(LIST_EVENTS.name, {"days": 7})])
    if not answered and "CREATE" in text:
        args = {"title": "Lunch with Sam", "start": "2026-03-05T12:30"}
        return completion(None, tool_calls=[tool_call(CREATE_EVENT.name, args)])
    said = " | ".join(str(m.get("content")) for m in request.messages if m.get("role") == "tool")
    return completion(f"Tool said: {said}" if said else "Noted.")


@dataclass
class Chat:
    """The real reply path (services.reply.assistant) over the world, with the chat model on a local
    OpenAI-compatible server."""

    world: World
    fake: FakeOpenAI
    assistant: Assistant
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def say(self, who: str, where: str, text: str) -> list[str]:
        name = {ALICE: "Alice", BOB: "Bob", CAROL: "Carol"}[who]
        group = where == "group"
        turn = await self.assistant.handle(
            Incoming(
                chat_id=int(FAM) if group else int(who),
                chat_type="group" if group else "private",
                sender=Sender(int(who), name, name.lower()),
                message_id=next(self.ids),
                text=text,
                chat_title="Fam" if group else None,
                addressed=group,
            )
        )
        return [out.text for out in turn.replies]

    def offered(self) -> list[set[str]]:
        """The tool names offered in each reply-path call of the chat model."""
        return [
            {t["function"]["name"] for t in r.tools} for r in self.fake.chat_requests if r.tools
        ]


@asynccontextmanager
async def open_chat(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, **extra: Any
) -> AsyncIterator[Chat]:
    async with FakeOpenAI(embedding_dimensions=64) as fake:
        fake.set_handler(chat_model)
        llm = {"openai_api_key": SecretStr("test-key"), "openai_base_url": fake.base_url}
        async with open_world(settings, monkeypatch, **llm, **extra) as made:
            yield Chat(made, fake, build_assistant(made.s, bot_username="alfred"))


async def test_listing_is_never_offered_nor_run_in_a_group(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_chat(settings, monkeypatch) as chat:
        w = chat.world
        await w.connect(ALICE, ALICE_MAIL)
        w.google.put_event(ALICE_MAIL, {"id": "onc", "summary": SECRET_TITLE, **when(3, 10)})
        group_tools = await CalendarTools.for_viewer(w.cal, await w.viewer(ALICE, "group"))
        assert group_tools.specs == [CREATE_EVENT]
        listings = w.google.count("GET")
        forced = await group_tools.run(ToolCall(id="1", name=LIST_EVENTS.name, arguments={}))
        assert forced == LIST_ONLY_IN_DM and w.google.count("GET") == listings
        # through the reply path: a model that calls the tool anyway, and repeats it all
        in_group = await chat.say(ALICE, "group", "@alfred LIST what's on my calendar?")
        assert in_group and not any("oncology" in t.lower() for t in in_group)
        assert w.google.count("GET") == listings, "Google was never asked from the group"
        assert chat.offered()[-1] & {LIST_EVENTS.name} == set()
        journal = await w.s.journal.recent(FAM, limit=50)
        assert journal and not any("oncology" in m.text.lower() for m in journal)
        # in her DM it works, and the reply uses the tool's answer
        in_dm = await chat.say(ALICE, "dm", "LIST what's on my calendar this week?")
        assert LIST_EVENTS.name in chat.offered()[-1]
        assert any(SECRET_TITLE in t for t in in_dm)


async def test_the_agent_creates_an_event_through_the_chat_model(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_chat(settings, monkeypatch) as chat:
        w = chat.world
        await w.connect(ALICE, ALICE_MAIL)
        replies = await chat.say(ALICE, "dm", "CREATE lunch with Sam on Thursday at 12:30")
        events = list(w.google.accounts[ALICE_MAIL].events.values())
        assert [e["summary"] for e in events] == ["Lunch with Sam"]
        assert events[0]["start"] == {"dateTime": "2026-03-05T12:30:00", "timeZone": "Europe/Paris"}
        assert any('Created "Lunch with Sam" on Thursday 5 March 2026' in t for t in replies)
        facts = [f.content for f in await w.facts(Partition.dm(ALICE))]
        assert facts == ["Alice has lunch with Sam on Thursday 5 March 2026 at 12:30 Europe/Paris"]


async def test_google_down_the_bot_still_answers(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_chat(settings, monkeypatch) as chat:
        await chat.world.connect(ALICE, ALICE_MAIL)
        chat.world.google.down = True
        replies = await chat.say(ALICE, "dm", "LIST anything on my calendar tomorrow?")
        assert any(GOOGLE_DOWN in t for t in replies)


async def test_revoked_notice_comes_with_the_next_dm_reply(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_chat(settings, monkeypatch) as chat:
        w = chat.world
        await w.connect(ALICE, ALICE_MAIL)
        w.google.revoke_account(ALICE_MAIL)
        w.google.expire_access_tokens()
        assert (await sync_user(w.cal, ALICE, config=FAST)).status == "revoked"
        # not in the group (everyone reads it there)
        assert REVOKED_NOTICE not in await chat.say(ALICE, "group", "@alfred hello")
        first = await chat.say(ALICE, "dm", "hello")
        assert first[-1] == REVOKED_NOTICE and len(first) == 2
        assert REVOKED_NOTICE not in await chat.say(ALICE, "dm", "hello again")


async def test_calendar_flag_off_offers_no_tools_and_syncs_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, redis: RedisHandle
) -> None:
    async with open_chat(settings, monkeypatch, memory_calendar=False) as chat:
        w = chat.world
        await w.connect(ALICE, ALICE_MAIL)
        w.google.put_event(ALICE_MAIL, {"id": "onc", "summary": SECRET_TITLE, **when(3, 10)})
        replies = await chat.say(ALICE, "dm", "LIST what's on my calendar?")
        offered = chat.offered()
        assert offered and all(
            not names & {LIST_EVENTS.name, CREATE_EVENT.name} for names in offered
        )
        assert not any("oncology" in t.lower() for t in replies)
        result = await run_calendar_job(w.s, redis)
        assert result == {"calendars": 0, "skipped": "MEMORY_CALENDAR is off"}
        assert w.google.count("GET") == 0 and await w.facts() == []


async def run_calendar_job(services: Services, redis: RedisHandle) -> Any:
    """Queue the calendar cron's job by name and run it on a real (burst) arq worker
    against the embedded Redis; its result, as arq stored it."""
    from arq.jobs import Job

    from integrations.redis.queue import JobQueue
    from jobs.calendar_tasks import CALENDAR_SYNC
    from jobs.config import queue_name
    from jobs.inprocess import drain

    queue = JobQueue.from_url(redis.url, queue_name(services.settings))
    try:
        job_id = f"cal-{uuid.uuid4().hex[:8]}"
        assert await queue.enqueue(CALENDAR_SYNC, job_id=job_id)
        assert await drain(services, redis, max_seconds=60) == [(CALENDAR_SYNC, "complete")]
        job = Job(job_id, queue.pool, _queue_name=queue_name(services.settings))
        return await job.result(timeout=5)
    finally:
        await queue.close()


async def test_calendar_sync_job_on_a_real_worker(world: World, redis: RedisHandle) -> None:
    from jobs.calendar_tasks import CALENDAR_SYNC, calendar_sync_job, sync_config
    from jobs.config import JobsConfig
    from jobs.worker import worker_options

    crons = [c for c in worker_options()["cron_jobs"] if c.name == CALENDAR_SYNC]
    assert len(crons) == 1 and crons[0].coroutine is calendar_sync_job
    assert crons[0].second == 15 and crons[0].timeout_s == JobsConfig().cron_timeout
    # the sweep stops itself before arq would cancel it
    bounds = sync_config(JobsConfig())
    assert bounds.user_deadline <= bounds.sweep_budget < JobsConfig().cron_timeout
    await world.connect(ALICE, ALICE_MAIL)
    world.google.put_event(ALICE_MAIL, {"id": "m", "summary": "Meeting with Kim", **when(10, 10)})
    result = await run_calendar_job(world.s, redis)
    assert result["calendars"] == 1 and result["statuses"] == {"synced": 1}
    assert result["stored"] == 1 and ALICE_MAIL not in json.dumps(result)
    assert [f.content for f in await world.facts(Partition.dm(ALICE))] == [
        "Alice has a meeting with Kim on Tuesday 10 March 2026 at 10:00 Europe/Paris"
    ]


REPLAY_EVENT = {
    "id": "e1",
    "title": "Appointment with Dr. Smith",
    "start": "2026-01-08T15:00:00Z",
    "end": "2026-01-08T16:00:00Z",
    "attendees": [{"email": "dr.smith@example.com", "name": "Dr. Smith"}],
}


def calendar_line(user: str, event: dict[str, Any], where: str | None) -> dict[str, Any]:
    return {"calendar": {"user": user, "event": event, "from": where}}


async def test_replay_calendar_lines_end_to_end(settings: Settings, tmp_path: Path) -> None:
    query = "What appointment does Alice have with Dr. Smith? Any call with Ann?"
    call = {**REPLAY_EVENT, "id": "e2", "title": "Call with Ann", "attendees": []}
    dentist = {**REPLAY_EVENT, "id": "e3", "title": "Dentist appointment", "attendees": []}
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            calendar_line("alice", REPLAY_EVENT, None),
            calendar_line("alice", call, "group:fam"),
            calendar_line("alice", dentist, "dm:alice"),
            probe("alice", "dm:alice", query + " Dentist?"),
            probe("bob", "group:fam", query + " Dentist?"),
            probe("bob", "dm:bob", query + " Dentist?"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    own, bob_group, bob_dm = probes(out)
    own_texts = " ".join(m["content"] for m in own["memories"])
    assert "Dr. Smith" in own_texts and "call with Ann" in own_texts and "dentist" in own_texts
    assert [m["content"] for m in bob_group["memories"]] == [
        "Alice has a call with Ann on Thursday 8 January 2026 at 15:00 UTC"
    ]
    assert "Smith" not in bob_group["context"] and "entist" not in bob_group["context"]
    assert bob_dm["memories"] == [] and "Smith" not in bob_dm["context"]
    facts = out[-1]["dump"]["facts"]
    assert {f["visibility"] for f in facts if "Ann" not in f["content"]} == {"dm"}
    assert all(f["owner_user_id"] == "1001" for f in facts)


async def test_replay_any_event_and_a_series_as_one_memory(
    settings: Settings, tmp_path: Path
) -> None:
    """Events beyond the seed's title patterns are remembered (a dinner, therapy), a weekly
    series is ONE memory worded by its rule in its own time zone, placeholders are not,
    and all of it stays in the owner's DM."""
    lisbon = {"timeZone": "Europe/Lisbon"}
    therapy = {
        "id": "t1",
        "title": "Therapy",
        "start": {"dateTime": "2026-01-06T18:00:00", **lisbon},
        "end": {"dateTime": "2026-01-06T19:00:00", **lisbon},
        "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU"],
    }
    dinner = {"id": "d1", "title": "Dinner at Rosa's", "start": "2026-01-09T19:30:00+00:00"}
    busy = {"id": "b1", "title": "Busy", "start": "2026-01-08T10:00:00+00:00"}
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            calendar_line("alice", therapy, None),
            calendar_line("alice", dinner, None),
            calendar_line("alice", busy, None),
            {"clock": "+14d"},
            calendar_line("alice", therapy, None),  # the next sync delivers the series again
            probe("alice", "dm:alice", "when is my therapy?"),
            probe("bob", "group:fam", "when is Alice's therapy? any dinner plans?"),
            probe("bob", "dm:bob", "when is Alice's therapy? any dinner plans?"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    facts = [f for f in dumps(out)[-1]["facts"] if f["invalid_at"] is None]
    assert sorted(f["content"] for f in facts) == [
        "Alice has dinner at Rosa's on Friday 9 January 2026 at 19:30 UTC",
        "Alice has therapy every Tuesday at 18:00 Europe/Lisbon",
    ]
    assert {(f["visibility"], f["owner_user_id"]) for f in facts} == {("dm", "1001")}
    own, bob_group, bob_dm = probes(out)
    assert own["memories"][0]["content"] == "Alice has therapy every Tuesday at 18:00 Europe/Lisbon"
    for other in (bob_group, bob_dm):
        assert other["memories"] == [] and "herapy" not in other["context"], other


def test_replay_calendar_line_from_another_persons_thread_is_malformed(tmp_path: Path) -> None:
    fam = json.dumps({"circle": "fam", "members": ["alice", "bob"]})
    with pytest.raises(ScriptError, match="line 2"):
        parse_script([fam, json.dumps(calendar_line("alice", REPLAY_EVENT, "dm:bob"))])
    with pytest.raises(ScriptError, match=r"line 2: carol is not a member"):
        parse_script([fam, json.dumps(calendar_line("carol", REPLAY_EVENT, "group:fam"))])
    # whoever spoke in a group is a member of it from then on
    carol_spoke = json.dumps(say("carol", "group:fam", "hi all"))
    carol_line = json.dumps(calendar_line("carol", REPLAY_EVENT, "group:fam"))
    assert len(parse_script([fam, carol_spoke, carol_line])) == 3
    script = tmp_path / "leak.jsonl"
    leak = json.dumps(calendar_line("alice", REPLAY_EVENT, "dm:bob"))
    script.write_text(f"{fam}\n{leak}\n")
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "replay", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "line 2" in result.stderr and 'only come from "dm:alice"' in result.stderr


async def test_replay_calendar_line_is_skipped_with_the_flag_off(
    settings: Settings, tmp_path: Path
) -> None:
    off = settings.model_copy(update={"memory_calendar": False})
    out = await replay_lines(
        off,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            calendar_line("alice", REPLAY_EVENT, None),
            calendar_line("alice", {**REPLAY_EVENT, "id": "e2"}, "group:fam"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    assert out == [out[-1]] and out[-1]["dump"]["facts"] == []


async def test_deliver_event_refuses_someone_elses_thread(world: World) -> None:
    event = {"id": "x1", "title": "Meeting with Dr. Smith", "start": "2026-03-07T10:00:00Z"}
    with pytest.raises(Denied):
        await deliver_event(world.cal, ALICE, event, world.thread("dm", BOB))
    with pytest.raises(Denied):  # Carol is not in Fam
        await deliver_event(world.cal, CAROL, event, world.thread("group", CAROL))
    with pytest.raises(Denied):  # Alice's own DM, but "created by" Bob
        await deliver_event(world.cal, ALICE, event, world.thread("dm", ALICE), creator_user_id=BOB)
    assert await world.facts() == []
    done = await deliver_event(world.cal, ALICE, event, world.thread("dm", ALICE))
    assert done.stored == 1 and [f.partition for f in await world.facts()] == [Partition.dm(ALICE)]


# --- Google's failures: a retried create, a slow Google, notices that cannot be sent ---


async def test_a_retried_create_makes_one_event(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    quick = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.01)
    tools = await CalendarTools.for_viewer(world.cal, await world.viewer(ALICE), retry=quick)
    world.google.fail(503, times=1, after=True)  # stored, but the answer is lost
    args = {"title": "Dentist appointment", "start": "2026-03-06T10:00"}
    done = await tools.run(ToolCall(id="1", name=CREATE_EVENT.name, arguments=args))
    assert done.startswith('Created "Dentist appointment" on Friday 6 March 2026'), done
    events = world.google.accounts[ALICE_MAIL].events
    assert [e["summary"] for e in events.values()] == ["Dentist appointment"]
    posts = [r for r in world.google.requests if r.method == "POST" and r.path == EVENTS_PATH]
    assert len(posts) == 2 and posts[0].body["id"] == posts[1].body["id"]
    assert re.fullmatch(r"[0-9a-v]{5,1024}", posts[0].body["id"])
    assert posts[0].body["id"] in events
    assert len(await world.facts()) == 1
    # two creates are two events (each its own id)
    await tools.run(ToolCall(id="2", name=CREATE_EVENT.name, arguments=args))
    assert len(events) == 2


async def test_a_slow_google_never_blocks_the_sweep(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    await world.connect(BOB, BOB_MAIL)
    store = world.cal.store
    now = world.clock.now()
    world.google.stall()
    # past its deadline: a failure, pushed back, lease released
    report = await sync_user(world.cal, ALICE, config=dataclasses.replace(FAST, user_deadline=0.2))
    assert report.status == "retry_later" and "longer than" in (report.error or "")
    alice = await store.get(ALICE)
    assert alice is not None and alice.failures == 1
    assert alice.next_sync_at == now + timedelta(minutes=5)
    # cancelled by the job's time limit: the same
    world.clock.advance(timedelta(seconds=1))  # Alice is the more overdue below
    world.google.held.clear()
    bob_sync = asyncio.create_task(sync_user(world.cal, BOB, config=FAST))
    await world.google.held.wait()  # Bob's sync is waiting on Google
    bob_sync.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bob_sync
    bob = await store.get(BOB)
    assert bob is not None and bob.failures == 1 and bob.last_error == "the sync was cancelled"
    assert bob.next_sync_at == now + timedelta(minutes=5, seconds=1)
    doc = await world.s.mongo.db[CONNECTIONS].find_one({"_id": BOB})
    assert doc is not None and doc["lease_until"] is None
    # the sweep's own budget: it starts nobody once it is spent
    world.clock.advance(timedelta(minutes=6))
    tight = dataclasses.replace(FAST, user_deadline=30.0, sweep_budget=1.0)
    sweep = await sync_due(world.cal, config=tight)
    assert [(u.user_id, u.status) for u in sweep.users] == [(ALICE, "retry_later")]
    # Google is back: Bob (not started, still due) and Carol are synced; Alice, who
    # failed twice, waits her back-off
    world.google.resume()
    await world.connect(CAROL, "carol@example.com")
    world.clock.advance(timedelta(minutes=1))
    later = await sync_due(world.cal, config=FAST)
    assert sorted((u.user_id, u.status) for u in later.users) == [
        (BOB, "synced"),
        (CAROL, "synced"),
    ]


async def test_revocation_notices_back_off_and_stop(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    attempts: list[str] = []

    async def broken(user_id: str, text: str) -> None:
        attempts.append(user_id)
        raise ConnectionError("telegram is down")

    world.google.revoke_account(ALICE_MAIL)
    world.google.expire_access_tokens()
    await sync_due(world.cal, config=FAST, notify=broken)
    assert attempts == [ALICE]
    store = world.cal.store
    waits = []
    for _ in range(20):
        connection = await store.get(ALICE)
        assert connection is not None and connection.notice_retry_at is not None
        waits.append(connection.notice_retry_at - world.clock.now())
        world.clock.advance(timedelta(minutes=1))
        before = len(attempts)
        await sync_due(world.cal, config=FAST, notify=broken)
        assert len(attempts) == before, "not again before the back-off"
        world.clock.set(connection.notice_retry_at)
        await sync_due(world.cal, config=FAST, notify=broken)
        if len(attempts) == before:
            break
    assert len(attempts) == NOTICE_ATTEMPTS
    assert waits[:3] == [timedelta(minutes=5), timedelta(minutes=10), timedelta(minutes=20)]
    world.clock.advance(timedelta(days=7))
    await sync_due(world.cal, config=FAST, notify=broken)
    assert len(attempts) == NOTICE_ATTEMPTS
    # the reply path still tells her, once
    assert await take_revoked_notice(world.cal, ALICE) == REVOKED_NOTICE
    assert await take_revoked_notice(world.cal, ALICE) is None


# --- smaller things -------------------------------------------------------------------


async def test_a_naive_start_takes_the_end_offset(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    tools = await CalendarTools.for_viewer(world.cal, await world.viewer(ALICE))
    args = {"title": "Call with Ann", "start": "2026-03-05T14:00", "end": "2026-03-05T15:30+02:00"}
    done = await tools.run(ToolCall(id="1", name=CREATE_EVENT.name, arguments=args))
    assert done.startswith("Created"), done
    sent = [r for r in world.google.requests if r.method == "POST"][-1].body
    assert sent["start"] == {"dateTime": "2026-03-05T14:00:00+02:00"}
    assert sent["end"] == {"dateTime": "2026-03-05T15:30:00+02:00"}


async def test_group_refusal_does_not_tell_who_connected(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    tools = await CalendarTools.for_viewer(world.cal, await world.viewer(ALICE, "group"))
    args = {"title": "Dentist appointment", "start": "2026-03-06T10:00", "for_member": "bob"}
    not_connected = await tools.run(ToolCall(id="1", name=CREATE_EVENT.name, arguments=args))
    await world.connect(BOB, BOB_MAIL)
    not_allowed = await tools.run(ToolCall(id="2", name=CREATE_EVENT.name, arguments=args))
    assert not_connected == not_allowed and not_allowed.startswith("error:")
    assert "connected" not in not_allowed


async def test_redirect_pages_for_a_changed_key_and_a_database_failure(
    world: World, settings: Settings
) -> None:
    url = await start_connect(world.cal, ALICE)
    query = parse_qs(urlsplit(url).query)
    code = world.google.issue_code(ALICE_MAIL, challenge=query["code_challenge"][0])
    state = query["state"][0]
    # the sealed PKCE verifier no longer decrypts (the key changed since the link)
    store = world.s.mongo.db[CONNECTIONS]
    await store.update_one({"_id": ALICE}, {"$set": {"pending.verifier": "not-a-token"}})
    app = web.Application()
    app.add_routes(oauth_routes(world.cal))
    async with TestClient(TestServer(app)) as http:
        changed = await http.get("/oauth/google", params={"state": state, "code": code})
        assert changed.status == 400 and "settings changed" in await changed.text()
    # the database is gone (a closed client): a page, not a 500
    closed = await build_services(world.s.settings, clock=world.clock, embedder=HashEmbedder())
    await closed.aclose()
    url = await start_connect(world.cal, ALICE)
    query = parse_qs(urlsplit(url).query)
    app = web.Application()
    app.add_routes(oauth_routes(closed.calendar))
    async with TestClient(TestServer(app)) as http:
        down = await http.get("/oauth/google", params={"state": query["state"][0], "code": "c"})
        assert down.status == 503 and "send /calendar" in await down.text()


async def test_redirect_server_on_a_taken_port_keeps_the_bot_running(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR):
            runner = await serve_oauth_redirect(
                oauth_routes(world.cal), host="127.0.0.1", port=port
            )
        assert runner is None
        assert any(
            "calendar redirect" in r.getMessage() and str(port) in r.getMessage()
            for r in caplog.records
        )
    finally:
        taken.close()


async def test_tools_tell_and_take_times_on_the_speakers_own_clock(world: World) -> None:
    """Alice set her own time zone (Chicago) while her calendar is in Paris: listings are
    read out on her clock, and "14:00" in a new event is her 14:00."""
    viewer = await world.viewer(ALICE)
    await world.connect(ALICE, ALICE_MAIL)
    await MongoTimeZones(world.s.mongo.db).set_user_zone(ALICE, "America/Chicago")
    world.google.put_event(ALICE_MAIL, {"id": "early", "summary": "Swim", **when(3, 9)})
    tools = await CalendarTools.for_viewer(world.cal, viewer)
    listed = await tools.run(ToolCall(id="1", name="list_calendar_events", arguments={}))
    assert "Swim on Tuesday 3 March 2026 at 02:00 America/Chicago" in listed, listed
    created = await tools.run(
        ToolCall(
            id="2",
            name="create_calendar_event",
            arguments={"title": "Piano lesson", "start": "2026-03-06T14:00"},
        )
    )
    assert "on Friday 6 March 2026 at 14:00 America/Chicago" in created, created
    sent = [r for r in world.google.requests if r.method == "POST" and r.path == EVENTS_PATH]
    assert sent[-1].body["start"] == {
        "dateTime": "2026-03-06T14:00:00",
        "timeZone": "America/Chicago",
    }
    mine = [f.content for f in await world.facts(Partition.dm(ALICE))]
    assert any(
        f.startswith("Alice has") and f.endswith("on Friday 6 March 2026 at 14:00 America/Chicago")
        for f in mine
    ), mine


async def test_a_connected_calendars_zone_comes_after_the_persons_own(world: World) -> None:
    viewer = await world.viewer(ALICE)
    zones = world.s.time_zones
    assert (await zones.zone_for(viewer)).source == "default"
    await world.connect(ALICE, ALICE_MAIL)
    await world.cal.store.set_time_zone(ALICE, "Africa/Casablanca")
    calendar = await zones.zone_for(viewer)
    assert (calendar.name, calendar.source) == ("Africa/Casablanca", "calendar")
    await zones.store.set_user_zone(ALICE, "Asia/Manila")
    assert (await zones.zone_for(viewer)).name == "Asia/Manila"
    await world.cal.store.delete(ALICE)
    await zones.store.set_user_zone(ALICE, None)
    assert (await zones.zone_for(viewer)).name == "UTC"
