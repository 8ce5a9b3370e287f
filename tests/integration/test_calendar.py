"""Google Calendar end to end: the real Google client libraries against a local Google.

The OAuth code exchange (google-auth-oauthlib), token refresh (google-auth) and the
Calendar v3 client (google-api-python-client, static discovery, httplib2) all talk to
:class:`tests.helpers.fake_google.FakeGoogle` on 127.0.0.1; storage is the real embedded
MongoDB. The clock is simulated; Google's own token expiry is real time.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography.fernet import Fernet
from pydantic import SecretStr

from integrations.calendar import (
    CREATE_EVENT,
    LIST_EVENTS,
    REVOKED_NOTICE,
    CalendarSetup,
    CalendarTools,
    SyncConfig,
    calendar_command,
    deliver_event,
    expire_calendar_memories,
    finish_connect,
    make_oauth_routes,
    start_connect,
    sync_due,
    sync_user,
    take_revoked_notice,
)
from integrations.calendar.commands import IN_GROUP
from integrations.calendar.core import NO_KEY, NOT_CONFIGURED
from integrations.calendar.crypto import InvalidState
from integrations.calendar.google_client import RetryPolicy, TokenBundle
from integrations.calendar.store import CONNECTIONS
from integrations.container import Services, build_services
from integrations.mongo.migrator import MigrationContext, migrate
from integrations.settings import Settings
from memory.clock import ManualClock
from memory.llm import ToolCall
from memory.models import Category, Fact, Partition, Thread, ThreadKind, Viewer
from memory.privacy import is_visible
from tests.helpers.fake_google import EVENTS_PATH, FakeGoogle
from tests.helpers.fakes import HashEmbedder

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

    async def notify(self, user_id: str, text: str) -> None:
        self.sent.append((user_id, text))

    def thread(self, kind: str, who: str) -> Thread:
        if kind == "group":
            return Thread(id=FAM, kind=ThreadKind.GROUP, circle_id=FAM)
        return Thread(id=who, kind=ThreadKind.DM, user_id=who)

    async def viewer(self, user: str, where: str = "dm") -> Viewer:
        return await self.s.directory.viewer(user, self.thread(where, user))

    async def connect(self, user_id: str, email: str) -> None:
        """The whole consent flow: /calendar link → Google → redirect → tokens."""
        url = await start_connect(self.s, user_id)
        query = parse_qs(urlsplit(url).query)
        code = self.google.issue_code(email, challenge=query["code_challenge"][0])
        assert await finish_connect(self.s, query["state"][0], code) == user_id

    async def tokens(self, user_id: str) -> TokenBundle:
        setup = CalendarSetup.of(self.s)
        connection = await setup.store.get(user_id)
        assert connection is not None
        return setup.tokens(connection)

    async def facts(self, partition: Partition | None = None) -> list[Fact]:
        found = [f for f in await self.s.facts.all_for_audit() if f.provenance.source == "calendar"]
        return [f for f in found if partition is None or f.partition == partition]

    async def search(self, viewer: Viewer, query: str) -> list[str]:
        result = await self.s.retriever.search(viewer, query, limit=50)
        return [f.fact.content for f in result.facts if is_visible(f.fact.partition, viewer)]


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
    # The local token endpoint is plain HTTP on loopback; oauthlib insists on HTTPS.
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    async with FakeGoogle() as google:
        clock = ManualClock(NOW)
        s = await build_services(
            calendar_settings(settings, google), clock=clock, embedder=HashEmbedder()
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
    reply = await calendar_command(world.s, await world.viewer(ALICE), "")
    url = next(line for line in reply.splitlines() if line.startswith("http"))
    query = parse_qs(urlsplit(url).query)
    assert urlsplit(url).path == "/auth" and query["access_type"] == ["offline"]
    assert "https://www.googleapis.com/auth/calendar.events" in query["scope"][0]
    code = world.google.issue_code(ALICE_MAIL, challenge=query["code_challenge"][0])
    app = web.Application()
    app.add_routes(make_oauth_routes(world.s, notify=world.notify))
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
    assert [uid for uid, _ in world.sent] == [ALICE]
    doc = await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE})
    assert doc is not None and doc["status"] == "connected"
    tokens = await world.tokens(ALICE)
    assert tokens.refresh_token and tokens.account_email == ALICE_MAIL
    # encrypted at rest: no token appears in the stored document
    assert tokens.refresh_token not in str(doc) and ALICE_MAIL not in str(doc)
    # PKCE: the verifier Alfred sent matches the challenge in its consent URL
    assert world.google.codes == {}
    status = await calendar_command(world.s, await world.viewer(ALICE), "")
    assert "is connected" in status and ALICE_MAIL in status


async def test_expired_link_and_refusals(world: World) -> None:
    url = await start_connect(world.s, ALICE)
    query = parse_qs(urlsplit(url).query)
    world.clock.advance(timedelta(minutes=11))
    code = world.google.issue_code(ALICE_MAIL, challenge=query["code_challenge"][0])
    with pytest.raises(InvalidState, match="expired"):
        await finish_connect(world.s, query["state"][0], code)
    # groups are told to use a DM; nothing is started there
    assert await calendar_command(world.s, await world.viewer(ALICE, "group"), "") == IN_GROUP
    # no key: connecting is refused, with the reason
    no_key = dataclasses.replace(
        world.s, settings=world.s.settings.model_copy(update={"calendar_encryption_key": None})
    )
    assert await calendar_command(no_key, await world.viewer(ALICE), "") == NO_KEY
    off = dataclasses.replace(
        world.s, settings=world.s.settings.model_copy(update={"google_client_id": None})
    )
    assert await calendar_command(off, await world.viewer(ALICE), "") == NOT_CONFIGURED
    assert (await CalendarTools.for_viewer(off, await world.viewer(ALICE))).specs == []


async def test_disconnect_deletes_tokens_and_revokes(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    reply = await calendar_command(world.s, await world.viewer(ALICE), "off")
    assert reply.startswith("Done")
    assert await world.s.mongo.db[CONNECTIONS].find_one({"_id": ALICE}) is None
    assert world.google.count("POST", "/revoke") == 1 and world.google.refresh == {}
    assert "isn't connected" in await calendar_command(world.s, await world.viewer(ALICE), "off")
    assert (await sync_due(world.s, config=FAST)).users == []


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
    report = await sync_user(world.s, ALICE, config=FAST)
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
    await sync_user(world.s, ALICE, config=FAST)
    assert len(await world.facts()) == 2
    # moved to another day, and the call cancelled
    g.put_event(ALICE_MAIL, {"id": "dent", "summary": "Dentist appointment", **when(12, 9)})
    g.cancel_event(ALICE_MAIL, "call")
    world.clock.advance(timedelta(minutes=20))
    report = await sync_user(world.s, ALICE, config=FAST)
    assert report.status == "synced" and not report.full_sync and report.events == 2
    last = g.requests[-1]
    assert last.query.get("syncToken") and report.invalidated == 2
    current = [f.content for f in await world.facts() if f.current]
    assert current == [
        "Alice has a dentist appointment on Thursday 12 March 2026 at 09:00 Europe/Paris"
    ]
    # nothing changed: nothing stored, nothing invalidated
    world.clock.advance(timedelta(minutes=20))
    quiet = await sync_user(world.s, ALICE, config=FAST)
    assert (quiet.events, quiet.stored, quiet.invalidated) == (0, 0, 0)


async def test_gone_sync_token_means_a_full_resync(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    g = world.google
    g.put_event(ALICE_MAIL, {"id": "a", "summary": "Lunch with Sam", **when(10, 12)})
    g.put_event(ALICE_MAIL, {"id": "b", "summary": "Call with Ana", **when(10, 16)})
    await sync_user(world.s, ALICE, config=FAST)
    # while the token was stale, "b" vanished without a trace (no cancelled entry)
    g.expire_sync_tokens(ALICE_MAIL)
    del g.accounts[ALICE_MAIL].events["b"]
    report = await sync_user(world.s, ALICE, config=FAST)
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
    report = await sync_user(world.s, ALICE, config=FAST)
    assert report.status == "synced" and g.count("GET") == 3
    # still limited after every retry: this user waits, nothing raises
    g.fail(403, "userRateLimitExceeded", times=10)
    world.clock.advance(timedelta(hours=1))
    report = await sync_user(world.s, ALICE, config=FAST)
    assert report.status == "retry_later" and "rate limited" in (report.error or "")
    connection = await CalendarSetup.of(world.s).store.get(ALICE)
    assert connection is not None and connection.failures == 1
    assert connection.next_sync_at == world.clock.now() + timedelta(minutes=5)


async def test_google_down_retries_later(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    world.google.put_event(ALICE_MAIL, {"id": "x", "summary": "Call with Lee", **when(10, 10)})
    world.google.down = True
    first = await sync_due(world.s, config=FAST, notify=world.notify)
    assert [u.status for u in first.users] == ["retry_later"]
    # not due again before the back-off
    world.clock.advance(timedelta(minutes=1))
    assert (await sync_due(world.s, config=FAST)).users == []
    world.google.down = False
    world.clock.advance(timedelta(minutes=5))
    again = await sync_due(world.s, config=FAST)
    assert [u.status for u in again.users] == ["synced"] and again.users[0].stored == 1
    assert world.sent == []


async def test_refresh_is_stored_and_revocation_told_once(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    setup = CalendarSetup.of(world.s)
    before = await world.tokens(ALICE)
    world.google.expire_access_tokens()  # Google forgets the access token: 401 → refresh
    assert (await sync_user(world.s, ALICE, config=FAST)).status == "synced"
    after = await world.tokens(ALICE)
    assert after.access_token != before.access_token
    assert after.refresh_token == before.refresh_token
    # the person removes Alfred in their Google account
    world.google.revoke_account(ALICE_MAIL)
    world.clock.advance(timedelta(hours=1))
    sweep = await sync_due(world.s, config=FAST, notify=world.notify)
    assert [u.status for u in sweep.users] == ["revoked"]
    assert world.sent == [(ALICE, REVOKED_NOTICE)]
    connection = await setup.store.get(ALICE)
    assert connection is not None and connection.status == "revoked"
    assert connection.tokens is None
    world.clock.advance(timedelta(hours=1))
    later = await sync_due(world.s, config=FAST, notify=world.notify)
    assert later.users == [] and len(world.sent) == 1
    assert await take_revoked_notice(world.s, ALICE) is None
    # /calendar offers a new link
    assert "Open this link" in await calendar_command(world.s, await world.viewer(ALICE), "")


async def test_revoked_without_a_messenger_is_told_on_the_next_dm(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    world.google.revoke_account(ALICE_MAIL)
    world.google.expire_access_tokens()
    assert (await sync_user(world.s, ALICE, config=FAST)).status == "revoked"
    assert await take_revoked_notice(world.s, ALICE) == REVOKED_NOTICE
    assert await take_revoked_notice(world.s, ALICE) is None


async def test_two_thousand_events_in_one_sync(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    for i in range(2000):
        event: dict[str, Any] = {"id": f"e{i:04d}", "summary": f"Focus block {i}"}
        event.update(when(10 + i % 15, 8 + i % 10))
        if i % 40 == 0:
            event["summary"] = f"Call with Client {i}"
            event["attendees"] = [{"email": f"client{i}@example.com", "displayName": f"C {i}"}]
        world.google.put_event(ALICE_MAIL, event)
    report = await sync_user(world.s, ALICE, config=FAST)
    assert report.status == "synced" and report.events == 2000 and report.pages == 8
    assert report.stored == 100
    # more than one run's worth: the rest follows on the next run, from the saved page
    for i in range(2000, 2300):
        world.google.put_event(ALICE_MAIL, {"id": f"e{i}", "summary": "x", **when(20, 9)})
    small = dataclasses.replace(FAST, max_events_per_run=250)
    world.clock.advance(timedelta(hours=1))
    partial = await sync_user(world.s, ALICE, config=small)
    assert partial.status == "partial" and partial.events == 250
    rest = await sync_user(world.s, ALICE, config=small)
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
    report = await sync_user(world.s, ALICE, config=FAST)
    assert report.status == "synced" and report.events == len(odd)
    contents = sorted(f.content for f in await world.facts())
    assert contents == [
        "Alice has a vet appointment on Thursday 12 March 2026",
        "Alice has a weekly call with Mom, first on Monday 2 March 2026 at 19:00 "
        "America/New_York, until Sunday 31 May 2026",
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
    first = await deliver_event(world.s, ALICE, event, None)
    assert first.stored == 2
    again = await deliver_event(world.s, ALICE, event, None)
    assert (again.stored, again.already_known) == (0, 2)
    alice = await world.viewer(ALICE)
    assert len(await world.search(alice, "meeting Dr. Smith")) == 2
    world.clock.set(datetime(2026, 3, 1, 15, 30, tzinfo=UTC))
    assert await expire_calendar_memories(world.s) == 0
    world.clock.set(datetime(2026, 3, 1, 16, 0, tzinfo=UTC))
    assert await expire_calendar_memories(world.s) == 1
    assert await world.search(alice, "meeting Dr. Smith") == [
        "Alice has a contact: Dr. Smith (dr.smith@example.com)"
    ]
    history = [f for f in await world.facts() if not f.current]
    assert [f.category for f in history] == [Category.CONTEXT]


async def test_delivery_partitions_follow_the_thread(world: World) -> None:
    event = {"id": "g1", "title": "Dinner with the Lees", "start": "2026-03-07T19:00:00Z"}
    await deliver_event(world.s, ALICE, event, world.thread("group", ALICE))
    await deliver_event(world.s, ALICE, {**event, "id": "d1"}, world.thread("dm", ALICE))
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
    cancelled = await deliver_event(world.s, ALICE, {"id": "g1", "status": "cancelled"}, None)
    assert cancelled.invalidated == 1
    assert await world.search(bob_group, "dinner Lees") == []


# --- agent tools ----------------------------------------------------------------------


async def test_tools_list_and_create_in_a_dm(world: World) -> None:
    viewer = await world.viewer(ALICE)
    assert (await CalendarTools.for_viewer(world.s, viewer)).specs == []
    await world.connect(ALICE, ALICE_MAIL)
    world.google.put_event(ALICE_MAIL, {"id": "soon", "summary": "Yoga", **when(2, 8)})
    tools = await CalendarTools.for_viewer(world.s, viewer)
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
    assert (await CalendarTools.for_viewer(world.s, alice_group)).specs == []
    bob_dm = await world.viewer(BOB)
    assert "now ask me" in await calendar_command(world.s, bob_dm, "allow")
    tools = await CalendarTools.for_viewer(world.s, alice_group)
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
    await calendar_command(world.s, bob_dm, "deny")
    assert (await CalendarTools.for_viewer(world.s, alice_group)).specs == []
    refused = await tools.run(ToolCall(id="2", name="create_calendar_event", arguments=args))
    assert refused.startswith("error:") and "allowed" in refused


async def test_tool_on_a_revoked_calendar_says_so(world: World) -> None:
    await world.connect(ALICE, ALICE_MAIL)
    tools = await CalendarTools.for_viewer(world.s, await world.viewer(ALICE))
    world.google.revoke_account(ALICE_MAIL)
    answer = await tools.run(ToolCall(id="1", name="list_calendar_events", arguments={}))
    assert "/calendar" in answer and answer.startswith("error:")
    connection = await CalendarSetup.of(world.s).store.get(ALICE)
    assert connection is not None and connection.status == "revoked"
    assert await take_revoked_notice(world.s, ALICE) is None  # the model told them already


async def test_client_start_needs_no_network(world: World) -> None:
    setup = CalendarSetup.of(world.s)
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
        await deliver_event(replay.services, alice.user_id, event, None)  # "from": null
        group = (await replay.viewer("alice", "group:fam")).thread
        await deliver_event(
            replay.services,
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

    from integrations.calendar import start_oauth_server

    runner = await start_oauth_server(world.s, host="127.0.0.1", port=0)
    try:
        host, port = runner.addresses[0][:2]
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://{host}:{port}/healthz") as health:
                assert health.status == 200
            async with http.get(f"http://{host}:{port}/oauth/google") as bare:
                assert bare.status == 400
    finally:
        await runner.cleanup()
