"""Hostile input through the real bot: the reply path on the embedded database, the
``alfred replay`` and settings errors of the command line, and odd Telegram updates.

Invariants: nothing raises into PTB's error handler, every answer is a non-empty
message Telegram accepts, every message that has a person and some text is journaled,
and a bad script or setting is one clear line on stderr, never a traceback.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from pydantic import SecretStr
from telegram import Update

from bot.replay import Replay, replay_world
from bot.telegram.handlers.messages import NON_TEXT_REPLY
from bot.telegram.run import run_bot
from bot.telegram.sending import ANONYMOUS_REPLY
from memory.errors import ConfigurationError, Unavailable
from memory.rules.intents import ForgetAllIntent, ForgetIntent, detect_intent
from runtime.settings import Settings
from services.messages import TELEGRAM_MAX_TEXT, safe_text
from services.reply.assistant import LLM_DOWN, MEMORY_DOWN
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fake_telegram import MAX_TEXT_LENGTH, FakeTelegram
from tests.helpers.hostile import hostile_message
from tests.integration.test_telegram_bot import (  # noqa: F401 - fixtures used by name
    _texts,
    bot_env,
    handler_errors,
    spool_file,
)

ROOT = Path(__file__).resolve().parents[2]
FORGET_PLACEHOLDER = "[a request to forget something]"
FEW = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# --------------------------------------------------------------------------------------
# 1. The reply path: arbitrary text through the real Assistant on the embedded database
# --------------------------------------------------------------------------------------


@dataclass
class Hostile:
    """A replay world and every error the Telegram layer logged while it ran."""

    replay: Replay
    errors: list[logging.LogRecord] = field(default_factory=list)
    _groups: itertools.count[int] = field(default_factory=itertools.count)

    def new_group(self) -> str:
        """A group of its own for each example: the rate limiter lets a bot send 20
        messages a minute to one group (in real time, whatever the replay clock says)."""
        return f"group:g{next(self._groups)}"

    async def journaled(self, text: str) -> int:
        """How many user messages with exactly this text the journal holds."""
        messages = self.replay.services.mongo.db["messages"]
        return await messages.count_documents({"role": "user", "text": text})


class _Collect(logging.Handler):
    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)


@pytest.fixture(scope="module")
async def hostile(settings: Settings) -> AsyncIterator[Hostile]:
    """One replay world for the module (a circle "fam" of ann and ben), on its own
    database of the session's embedded server."""
    database = f"hostile_{uuid.uuid4().hex[:10]}"
    world = settings.model_copy(update={"mongodb_database": database})
    async with replay_world(world, with_jobs=False) as replay:
        state = Hostile(replay)
        collector = _Collect(state.errors)
        logger = logging.getLogger("bot.telegram")
        logger.addHandler(collector)
        try:
            await replay.circle("fam", ["ann", "ben"])
            yield state
        finally:
            logger.removeHandler(collector)
            await drop_test_database(replay.services.mongo.client, database)


def _is_command(text: str) -> bool:
    """Whether the replay marks ``text`` as a command (commands are not journaled)."""
    return re.match(r"/[A-Za-z0-9_]", text) is not None


async def _say_and_check(
    h: Hostile, sender: str, where: str, text: str, *, expect_reply: bool
) -> list[str]:
    stored = safe_text(text)
    if isinstance(detect_intent(stored), ForgetIntent | ForgetAllIntent):
        stored = FORGET_PLACEHOLDER
    before = await h.journaled(stored)
    out = await h.replay.say(sender, where, text)
    assert not h.errors, [r.getMessage() for r in h.errors]
    replies = [o["reply"]["text"] for o in out if "reply" in o]
    assert all(isinstance(r, str) and 0 < len(r) <= TELEGRAM_MAX_TEXT for r in replies)
    assert MEMORY_DOWN not in replies and LLM_DOWN not in replies, "the reply path failed"
    if not safe_text(text).strip():
        assert replies in ([NON_TEXT_REPLY], []), "blank text gets the clear answer or silence"
        return replies
    if expect_reply:
        assert replies, f"no answer to {text[:80]!r}"
    if not _is_command(text):
        assert await h.journaled(stored) == before + 1, "the message was not journaled"
    return replies


@FEW
@given(text=hostile_message)
@example(text="remember that")
@example(text="remember that " + "x" * 10_000)
@example(text="forget (.*)+[")
@example(text="actually")
@example(text="\ud83d\x00 <b>hi</b> *there* [x](tg://user?id=1)")
@example(text="a" * 50_000)
async def test_any_text_in_a_dm_is_answered_and_journaled(hostile: Hostile, text: str) -> None:
    await _say_and_check(hostile, "ann", "dm:ann", text, expect_reply=True)


@FEW
@given(text=hostile_message)
@example(text="\udfff remember that our code is 4512")
@example(text="")
async def test_any_text_addressed_in_a_group_is_answered_and_journaled(
    hostile: Hostile, text: str
) -> None:
    where = hostile.new_group()
    await _say_and_check(hostile, "ben", where, "@alfred " + text, expect_reply=True)


@FEW
@given(text=hostile_message)
async def test_any_text_in_a_group_is_journaled_without_errors(hostile: Hostile, text: str) -> None:
    await _say_and_check(hostile, "ann", hostile.new_group(), text, expect_reply=False)


async def test_names_and_titles_with_unpaired_surrogates_are_stored(hostile: Hostile) -> None:
    """A Telegram name or group title that cannot be encoded is stored with U+FFFD in
    its place, so the person's messages are journaled instead of failing forever."""
    replay = hostile.replay
    await replay.circle("odd\ud800", ["zed\udfff"])
    replies = await _say_and_check(
        hostile,
        "zed\udfff",
        "group:odd\ud800",
        "@alfred remember that I like tea",
        expect_reply=True,
    )
    assert replies == ["Got it, I'll remember that."]
    users = replay.services.mongo.db["users"]
    assert await users.count_documents({"name": "Zed\ufffd"}) == 1


# --------------------------------------------------------------------------------------
# 2. ``alfred replay``: a bad script is one line naming the script line
# --------------------------------------------------------------------------------------


def _alfred(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "PYTHONPATH": str(ROOT),
            "PTB_TIMEDELTA": "1",
            "ALFRED_DATA_DIR": str(tmp_path / "data"),
            **env,
        },
    )


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_replay_cli_refuses_bad_scripts_in_one_line(tmp_path: Path) -> None:
    ok = '{"circle": "fam", "members": ["ann"]}\n'
    cases: dict[str, tuple[bytes | None, str]] = {
        "binary.jsonl": (ok.encode() + b'{"say": "\xff\xfe"}\n', "binary.jsonl:line 2: not UTF-8"),
        "deep.jsonl": (ok.encode() + b"[" * 200_000 + b"\n", "deep.jsonl:line 2: nested too"),
        "huge.jsonl": (
            ok.encode() + b'{"jobs": "' + b"x" * 2_000_000 + b'"}\n',
            'huge.jsonl:line 2: "jobs" must be "drain"',
        ),
        "surrogate.jsonl": (
            ok.encode() + b'{"say": {"from": "ann", "in": "dm:ann", "text": "\\ud83d"}}\n',
            "surrogate.jsonl:line 2: holds an unpaired surrogate",
        ),
        "types.jsonl": (ok.encode() + b'{"probe": {"as": 1, "in": [], "query": {}}}\n', "line 2"),
        "missing.jsonl": (None, "cannot read"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        done = _alfred(tmp_path, "replay", str(path))
        assert done.returncode == 2, (name, done.stderr[-500:])
        assert expected in _one_line(done.stderr), name
        assert done.stdout == ""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = _alfred(tmp_path, "replay", str(folder))
    assert done.returncode == 2
    assert _one_line(done.stderr) == f"alfred replay: cannot read {folder}: Is a directory"


def test_replay_cli_runs_hostile_text_that_is_valid_json(tmp_path: Path) -> None:
    """Raw U+2028 and U+0085 inside a JSON string do not end the script line, and the
    replies to hostile messages come out as JSON lines."""
    lines = [
        {"say": {"from": "ann", "in": "dm:ann", "text": "remember that I like\u2028tea\u0085"}},
        {"say": {"from": "ann", "in": "dm:ann", "text": "\x00\u202e <b>*x*</b> " + "y" * 20_000}},
        {"say": {"from": "ann", "in": "dm:ann", "text": "forget .*(["}},
    ]
    script = tmp_path / "s.jsonl"
    script.write_text("\ufeff" + "\n".join(json.dumps(x, ensure_ascii=False) for x in lines))
    done = _alfred(tmp_path, "replay", str(script))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    replies = [json.loads(line)["reply"]["text"] for line in done.stdout.splitlines()]
    assert len(replies) == 3 and all(0 < len(r) <= TELEGRAM_MAX_TEXT for r in replies)
    assert replies[0] == "Got it, I'll remember that."


# --------------------------------------------------------------------------------------
# 3. Settings: ``alfred doctor`` and ``alfred run`` refuse a malformed value in one line
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"MEMORY_ALLOWED_CIRCLES": "abc"},
            "alfred: invalid setting MEMORY_ALLOWED_CIRCLES: 'abc' is not a chat id",
        ),
        (
            {"WEBHOOK_PORT": "-5"},
            "alfred: invalid setting WEBHOOK_PORT: Input should be greater than or equal to 1",
        ),
        (
            {"MEM0_MODE": "sometimes"},
            "alfred: invalid setting MEM0_MODE: must be one of auto, off, cloud, oss",
        ),
        ({"LOG_LEVEL": "LOUD"}, "alfred: invalid setting LOG_LEVEL: must be one of DEBUG"),
    ],
)
def test_doctor_and_run_refuse_a_malformed_setting(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    for command in ("doctor", "run"):
        done = _alfred(tmp_path, command, TELEGRAM_BOT_TOKEN="123:abc", **env)
        assert done.returncode == 2, (command, done.stderr[-500:])
        assert _one_line(done.stderr).startswith(expected), command
        assert not (tmp_path / "data" / "mongo").exists(), "nothing was started"


def test_a_dotenv_that_is_not_utf8_and_a_garbage_uri_are_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_bytes(b"LOG_LEVEL=\xff\n")
    done = _alfred(tmp_path, "doctor")
    assert done.returncode == 2
    assert _one_line(done.stderr) == (
        "alfred: .env is not UTF-8 text (byte 11) (save it as UTF-8, or remove it)"
    )
    (home / ".env").unlink()
    done = _alfred(tmp_path, "run", TELEGRAM_BOT_TOKEN="123:abc", MONGODB_URI="garbage")
    assert done.returncode == 1
    assert _one_line(done.stderr).startswith("alfred: MONGODB_URI is not a valid MongoDB URI")


async def test_a_refused_token_or_an_unreachable_bot_api_is_a_clear_error(
    settings: Settings, mongo: Any, redis: Any
) -> None:
    database = f"tg_{uuid.uuid4().hex[:12]}"
    try:
        async with FakeTelegram(bot_username="alfred") as tg:
            wrong = settings.model_copy(
                update={
                    "telegram_bot_token": SecretStr("999:wrong"),
                    "telegram_api_base_url": tg.base_url,
                    "mongodb_database": database,
                }
            )
            with pytest.raises(ConfigurationError, match="Telegram refused TELEGRAM_BOT_TOKEN"):
                await run_bot(wrong)
            gone = wrong.model_copy(
                update={
                    "telegram_bot_token": SecretStr(tg.token),
                    "telegram_api_base_url": "http://127.0.0.1:9/bot",
                }
            )
        with pytest.raises(Unavailable, match=r"cannot reach the Bot API at http://127\.0\.0\.1:9"):
            await run_bot(gone)
    finally:
        await drop_test_database(mongo.client, database)
    # A bot that failed to start gives the signals back: SIGINT and SIGTERM must not be
    # swallowed by handlers left on a loop that goes on (they were, for the whole session).
    loop = asyncio.get_running_loop()
    assert not loop.remove_signal_handler(signal.SIGINT)
    assert not loop.remove_signal_handler(signal.SIGTERM)


# --------------------------------------------------------------------------------------
# 4. Telegram updates without a person, or without text
# --------------------------------------------------------------------------------------


def _with(update: dict[str, Any], drop: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    message = update["message"]
    for key in drop:
        message.pop(key, None)
    message.update(fields)
    return update


async def test_updates_without_a_person_or_without_text(bot_env: Any) -> None:  # noqa: F811
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        unreadable = bot.settings.data_dir() / "spool" / "unreadable.jsonl"
        ann = tg.user("Ann", username="ann")
        family = tg.group_chat(title="Family", supergroup=True, members=[ann])
        dm = tg.private_chat(ann)
        anonymous = tg.user("Group", username="GroupAnonymousBot", id=1087968824, is_bot=True)
        channel_bot = tg.user("Channel", username="Channel_Bot", id=136817688, is_bot=True)
        news = tg.channel(title="News")

        # an anonymous admin (sent as the group) talking to Alfred gets told why not
        update = _with(
            tg.text_message(family, anonymous, "@alfred remember that the code is 4512"),
            sender_chat=family,
        )
        (answer,) = await bot.say(update)
        assert answer["text"] == ANONYMOUS_REPLY
        # … and so does a channel posting in the group; unaddressed ones get silence
        update = _with(tg.text_message(family, channel_bot, "@alfred hi"), sender_chat=news)
        assert _texts(await bot.say(update)) == [ANONYMOUS_REPLY]
        command = _with(tg.text_message(family, anonymous, "/status"), sender_chat=family)
        assert _texts(await bot.say(command)) == [ANONYMOUS_REPLY]
        quiet = _with(tg.text_message(family, anonymous, "lunch at noon"), sender_chat=family)
        assert await bot.say(quiet) == []
        # an automatic forward of the linked channel mentioning Alfred is not a question
        forward = _with(
            tg.text_message(family, channel_bot, "@alfred news"),
            sender_chat=news,
            is_automatic_forward=True,
        )
        assert await bot.say(forward) == []
        # no "from" at all (a buggy proxy): no crash, an answer when addressed
        nobody = _with(tg.text_message(family, ann, "@alfred hi"), ("from",))
        assert _texts(await bot.say(nobody)) == [ANONYMOUS_REPLY]
        assert await bot.say(_with(tg.text_message(dm, ann, "hi"), ("from",))) == []
        assert await bot.db["messages"].count_documents({"text": {"$regex": "4512|news"}}) == 0

        # only entities, no visible words: a bare mention is answered like any message
        (reply,) = await bot.say(tg.text_message(family, ann, "@alfred"))
        assert 0 < len(reply["text"]) <= MAX_TEXT_LENGTH
        # a caption far over Telegram's own limit is read, answered and journaled whole
        caption = "remember that " + "the garden needs water every day. " * 1_000
        photo = tg.photo_message(dm, ann, caption)
        sent = await bot.say(photo)
        assert sent and all(0 < len(m["text"]) <= MAX_TEXT_LENGTH for m in sent)
        assert await bot.message_doc(dm, photo["message"]["message_id"]) is not None

        # a poll, a location and a dice: the clear non-text answer in a DM, silence in a group
        old_poll = {
            "id": "p1",
            "question": "Pizza?",
            "options": [{"text": "yes", "voter_count": 0}, {"text": "no", "voter_count": 0}],
            "total_voter_count": 0,
            "is_closed": False,
            "is_anonymous": True,
            "type": "regular",
            "allows_multiple_answers": False,
        }
        poll = {
            **old_poll,
            "options": [
                {"text": "yes", "voter_count": 0, "persistent_id": "o1"},
                {"text": "no", "voter_count": 0, "persistent_id": "o2"},
            ],
            "allows_revoting": True,
            "members_only": False,
        }
        others: list[dict[str, Any]] = [
            {"poll": poll},
            {"location": {"latitude": 48.85, "longitude": 2.35}},
            {"dice": {"emoji": "🎲", "value": 6}},
        ]
        for extra in others:
            update = _with(tg.text_message(dm, ann, "x"), ("text", "entities"), **extra)
            assert _texts(await bot.say(update)) == [NON_TEXT_REPLY]
            update = _with(tg.text_message(family, ann, "x"), ("text", "entities"), **extra)
            assert await bot.say(update) == []

        # an update this PTB cannot read (a poll from an older Bot API) is kept aside, and
        # polling moves past it instead of asking for the same failing batch forever
        unreadable.unlink(missing_ok=True)
        update = _with(tg.text_message(dm, ann, "x"), ("text", "entities"), poll=old_poll)
        assert await bot.say(update) == []
        (kept,) = [json.loads(line) for line in unreadable.read_text().splitlines()]
        assert kept["message"]["message_id"] == update["message"]["message_id"]
        assert kept["message"]["poll"] == old_poll
        unreadable.unlink()

        # an unpaired surrogate in the text, the name and the title: answered and journaled
        odd = tg.user("Zed\udfff", username="zed")
        weird = tg.group_chat(title="Odd\ud800", members=[odd])
        mention = [{"type": "mention", "offset": 0, "length": 7}]
        text = "@alfred remember that I sing \ud83d"
        (reply,) = await bot.say(tg.text_message(weird, odd, text, entities=mention))
        assert reply["text"] == "Got it, I'll remember that."
        journaled = {"text": "@alfred remember that I sing \ufffd"}
        assert await bot.db["messages"].count_documents(journaled) == 1
        assert all(c.status == 200 for c in tg.calls if c.method == "sendMessage")


async def test_webhook_keeps_an_unreadable_update_and_refuses_what_is_no_update(
    tmp_path: Path,
) -> None:
    """Refusing an update PTB cannot read would make Telegram deliver it again and again,
    holding back every update after it: it is accepted and kept instead. A body that is
    no update at all (no ``update_id``) is still refused."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.telegram.app import build_application
    from bot.telegram.offline_bot_api import OfflineBotAPI
    from bot.telegram.webhook import SECRET_HEADER, make_web_app

    application = build_application("7000000001:hook", object(), request=OfflineBotAPI())  # type: ignore[arg-type]
    unreadable = tmp_path / "spool" / "unreadable.jsonl"
    app = make_web_app(application, "/telegram", "s3cret", unreadable)
    headers = {SECRET_HEADER: "s3cret"}
    chat = {"id": 5, "type": "private", "first_name": "Ann"}
    old_poll = {"id": "p", "question": "?", "options": [], "total_voter_count": 0}
    bad = {"update_id": 7, "message": {"message_id": 1, "date": 0, "chat": chat, "poll": old_poll}}
    good = {"update_id": 8, "message": {"message_id": 2, "date": 0, "chat": chat, "text": "hi"}}
    async with TestClient(TestServer(app)) as client:
        response = await client.post("/telegram", json=bad, headers=headers)
        assert response.status == 200
        assert [json.loads(line) for line in unreadable.read_text().splitlines()] == [bad]
        for body in ({}, {"message": good["message"]}, [bad]):
            response = await client.post("/telegram", json=body, headers=headers)
            assert response.status == 400, body
        response = await client.post("/telegram", json=good, headers=headers)
        assert response.status == 200
    queued = application.update_queue.get_nowait()
    assert isinstance(queued, Update) and queued.message is not None
    assert queued.update_id == 8 and queued.message.text == "hi"
    assert application.update_queue.empty()
