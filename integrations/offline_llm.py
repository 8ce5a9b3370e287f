"""The offline LLM provider: the ``memory.llm.LLM`` port answered by deterministic rules.

Used when no model endpoint is configured (DESIGN.md §7): formation still extracts facts,
decides updates, reflects and consolidates, from ``ctx`` rather than from the prompt text,
and the reply says honestly that it is offline when it cannot answer from memory. It
spends no tokens, but still counts calls per task so metrics and benchmarks read the same
for every provider.

The rules themselves are domain code (:mod:`memory.rules.tasks`, one module per task, as
:mod:`memory.prompts` has one per prompt); this adapter only maps a task's name to its rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from pydantic import BaseModel

from memory.errors import ConfigurationError
from memory.llm import C, ChatOutcome, ChatTask, R, Task, ToolRunner, ToolSpec, Usage
from memory.prompts.consolidate import CONSOLIDATE, ConsolidateContext
from memory.prompts.decide_updates import DECIDE_UPDATES, DecideUpdatesContext
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractFactsContext
from memory.prompts.reflect import REFLECT, ReflectContext
from memory.prompts.reply import REPLY, ReplyRequest
from memory.rules.tasks.consolidate import consolidate
from memory.rules.tasks.decide_updates import decide_updates
from memory.rules.tasks.extract_facts import extract_facts
from memory.rules.tasks.reflect import reflect
from memory.rules.tasks.reply import reply

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True)
class _Rule(Generic[M, T]):
    """A rule with the context type it reads, so a miswired call fails loudly."""

    context: type[M]
    answer: Callable[[M], T]

    def __call__(self, ctx: BaseModel) -> T:
        if not isinstance(ctx, self.context):
            raise ConfigurationError(
                f"the offline provider expected {self.context.__name__}, got {type(ctx).__name__}"
            )
        return self.answer(ctx)


_TASK_RULES: Final[dict[str, _Rule[Any, BaseModel]]] = {
    EXTRACT_FACTS.name: _Rule(ExtractFactsContext, extract_facts),
    DECIDE_UPDATES.name: _Rule(DecideUpdatesContext, decide_updates),
    REFLECT.name: _Rule(ReflectContext, reflect),
    CONSOLIDATE.name: _Rule(ConsolidateContext, consolidate),
}
_CHAT_RULES: Final[dict[str, _Rule[Any, str]]] = {
    REPLY.name: _Rule(ReplyRequest, reply),
}


class OfflineLLM:
    """Rule-based :class:`memory.llm.LLM`; ``offline`` is always True."""

    def __init__(self) -> None:
        self._usage = Usage()

    @property
    def offline(self) -> bool:
        return True

    @property
    def usage(self) -> Usage:
        return self._usage

    @staticmethod
    def supported_tasks() -> frozenset[str]:
        """The task names :meth:`run` answers."""
        return frozenset(_TASK_RULES)

    async def run(self, task: Task[C, R], ctx: C) -> R:
        """Answer ``task`` from ``ctx`` by rules.

        Raises :class:`ConfigurationError` for a task this provider has no rules for, or a
        context of the wrong type: both are wiring mistakes, not model failures.
        """
        rule = _TASK_RULES.get(task.name)
        if rule is None:
            raise ConfigurationError(
                f"the offline provider cannot answer the task {task.name!r}",
                hint="configure an OpenAI-compatible model for it, or add offline rules",
            )
        self._usage.record(task.name)
        result = rule(ctx)
        if not isinstance(result, task.response_model):
            raise ConfigurationError(
                f"task {task.name!r} expects {task.response_model.__name__}, "
                f"the offline rules give {type(result).__name__}"
            )
        return result

    async def chat(
        self,
        task: ChatTask[C],
        ctx: C,
        tools: Sequence[ToolSpec],
        run_tool: ToolRunner,
    ) -> ChatOutcome:
        """The reply rule's answer to ``ctx``; never calls tools, never pretends to chat.

        Raises :class:`ConfigurationError` for a chat task without a rule, or a context of
        the wrong type, as :meth:`run` does.
        """
        rule = _CHAT_RULES.get(task.name)
        if rule is None:
            raise ConfigurationError(
                f"the offline provider cannot answer the chat task {task.name!r}",
                hint="configure an OpenAI-compatible model for it, or add offline rules",
            )
        self._usage.record(task.name)
        return ChatOutcome(text=rule(ctx), offline=True)
