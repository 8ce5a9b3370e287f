"""Reminders on the production path: MongoDB first, then an arq job deferred to the due
time on the real Redis, run by a real arq worker that sends through the Bot API (the
local fake Telegram server) with the bot token, as a worker of its own does.

What is proven: a scheduled job delivers once, with the Done/Snooze keyboard; a job lost
with Redis's data is queued again by the sweep and delivered once; a delivery whose
process died after claiming it (``sending`` for over two minutes) is sent again — the
only way to a second message, as the docs say — while a fresh claim is left alone.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from integrations.mongo.reminders import REMINDERS, MongoReminders
from integrations.redis.connection import RedisHandle
from integrations.redis.queue import JobQueue
from jobs.inprocess import drain, run_due_crons
from memory.clock import ManualClock
from memory.models import Partition
from memory.reminders import Reminder, ReminderState
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.jobs import queue_name
from runtime.reminders import QueueScheduler, build_reminders
from runtime.settings import Settings
from tests.conftest import make_settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.fakes import HashEmbedder

#: Due a moment ago in real time, so arq's deferral (real time) lets the job run at once.
DUE = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)


@dataclass
class World:
    services: Services
    clock: ManualClock
    redis: RedisHandle
    tg: FakeTelegram
    chat_id: int

    async def reminder(self, text: str, **fields: object) -> Reminder:
        fields.setdefault("chat_id", self.chat_id)
        r = Reminder(
            id=uuid.uuid4().hex,
            text=text,
            partition=Partition.dm("501"),
            creator_id="501",
            for_user_id="501",
            thread_id="dm-501",
            start=DUE,
            next_due=DUE,
            created_at=DUE - timedelta(hours=1),
            **fields,  # type: ignore[arg-type]
        )
        await MongoReminders(self.services.mongo.db).insert(r)
        return r

    async def drain(self) -> None:
        await drain(self.services, self.redis)

    async def sweep(self) -> None:
        await run_due_crons(self.services, self.clock.now(), redis=self.redis)

    def sent(self) -> list[dict[str, object]]:
        return [m for m in self.tg.sent_messages if m["chat_id"] == self.chat_id]


@pytest.fixture
async def world(settings: Settings, redis: RedisHandle, tmp_path: Path) -> AsyncIterator[World]:
    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann", username="ann")
        chat = tg.private_chat(ann)
        test_settings = make_settings(
            settings.alfred_data_dir,
            mongodb_database=f"rem_{uuid.uuid4().hex[:10]}",
            telegram_bot_token=SecretStr(tg.token),
            telegram_api_base_url=tg.base_url,
        )
        clock = ManualClock(DUE)
        services = await build_services(test_settings, clock=clock, embedder=HashEmbedder())
        await migrate(
            MigrationContext(db=services.mongo.db, atlas_search=False, embedding_dims=64, log=print)
        )
        try:
            yield World(services, clock, redis, tg, int(chat["id"]))
        finally:
            await drop_test_database(services.mongo.client, test_settings.mongodb_database)
            await services.aclose()


async def state_of(w: World, reminder_id: str) -> str:
    doc = await w.services.mongo.db[REMINDERS].find_one({"_id": reminder_id})
    assert doc is not None
    return str(doc["state"])


async def test_a_scheduled_reminder_is_delivered_once_with_its_buttons(world: World) -> None:
    w = world
    r = await w.reminder("defrost the freezer")
    queue = JobQueue.from_url(w.redis.url, queue_name(w.services.settings))
    try:
        scheduler = QueueScheduler(queue)
        await scheduler.schedule(r.id, r.next_due)
        await scheduler.schedule(r.id, r.next_due)  # the same occurrence: refused
        assert await queue.queued_count() == 1
    finally:
        await queue.close()
    w.clock.set(DUE + timedelta(seconds=20))
    await w.drain()
    await w.sweep()  # nothing due any more: the sweep queues nothing
    await w.drain()
    sent = w.sent()
    assert [m["text"] for m in sent] == ["⏰ Reminder: defrost the freezer"]
    keyboard = sent[0]["message"]["reply_markup"]["inline_keyboard"]  # type: ignore[index]
    assert [b["text"] for b in keyboard[0]] == ["Done", "Snooze 10 min"]
    assert await state_of(w, r.id) == ReminderState.SENT.value


async def test_a_reminder_whose_job_was_lost_is_queued_by_the_sweep_and_sent_once(
    world: World,
) -> None:
    w = world
    r = await w.reminder("move the car")  # stored, but its job never reached Redis
    await w.drain()
    assert w.sent() == [], "no job, no delivery yet"
    w.clock.set(DUE + timedelta(seconds=50))
    await w.sweep()
    await w.drain()
    await w.sweep()
    await w.drain()
    assert [m["text"] for m in w.sent()] == ["⏰ Reminder: move the car"]
    assert await state_of(w, r.id) == ReminderState.SENT.value


async def test_a_delivery_that_died_mid_send_is_sent_again_but_a_fresh_claim_is_not(
    world: World,
) -> None:
    w = world
    now = DUE + timedelta(minutes=5)
    w.clock.set(now)
    died = await w.reminder(
        "call the landlord", state=ReminderState.SENDING, sending_at=now - timedelta(minutes=3)
    )
    busy = await w.reminder(
        "post the letter", state=ReminderState.SENDING, sending_at=now - timedelta(seconds=10)
    )
    await w.sweep()
    await w.drain()
    assert [m["text"] for m in w.sent()] == ["⏰ (late) Reminder: call the landlord"]
    assert await state_of(w, died.id) == ReminderState.SENT.value
    assert await state_of(w, busy.id) == ReminderState.SENDING.value


async def test_the_reminders_of_a_person_are_listed_only_where_visible(world: World) -> None:
    """The store's query carries the privacy filter: a DM's reminders in that DM only."""
    w = world
    await w.reminder("renew the passport")
    reminders = build_reminders(w.services)
    from memory.models import Thread, ThreadKind, Viewer

    own = Viewer(user_id="501", thread=Thread(id="dm-501", kind=ThreadKind.DM, user_id="501"))
    other = Viewer(user_id="502", thread=Thread(id="dm-502", kind=ThreadKind.DM, user_id="502"))
    assert "renew the passport" in await reminders.listing(own)
    assert await reminders.listing(other) == "There are no reminders set here."


async def test_the_chat_models_reminder_tools_create_list_and_cancel_in_their_chat(
    world: World,
) -> None:
    from memory.llm import ToolCall
    from memory.models import Thread, ThreadKind, Viewer
    from services.reminder_tools import ReminderToolbox

    w = world
    w.clock.set(datetime(2026, 2, 2, 8, 0, tzinfo=UTC))
    ann = Viewer(user_id="501", thread=Thread(id="dm-501", kind=ThreadKind.DM, user_id="501"))
    ben = Viewer(user_id="502", thread=Thread(id="dm-502", kind=ThreadKind.DM, user_id="502"))
    tools = ReminderToolbox(build_reminders(w.services), ann, w.chat_id)
    assert [s.name for s in tools.specs] == ["create_reminder", "list_reminders", "cancel_reminder"]

    def call(name: str, **arguments: object) -> ToolCall:
        return ToolCall(id="c1", name=name, arguments=arguments)

    made = await tools.run(call("create_reminder", task="book the boiler service", when="Friday"))
    assert made == "I'll remind you on Friday 6 February at 09:00: book the boiler service."
    assert await tools.run(call("create_reminder", who="us", task="x", when="today at 10")) == (
        "I can remind everyone only in the group. Here I can remind you."
    )
    assert "book the boiler service" in await tools.run(call("list_reminders"))
    other = ReminderToolbox(build_reminders(w.services), ben, 502)
    assert await other.run(call("list_reminders")) == "There are no reminders set here."
    assert await other.run(call("cancel_reminder", about="boiler")) == (
        'I found no reminder about "boiler" here.'
    )
    assert await tools.run(call("cancel_reminder", about="boiler")) == (
        "Cancelled: book the boiler service."
    )
    assert await tools.run(call("list_reminders")) == "There are no reminders set here."


async def test_a_chat_that_refuses_the_bot_for_good_is_not_retried_forever(world: World) -> None:
    w = world
    w.clock.set(DUE + timedelta(seconds=30))
    gone = await w.reminder("water the orchids", chat_id=-100999)  # a chat Telegram never had
    await w.sweep()
    await w.drain()
    assert await state_of(w, gone.id) == ReminderState.UNDELIVERABLE.value
    w.clock.set(DUE + timedelta(minutes=10))
    await w.sweep()
    await w.drain()
    tried = [c for c in w.tg.calls_of("sendMessage") if str(c.get("chat_id")) == "-100999"]
    assert len(tried) == 1, "one attempt, refused, never retried"
    assert await state_of(w, gone.id) == ReminderState.UNDELIVERABLE.value


async def test_a_member_without_a_username_is_found_by_first_name_and_linked_in_the_group(
    world: World,
) -> None:
    """ "remind Bob …" in the group, Bob without a Telegram username: he is found among the
    circle's members by his first name, and the delivery names him with a ``text_mention``
    entity over his name, so Telegram notifies him; a name that is no member's, or two
    members', gets a clear answer and no reminder."""
    from memory.models import Thread, ThreadKind
    from memory.rules.intents.remind import SetReminder

    w = world
    tg, directory, now = w.tg, w.services.directory, w.clock.now()
    ann, bob = tg.user("Ann", username="ann"), tg.user("Bob Marsh")
    sam_a, sam_b = tg.user("Sam Ortiz"), tg.user("Sam Lee")
    group = tg.group_chat(title="Home", members=[ann, bob, sam_a, sam_b])
    circle = await directory.upsert_circle(int(group["id"]), "Home", now)
    for person in (ann, bob, sam_a, sam_b):
        user = await directory.upsert_user(
            int(person["id"]), str(person["first_name"]), person.get("username"), now
        )
        await directory.add_member(circle.id, user.id)
    thread = Thread(
        id=circle.id, kind=ThreadKind.GROUP, circle_id=circle.id, telegram_chat_id=group["id"]
    )
    viewer = await directory.viewer(str(ann["id"]), thread)
    reminders = build_reminders(w.services)

    async def ask(who: str, task: str) -> str:
        intent = SetReminder(who=who, task=task, when="in 1 minute")
        return await reminders.create(viewer, int(group["id"]), intent)

    made = await ask("bob", "bring the folding chairs")
    assert made.startswith("I'll remind Bob Marsh ") and ": bring the folding chairs." in made
    assert await ask("sam", "fix the gate") == (
        "More than one person here is called Sam (Sam Lee and Sam Ortiz), so I can't tell "
        "whom to remind. Name them by their @username if they have one."
    )
    assert await ask("zed", "walk the dog") == "I don't know Zed in this group."
    listed = await reminders.listing(viewer)
    assert "bring the folding chairs" in listed and "fix the gate" not in listed
    assert "walk the dog" not in listed
    w.clock.set(now + timedelta(minutes=1))
    await w.sweep()
    await w.drain()
    (sent,) = [m for m in tg.sent_messages if m["chat_id"] == group["id"]]
    assert sent["text"] == "Bob Marsh ⏰ Reminder: bring the folding chairs"
    entities = sent["message"]["entities"]  # type: ignore[index]
    assert [(e["type"], e["offset"], e["length"], e["user"]["id"]) for e in entities] == [
        ("text_mention", 0, len("Bob Marsh"), bob["id"])
    ]


async def test_a_forged_press_on_another_persons_dm_reminder_changes_nothing(
    world: World,
) -> None:
    """Telegram only sends a press from the chat the message is in; were a press (or a
    "snooze" reply) to name Ann's DM message from Ben's DM or from the group anyway, the
    visibility rule refuses it: Ann's delivered reminder is neither done nor snoozed."""
    from memory.models import Thread, ThreadKind, Viewer

    w = world
    r = await w.reminder("collect the prescription")
    w.clock.set(DUE + timedelta(seconds=20))
    await w.sweep()
    await w.drain()
    (sent,) = w.sent()
    message_id = int(sent["message_id"])  # type: ignore[call-overload]
    ben_dm = Viewer(user_id="502", thread=Thread(id="dm-502", kind=ThreadKind.DM, user_id="502"))
    group = Viewer(
        user_id="502",
        thread=Thread(id="c-home", kind=ThreadKind.GROUP, circle_id="c-home"),
        circle_ids=frozenset({"c-home"}),
    )
    reminders = build_reminders(w.services)
    for viewer in (ben_dm, group):
        for button in ("done", "snooze"):
            answer = await reminders.press(viewer, w.chat_id, message_id, button)
            assert answer in {
                "That reminder is not here any more.",
                "Reply to one of my reminders to snooze it.",
            }, answer
        assert await reminders.snooze(viewer, w.chat_id, message_id, 5) == (
            "Reply to one of my reminders to snooze it."
        )
    doc = await w.services.mongo.db[REMINDERS].find_one({"_id": r.id})
    assert doc is not None and doc["state"] == ReminderState.SENT.value
    assert doc["next_due"].replace(tzinfo=UTC) == DUE, "not snoozed"
    assert [d.get("done_at") for d in doc["deliveries"]] == [None]
