"""The offline provider: the LLM port answered by rules, one rule per task.

The rules themselves are tested where they live, in ``tests/unit/memory/rules/tasks/``.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from integrations.offline_llm import OfflineLLM
from memory.errors import ConfigurationError
from memory.llm import LLM, ChatTask, ModelTier, Task, ToolCall
from memory.models import Category, ThreadKind
from memory.prompts.decide_updates import DECIDE_UPDATES, DecideUpdatesContext
from memory.prompts.extract_facts import EXTRACT_FACTS
from memory.prompts.reply import REPLY, CitedMemory, ReplyContext, ReplyRequest
from tests.unit.memory.rules.tasks.journal import ALICE, NOW, extract_ctx, line

# --- the port ---------------------------------------------------------------------------------


def test_implements_the_llm_protocol() -> None:
    llm = OfflineLLM()
    assert isinstance(llm, LLM)
    assert llm.offline is True
    assert llm.supported_tasks() == {"extract_facts", "decide_updates", "reflect", "consolidate"}


def _request(text: str, *memories: str) -> ReplyRequest:
    return ReplyRequest(
        reply=ReplyContext(
            speaker_id=ALICE.id,
            speaker_name=ALICE.name,
            thread_kind=ThreadKind.DM,
            text=text,
            now=NOW,
            memories=[CitedMemory(content=m, category=Category.FACT) for m in memories],
            retrieved=True,
        )
    )


async def test_usage_counts_calls_per_task_with_no_tokens() -> None:
    llm = OfflineLLM()
    await llm.run(EXTRACT_FACTS, extract_ctx([line("I love tea")]))
    await llm.run(EXTRACT_FACTS, extract_ctx([line("hi")]))
    await llm.run(DECIDE_UPDATES, DecideUpdatesContext(new_facts=[], candidates=[]))
    await llm.chat(REPLY, _request("how are you?"), [], _no_tool)
    assert llm.usage.calls == {"extract_facts": 2, "decide_updates": 1, "chat": 1}
    assert llm.usage.total_calls == 4
    assert llm.usage.total_tokens == 0


class _Nothing(BaseModel):
    pass


async def test_unknown_task_is_a_configuration_error() -> None:
    task: Task[_Nothing, _Nothing] = Task(
        "summarise_web", ModelTier.FAST, _Nothing, _Nothing, lambda ctx: []
    )
    llm = OfflineLLM()
    with pytest.raises(ConfigurationError, match="summarise_web"):
        await llm.run(task, _Nothing())
    assert llm.usage.total_calls == 0


async def test_wrong_context_type_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ExtractFactsContext"):
        await OfflineLLM().run(EXTRACT_FACTS, _Nothing())  # type: ignore[misc]


# --- chat -------------------------------------------------------------------------------------


async def _no_tool(call: ToolCall) -> str:
    raise AssertionError("the offline provider never calls tools")


async def test_chat_answers_the_reply_task_by_its_rule() -> None:
    outcome = await OfflineLLM().chat(
        REPLY, _request("what is the gate code?", "the gate code is 4512"), [], _no_tool
    )
    assert outcome.offline is True
    assert outcome.tool_calls == []
    assert outcome.text == "From what I remember:\n- the gate code is 4512"


async def test_chat_without_an_answer_from_memory_says_it_is_offline() -> None:
    outcome = await OfflineLLM().chat(REPLY, _request("what is the gate code?"), [], _no_tool)
    assert outcome.offline is True
    assert "offline" in outcome.text
    assert "without a language model" in outcome.text


async def test_unknown_chat_task_is_a_configuration_error() -> None:
    task: ChatTask[_Nothing] = ChatTask("small_talk", ModelTier.CHAT, _Nothing, lambda ctx: [])
    llm = OfflineLLM()
    with pytest.raises(ConfigurationError, match="small_talk"):
        await llm.chat(task, _Nothing(), [], _no_tool)
    assert llm.usage.total_calls == 0


async def test_wrong_chat_context_type_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ReplyRequest"):
        await OfflineLLM().chat(REPLY, _Nothing(), [], _no_tool)  # type: ignore[arg-type]
