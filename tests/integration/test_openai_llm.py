"""The OpenAI adapter, driven through the real ``openai`` client against a local fake.

Everything below the adapter is real: the SDK builds the HTTP request, the fake answers
in the API's wire format, the SDK parses it. What the tests check is therefore what a
real endpoint would see: the model per tier, JSON mode, the corrective retry, the tool
round-trip, and that only ``memory.errors`` come out.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

from bot.bench.fake_openai import (
    EMBEDDINGS,
    FakeOpenAI,
    RecordedRequest,
    Reply,
    bad_request,
    completion,
    malformed_body,
    rate_limited,
    server_error,
    slow,
    tool_call,
)
from integrations.llm_wire import OutputMode, max_tokens_for, strict_schema
from integrations.openai_llm import OpenAILLM, RetryPolicy
from memory.errors import AlfredError, BadInput, RateLimited, Unavailable
from memory.llm import (
    LLM,
    ChatOutcome,
    ChatTask,
    LLMOutputError,
    LLMTruncated,
    ModelTier,
    PromptMessage,
    ToolCall,
    ToolRunner,
    ToolSpec,
)
from memory.models import ReflectionScope, Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.consolidate import CONSOLIDATE, ConsolidateContext, ConsolidatedBlob
from memory.prompts.decide_updates import (
    DECIDE_UPDATES,
    CandidateFact,
    DecideUpdatesContext,
    UpdateDecisions,
)
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractedFacts, ExtractFactsContext
from memory.prompts.reflect import REFLECT, ReflectContext, Reflections
from memory.prompts.reply import REPLY, ReplyContext, ReplyRequest, build_messages
from runtime.builders import build_llm
from runtime.settings import Settings

FAST, SLOW, CHAT = "fast-model-x", "slow-model-y", "chat-model-z"
TINY = RetryPolicy(attempts=3, base_delay=0.005, max_delay=0.02, max_retry_after=1.0)

ONE_FACT = {
    "facts": [
        {
            "content": "Alice is allergic to peanuts",
            "category": "fact",
            "importance": 9,
            "about": "speaker",
            "speaker_id": "u1",
            "source_message_ids": ["m1"],
        }
    ]
}


class Sleeps:
    """A real (tiny) sleep that remembers each backoff delay it was asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(seconds)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def client(fake: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    # max_retries left at the SDK default on purpose: the adapter must switch it off.
    api = AsyncOpenAI(api_key="test-key", base_url=fake.base_url)
    yield api
    await api.close()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_llm(client: AsyncOpenAI, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAILLM:
    options: dict[str, Any] = {"timeout": 2.0, "retry": TINY, **kwargs}
    if sleeps is not None:
        options["sleep"] = sleeps
    return OpenAILLM(client, fast_model=FAST, slow_model=SLOW, chat_model=CHAT, **options)


@pytest.fixture
def llm(client: AsyncOpenAI, sleeps: Sleeps) -> OpenAILLM:
    return make_llm(client, sleeps)


def facts_context(*texts: str, kind: ThreadKind = ThreadKind.DM) -> ExtractFactsContext:
    return ExtractFactsContext(
        thread_kind=kind,
        thread_owner_id="u1",
        people=[Person(id="u1", name="Alice")],
        now=datetime(2025, 3, 1, 12, 0, tzinfo=UTC),
        lines=[
            JournalLine(
                message_id=f"m{i + 1}",
                role=Role.USER,
                speaker_id="u1",
                speaker_name="Alice",
                text=t,
            )
            for i, t in enumerate(texts or ("I'm allergic to peanuts",))
        ],
    )


# -- structured tasks -----------------------------------------------------------------------


async def test_structured_task_is_validated_into_the_response_model(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert [f.content for f in result.facts] == ["Alice is allergic to peanuts"]
    assert result.facts[0].importance == 9
    (request,) = fake.chat_requests
    assert request.model == FAST
    shape = request.json["response_format"]
    assert shape["type"] == "json_schema"
    assert shape["json_schema"]["name"] == "extract_facts"
    assert shape["json_schema"]["strict"] is True
    assert shape["json_schema"]["schema"]["required"] == ["facts"]
    assert request.json["max_tokens"] == max_tokens_for("extract_facts", ModelTier.FAST)
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert "I'm allergic to peanuts" in request.last_user_text
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["x-stainless-retry-count"] == "0"
    assert isinstance(llm, LLM)
    assert llm.offline is False


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + json.dumps(ONE_FACT) + "\n```",
        "Here you go:\n```\n" + json.dumps(ONE_FACT) + "\n```\nAnything else?",
        "Sure! " + json.dumps(ONE_FACT) + " Hope this helps.",
    ],
    ids=["json-fence", "bare-fence-with-prose", "object-in-prose"],
)
async def test_json_is_found_in_fences_and_prose(
    fake: FakeOpenAI, llm: OpenAILLM, content: str
) -> None:
    fake.enqueue(content)

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert result.facts[0].content == "Alice is allergic to peanuts"
    assert len(fake.chat_requests) == 1


async def test_malformed_once_then_valid_takes_two_calls_with_a_correction(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue("I think Alice might be allergic to something.", json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1
    first, second = fake.chat_requests
    assert len(second.messages) == len(first.messages) + 2
    assert second.messages[-2] == {
        "role": "assistant",
        "content": "I think Alice might be allergic to something.",
    }
    assert second.messages[-1]["role"] == "user"
    assert "not valid" in second.messages[-1]["content"]
    assert llm.usage.calls == {"extract_facts": 2}


async def test_validation_error_is_shown_to_the_model(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    bad = {"facts": [{**ONE_FACT["facts"][0], "importance": 42}]}
    fake.enqueue(json.dumps(bad), json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert result.facts[0].importance == 9
    correction = fake.chat_requests[1].messages[-1]["content"]
    assert "facts.0.importance" in correction


@pytest.mark.parametrize(
    "answers",
    [
        ["not json", "still not json"],
        ["", "   \n "],
        [json.dumps({"facts": "none"}), "[1, 2, 3]"],
    ],
    ids=["garbage", "empty", "wrong-shape"],
)
async def test_malformed_twice_raises_after_exactly_two_calls(
    fake: FakeOpenAI, llm: OpenAILLM, answers: list[str]
) -> None:
    fake.enqueue(*answers)

    with pytest.raises(LLMOutputError) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert raised.value.task == "extract_facts"
    assert len(fake.chat_requests) == 2


async def test_a_refusal_counts_as_malformed(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    refusal = completion(None)
    refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
    fake.enqueue(refusal, json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1
    assert "refused" in fake.chat_requests[1].messages[-1]["content"]


async def test_facts_in_another_language_are_returned_as_given(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    spanish = {"facts": [{"content": "Alicia es alérgica al cacahuete", "importance": 9}]}
    fake.enqueue(json.dumps(spanish, ensure_ascii=False))

    result = await llm.run(EXTRACT_FACTS, facts_context("Soy alérgica al cacahuete"))

    assert [f.content for f in result.facts] == ["Alicia es alérgica al cacahuete"]


# -- transport failures -------------------------------------------------------------------


async def test_429_waits_for_retry_after_then_succeeds(
    fake: FakeOpenAI, llm: OpenAILLM, sleeps: Sleeps
) -> None:
    fake.enqueue(rate_limited(retry_after=0.05), json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1
    assert len(fake.chat_requests) == 2
    assert sleeps.delays == [pytest.approx(0.05)]
    gap = fake.chat_requests[1].at - fake.chat_requests[0].at
    assert gap >= 0.045


async def test_retry_after_ms_is_honoured(fake: FakeOpenAI, llm: OpenAILLM, sleeps: Sleeps) -> None:
    fake.enqueue(rate_limited(retry_after=0.03, ms=True), json.dumps(ONE_FACT))

    await llm.run(EXTRACT_FACTS, facts_context())

    assert sleeps.delays == [pytest.approx(0.03)]


async def test_persistent_429_raises_rate_limited_with_retry_after(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.set_handler(lambda request: rate_limited(retry_after=0.01))

    with pytest.raises(RateLimited) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert raised.value.retry_after == pytest.approx(0.01)
    assert raised.value.component == "llm"
    assert len(fake.chat_requests) == TINY.attempts


async def test_a_retry_after_beyond_the_cap_is_not_waited_for(
    fake: FakeOpenAI, llm: OpenAILLM, sleeps: Sleeps
) -> None:
    fake.enqueue(rate_limited(retry_after=120))

    with pytest.raises(RateLimited) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert raised.value.retry_after == 120
    assert len(fake.chat_requests) == 1
    assert sleeps.delays == []


async def test_500_twice_then_ok_backs_off_exponentially(
    fake: FakeOpenAI, llm: OpenAILLM, sleeps: Sleeps
) -> None:
    fake.enqueue(server_error(500), server_error(503), json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1
    assert len(fake.chat_requests) == 3
    first, second = sleeps.delays
    assert 0.005 * 0.75 <= first <= 0.005 * 1.25
    assert 0.010 * 0.75 <= second <= 0.010 * 1.25
    assert llm.usage.calls == {"extract_facts": 1}


async def test_persistent_500_is_unavailable_after_bounded_attempts(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.set_handler(lambda request: server_error(500, "the engine is overloaded"))

    with pytest.raises(Unavailable) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert not isinstance(raised.value, RateLimited)
    assert raised.value.component == "llm"
    assert "500" in raised.value.message
    assert len(fake.chat_requests) == TINY.attempts
    assert llm.usage.total_calls == 0


async def test_timeout_is_unavailable(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    llm = make_llm(client, timeout=0.2, retry=RetryPolicy(attempts=2, base_delay=0.001))
    fake.set_handler(lambda request: slow(1.5, then=json.dumps(ONE_FACT)))

    started = time.monotonic()
    with pytest.raises(Unavailable) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert time.monotonic() - started < 1.0
    assert "0.2s" in raised.value.message or "timed out" in raised.value.message
    assert len(fake.chat_requests) == 2


async def test_a_slow_answer_then_a_fast_one_succeeds(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    llm = make_llm(client, timeout=0.2)
    fake.enqueue(slow(1.0), json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1


async def test_a_body_that_is_not_json_is_retried(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(malformed_body(), json.dumps(ONE_FACT))

    result = await llm.run(EXTRACT_FACTS, facts_context())

    assert len(result.facts) == 1
    assert len(fake.chat_requests) == 2


async def test_a_200_that_is_not_a_completion_is_unavailable(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.set_handler(lambda request: {"object": "list", "data": []})

    with pytest.raises(Unavailable):
        await llm.run(EXTRACT_FACTS, facts_context())


async def test_unreachable_endpoint_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = AsyncOpenAI(api_key="k", base_url=f"http://127.0.0.1:{port}/v1")
    llm = make_llm(api, retry=RetryPolicy(attempts=2, base_delay=0.001))
    try:
        with pytest.raises(Unavailable) as raised:
            await llm.run(EXTRACT_FACTS, facts_context())
    finally:
        await api.close()
    assert "reach" in raised.value.message


async def test_400_is_bad_input_without_retry(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(bad_request("This model's maximum context length is 128000 tokens"))

    with pytest.raises(BadInput) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert "maximum context length" in raised.value.message
    assert len(fake.chat_requests) == 1


async def test_a_server_without_json_mode_is_asked_again_without_it(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    # Refused twice: json_schema, then json_object; prompts alone from then on.
    fake.enqueue(bad_request("Unrecognized request argument: response_format"))
    fake.enqueue(bad_request("Unrecognized request argument: response_format"))
    fake.set_handler(lambda request: completion(json.dumps(ONE_FACT)))

    await llm.run(EXTRACT_FACTS, facts_context())
    await llm.run(EXTRACT_FACTS, facts_context())

    first, second, third, fourth = fake.chat_requests
    assert first.json["response_format"]["type"] == "json_schema"
    assert second.json["response_format"] == {"type": "json_object"}
    assert "response_format" not in third.json
    assert "response_format" not in fourth.json
    assert all("max_tokens" in r.json for r in fake.chat_requests)
    assert llm.output_mode is OutputMode.PROMPT_ONLY


async def test_bad_key_is_unavailable_with_a_hint(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.api_key = "the-right-key"
    llm = make_llm(client)

    with pytest.raises(Unavailable) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert raised.value.hint is not None and "OPENAI_API_KEY" in raised.value.hint
    assert len(fake.chat_requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503])
async def test_no_openai_exception_escapes(
    fake: FakeOpenAI, client: AsyncOpenAI, status: int
) -> None:
    llm = make_llm(client, retry=RetryPolicy(attempts=2, base_delay=0.001))
    fake.set_handler(lambda request: Reply(status, {"error": {"message": f"status {status}"}}))

    with pytest.raises(AlfredError) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())
    with pytest.raises(AlfredError):
        await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)

    assert not isinstance(raised.value, openai.OpenAIError)
    assert raised.value.__cause__ is None


# -- tiers, usage, settings ---------------------------------------------------------------


async def _no_tools(call: ToolCall) -> str:
    raise AssertionError(f"no tool expected, got {call}")


class _Conversation(BaseModel):
    messages: list[PromptMessage]


#: A chat task that sends the messages it is given, to drive the tool loop directly.
CONVERSATION: ChatTask[_Conversation] = ChatTask(
    "chat", ModelTier.CHAT, _Conversation, lambda ctx: list(ctx.messages)
)


async def _chat(
    llm: OpenAILLM,
    messages: list[PromptMessage],
    tools: list[ToolSpec],
    run_tool: ToolRunner,
) -> ChatOutcome:
    return await llm.chat(CONVERSATION, _Conversation(messages=messages), tools, run_tool)


async def test_each_tier_uses_its_configured_model(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    await llm.run(EXTRACT_FACTS, facts_context())
    await llm.run(
        CONSOLIDATE,
        ConsolidateContext(
            scope=ReflectionScope.USER, reflections=["Alice likes tea"], word_limit=50
        ),
    )
    await _chat(llm, [PromptMessage(role="user", content="hello")], [], _no_tools)

    assert [r.model for r in fake.chat_requests] == [FAST, SLOW, CHAT]
    assert "response_format" not in fake.chat_requests[2].json


async def test_usage_is_accounted_per_task(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(
        completion(json.dumps(ONE_FACT), prompt_tokens=100, completion_tokens=20),
        completion("oops", prompt_tokens=50, completion_tokens=1),
        completion(json.dumps(ONE_FACT), prompt_tokens=60, completion_tokens=20),
        completion("Hello Alice!", prompt_tokens=30, completion_tokens=3),
    )

    await llm.run(EXTRACT_FACTS, facts_context())
    await llm.run(EXTRACT_FACTS, facts_context())
    await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)

    assert llm.usage.calls == {"extract_facts": 3, "chat": 1}
    assert llm.usage.prompt_tokens == {"extract_facts": 210, "chat": 30}
    assert llm.usage.completion_tokens == {"extract_facts": 41, "chat": 3}
    assert llm.usage.total_tokens == 210 + 30 + 41 + 3


async def test_from_settings_uses_the_configured_endpoint_and_models(fake: FakeOpenAI) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        openai_api_key=SecretStr("sk-from-settings"),
        openai_base_url=fake.base_url,
        llm_fast_model="f-1",
        llm_slow_model="s-1",
        llm_chat_model="c-1",
        llm_timeout=3,
    )
    llm = build_llm(settings)
    assert isinstance(llm, OpenAILLM)
    try:
        await llm.run(EXTRACT_FACTS, facts_context())
        await llm.run(REFLECT, _reflect_context())
    finally:
        await llm.aclose()

    assert [r.model for r in fake.chat_requests] == ["f-1", "s-1"]
    assert fake.chat_requests[0].headers["authorization"] == "Bearer sk-from-settings"
    assert fake.chat_requests[0].headers["x-stainless-read-timeout"] == "3.0"


# -- chat with tools ----------------------------------------------------------------------

SEARCH = ToolSpec(
    name="search_memory",
    description="Search what Alfred remembers.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)


async def test_chat_tool_call_round_trip(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(
        completion(None, tool_calls=[tool_call("search_memory", {"query": "allergies"}, "call_1")]),
        completion("Alice is allergic to peanuts."),
    )
    seen: list[ToolCall] = []

    async def run_tool(call: ToolCall) -> str:
        seen.append(call)
        return "Alice is allergic to peanuts (importance 9)"

    outcome = await _chat(
        llm,
        [
            PromptMessage(role="system", content="You are Alfred."),
            PromptMessage(role="user", content="What is Alice allergic to?"),
        ],
        [SEARCH],
        run_tool,
    )

    assert outcome.text == "Alice is allergic to peanuts."
    assert outcome.offline is False
    assert seen == [ToolCall(id="call_1", name="search_memory", arguments={"query": "allergies"})]
    assert outcome.tool_calls == seen
    first, second = fake.chat_requests
    assert first.model == CHAT
    assert first.tools == [
        {
            "type": "function",
            "function": {
                "name": "search_memory",
                "description": "Search what Alfred remembers.",
                "parameters": SEARCH.parameters,
            },
        }
    ]
    assistant, tool = second.messages[-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"query": "allergies"}
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Alice is allergic to peanuts (importance 9)",
    }
    assert llm.usage.calls == {"chat": 2}


async def test_chat_runs_several_calls_of_one_round(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(
        completion(
            None,
            tool_calls=[
                tool_call("search_memory", {"query": "a"}, "c1"),
                tool_call("search_memory", {"query": "b"}, "c2"),
            ],
        ),
        completion("Done."),
    )

    async def run_tool(call: ToolCall) -> str:
        return f"result for {call.arguments['query']}"

    outcome = await _chat(llm, [PromptMessage(role="user", content="?")], [SEARCH], run_tool)

    assert [c.id for c in outcome.tool_calls] == ["c1", "c2"]
    tools = [m for m in fake.chat_requests[1].messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        ("c1", "result for a"),
        ("c2", "result for b"),
    ]


async def test_chat_stops_offering_tools_after_four_rounds(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    def handler(request: RecordedRequest) -> Any:
        if request.json.get("tool_choice") == "none":
            return completion("Here is what I found.")
        return completion(None, tool_calls=[tool_call("search_memory", {"query": "more"})])

    fake.set_handler(handler)
    calls = 0

    async def run_tool(call: ToolCall) -> str:
        nonlocal calls
        calls += 1
        return "nothing"

    outcome = await _chat(llm, [PromptMessage(role="user", content="dig")], [SEARCH], run_tool)

    assert outcome.text == "Here is what I found."
    assert calls == 4
    assert len(fake.chat_requests) == 5
    assert fake.chat_requests[-1].json["tool_choice"] == "none"


async def test_chat_reports_bad_tool_arguments_to_the_model(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(
        completion(None, tool_calls=[tool_call("search_memory", '{"query": ', "bad")]),
        completion("Sorry, let me answer directly."),
    )

    outcome = await _chat(llm, [PromptMessage(role="user", content="?")], [SEARCH], _no_tools)

    assert outcome.text == "Sorry, let me answer directly."
    assert outcome.tool_calls == []
    tool = fake.chat_requests[1].messages[-1]
    assert tool["tool_call_id"] == "bad"
    assert tool["content"].startswith("error:")


async def test_chat_replays_history_with_tool_messages(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    history = [
        PromptMessage(role="user", content="Remember my allergy?"),
        PromptMessage(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="old", name="search_memory", arguments={"query": "allergy"})],
        ),
        PromptMessage(role="tool", content="peanuts", tool_call_id="old"),
        PromptMessage(role="tool", content="a journaled tool output", name="calendar"),
        PromptMessage(role="user", content="And now?", name="Alice Smith"),
        PromptMessage(role="user", content="Y ahora?", name="Алиса"),
    ]

    await _chat(llm, history, [SEARCH], _no_tools)

    sent = fake.chat_requests[0].messages
    assert sent[1]["tool_calls"][0]["function"]["name"] == "search_memory"
    assert sent[2] == {"role": "tool", "tool_call_id": "old", "content": "peanuts"}
    assert sent[3]["role"] == "user" and "calendar" in sent[3]["content"]
    # Display names are made acceptable to the API, or left out.
    assert sent[4]["name"] == "Alice_Smith"
    assert "name" not in sent[5]


async def test_chat_errors_are_translated_and_retried(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(server_error(502), "Hi!")
    outcome = await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)
    assert outcome.text == "Hi!"

    fake.set_handler(lambda request: server_error(500))
    with pytest.raises(Unavailable):
        await _chat(llm, [PromptMessage(role="user", content="hi")], [SEARCH], _no_tools)


async def test_chat_with_empty_text_is_an_output_error(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(completion("  "))

    with pytest.raises(LLMOutputError):
        await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)


async def test_reply_task_sends_the_reply_prompt(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    reply = ReplyContext(
        speaker_id="u1",
        speaker_name="Alice",
        thread_kind=ThreadKind.DM,
        text="What am I allergic to?",
        now=datetime(2025, 3, 3, 12, 0, tzinfo=UTC),
        facts_block="- Alice is allergic to peanuts",
    )
    history = [PromptMessage(role="assistant", content="Hello!")]
    fake.enqueue(completion("Peanuts."))

    outcome = await llm.chat(REPLY, ReplyRequest(reply=reply, history=history), [], _no_tools)

    assert outcome.text == "Peanuts."
    expected = build_messages(reply, history)
    sent = fake.chat_requests[0].messages
    assert [(m["role"], m["content"]) for m in sent] == [(m.role, m.content) for m in expected]
    assert fake.chat_requests[0].model == CHAT
    assert llm.usage.calls == {"chat": 1}


# -- the fake's default mode (for benchmarks) ---------------------------------------------


def _reflect_context() -> ReflectContext:
    base = facts_context("We are planning a dinner on Friday", kind=ThreadKind.GROUP)
    return ReflectContext(**base.model_dump(), new_facts=["Dinner on Friday"])


async def test_default_handler_answers_every_formation_task(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    facts = await llm.run(EXTRACT_FACTS, facts_context("I'm allergic to peanuts"))
    decisions = await llm.run(
        DECIDE_UPDATES,
        DecideUpdatesContext(
            new_facts=["a", "b"],
            candidates=[CandidateFact(id="f1", content="x", similarity=0.8, new_index=0)],
        ),
    )
    reflections = await llm.run(REFLECT, _reflect_context())
    blob = await llm.run(
        CONSOLIDATE,
        ConsolidateContext(
            scope=ReflectionScope.USER,
            current_blob="Alice likes tea.",
            reflections=["Alice wants short answers"],
            word_limit=5,
        ),
    )
    reply = await _chat(llm, [PromptMessage(role="user", content="hi")], [SEARCH], _no_tools)

    assert [(f.content, f.speaker_id, f.source_message_ids) for f in facts.facts] == [
        ("Alice said: I'm allergic to peanuts", "u1", ["m1"])
    ]
    assert [(d.new_index, d.action) for d in decisions.decisions] == [(0, "ADD"), (1, "ADD")]
    assert reflections.reflections == []
    assert blob.content == "Alice likes tea. Alice wants"
    assert reply.text == "Noted."
    assert len(fake.chat_requests) == 5


async def test_fake_embeddings_are_deterministic_unit_vectors(client: AsyncOpenAI) -> None:
    async with FakeOpenAI(embedding_dimensions=8) as small:
        api = client.with_options(base_url=small.base_url)
        one = await api.embeddings.create(model="e", input=["hello", "world"])
        two = await api.embeddings.create(model="e", input="hello")
        models = await api.models.list()

    vectors = [d.embedding for d in one.data]
    assert all(len(v) == 8 for v in vectors)
    assert vectors[0] == two.data[0].embedding
    assert vectors[0] != vectors[1]
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0)
    assert len(small.requests_to(EMBEDDINGS)) == 2
    assert "gpt-4o-mini" in [m.id for m in models.data]


async def test_a_failing_handler_is_surfaced_by_the_fake(client: AsyncOpenAI) -> None:
    def broken(request: RecordedRequest) -> Any:
        raise RuntimeError("bug in the test's handler")

    with pytest.raises(RuntimeError, match="bug in the test's handler"):
        async with FakeOpenAI(chat_handler=broken) as fake:
            api = client.with_options(base_url=fake.base_url, max_retries=0)
            with pytest.raises(openai.InternalServerError):
                await api.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )


# -- strict output: shapes, budgets, truncation ---------------------------------------------

STRICT_MODELS: list[type[BaseModel]] = [
    ExtractedFacts,
    UpdateDecisions,
    Reflections,
    ConsolidatedBlob,
]


@pytest.mark.parametrize("model", STRICT_MODELS)
def test_response_models_reject_a_missing_key_and_an_extra_one(model: type[BaseModel]) -> None:
    (key,) = [name for name, f in model.model_fields.items() if f.is_required()]
    with pytest.raises(ValidationError):
        model.model_validate({})  # the old "empty" answer
    with pytest.raises(ValidationError):
        model.model_validate({"result": []})
    value: object = "note" if model is ConsolidatedBlob else []
    assert model.model_validate({key: value}) is not None
    with pytest.raises(ValidationError):
        model.model_validate({key: value, "extra": 1})


def test_nested_items_forbid_extras_and_need_their_content() -> None:
    with pytest.raises(ValidationError):
        ExtractedFacts.model_validate({"facts": [{"content": "x", "mood": "happy"}]})
    with pytest.raises(ValidationError):
        ExtractedFacts.model_validate({"facts": [{"importance": 5}]})
    with pytest.raises(ValidationError):
        Reflections.model_validate({"reflections": [{"content": "x"}]})


@pytest.mark.parametrize("model", STRICT_MODELS)
def test_the_wire_schema_is_closed_and_lists_every_key(model: type[BaseModel]) -> None:
    schema = strict_schema(model)
    objects = [schema, *schema.get("$defs", {}).values()]
    for node in objects:
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
    assert "default" not in json.dumps(schema)


async def test_a_server_refusing_json_schema_gets_json_object_and_it_is_remembered(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(bad_request("response_format type json_schema is not supported"))
    fake.set_handler(lambda request: completion(json.dumps(ONE_FACT)))

    await llm.run(EXTRACT_FACTS, facts_context())
    await llm.run(EXTRACT_FACTS, facts_context())

    first, second, third = fake.chat_requests
    assert first.json["response_format"]["type"] == "json_schema"
    assert second.json["response_format"] == {"type": "json_object"}
    assert third.json["response_format"] == {"type": "json_object"}, "remembered"
    assert llm.output_mode is OutputMode.JSON_OBJECT


async def test_a_400_about_something_else_is_not_a_format_fallback(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(bad_request("messages: too many"))
    with pytest.raises(BadInput):
        await llm.run(EXTRACT_FACTS, facts_context())
    assert llm.output_mode is OutputMode.JSON_SCHEMA
    assert len(fake.chat_requests) == 1


async def test_every_call_sends_its_token_budget(fake: FakeOpenAI, llm: OpenAILLM) -> None:
    fake.enqueue(json.dumps({"decisions": []}), json.dumps({"reflections": []}))
    fake.enqueue(completion("Hello!"))

    await llm.run(DECIDE_UPDATES, DecideUpdatesContext(new_facts=["x"], candidates=[]))
    await llm.run(REFLECT, _reflect_context())
    await _chat(llm, [PromptMessage(role="user", content="hello")], [], _no_tools)

    decide, reflect, chat = fake.chat_requests
    assert decide.json["max_tokens"] == max_tokens_for("decide_updates", ModelTier.FAST)
    assert reflect.json["max_tokens"] == max_tokens_for("reflect", ModelTier.SLOW)
    assert chat.json["max_tokens"] == max_tokens_for("chat", ModelTier.CHAT)
    assert reflect.json["response_format"]["json_schema"]["name"] == "reflect"
    assert "response_format" not in chat.json


async def test_a_truncated_answer_raises_llm_truncated_without_a_second_call(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(completion('{"facts": [{"content": "Alice is all', finish_reason="length"))

    with pytest.raises(LLMTruncated) as raised:
        await llm.run(EXTRACT_FACTS, facts_context())

    assert isinstance(raised.value, LLMOutputError)
    assert raised.value.max_tokens == max_tokens_for("extract_facts", ModelTier.FAST)
    assert "cut off" in raised.value.message
    assert len(fake.chat_requests) == 1


async def test_a_cut_off_chat_reply_keeps_its_text_and_an_empty_one_is_truncated(
    fake: FakeOpenAI, llm: OpenAILLM
) -> None:
    fake.enqueue(completion("Here is the first half of", finish_reason="length"))
    fake.enqueue(completion("", finish_reason="length"))

    outcome = await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)
    assert outcome.text == "Here is the first half of"
    with pytest.raises(LLMTruncated):
        await _chat(llm, [PromptMessage(role="user", content="hi")], [], _no_tools)
