"""The fake Telegram Bot API server, proven against the REAL python-telegram-bot stack.

Alfred's bot tests will trust ``tests.helpers.fake_telegram``; these tests are why they
may. Each one builds PTB exactly as production does (``Application.builder()`` /
``Bot``), points only ``base_url`` at the fake, and checks the behaviour end to end:
long polling through ``Updater.start_polling``, webhooks through PTB's own tornado
server (with the secret-token check), error mapping (429 → ``RetryAfter`` or a retry by
``AIORateLimiter``, 4096+ characters → ``BadRequest``), and that every update builder
produces JSON PTB parses without leftovers.

No fixed sleeps: everything waits on the fake's recordings with deadlines.
"""

from __future__ import annotations

import asyncio
import datetime as dtm
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpx
import pytest
from telegram import (
    Bot,
    Message,
    TelegramObject,
    Update,
)
from telegram.constants import ParseMode
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
)
from telegram.ext import (
    AIORateLimiter,
    Application,
    CommandHandler,
    ContextTypes,
    ExtBot,
    MessageHandler,
    filters,
)

from tests.helpers.fake_telegram import (
    MAX_TEXT_LENGTH,
    FakeTelegram,
    entity_for,
    free_port,
    utf16_len,
)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opt in to PTB 22's timedelta time periods.

    Without it, merely *constructing* ``RetryAfter`` (or reading ``Voice.duration``)
    emits ``PTBDeprecationWarning``, which this suite's ``filterwarnings = error`` turns
    into an exception raised from inside PTB's request layer.
    """
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(bot_username="alfred") as fake:
        yield fake


@pytest.fixture
async def bot(tg: FakeTelegram) -> AsyncIterator[Bot]:
    """A plain PTB ``Bot`` (no rate limiter) talking to the fake; initialised (getMe)."""
    async with Bot(tg.token, base_url=tg.base_url) as client:
        yield client


def _build_app(tg: FakeTelegram, **builder: Any) -> Application[Any, Any, Any, Any, Any, Any]:
    b = Application.builder().token(tg.token).base_url(tg.base_url)
    if "rate_limiter" in builder:
        b = b.rate_limiter(builder["rate_limiter"])
    return b.build()


def _assert_fully_parsed(obj: Any, path: str = "update") -> None:
    """Every key the fake sent maps to a PTB attribute: no ``api_kwargs`` leftovers,
    which would mean a misspelt or outdated field in a builder."""
    if isinstance(obj, TelegramObject):
        assert not obj.api_kwargs, f"{path} has unknown fields {dict(obj.api_kwargs)}"
        for name, value in obj._get_attrs(include_private=False).items():
            _assert_fully_parsed(value, f"{path}.{name}")
    elif isinstance(obj, tuple | list):
        for i, item in enumerate(obj):
            _assert_fully_parsed(item, f"{path}[{i}]")


# --------------------------------------------------------------------------------------
# (a) Polling: Application + Updater.start_polling
# --------------------------------------------------------------------------------------


async def test_polling_echo_app_replies_to_each_chat(tg: FakeTelegram) -> None:
    ann = tg.user("Ann", username="ann")
    bob = tg.user("Bob")
    dm = tg.private_chat(ann)
    family = tg.group_chat(title="Family", members=[ann, bob], creator=ann)

    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message and update.effective_user
        await update.effective_message.reply_text(f"hello {update.effective_user.first_name}")

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        assert message is not None and message.text is not None
        mentions = sorted(message.parse_entities(["mention"]).values())
        await message.reply_text(f"echo: {message.text} | mentions={mentions}")

    app = _build_app(tg)
    app.add_handler(CommandHandler("start", start))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    await app.initialize()
    await app.start()
    try:
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=1)
        pushed_dm = tg.push_text(dm, ann, "hi 🎉")
        # Emoji before the mention: offsets must be UTF-16 for PTB to cut "@alfred" out.
        pushed_group = tg.push_text(family, bob, "🎉🎉 hey @alfred, remember 🍕")
        tg.push_text(dm, ann, "/start")

        sent = await tg.wait_for_messages(3)
    finally:
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        await app.stop()
        await app.shutdown()

    by_text = {m["text"]: m for m in sent}
    assert set(by_text) == {
        "echo: hi 🎉 | mentions=[]",
        "echo: 🎉🎉 hey @alfred, remember 🍕 | mentions=['@alfred']",
        "hello Ann",
    }
    dm_echo = by_text["echo: hi 🎉 | mentions=[]"]
    assert dm_echo["chat_id"] == dm["id"] == ann["id"]
    assert dm_echo["reply_to_message_id"] is None  # PTB quotes only outside private chats
    group_echo = by_text["echo: 🎉🎉 hey @alfred, remember 🍕 | mentions=['@alfred']"]
    assert group_echo["chat_id"] == family["id"]
    group_msg_id = pushed_group["message"]["message_id"]
    assert group_echo["reply_to_message_id"] == group_msg_id
    assert group_echo["message"]["reply_to_message"]["message_id"] == group_msg_id
    assert group_echo["message"]["from"]["username"] == "alfred"
    assert by_text["hello Ann"]["chat_id"] == ann["id"]
    assert pushed_dm["message"]["message_id"] < by_text["hello Ann"]["message_id"]

    # What PTB put on the wire.
    send_calls = [c for c in tg.calls if c.method == "sendMessage"]
    assert {c.content_type for c in send_calls} == {"application/x-www-form-urlencoded"}
    assert send_calls[0].http_method == "POST"
    methods = [c.method for c in tg.calls]
    assert methods[:3] == ["getMe", "deleteWebhook", "getUpdates"]
    polls = tg.calls_of("getUpdates")
    assert polls[0]["timeout"] == 1
    # Stopping makes PTB confirm everything it fetched: nothing left on the server.
    assert polls[-1]["timeout"] == 0
    assert tg.pending_updates == []


# --------------------------------------------------------------------------------------
# (b) Webhooks: PTB's own webhook server, fed by the fake
# --------------------------------------------------------------------------------------


async def test_webhook_mode_delivers_with_secret_and_rejects_forgeries(tg: FakeTelegram) -> None:
    ann = tg.user("Ann")
    dm = tg.private_chat(ann)
    handled: list[int] = []

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        handled.append(update.update_id)
        assert update.effective_message is not None
        await update.effective_message.reply_text(f"got: {update.effective_message.text}")

    port = free_port()
    url = f"http://127.0.0.1:{port}/tg-hook"
    app = _build_app(tg)
    app.add_handler(MessageHandler(filters.TEXT, echo))
    await app.initialize()
    await app.start()
    try:
        assert app.updater is not None
        await app.updater.start_webhook(
            listen="127.0.0.1",
            port=port,
            url_path="tg-hook",
            webhook_url=url,
            secret_token="s3cret",
        )
        assert tg.webhook is not None
        assert (tg.webhook.url, tg.webhook.secret_token) == (url, "s3cret")

        first = tg.push_text(dm, ann, "via webhook")
        sent = await tg.wait_for_messages(1)
        assert sent[0]["text"] == "got: via webhook"
        assert sent[0]["chat_id"] == ann["id"]
        # The fake records a delivery when PTB's server has answered, which may be
        # after the reply was sent; the queue empties in the same step.
        await tg.wait_until(lambda: tg.pending_updates == [], what="webhook queue drained")
        delivered = [d for d in tg.webhook_deliveries if d.status == 200]
        assert [d.update_id for d in delivered] == [first["update_id"]]
        assert all(d.secret_token == "s3cret" for d in tg.webhook_deliveries)

        with pytest.raises(Conflict, match="webhook is active"):
            await app.bot.get_updates(timeout=0)

        forged = tg.text_message(dm, ann, "forged")
        forged["update_id"] = 999_999_999
        async with httpx.AsyncClient() as client:
            no_secret = await client.post(url, json=forged)
            wrong_secret = await client.post(
                url, json=forged, headers={"X-Telegram-Bot-Api-Secret-Token": "guess"}
            )
        assert no_secret.status_code == 403
        assert wrong_secret.status_code == 403

        # PTB handles updates in order: once this one is answered, a queued forgery
        # would have been handled before it.
        second = tg.push_text(dm, ann, "after forgery")
        await tg.wait_for_messages(2)
    finally:
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        await app.stop()
        await app.shutdown()

    assert handled == [first["update_id"], second["update_id"]]
    assert [m["text"] for m in tg.sent_messages] == ["got: via webhook", "got: after forgery"]


async def test_webhook_delivery_retries_until_the_server_answers(tg: FakeTelegram) -> None:
    """Updates wait in the queue while the endpoint is down (setWebhook before serving)."""
    ann = tg.user("Ann")
    dm = tg.private_chat(ann)
    port = free_port()
    async with Bot(tg.token, base_url=tg.base_url) as client:
        await client.set_webhook(f"http://127.0.0.1:{port}/hook")
    pushed = tg.push_text(dm, ann, "hello?")
    await tg.wait_until(lambda: len(tg.webhook_deliveries) >= 2, what="failed deliveries")
    assert all(d.status is None for d in tg.webhook_deliveries)
    assert tg.pending_updates == [pushed["update_id"]]
    assert "Connection failed" in (tg.webhook_deliveries[-1].error or "")
    async with Bot(tg.token, base_url=tg.base_url) as client:
        assert await client.delete_webhook()
        updates = await client.get_updates(timeout=0)
    assert [u.update_id for u in updates] == [pushed["update_id"]]


# --------------------------------------------------------------------------------------
# (c) Errors: 429, 4096+, 5xx, tokens, methods
# --------------------------------------------------------------------------------------


async def test_retry_after_is_retried_by_aioratelimiter(tg: FakeTelegram) -> None:
    ann = tg.user("Ann")
    dm = tg.private_chat(ann)
    tg.rate_limit_next("sendMessage", retry_after=1)
    limited = ExtBot(tg.token, base_url=tg.base_url, rate_limiter=AIORateLimiter(max_retries=1))
    async with limited:
        started = time.monotonic()
        message = await limited.send_message(ann["id"], "after the flood wait")
        elapsed = time.monotonic() - started
    assert message.text == "after the flood wait" and message.chat.id == dm["id"]
    assert [c.status for c in tg.calls if c.method == "sendMessage"] == [429, 200]
    assert elapsed >= 1.0  # it honoured retry_after
    assert len(tg.sent_messages) == 1


async def test_retry_after_surfaces_without_a_limiter(tg: FakeTelegram, bot: Bot) -> None:
    ann = tg.user("Ann")
    tg.private_chat(ann)
    tg.rate_limit_next("sendMessage", retry_after=7)
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(ann["id"], "too fast")
    assert caught.value.retry_after == dtm.timedelta(seconds=7)
    assert tg.sent_messages == []
    await bot.send_message(ann["id"], "fine now")  # one-shot fault
    assert [m["text"] for m in tg.sent_messages] == ["fine now"]


async def test_message_length_limit(tg: FakeTelegram, bot: Bot) -> None:
    ann = tg.user("Ann")
    tg.private_chat(ann)
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(ann["id"], "x" * (MAX_TEXT_LENGTH + 1))
    await bot.send_message(ann["id"], "x" * MAX_TEXT_LENGTH)
    # Length counts characters, not bytes or UTF-16 units.
    await bot.send_message(ann["id"], "🍕" * MAX_TEXT_LENGTH)
    with pytest.raises(BadRequest, match=r"(?i)text is empty"):
        await bot.send_message(ann["id"], "   ")
    assert len(tg.sent_messages) == 2


async def test_server_errors_and_bad_tokens_map_to_ptb_errors(tg: FakeTelegram, bot: Bot) -> None:
    ann = tg.user("Ann")
    tg.private_chat(ann)
    tg.fail_next("sendMessage", 500)
    with pytest.raises(NetworkError, match="Internal Server Error"):
        await bot.send_message(ann["id"], "x")
    tg.fail_next("*", 502, times=2)
    for _ in range(2):
        with pytest.raises(NetworkError):
            await bot.get_me()
    tg.fail_next("sendMessage", 403, description="Forbidden: bot was blocked by the user")
    with pytest.raises(Forbidden, match="blocked"):
        await bot.send_message(ann["id"], "x")
    tg.fail_next(
        "sendMessage",
        400,
        description="Bad Request: group chat was upgraded to a supergroup chat",
        parameters={"migrate_to_chat_id": -1001234567890},
    )
    with pytest.raises(Exception, match="-1001234567890"):
        await bot.send_message(ann["id"], "x")

    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("noSuchMethod")
    assert tg.calls[-1].status == 404

    wrong = Bot("123:not-the-token", base_url=tg.base_url)
    with pytest.raises(InvalidToken):
        await wrong.initialize()
    await wrong.shutdown()
    assert tg.calls[-1].status == 401


# --------------------------------------------------------------------------------------
# getUpdates semantics
# --------------------------------------------------------------------------------------


async def test_long_poll_blocks_until_an_update_and_offset_confirms(
    tg: FakeTelegram, bot: Bot
) -> None:
    ann = tg.user("Ann")
    dm = tg.private_chat(ann)
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    await tg.wait_for_calls("getUpdates")
    assert not poll.done()
    started = time.monotonic()
    pushed = tg.push_text(dm, ann, "wake up")
    updates = await asyncio.wait_for(poll, 3)
    assert time.monotonic() - started < 2
    assert [u.update_id for u in updates] == [pushed["update_id"]]
    assert updates[0].message is not None and updates[0].message.text == "wake up"

    # Not confirmed yet: asked again, the same update comes back.
    again = await bot.get_updates(timeout=0)
    assert [u.update_id for u in again] == [pushed["update_id"]]
    assert await bot.get_updates(offset=pushed["update_id"] + 1, timeout=0) == ()
    assert tg.pending_updates == []

    started = time.monotonic()
    assert await bot.get_updates(timeout=dtm.timedelta(seconds=0.3)) == ()
    assert time.monotonic() - started >= 0.25


async def test_a_second_poller_terminates_the_first_with_conflict(
    tg: FakeTelegram, bot: Bot
) -> None:
    """Two instances of the bot running at once, the classic deployment mistake."""
    first = asyncio.create_task(bot.get_updates(timeout=10))
    await tg.wait_for_calls("getUpdates")
    # A second instance: PTB gives each Bot one connection for getUpdates.
    async with Bot(tg.token, base_url=tg.base_url) as other:
        assert await other.get_updates(timeout=0) == ()
    with pytest.raises(Conflict, match="terminated by other getUpdates"):
        await asyncio.wait_for(first, 3)


async def test_allowed_updates_default_leaves_out_chat_member(tg: FakeTelegram, bot: Bot) -> None:
    ann, bob = tg.user("Ann"), tg.user("Bob")
    family = tg.group_chat(members=[ann])
    tg.push_update(tg.chat_member(family, ann, bob, old_status="left", new_status="member"))
    text = tg.push_text(family, ann, "hi")
    updates = await bot.get_updates(timeout=0)
    assert [u.update_id for u in updates] == [text["update_id"]]

    joined = tg.push_update(tg.chat_member(family, ann, bob, new_status="administrator"))
    updates = await bot.get_updates(
        offset=text["update_id"] + 1, timeout=0, allowed_updates=Update.ALL_TYPES
    )
    assert [u.update_id for u in updates] == [joined["update_id"]]
    assert updates[0].chat_member is not None
    assert updates[0].chat_member.new_chat_member.status == "administrator"
    assert tg.member_status(family, bob) == "administrator"


# --------------------------------------------------------------------------------------
# Builders produce updates PTB parses completely
# --------------------------------------------------------------------------------------


async def test_every_update_builder_parses_cleanly_in_ptb(tg: FakeTelegram, bot: Bot) -> None:
    ann = tg.user("Ann", last_name="Lee", username="ann_lee")
    bob = tg.user("Bob")
    dm = tg.private_chat(ann)
    family = tg.group_chat(title="Family", supergroup=True, members=[ann], creator=ann)
    news = tg.channel(title="News", username="news")
    first = tg.text_message(family, ann, "milk is out, @alfred /remember@alfred #shopping")
    built = [
        first,
        tg.text_message(family, bob, "noted", reply_to=first),
        tg.edited_message(first, "oat milk is out @alfred"),
        tg.photo_message(dm, ann, "receipt for 👀 @alfred"),
        tg.sticker_message(dm, ann, "🐱"),
        tg.voice_message(dm, ann, duration=4),
        tg.forwarded_message(dm, ann, "fwd from Bob", origin=bob),
        tg.forwarded_message(dm, ann, "fwd hidden", origin="Mystery Person"),
        tg.forwarded_message(dm, ann, "fwd channel", origin=news, origin_message_id=12),
        tg.channel_post(news, "breaking", author_signature="Ed"),
        tg.new_chat_members(family, ann, [bob, tg.bot_user]),
        tg.left_chat_member(family, bob, bob),
        tg.my_chat_member(family, ann, old_status="member", new_status="administrator"),
        tg.chat_member(family, ann, bob, old_status="left", new_status="restricted"),
        tg.my_chat_member(dm, ann, old_status="member", new_status="kicked"),
    ]
    for raw in built:
        tg.push_update(raw)
    updates = await bot.get_updates(timeout=0, allowed_updates=Update.ALL_TYPES)
    assert len(updates) == len(built)
    for parsed in updates:
        _assert_fully_parsed(parsed)

    (text, reply, edited, photo, sticker, voice, fwd_user, fwd_hidden, fwd_channel, post,
     joined, left, promoted, restricted, blocked) = updates  # fmt: skip
    assert text.message is not None
    assert text.message.parse_entities(["mention"]) and list(
        text.message.parse_entities(["bot_command"]).values()
    ) == ["/remember@alfred"]
    assert list(text.message.parse_entities(["hashtag"]).values()) == ["#shopping"]
    assert text.message.chat.id < -1_000_000_000_000  # supergroup id shape
    assert reply.message is not None and reply.message.reply_to_message is not None
    assert reply.message.reply_to_message.message_id == text.message.message_id
    assert edited.edited_message is not None and edited.edited_message.edit_date is not None
    assert edited.edited_message.message_id == text.message.message_id
    assert photo.message is not None and len(photo.message.photo) == 3
    assert list(photo.message.parse_caption_entities(["mention"]).values()) == ["@alfred"]
    assert sticker.message is not None and sticker.message.sticker is not None
    assert sticker.message.sticker.emoji == "🐱"
    assert voice.message is not None and voice.message.voice is not None
    assert voice.message.voice.duration == dtm.timedelta(seconds=4)
    origins = [u.message.forward_origin.type for u in (fwd_user, fwd_hidden, fwd_channel)]  # type: ignore[union-attr]
    assert origins == ["user", "hidden_user", "channel"]
    assert post.channel_post is not None and post.channel_post.sender_chat is not None
    assert post.channel_post.sender_chat.id == news["id"] and post.channel_post.from_user is None
    assert joined.message is not None
    assert [u.id for u in joined.message.new_chat_members] == [bob["id"], tg.bot_id]
    assert left.message is not None and left.message.left_chat_member is not None
    assert promoted.my_chat_member is not None
    assert promoted.my_chat_member.new_chat_member.status == "administrator"
    assert restricted.chat_member is not None
    assert restricted.chat_member.new_chat_member.status == "restricted"
    assert blocked.my_chat_member is not None and blocked.effective_chat is not None
    assert blocked.effective_chat.type == "private"

    # The server drew the consequences: bot is admin in the group, blocked in private.
    assert tg.member_status(family, tg.bot_user) == "administrator"
    assert tg.member_status(family, bob) == "restricted"
    with pytest.raises(Forbidden, match="blocked by the user"):
        await bot.send_message(ann["id"], "still there?")


def test_entity_offsets_are_utf16() -> None:
    text = "🎉 ping @alfred"
    entity = entity_for(text, "@alfred", "mention")
    assert entity == {"type": "mention", "offset": 8, "length": 7}
    assert utf16_len("🎉") == 2
    message = Message.de_json(
        {
            "message_id": 1,
            "date": 0,
            "chat": {"id": 1, "type": "private"},
            "text": text,
            "entities": [entity],
        },
        None,
    )
    assert list(message.parse_entities().values()) == ["@alfred"]


# --------------------------------------------------------------------------------------
# sendMessage
# --------------------------------------------------------------------------------------


async def test_formatted_text_is_refused(tg: FakeTelegram, bot: Bot) -> None:
    """Alfred sends plain text only; a parse mode would go unchecked here, so it fails."""
    ann = tg.user("Ann")
    tg.private_chat(ann)
    with pytest.raises(BadRequest, match=r"(?i)plain text only"):
        await bot.send_message(ann["id"], "<b>Milk</b>", parse_mode=ParseMode.HTML)
    sent = await bot.send_message(ann["id"], "Milk for 🍕 https://shop.example @ann")
    assert {e.type: sent.parse_entity(e) for e in sent.entities} == {
        "url": "https://shop.example",
        "mention": "@ann",
    }
    assert [m["text"] for m in tg.sent_messages] == ["Milk for 🍕 https://shop.example @ann"]


async def test_a_text_mention_of_a_known_user_is_kept_and_other_entities_are_refused(
    tg: FakeTelegram, bot: Bot
) -> None:
    """How Alfred names a member without a username: a ``text_mention`` over the name,
    UTF-16 offsets, of a user Telegram knows; anything else is refused like formatting."""
    from telegram import MessageEntity
    from telegram import User as TgUser

    zoe = tg.user("Zoë 🌻")
    group = tg.group_chat(title="Home", members=[zoe])
    who = TgUser(id=zoe["id"], first_name="Zoë 🌻", is_bot=False)
    named = MessageEntity(MessageEntity.TEXT_MENTION, offset=0, length=6, user=who)
    sent = await bot.send_message(group["id"], "Zoë 🌻 water the basil", entities=[named])
    assert [(e.type, e.user.id if e.user else None) for e in sent.entities] == [
        ("text_mention", zoe["id"])
    ]
    assert sent.parse_entity(sent.entities[0]) == "Zoë 🌻"
    assert tg.sent_messages[-1]["message"]["entities"][0]["user"]["id"] == zoe["id"]
    stranger = TgUser(id=999_999, first_name="Nobody", is_bot=False)
    refused = [
        [MessageEntity(MessageEntity.BOLD, offset=0, length=3)],
        [MessageEntity(MessageEntity.TEXT_MENTION, offset=0, length=3, user=stranger)],
        [MessageEntity(MessageEntity.TEXT_MENTION, offset=18, length=9, user=who)],
    ]
    for entities in refused:
        with pytest.raises(BadRequest):
            await bot.send_message(group["id"], "Zoë 🌻 water the basil", entities=entities)
    assert len(tg.sent_messages) == 1


async def test_reply_targets_and_chat_permissions(tg: FakeTelegram, bot: Bot) -> None:
    ann = tg.user("Ann")
    dm = tg.private_chat(ann)
    kicked_from = tg.group_chat(title="Old", bot_status="kicked")
    left_from = tg.group_chat(title="Gone", bot_status="left")
    news = tg.channel(title="News", bot_status="member")

    with pytest.raises(BadRequest, match=r"(?i)message to be replied not found"):
        await bot.send_message(ann["id"], "re?", reply_to_message_id=404)
    ok = await bot.send_message(
        ann["id"], "re?", reply_to_message_id=404, allow_sending_without_reply=True
    )
    assert ok.reply_to_message is None
    original = tg.push_text(dm, ann, "original")
    replied = await bot.send_message(
        ann["id"], "re!", reply_to_message_id=original["message"]["message_id"]
    )
    assert replied.reply_to_message is not None
    assert replied.reply_to_message.text == "original"

    with pytest.raises(Forbidden, match="kicked from the group chat"):
        await bot.send_message(kicked_from["id"], "hello?")
    with pytest.raises(Forbidden, match="not a member of the group chat"):
        await bot.send_message(left_from["id"], "hello?")
    with pytest.raises(BadRequest, match=r"(?i)need administrator rights"):
        await bot.send_message(news["id"], "post")
    with pytest.raises(BadRequest, match=r"(?i)chat not found"):
        await bot.send_message(123, "who?")


def _texts(messages: Iterable[dict[str, Any]]) -> list[str]:
    return [m["text"] for m in messages]


async def test_wait_for_messages_times_out_with_a_useful_message(tg: FakeTelegram) -> None:
    with pytest.raises(TimeoutError, match="1 sent messages"):
        await tg.wait_for_messages(1, timeout=0.1)
    assert _texts(tg.sent_messages) == []
