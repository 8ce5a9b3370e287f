"""The language-model port: typed tasks in, validated pydantic objects out.

A :class:`Task` is a prompt as typed code: it names itself, picks a model tier, declares
its response model and builds neutral messages from a typed context. The OpenAI-
compatible adapter sends ``task.build(ctx)`` and validates the JSON it gets back into
``task.response_model``; the offline provider ignores the prompt text and answers the
same task from ``ctx`` with deterministic rules. Either way the caller gets the same
type, so formation and the reply path never know which provider ran.

A :class:`ChatTask` is the same idea for the conversational reply, whose answer is text
reached through tool calls rather than a response model: the adapter that reads prompts
sends ``task.build(ctx)``, the offline one answers ``ctx`` by its reply rule. Neither
needs anything the other does not, so the port carries no provider-specific extras.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

from memory.errors import AlfredError

C = TypeVar("C", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


class ResponseModel(BaseModel):
    """The base of every typed task's answer: unknown keys are an error, not ignored.

    A model that answers ``{}`` or ``{"result": ...}`` must fail validation (and get its
    corrective retry) rather than pass as "nothing to remember": each response model
    declares the keys that carry its answer without defaults, so they are required.
    Optional details keep defaults so a terse but well-formed answer still validates.
    """

    model_config = ConfigDict(extra="forbid")


class ModelTier(StrEnum):
    """Which configured model a task uses: cheap extraction, careful merging, or chat."""

    FAST = "fast"
    SLOW = "slow"
    CHAT = "chat"


class PromptMessage(BaseModel):
    """A provider-neutral chat message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None


class ToolCall(BaseModel):
    """A model's request to run a tool, with JSON arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


class Task(Generic[C, R]):
    """A typed prompt: context model ``C`` in, response model ``R`` out."""

    def __init__(
        self,
        name: str,
        tier: ModelTier,
        context_model: type[C],
        response_model: type[R],
        build: Callable[[C], list[PromptMessage]],
    ) -> None:
        self.name = name
        self.tier = tier
        self.context_model = context_model
        self.response_model = response_model
        self._build = build

    def build(self, ctx: C) -> list[PromptMessage]:
        """The messages to send for ``ctx``."""
        return self._build(ctx)

    def __repr__(self) -> str:
        return f"Task({self.name!r}, tier={self.tier.value})"


class ChatTask(Generic[C]):
    """A typed conversation prompt: context model ``C`` in, a tool-using text reply out.

    ``name`` is also the usage purpose the reply is counted under.
    """

    def __init__(
        self,
        name: str,
        tier: ModelTier,
        context_model: type[C],
        build: Callable[[C], list[PromptMessage]],
    ) -> None:
        self.name = name
        self.tier = tier
        self.context_model = context_model
        self._build = build

    def build(self, ctx: C) -> list[PromptMessage]:
        """The conversation to send for ``ctx``."""
        return self._build(ctx)

    def __repr__(self) -> str:
        return f"ChatTask({self.name!r}, tier={self.tier.value})"


class ToolSpec(BaseModel):
    """A tool the chat model may call, described by a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


ToolRunner = Callable[[ToolCall], Awaitable[str]]


class ChatOutcome(BaseModel):
    """The chat model's final answer, and the tools it used on the way."""

    text: str
    tool_calls: list[ToolCall] = []
    offline: bool = False


@dataclass
class Usage:
    """Calls and tokens spent, per purpose (task name), for metrics and benchmarks."""

    calls: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)

    def record(self, purpose: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.calls[purpose] = self.calls.get(purpose, 0) + 1
        self.prompt_tokens[purpose] = self.prompt_tokens.get(purpose, 0) + prompt_tokens
        self.completion_tokens[purpose] = self.completion_tokens.get(purpose, 0) + completion_tokens

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_tokens(self) -> int:
        return sum(self.prompt_tokens.values()) + sum(self.completion_tokens.values())


class LLMOutputError(AlfredError):
    """The model answered, twice, with something that does not fit the response model."""

    def __init__(self, task: str, detail: str) -> None:
        super().__init__(f"the model's answer to {task} was not valid: {detail}")
        self.task = task


class LLMTruncated(LLMOutputError):
    """The model stopped at its token budget (``finish_reason: length``): the answer is
    cut off, so it is not valid whatever its first part looked like."""

    def __init__(self, task: str, max_tokens: int | None) -> None:
        budget = f"its budget of {max_tokens} tokens" if max_tokens else "its token limit"
        super().__init__(task, f"the answer was cut off at {budget}")
        self.max_tokens = max_tokens


@runtime_checkable
class LLM(Protocol):
    """A language model provider (OpenAI-compatible, or the offline rules)."""

    @property
    def offline(self) -> bool:
        """True for the rule-based provider: replies must say so when they cannot do better."""
        ...

    @property
    def usage(self) -> Usage:
        """What this provider has spent so far."""
        ...

    async def run(self, task: Task[C, R], ctx: C) -> R:
        """Answer a structured task.

        Raises :class:`LLMOutputError` when the answer is malformed after one retry, and
        :class:`memory.errors.Unavailable` when the provider cannot be reached.
        """
        ...

    async def chat(
        self,
        task: ChatTask[C],
        ctx: C,
        tools: Sequence[ToolSpec],
        run_tool: ToolRunner,
    ) -> ChatOutcome:
        """A reply to the conversation ``task`` builds from ``ctx``, calling tools through
        ``run_tool`` as needed.

        Raises :class:`memory.errors.Unavailable` when the provider cannot be reached.
        """
        ...


PromptMessage.model_rebuild()
