"""The OpenAI adapter against a real OpenAI-compatible server: llama.cpp with SmolLM2-135M.

``test_openai_llm.py`` drives the adapter against a fake that answers what each test
scripts; these tests check that what the adapter sends and expects is what a real server
does: llama.cpp parses the model's tool calls into ``tool_calls``, turns the strict JSON
schema of a response model into a grammar, stops at ``max_tokens`` with
``finish_reason: length``, and drops the work of a client that went away. They test the
protocol, not the model: a 135M model's words are nonsense, so nothing here looks at
them, only at their structure. The server runs in this process on a free loopback port
(:mod:`tests.helpers.llama_server`), one per module; the model file comes from an
installed wheel, so nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, Literal

import httpx
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from integrations import llm_wire
from integrations.llm_wire import OutputMode
from integrations.openai_llm import OpenAILLM, RetryPolicy
from memory.errors import Unavailable
from memory.llm import (
    ChatTask,
    LLMTruncated,
    ModelTier,
    PromptMessage,
    ResponseModel,
    Task,
    ToolCall,
)
from memory.prompts.consolidate import CONSOLIDATE
from memory.prompts.decide_updates import DECIDE_UPDATES
from memory.prompts.extract_facts import EXTRACT_FACTS
from memory.prompts.reflect import REFLECT
from memory.prompts.reply import SEARCH_MEMORY
from services.calendar.tools import CREATE_EVENT, LIST_EVENTS
from services.reminder_tools import SPECS as REMINDER_TOOLS
from services.reply.lists import LIST_TOOLS
from tests.helpers.llama_server import LlamaServer

TINY = RetryPolicy(attempts=3, base_delay=0.005, max_delay=0.02)

#: Token budgets of this module's tasks, registered the way production tasks declare
#: theirs (``llm_wire.TASK_MAX_TOKENS``): small, so the whole module takes seconds.
BUDGETS = {
    "contract_chat": 16,
    "contract_tools": 48,
    "contract_json": 256,
    "contract_cut": 5,
    "contract_endless": 1_000,
    "contract_schema": 1,
}


class NoContext(BaseModel):
    """These tasks build fixed prompts; the context carries nothing."""


class Weather(ResponseModel):
    """A strict answer: every key required, no extra key, every value bounded."""

    sky: Literal["clear", "cloudy", "rain"]
    celsius: int = Field(ge=-40, le=50)
    place: str = Field(min_length=1, max_length=16)
    warnings: list[Literal["wind", "heat", "frost"]] = Field(max_length=2)


class Essay(ResponseModel):
    """An answer that cannot fit in a small budget: it must be cut off."""

    text: str = Field(min_length=200)


class Endless(ResponseModel):
    """An answer of at least 30,000 characters, over 1,000 tokens even at 25 characters a
    token: it cannot end by itself within its budget, so a generation that stops short of
    it was stopped by someone."""

    parts: list[Annotated[str, Field(min_length=1_500)]] = Field(min_length=20)


def fixed(*messages: PromptMessage) -> Any:
    return lambda _ctx: list(messages)


def user(text: str, name: str | None = None) -> PromptMessage:
    return PromptMessage(role="user", content=text, name=name)


def structured(name: str, model: type[ResponseModel], prompt: str) -> Task[NoContext, Any]:
    return Task(name, ModelTier.FAST, NoContext, model, fixed(user(prompt)))


WEATHER = structured("contract_json", Weather, "Tell me about the sea.")
ESSAY = structured("contract_cut", Essay, "Write an essay about the sea.")
ENDLESS = structured("contract_endless", Endless, "Write a very long story about the sea.")


def weather_lookup(city: str, n: int, answer: str) -> list[PromptMessage]:
    """One worked example of a question answered through ``search_memory``."""
    call = ToolCall(id=f"call_{n}", name=SEARCH_MEMORY.name, arguments={"query": city})
    return [
        user(f"Weather in {city}?"),
        PromptMessage(role="assistant", content="", tool_calls=[call]),
        PromptMessage(role="tool", content=answer, tool_call_id=call.id),
        PromptMessage(role="assistant", content=answer),
    ]


#: Alfred's real ``search_memory`` tool, with three worked examples before the question:
#: a 135M model calls a tool when the conversation shows it how (greedy sampling makes
#: it the same call every run); the server still has to parse the call out of its text.
TOOL_CHAT: ChatTask[NoContext] = ChatTask(
    "contract_tools",
    ModelTier.CHAT,
    NoContext,
    fixed(
        PromptMessage(
            role="system",
            content="You answer questions about the weather by calling search_memory.",
        ),
        *weather_lookup("Paris", 1, "Sunny."),
        *weather_lookup("Oslo", 2, "Snow."),
        *weather_lookup("Lima", 3, "Rain."),
        user("Weather in Rome?"),
    ),
)


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    """One llama.cpp server for the module, stopped at its end."""
    with LlamaServer() as server:
        yield server


@pytest.fixture(scope="module", autouse=True)
def budgets() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, tokens in BUDGETS.items():
            patch.setitem(llm_wire.TASK_MAX_TOKENS, name, tokens)
        yield


@pytest.fixture
async def client(llama: LlamaServer) -> AsyncIterator[AsyncOpenAI]:
    api = AsyncOpenAI(api_key="unset", base_url=llama.base_url)
    yield api
    await api.close()


def make_llm(client: AsyncOpenAI, **kwargs: Any) -> OpenAILLM:
    options: dict[str, Any] = {"timeout": 60.0, "retry": TINY, **kwargs}
    return OpenAILLM(client, fast_model="fast", slow_model="slow", chat_model="chat", **options)


@pytest.fixture
def llm(client: AsyncOpenAI) -> OpenAILLM:
    return make_llm(client)


async def slot(llama: LlamaServer) -> dict[str, Any]:
    """The server's one slot as ``/slots`` reports it (is it generating, how far)."""
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{llama.address}/slots")
    response.raise_for_status()
    (only,) = response.json()
    return dict(only)


async def metric(llama: LlamaServer, name: str) -> float:
    """One of the server's Prometheus figures (``/metrics``)."""
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{llama.address}/metrics")
    response.raise_for_status()
    for line in response.text.splitlines():
        if line.startswith(f"llamacpp:{name} "):
            return float(line.split()[1])
    raise AssertionError(f"no llamacpp:{name} in /metrics")


async def tokens_generated(llama: LlamaServer) -> int:
    """Tokens the server has generated since it started, abandoned answers included."""
    return int(await metric(llama, "tokens_predicted_total"))


async def generating(llama: LlamaServer) -> None:
    """Return once the slot has started generating an answer."""
    async with asyncio.timeout(60):
        while True:
            state = await slot(llama)
            if state["is_processing"] and state["next_token"][0]["n_decoded"] > 0:
                return
            await asyncio.sleep(0.02)


async def idle(llama: LlamaServer) -> None:
    """Return once the slot has stopped generating and no request waits for it.

    llama.cpp looks at a waiting client's connection only after a second in which no
    other result arrived, and every ``/slots`` or ``/metrics`` answer is such a result:
    asking faster than that would keep it from ever noticing that the client left.
    """
    async with asyncio.timeout(100):
        while True:
            await asyncio.sleep(1.5)
            busy = (await slot(llama))["is_processing"]
            if not busy and await metric(llama, "requests_deferred") == 0:
                return


async def no_tools(call: ToolCall) -> str:
    raise AssertionError(f"no tool was offered, yet {call.name} ran")


# -- chat -------------------------------------------------------------------------------


async def test_a_plain_chat_reply_comes_back_as_text_within_its_budget(llm: OpenAILLM) -> None:
    task = ChatTask(
        "contract_chat",
        ModelTier.CHAT,
        NoContext,
        fixed(
            PromptMessage(role="system", content="You are a helpful assistant."),
            user("Say hello to Bob.", name="Alice Smith"),  # sent as "Alice_Smith"
        ),
    )

    outcome = await llm.chat(task, NoContext(), [], no_tools)

    assert outcome.text.strip()
    assert outcome.tool_calls == []
    assert outcome.offline is False
    assert llm.usage.calls == {"contract_chat": 1}
    assert llm.usage.prompt_tokens["contract_chat"] > 0
    assert 0 < llm.usage.completion_tokens["contract_chat"] <= BUDGETS["contract_chat"]


async def test_tool_calls_are_parsed_by_the_server_run_and_answered(llm: OpenAILLM) -> None:
    ran: list[ToolCall] = []

    async def run_tool(call: ToolCall) -> str:
        ran.append(call)
        return "Warm and sunny."

    outcome = await llm.chat(TOOL_CHAT, NoContext(), [SEARCH_MEMORY], run_tool)

    # The server found the call in the model's text and sent it as ``tool_calls`` with
    # arguments its grammar held to the tool's schema; the adapter ran it and sent the
    # result back; the next round ended in text.
    assert ran, "the model made no tool call"
    assert outcome.tool_calls == ran
    for call in ran:
        assert call.name == "search_memory"
        assert call.id
        assert set(call.arguments) <= {"query", "limit"}
        assert isinstance(call.arguments["query"], str)
    assert len({call.id for call in ran}) == len(ran)
    assert outcome.text.strip()
    rounds = llm.usage.calls["contract_tools"]
    assert 2 <= rounds <= 5  # at least one round with calls, then one with text


async def test_the_last_round_forbids_tools_and_still_gets_text(client: AsyncOpenAI) -> None:
    llm = make_llm(client, max_tool_rounds=0)

    outcome = await llm.chat(TOOL_CHAT, NoContext(), [SEARCH_MEMORY], no_tools)

    # ``tool_choice: "none"``: the server accepts it and answers in text, and a call the
    # model writes anyway is not parsed into one the adapter would run.
    assert outcome.text.strip()
    assert outcome.tool_calls == []
    assert llm.usage.calls == {"contract_tools": 1}


# -- structured answers ------------------------------------------------------------------------


async def test_json_schema_is_enforced_by_the_server_grammar(llm: OpenAILLM) -> None:
    # The prompt does not describe the answer's shape: only the schema sent as
    # ``response_format`` (turned into a grammar by the server) can make it valid.
    result = await llm.run(WEATHER, NoContext())

    assert isinstance(result, Weather)
    assert llm.output_mode is OutputMode.JSON_SCHEMA  # accepted, no fallback
    assert llm.usage.calls == {"contract_json": 1}  # valid at once: no corrective retry


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(task.response_model, id=task.name)
        for task in (EXTRACT_FACTS, DECIDE_UPDATES, REFLECT, CONSOLIDATE)
    ],
)
async def test_the_server_accepts_the_schema_of_every_formation_task(
    llm: OpenAILLM, model: type[ResponseModel]
) -> None:
    # A schema the server cannot turn into a grammar is a 400 (``BadInput``). With a
    # budget of one token, an accepted one ends as a cut-off answer.
    task = structured("contract_schema", model, "Hello.")

    with pytest.raises(LLMTruncated):
        await llm.run(task, NoContext())

    assert llm.output_mode is OutputMode.JSON_SCHEMA


#: Every tool at once is a long prompt and a large grammar for the server's one thread:
#: 40 s alone on a slow 2-core machine, over a minute beside the suite's other workers.
#: The time limits only tell a hang from slowness here.
EVERY_TOOL_TIMEOUT = 240.0


@pytest.mark.timeout(EVERY_TOOL_TIMEOUT + 60)
async def test_the_server_accepts_every_tool_alfred_offers(client: AsyncOpenAI) -> None:
    # Each tool's parameters become part of the tool-call grammar; one the server cannot
    # compile is a 400 (``BadInput``), which is the only failure this test can see.
    llm = make_llm(client, timeout=EVERY_TOOL_TIMEOUT)
    task = ChatTask("contract_schema", ModelTier.CHAT, NoContext, fixed(user("Hello.")))

    with contextlib.suppress(LLMTruncated):  # one token may be cut-off text or nothing
        await llm.chat(
            task,
            NoContext(),
            [SEARCH_MEMORY, LIST_EVENTS, CREATE_EVENT, *LIST_TOOLS, *REMINDER_TOOLS],
            no_tools,
        )

    assert llm.usage.calls == {"contract_schema": 1}


# -- limits and failures -------------------------------------------------------------------


async def test_an_answer_cut_at_max_tokens_is_llm_truncated(llm: OpenAILLM) -> None:
    with pytest.raises(LLMTruncated) as caught:
        await llm.run(ESSAY, NoContext())

    assert caught.value.max_tokens == BUDGETS["contract_cut"]
    # The server stopped exactly at the budget the adapter sent, said so with
    # ``finish_reason: length``, and the adapter did not ask again.
    assert llm.usage.completion_tokens == {"contract_cut": BUDGETS["contract_cut"]}
    assert llm.usage.calls == {"contract_cut": 1}


async def test_a_client_timeout_is_unavailable_and_the_server_drops_the_work(
    llama: LlamaServer, client: AsyncOpenAI
) -> None:
    hurried = make_llm(client, timeout=0.05)
    before = await tokens_generated(llama)

    with pytest.raises(Unavailable) as caught:
        await hurried.run(ENDLESS, NoContext())

    assert caught.value.component == "llm"
    assert "0.05s" in caught.value.message or "timed out" in caught.value.message
    assert hurried.usage.calls == {}  # no answer ever came back
    # Each of the three timed-out tries closed its connection, so the server stopped
    # (or never started) its generation: together they are short of one full answer.
    await idle(llama)
    assert await tokens_generated(llama) - before < BUDGETS["contract_endless"]
    result = await make_llm(client).run(WEATHER, NoContext())
    assert isinstance(result, Weather)


async def test_a_request_cancelled_mid_flight_stops_on_the_server_too(
    llama: LlamaServer, llm: OpenAILLM
) -> None:
    before = await tokens_generated(llama)
    request = asyncio.ensure_future(llm.run(ENDLESS, NoContext()))
    await generating(llama)

    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request  # cancellation is not turned into an Alfred error

    await idle(llama)
    # The answer could not have ended before its budget (see ``Endless``): the server
    # stopped because the adapter closed the connection.
    assert 0 < await tokens_generated(llama) - before < BUDGETS["contract_endless"]
    # The same adapter, with the same connection pool, gets the next answer.
    result = await llm.run(WEATHER, NoContext())
    assert isinstance(result, Weather)
