"""``alfred replay``: the real bot driven by a script of events (REPLAY.md).

Each ``say`` line becomes a real PTB ``Update`` processed by the same application and
handlers as production; what the bot sends is captured by an in-process Bot API. The
clock is simulated, background jobs run when the script drains them, and probes ask
what memory the bot would use — through the same privacy-filtered retrieval path.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from redis.asyncio import Redis
from telegram import Update

from bot.replay.output import chat_ref, take_sent
from bot.replay.reminders import ReplayReminders
from bot.replay.script import (
    _DURATION,
    _UNITS,
    DEFAULT_START,
)
from bot.telegram.app import build_application
from bot.telegram.offline_bot_api import FIRST_BOT_MESSAGE_ID, OfflineBotAPI, SentMessage
from integrations.mongo.reminders import REMINDERS
from memory.clock import ManualClock
from memory.constants import MESSAGES
from memory.errors import NotFound
from memory.models import Thread, Viewer
from runtime.bundle import Services
from runtime.container import build_assistant, build_services, load_models
from runtime.embedded import stop_before_removal
from runtime.erasure import ErasureFiles
from runtime.settings import Settings


class Jobs(Protocol):
    """The background side as the replay drives it."""

    async def after_message(self, thread_id: str) -> None: ...

    async def drain(self, now: datetime) -> list[tuple[str, str]]: ...

    def redis_client(self) -> Redis | None:
        """The Redis the jobs run on (an erase has it rewrite its append-only file)."""
        ...


@dataclass
class Names:
    """Script names ↔ Telegram ids, assigned in order of first mention."""

    users: dict[str, int] = field(default_factory=dict)
    circles: dict[str, int] = field(default_factory=dict)
    _user_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1001))
    _circle_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def user(self, name: str) -> int:
        if name not in self.users:
            self.users[name] = next(self._user_ids)
        return self.users[name]

    def circle(self, name: str) -> int:
        if name not in self.circles:
            self.circles[name] = -1_000_000_000 - next(self._circle_ids)
        return self.circles[name]

    def user_name(self, user_id: str | None) -> str | None:
        if user_id is None:
            return None
        for name, tid in self.users.items():
            if str(tid) == user_id:
                return name
        return user_id

    def circle_name(self, circle_id: str | None) -> str | None:
        if circle_id is None:
            return None
        for name, cid in self.circles.items():
            if str(cid) == circle_id:
                return name
        return circle_id


def display_name(name: str) -> str:
    return name[:1].upper() + name[1:]


class Replay:
    """A running bot world driven by script events."""

    def __init__(self, services: Services, clock: ManualClock, jobs: Jobs | None) -> None:
        self.services = services
        self.clock = clock
        self.jobs = jobs
        self.names = Names()
        #: A user's DM takes the bot's messages once they wrote there (Telegram's rule).
        self.api = OfflineBotAPI(started=set())
        residue = ErasureFiles(
            services.settings.data_dir() / "spool",
            lambda: jobs.redis_client() if jobs else None,
            services.mongo,
        )
        self.assistant = build_assistant(
            services,
            bot_username="alfred",
            after_message=jobs.after_message if jobs else None,
            residue=residue,
        )
        self.app = build_application("7000000001:replay", self.assistant, request=self.api)
        self.reminders = ReplayReminders(self.app.bot)
        if jobs is not None and hasattr(jobs, "extra_ctx"):
            jobs.extra_ctx.update(self.reminders.job_ctx())
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self.output: list[dict[str, Any]] = []
        #: The bot's latest message per chat (its Telegram message), for ``reply_to``.
        self._last_bot_message: dict[int, dict[str, Any]] = {}

    async def start(self) -> None:
        await self.app.initialize()
        # A kept data folder (``--data-dir``) holds earlier sessions' messages: number
        # after them. Starting at 1 again made each message of a second session look like
        # a redelivery of the first session's message of that number, which the journal
        # drops unanswered (and what a message creates is named after it).
        # The people's numbers after the journal's; the bot's after the reminders it
        # delivered (a reply to one names it).
        people = {"$ne": None, "$lt": FIRST_BOT_MESSAGE_ID}
        self._message_ids = itertools.count(
            await self._highest(MESSAGES, "telegram_message_id", people) + 1
        )
        delivered = await self._highest(REMINDERS, "last_message_id", {"$ne": None})
        self.api.number_from(delivered + 1)

    async def _highest(self, collection: str, field: str, among: dict[str, Any]) -> int:
        """The highest ``field`` of ``collection`` matching ``among``, 0 if none does."""
        cursor = (
            self.services.mongo.db[collection]
            .find({field: among}, {field: 1})
            .sort(field, -1)
            .limit(1)
        )
        return max([int(d[field]) async for d in cursor], default=0)

    async def stop(self) -> None:
        await self.app.shutdown()

    # --- building updates -------------------------------------------------------------

    def _user(self, name: str) -> dict[str, Any]:
        return {
            "id": self.names.user(name),
            "is_bot": False,
            "first_name": display_name(name),
            "username": name,
        }

    def _chat(self, ref: str) -> dict[str, Any]:
        kind, name = ref.split(":", 1)
        if kind == "group":
            return {"id": self.names.circle(name), "type": "group", "title": display_name(name)}
        user = self._user(name)
        return {
            "id": user["id"],
            "type": "private",
            "first_name": user["first_name"],
            "username": name,
        }

    async def _feed(self, payload: dict[str, Any]) -> None:
        payload["update_id"] = next(self._update_ids)
        update = Update.de_json(payload, self.app.bot)
        await self.app.process_update(update)

    def _message(
        self, chat: dict[str, Any], sender: dict[str, Any], **fields: Any
    ) -> dict[str, Any]:
        return {
            "message_id": next(self._message_ids),
            "date": int(self.clock.now().timestamp()),
            "chat": chat,
            "from": sender,
            **fields,
        }

    # --- events ---------------------------------------------------------------------------

    async def circle(self, name: str, members: list[str]) -> None:
        chat = self._chat(f"group:{name}")
        first = self._user(members[0]) if members else self._user("someone")
        bot = self.api.bot_user()
        await self._feed(
            {
                "my_chat_member": {
                    "chat": chat,
                    "from": first,
                    "date": int(self.clock.now().timestamp()),
                    "old_chat_member": {"user": bot, "status": "left"},
                    "new_chat_member": {"user": bot, "status": "member"},
                }
            }
        )
        if members:
            await self._feed(
                {
                    "message": self._message(
                        chat, first, new_chat_members=[self._user(m) for m in members]
                    )
                }
            )
        self.api.take()  # the greeting is not part of the scripted conversation

    async def say(
        self, sender: str, where: str, text: str, reply_to: str | None = None
    ) -> list[dict[str, Any]]:
        chat = self._chat(where)
        fields: dict[str, Any] = {"text": text}
        entities = _mentions(text, self.api.username)
        if entities:
            fields["entities"] = entities
        replied = self._last_bot_message.get(chat["id"]) if reply_to == "bot" else None
        if replied is not None:
            fields["reply_to_message"] = replied
        if where.startswith("dm:") and self.api.started is not None:
            self.api.started.add(chat["id"])  # they wrote to the bot: it may answer there
        await self._feed({"message": self._message(chat, self._user(sender), **fields)})
        out, sent_now = take_sent(self.api, where, sender, self.names.users, self.names.circles)
        self._note_sent(sent_now, where)
        return out

    def _note_sent(self, sent_now: list[SentMessage], where: str) -> None:
        """Remember the bot's latest message per chat (a later ``reply_to`` replies to it)
        and the reminders delivered (their buttons can be pressed)."""
        for sent in sent_now:
            self.reminders.seen(sent)
            ref = chat_ref(sent.chat_id, self.names.users, self.names.circles) or where
            if not ref:
                continue
            self._last_bot_message[sent.chat_id] = {
                "message_id": sent.message_id,
                "date": int(self.clock.now().timestamp()),
                "chat": self._chat(ref),
                "from": self.api.bot_user(),
                "text": sent.text,
            }

    async def press(self, who: str, where: str, label: str) -> list[dict[str, Any]]:
        """``who`` presses the inline button ``label`` on the latest bot message in
        ``where`` that carries it (nothing happens when none does)."""
        chat = self._chat(where)
        sent = self.reminders.carrying(chat["id"], label)
        if sent is None:
            return []
        date = int(self.clock.now().timestamp())
        await self._feed(
            self.reminders.callback(sent, label, self._user(who), chat, date, self.api.bot_user())
        )
        out, sent_now = take_sent(self.api, where, who, self.names.users, self.names.circles)
        self._note_sent(sent_now, where)
        return out

    def advance(self, value: str) -> None:
        match = _DURATION.match(value)
        if match:
            amount, unit = float(match.group(1)), match.group(2)
            self.clock.advance(timedelta(**{_UNITS[unit]: amount}))
        else:
            self.clock.set(datetime.fromisoformat(value.replace("Z", "+00:00")))

    async def drain(self) -> list[dict[str, Any]]:
        if self.jobs is None:
            return []
        ran = [
            {"job": {"name": n, "status": s}} for n, s in await self.jobs.drain(self.clock.now())
        ]
        # Reminders the jobs delivered: "to" is whom each was for (null: the whole group).
        delivered, sent_now = take_sent(
            self.api,
            "",
            None,
            self.names.users,
            self.names.circles,
            to_of=lambda sent: self.names.user_name(self.reminders.to.get(sent.message_id)),
        )
        self._note_sent(sent_now, "")
        return ran + delivered

    async def viewer(self, who: str, where: str) -> Viewer:
        d = self.services.directory
        now = self.clock.now()
        uid = self.names.user(who)
        await d.upsert_user(uid, display_name(who), who, now)
        kind, name = where.split(":", 1)
        thread: Thread | None
        if kind == "group":
            thread = await d.thread(str(self.names.circle(name)))
            if thread is None:
                circle = await d.upsert_circle(self.names.circle(name), display_name(name), now)
                thread = await d.thread(circle.id)
        else:
            thread = await d.dm_thread(str(self.names.user(name)), self.names.user(name), now)
        if thread is None:
            raise NotFound(f"the thread {where} vanished while the replay registered {who}")
        return await d.viewer(str(uid), thread)

    async def probe(self, who: str, where: str, query: str) -> dict[str, Any]:
        viewer = await self.viewer(who, where)
        session = await self._session(viewer.thread.id)
        memory = await self.assistant.conversation.context_for(viewer, query, session)
        always, block, retrieved, scored = (
            memory.always,
            memory.facts_block,
            memory.retrieved,
            memory.scored,
        )
        memories = [
            {
                "id": f.fact.id,
                "content": f.fact.content,
                "category": f.fact.category.value,
                "owner": self.names.user_name(f.fact.partition.owner_user_id),
                "visibility": f.fact.partition.visibility.value,
                "circle": self.names.circle_name(f.fact.partition.circle_id),
                "score": round(f.score, 4),
            }
            for f in scored
        ]
        context = "\n\n".join(b for b in (always, block) if b)
        return {
            "probe": {
                "as": who,
                "in": where,
                "query": query,
                "retrieved": retrieved,
                "memories": memories,
                "context": context,
            }
        }

    async def calendar(
        self, user: str, event: dict[str, Any], where: str | None
    ) -> list[dict[str, Any]]:
        """An event of ``user``'s calendar, as the sync (``where`` None) or a calendar
        tool call in ``where`` would deliver it."""
        from services.calendar import deliver_event

        if not self.services.settings.flags().calendar:
            return []  # MEMORY_CALENDAR=false: no calendar memories, as in production
        owner = await self.viewer(user, f"dm:{user}")  # registers the user and their DM
        thread = None if where is None else (await self.viewer(user, where)).thread
        await deliver_event(self.services.calendar, owner.user_id, event, thread)
        return []

    async def _session(self, thread_id: str) -> str | None:
        return await self.services.directory.current_session(thread_id)

    async def dump(self) -> dict[str, Any]:
        s = self.services
        notes = await s.notes.all_for_audit()

        def plain(model: Any) -> dict[str, Any]:
            data: dict[str, Any] = model.model_dump(mode="json", exclude={"embedding"})
            part = data.pop("partition", None)
            if part:
                data.update(part)
            return data

        return {
            "dump": {
                "facts": [plain(f) for f in await s.facts.all_for_audit()],
                "reflections": [plain(r) for r in notes["reflections"]],
                "consolidated": [plain(c) for c in notes["consolidated"]],
                "clarifications": [plain(c) for c in notes["clarifications"]],
                "messages": [plain(m) for m in await s.journal.all_for_audit()],
            }
        }

    async def run_event(self, kind: str, value: Any) -> list[dict[str, Any]]:
        if kind == "circle":
            await self.circle(value["name"], value["members"])
            return []
        if kind == "say":
            return await self.say(value["from"], value["in"], value["text"], value.get("reply_to"))
        if kind == "clock":
            self.advance(value)
            return []
        if kind == "jobs":
            return await self.drain()
        if kind == "probe":
            return [await self.probe(value["as"], value["in"], value["query"])]
        if kind == "dump":
            return [await self.dump()]
        if kind == "calendar":
            return await self.calendar(value["user"], value["event"], value.get("from"))
        if kind == "press":
            return await self.press(value["as"], value["in"], value["button"])
        raise AssertionError(kind)


def _mentions(text: str, username: str) -> list[dict[str, Any]]:
    """The entities Telegram would attach: a leading ``/command`` and ``@alfred`` mentions,
    with offsets in UTF-16 code units (an unpaired surrogate, which ``alfred chat`` may read
    from a terminal, counts as one)."""
    out: list[dict[str, Any]] = []
    command = re.match(r"^/[A-Za-z0-9_]+(@\w+)?", text)
    if command:
        out.append(
            {
                "type": "bot_command",
                "offset": 0,
                "length": len(command.group(0).encode("utf-16-le", "surrogatepass")) // 2,
            }
        )
    for match in re.finditer(rf"@{re.escape(username)}\b", text, re.IGNORECASE):
        offset = len(text[: match.start()].encode("utf-16-le", "surrogatepass")) // 2
        length = len(match.group(0).encode("utf-16-le", "surrogatepass")) // 2
        out.append({"type": "mention", "offset": offset, "length": length})
    return out


@asynccontextmanager
async def replay_world(
    settings: Settings, *, start: datetime = DEFAULT_START, with_jobs: bool = True
) -> AsyncIterator[Replay]:
    """Services on a manual clock, the application, and the background jobs."""
    clock = ManualClock(start)
    services = await build_services(settings, clock=clock)
    jobs: Jobs | None = None
    try:
        from migrations import MigrationContext, migrate

        await migrate(
            MigrationContext(
                services.mongo.db,
                atlas_search=services.capabilities.atlas_search,
                embedding_dims=services.embedder.dimensions,
                log=lambda _: None,
            )
        )
        await load_models(services)  # the first message's search has its vectors too
        if with_jobs:
            from bot.replay.jobs import open_replay_jobs

            jobs = await open_replay_jobs(services)
        replay = Replay(services, clock, jobs)
        await replay.start()
        try:
            yield replay
        finally:
            await replay.stop()
    finally:
        close = getattr(jobs, "aclose", None)
        if close is not None:
            await close()
        await services.aclose()


async def run_script(settings: Settings, events: list[tuple[int, str, Any]], emit: Any) -> None:
    """Run parsed events, calling ``emit(obj)`` for every output object."""
    start = DEFAULT_START
    first_say = next((i for i, (_, k, _) in enumerate(events) if k == "say"), len(events))
    for _, kind, value in events[:first_say]:
        if kind == "clock" and not _DURATION.match(value):
            start = datetime.fromisoformat(value.replace("Z", "+00:00"))
    async with replay_world(settings, start=start) as replay:
        for _, kind, value in events:
            for obj in await replay.run_event(kind, value):
                emit(obj)


@asynccontextmanager
async def data_folder(path: Path | None) -> AsyncIterator[Path]:
    """The given folder, or a temporary one removed afterwards, its embedded servers
    stopped first (else they outlive it and try to save into a folder that is gone)."""
    if path is not None:
        await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True)
        yield path
        return
    tmp = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="alfred-replay-"))
    try:
        yield tmp
    finally:
        await asyncio.to_thread(stop_before_removal, tmp)
        await asyncio.to_thread(shutil.rmtree, tmp, ignore_errors=True)
