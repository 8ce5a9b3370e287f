"""The offline LLM provider: the ``memory.llm.LLM`` port answered by deterministic rules.

Used when no model endpoint is configured (DESIGN.md §7): formation still extracts facts,
decides updates, reflects and consolidates, from ``ctx`` rather than from the prompt text,
and chat says honestly that it is offline. It spends no tokens, but still counts calls per
task so metrics and benchmarks read the same for every provider.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from integrations.offline_llm.consolidate import consolidate
from integrations.offline_llm.decide import decide_updates
from integrations.offline_llm.extract import extract_facts
from integrations.offline_llm.reflect import reflect
from integrations.offline_llm.reply import compose_reply
from memory.errors import ConfigurationError
from memory.llm import C, ChatOutcome, PromptMessage, R, Task, ToolRunner, ToolSpec, Usage
from memory.prompts.consolidate import ConsolidateContext
from memory.prompts.decide_updates import DecideUpdatesContext
from memory.prompts.extract_facts import ExtractFactsContext
from memory.prompts.reflect import ReflectContext

M = TypeVar("M", bound=BaseModel)

#: Usage purpose recorded for chat calls.
CHAT_PURPOSE: Final = "chat"


def _extract(ctx: BaseModel) -> BaseModel:
    return extract_facts(_expect(ctx, ExtractFactsContext))


def _decide(ctx: BaseModel) -> BaseModel:
    return decide_updates(_expect(ctx, DecideUpdatesContext))


def _reflect(ctx: BaseModel) -> BaseModel:
    return reflect(_expect(ctx, ReflectContext))


def _consolidate(ctx: BaseModel) -> BaseModel:
    return consolidate(_expect(ctx, ConsolidateContext))


_HANDLERS: Final[dict[str, Callable[[BaseModel], BaseModel]]] = {
    "extract_facts": _extract,
    "decide_updates": _decide,
    "reflect": _reflect,
    "consolidate": _consolidate,
}


def _expect(ctx: BaseModel, model: type[M]) -> M:
    if not isinstance(ctx, model):
        raise ConfigurationError(
            f"the offline provider expected {model.__name__}, got {type(ctx).__name__}"
        )
    return ctx


class OfflineLLM:
    """Rule-based :class:`memory.llm.LLM`; ``offline`` is always True.

    ``composer`` turns the reply path's structured fallback into text; the default,
    :func:`compose_reply`, says that Alfred is offline when there is nothing better.
    """

    def __init__(self, *, composer: Callable[[Any], str] = compose_reply) -> None:
        self._usage = Usage()
        self._composer = composer

    @property
    def offline(self) -> bool:
        return True

    @property
    def usage(self) -> Usage:
        return self._usage

    @staticmethod
    def supported_tasks() -> frozenset[str]:
        """The task names :meth:`run` answers."""
        return frozenset(_HANDLERS)

    async def run(self, task: Task[C, R], ctx: C) -> R:
        """Answer ``task`` from ``ctx`` by rules.

        Raises :class:`ConfigurationError` for a task this provider has no rules for, or a
        context of the wrong type: both are wiring mistakes, not model failures.
        """
        handler = _HANDLERS.get(task.name)
        if handler is None:
            raise ConfigurationError(
                f"the offline provider cannot answer the task {task.name!r}",
                hint="configure an OpenAI-compatible model for it, or add offline rules",
            )
        self._usage.record(task.name)
        result = handler(ctx)
        if not isinstance(result, task.response_model):
            raise ConfigurationError(
                f"task {task.name!r} expects {task.response_model.__name__}, "
                f"the offline rules give {type(result).__name__}"
            )
        return result

    async def chat(
        self,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSpec],
        run_tool: ToolRunner,
        *,
        fallback: Any = None,
    ) -> ChatOutcome:
        """A templated reply from ``fallback``; never calls tools, never pretends to chat."""
        self._usage.record(CHAT_PURPOSE)
        return ChatOutcome(text=self._composer(fallback), offline=True)
