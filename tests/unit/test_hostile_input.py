"""Bad input never crashes Alfred: intent parsing, the offline provider, the reply
splitter, the Telegram boundary, the replay script parser and the settings each give a
clear answer or a clear error for huge, empty, non-text, malformed or hostile input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from telegram import Update

from bot.replay import LINE_KINDS, ScriptError, parse_script
from bot.telegram.updates import to_incoming
from memory.errors import ConfigurationError
from memory.models import Category, Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import ExtractFactsContext
from memory.prompts.reply import CitedMemory, ReplyContext
from memory.rules.intents import (
    CorrectionIntent,
    DirectiveIntent,
    ExportIntent,
    ForgetAllIntent,
    ForgetIntent,
    PinIntent,
    RecallIntent,
    RememberIntent,
    RememberLastIntent,
    detect_ambiguous_reference,
    detect_intent,
    strip_addressing,
)
from memory.rules.tasks.extract_facts import extract_facts
from memory.rules.tasks.reply import compose_for
from memory.rules.text import clean_text
from runtime.settings import Settings, load_settings
from services.messages import TELEGRAM_MAX_TEXT, safe_text, split_for_telegram
from tests.helpers.hostile import any_char, hostile_message, hostile_text

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ANN = Person(id="u-ann", name="Ann")
INTENTS = (
    RememberIntent,
    RememberLastIntent,
    CorrectionIntent,
    ForgetIntent,
    ForgetAllIntent,
    RecallIntent,
    DirectiveIntent,
    PinIntent,
    ExportIntent,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- the reply path: intents and the offline provider -----------------------------------------


@FAST
@given(text=hostile_message)
@example(text="remember that")
@example(text="remember that ")
@example(text="remember that " + "x" * 10_000)
@example(text="forget (.*)+[")
@example(text="forget ^$|\\")
@example(text="actually")
@example(text="actually ")
@example(text="no, actually")
@example(text="\x00" * 100)
def test_intent_parsing_never_fails(text: str) -> None:
    intent = detect_intent(text)
    assert intent is None or isinstance(intent, INTENTS)
    assert isinstance(strip_addressing(text), str)
    assert len(clean_text(text)) <= 4000
    for kind in ThreadKind:
        reference = detect_ambiguous_reference(text, kind)
        assert reference is None or isinstance(reference, str)


def test_intent_openers_with_nothing_after_them_ask_for_nothing() -> None:
    """ "remember that" or "actually" alone carries no fact to store or correct."""
    for text in ("remember that", "remember that   ", "actually", "actually ", "forget"):
        intent = detect_intent(text)
        assert not isinstance(intent, RememberIntent | CorrectionIntent), (text, intent)
    forget = detect_intent("forget that I like (.*)+$ jazz")
    assert isinstance(forget, ForgetIntent) and forget.target


@FAST
@given(
    text=hostile_message,
    memories=st.lists(hostile_text.filter(str.strip), max_size=4),
    kind=st.sampled_from(list(ThreadKind)),
)
def test_offline_reply_is_a_message_telegram_accepts(
    text: str, memories: list[str], kind: ThreadKind
) -> None:
    ctx = ReplyContext(
        speaker_id=ANN.id,
        speaker_name=ANN.name,
        thread_kind=kind,
        text=text,
        now=NOW,
        memories=[CitedMemory(content=m, category=Category.FACT) for m in memories],
        retrieved=True,
    )
    reply = compose_for(ctx)
    assert isinstance(reply, str) and reply.strip()
    parts = split_for_telegram(reply)
    assert parts and all(0 < len(p) <= TELEGRAM_MAX_TEXT for p in parts)


@FAST
@given(lines=st.lists(hostile_message, min_size=1, max_size=3))
def test_offline_extraction_never_fails(lines: list[str]) -> None:
    ctx = ExtractFactsContext(
        thread_kind=ThreadKind.DM,
        thread_owner_id=ANN.id,
        people=[ANN],
        now=NOW,
        lines=[
            JournalLine(
                message_id=f"m{i}", role=Role.USER, speaker_id=ANN.id, speaker_name=None, text=t
            )
            for i, t in enumerate(lines)
        ],
    )
    for fact in extract_facts(ctx).facts:
        assert isinstance(fact.content, str) and fact.content.strip()


@FAST
@given(text=st.text(any_char, max_size=12_000))
def test_splitting_keeps_every_character_within_the_limit(text: str) -> None:
    parts = split_for_telegram(text)
    assert all(0 < len(p) <= TELEGRAM_MAX_TEXT for p in parts)
    assert "".join("".join(p.split()) for p in parts) == "".join(text.split())


# --- the Telegram boundary ------------------------------------------------------------------


@FAST
@given(text=st.text(any_char, max_size=200))
def test_safe_text_is_encodable_and_keeps_utf16_offsets(text: str) -> None:
    safe = safe_text(text)
    assert _encodable(safe)
    assert len(safe) == len(text)
    assert len(safe.encode("utf-16-le")) == len(text.encode("utf-16-le", "surrogatepass"))
    if _encodable(text):
        assert safe == text


def _group_update(text: str, entities: list[dict[str, Any]], **sender: Any) -> Update:
    return Update.de_json(
        {
            "update_id": 1,
            "message": {
                "message_id": 10,
                "date": 0,
                "chat": {"id": -5, "type": "group", "title": "Fam\ud800"},
                "from": {"id": 7, "is_bot": False, "first_name": "Ann", **sender},
                "text": text,
                "entities": entities,
            },
        },
        None,
    )


def test_an_unpaired_surrogate_is_replaced_and_mentions_after_it_still_count() -> None:
    update = _group_update(
        "\ud83d hi @alfred remember that",
        [{"type": "mention", "offset": 5, "length": 7}],
        first_name="\udfffAnn",
    )
    inc = to_incoming(update, 99, "alfred")
    assert inc is not None and inc.addressed
    assert inc.text == "\ufffd hi @alfred remember that"
    assert inc.sender.name == "\ufffdAnn" and inc.chat_title == "Fam\ufffd"


def test_entities_pointing_outside_the_text_are_ignored() -> None:
    update = _group_update("hi", [{"type": "mention", "offset": 50, "length": 7}])
    inc = to_incoming(update, 99, "alfred")
    assert inc is not None and not inc.addressed and inc.text == "hi"


# --- the replay script parser -----------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(any_char, max_size=12)
    | st.sampled_from(["dm:ann", "group:fam", "+15m", "drain", "all", "2026-03-01T10:00:00Z"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["from", "in", "text", "as", "query", "user", "event", "id"])
            | st.text(any_char, max_size=4),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
script_lines = st.one_of(
    st.dictionaries(
        st.sampled_from([*LINE_KINDS, "members", "extra"]), json_values, max_size=3
    ).map(json.dumps),
    st.text(any_char, max_size=30),
    st.sampled_from(["", "#", "[", "{}", "[]", "null", "1e999", '{"say": {}}']),
)


def _check_script_error(exc: ScriptError, count: int) -> None:
    assert 1 <= exc.line <= count
    assert exc.message.startswith(f"line {exc.line}: ")
    assert len(exc.message.splitlines()) == 1, "one line on the terminal"


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(script_lines, max_size=5))
def test_parse_script_accepts_or_names_the_bad_line(lines: list[str]) -> None:
    try:
        events = parse_script(lines)
    except ScriptError as exc:
        _check_script_error(exc, len(lines))
        return
    for number, kind, _ in events:
        assert 1 <= number <= len(lines) and kind in LINE_KINDS


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"jobs": ' + "1" * 5_000 + "}", "number of more than 4,300 digits"),
        ('{"say": {"from": "a", "in": "dm:a", "text": "\\ud83d"}}', "unpaired surrogate"),
        ('{"probe": {"as": "\\udfff", "in": "dm:a", "query": "x"}}', "unpaired surrogate"),
        ('{"clock": "+99999999999d"}', "outside 1970 to 9000"),
        ('{"clock": "+3000000d"}', "outside 1970 to 9000"),
        ('{"clock": "0001-01-01T00:00:00Z"}', "outside 1970 to 9000"),
        ('{"clock": "+1e5m"}', '"clock" is "+15m"'),
        ('{"jobs": "drain", "a\\nb\\u2028c": 1}', 'unexpected key(s) "a\\nb\\u2028c"'),
        ('{"say": {"from": "a", "in": "dm:a", "text": ["x"]}}', 'string "from", "in" and "text"'),
        ('{"say": {"from": "a", "in": "dm:", "text": "x"}}', '"in" is "group:<circle>"'),
        ('{"circle": ""}', '"circle" needs a name'),
        ('{"circle": "fam", "members": "ann"}', '"members" is a list'),
        ('{"calendar": {"user": "a\\nb", "event": {"id": "e"}, "from": "dm:c"}}', "a\\u000ab"),
        ('{"dump": {"all": true}}', '"dump" must be "all"'),
        # A DM holds its owner alone: anyone else there would be answered with their own
        # memories in somebody else's chat.
        ('{"say": {"from": "ann", "in": "dm:bob", "text": "x"}}', 'only bob can speak in "dm:bob"'),
        ('{"probe": {"as": "ann", "in": "dm:bob", "query": "x"}}', "only bob can probe in"),
        ('{"press": {"as": "ann", "in": "dm:bob", "button": "x"}}', "only bob can press in"),
    ],
)
def test_parse_script_refuses_with_one_clear_line(line: str, says: str) -> None:
    with pytest.raises(ScriptError) as raised:
        parse_script(['{"jobs": "drain"}', line])
    _check_script_error(raised.value, 2)
    assert raised.value.line == 2 and says in raised.value.message


def test_parse_script_accepts_hostile_text_that_is_still_text() -> None:
    text = "\x00\u2028\u202e👨\u200d👩\u200d👧 <b>*x*</b> " + "y" * 50_000
    line = json.dumps({"say": {"from": "ann", "in": "dm:ann", "text": text}}, ensure_ascii=False)
    ((number, kind, value),) = parse_script([line])
    assert (number, kind, value["text"]) == (1, "say", text)
    # a surrogate pair written as two escapes is one character, not an error
    ((_, _, pair),) = parse_script(
        ['{"say": {"from": "a", "in": "dm:a", "text": "\\ud83d\\ude00"}}']
    )
    assert pair["text"] == "😀"


# --- settings and .env ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORY_ALLOWED_CIRCLES", "abc"),
        ("MEMORY_ALLOWED_CIRCLES", "-100123,family"),
        ("WEBHOOK_PORT", "-5"),
        ("WEBHOOK_PORT", "70000"),
        ("METRICS_PORT", "-1"),
        ("EMBEDDED_MONGO_PORT", "-1"),
        ("MEM0_MODE", "sometimes"),
        ("EMBEDDINGS_PROVIDER", "banana"),
        ("RUN_WORKER", "maybe"),
        ("LOG_LEVEL", "LOUD"),
        ("MEMORY_ENABLED", "perhaps"),
        ("MONGODB_TIMEOUT_MS", "soon"),
    ],
)
def test_a_malformed_setting_is_refused_naming_it(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert [e["loc"] for e in raised.value.errors()] == [(name.lower(),)]


def test_well_formed_choices_are_accepted_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "MEMORY_ALLOWED_CIRCLES": " -100123, -5 ,",
        "LOG_LEVEL": "debug",
        "MEM0_MODE": "OFF",
        "RUN_WORKER": " External ",
        "EMBEDDINGS_PROVIDER": "Local",
    }.items():
        monkeypatch.setenv(name, value)
    loaded = Settings(_env_file=None)  # type: ignore[call-arg]
    assert loaded.flags().allowed_circles == {"-100123", "-5"}
    assert (loaded.mem0_mode, loaded.run_worker, loaded.embeddings_provider) == (
        "off",
        "external",
        "local",
    )


def test_a_dotenv_that_is_not_utf8_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_bytes(b"LOG_LEVEL=INFO\nMONGODB_DATABASE=\xff\xfe\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"\.env is not UTF-8 text \(byte 33\)"):
        load_settings()
