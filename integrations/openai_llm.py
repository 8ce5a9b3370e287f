"""The :class:`memory.llm.LLM` port over any OpenAI-compatible chat-completions endpoint.

Structured tasks go out with the JSON schema of the task's pydantic response model
(falling back to JSON mode, then to the prompt alone, on endpoints that refuse it) and
a token budget, and come back as that model; the chat path runs a bounded tool-calling
loop. The adapter owns its retry policy (the SDK's own retries are switched off) so
that it is explicit, the same for every endpoint, and testable with tiny delays. Every
``openai`` exception is translated here into :mod:`memory.errors`, so nothing above this
module knows which SDK ran.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import openai
from openai import AsyncOpenAI
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from pydantic import BaseModel, ValidationError

from integrations.llm_wire import (
    OutputMode,
    max_tokens_for,
    message_param,
    response_format,
    tool_param,
)
from memory.errors import AlfredError, BadInput, RateLimited, Unavailable
from memory.llm import (
    ChatOutcome,
    ChatTask,
    LLMOutputError,
    LLMTruncated,
    ModelTier,
    Task,
    ToolCall,
    ToolRunner,
    ToolSpec,
    Usage,
)
from memory.sensitive import sensitive

log = logging.getLogger(__name__)

C = TypeVar("C", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)

COMPONENT = "llm"
#: Tool-calling rounds before the model must answer in text (the brief's bound).
MAX_TOOL_ROUNDS = 4
#: How much of a bad answer is echoed back to the model when asking it to correct itself.
ECHO_CHARS = 4_000
#: Status codes worth retrying: timeouts, lock conflicts, throttling, server errors.
TRANSIENT_STATUS = {408, 409, 429}

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.S)


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures (429, 5xx, connection errors, timeouts) are retried.

    ``attempts`` counts the first try. Delays grow as ``base_delay * 2**n`` up to
    ``max_delay``, each scaled by a random factor in ``1 ± jitter`` so that workers hit
    by the same outage do not retry in lockstep. A ``Retry-After`` from the server
    replaces the computed delay; one longer than ``max_retry_after`` is not waited for:
    :class:`RateLimited` goes up at once with ``retry_after`` so the job queue can defer.
    """

    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 30.0

    def backoff(self, failures: int) -> float:
        """The delay before the next try, after ``failures`` failed tries (≥ 1)."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        return max(0.0, delay * random.uniform(1 - self.jitter, 1 + self.jitter))


class _Transient(Exception):
    """A failure worth retrying, carrying the error to raise when tries run out."""

    def __init__(self, error: Unavailable, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class _Malformed(Exception):
    """The model's content does not parse or validate; ``detail`` says why, briefly.

    ``detail`` never holds the model's words (it reaches INFO logs and the
    :class:`LLMOutputError` that callers log at WARNING; model output can repeat a
    user's message or a memory). ``quote``, an excerpt of the answer, is shown only to
    the model in the corrective retry and in DEBUG logs.
    """

    def __init__(self, detail: str, quote: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.quote = quote

    @property
    def for_model(self) -> str:
        """What the corrective retry tells the model: the reason and the excerpt."""
        return f"{self.detail}: {self.quote}" if self.quote else self.detail


class OpenAILLM:
    """An :class:`memory.llm.LLM` over ``chat.completions`` of an OpenAI-compatible API."""

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        fast_model: str,
        slow_model: str,
        chat_model: str,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        owns_client: bool = False,
    ) -> None:
        """Wrap ``client``; its own retries are switched off (a copy, the original is kept).

        ``sleep`` is injectable so tests can observe backoff delays. ``owns_client``
        makes :meth:`aclose` close the client (true when built by :meth:`for_endpoint`).
        """
        self._client = client.with_options(max_retries=0, timeout=timeout)
        self._models = {
            ModelTier.FAST: fast_model,
            ModelTier.SLOW: slow_model,
            ModelTier.CHAT: chat_model,
        }
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._max_tool_rounds = max_tool_rounds
        self._sleep = sleep
        self._owns_client = owns_client
        self._usage = Usage()
        # The strongest answer shape this endpoint accepts: a server that refuses a
        # ``response_format`` (a 400 naming it) gets the next mode from then on.
        self._output_mode = OutputMode.JSON_SCHEMA

    @classmethod
    def for_endpoint(
        cls,
        *,
        api_key: str | None,
        base_url: str | None,
        fast_model: str,
        slow_model: str,
        chat_model: str,
        timeout: float,
        retry: RetryPolicy | None = None,
    ) -> OpenAILLM:
        """The adapter for an OpenAI-compatible endpoint and its three models.

        A missing key is sent as a placeholder: local OpenAI-compatible servers often
        need none, and a real endpoint answers 401, reported as :class:`Unavailable`.
        """
        client = AsyncOpenAI(
            api_key=api_key or "unset", base_url=base_url, timeout=timeout, max_retries=0
        )
        return cls(
            client,
            fast_model=fast_model,
            slow_model=slow_model,
            chat_model=chat_model,
            timeout=timeout,
            retry=retry,
            owns_client=True,
        )

    @property
    def offline(self) -> bool:
        return False

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def output_mode(self) -> OutputMode:
        """How answers are shaped on this endpoint, as learnt from its refusals so far."""
        return self._output_mode

    @property
    def models(self) -> Mapping[ModelTier, str]:
        """The model name each tier sends."""
        return dict(self._models)

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        if self._owns_client:
            await self._client.close()

    # -- structured tasks -----------------------------------------------------------------

    async def run(self, task: Task[C, R], ctx: C) -> R:
        """Answer ``task`` for ``ctx`` as ``task.response_model``.

        A malformed or invalid answer is retried once with the validation error shown to
        the model; a second one raises :class:`LLMOutputError`. An answer cut off at the
        token budget raises :class:`LLMTruncated` at once. Transport failures are
        retried per :class:`RetryPolicy`, then raise :class:`Unavailable` /
        :class:`RateLimited`; a refused request raises :class:`BadInput`.
        """
        model = self._models[task.tier]
        messages = [message_param(m) for m in task.build(ctx)]
        detail = ""  # why the answer was invalid, without the model's words (for logs)
        told = ""  # the same with an excerpt of the answer (for the model only)
        budget = max_tokens_for(task.name, task.tier)
        for attempt in (1, 2):
            result = await self._complete(
                task.name, model, messages, shape=task.response_model, max_tokens=budget
            )
            content, refusal = _content(result)
            try:
                if refusal:
                    raise _Malformed("the model refused", quote=_clip(refusal, 200))
                return task.response_model.model_validate(_parse_json_object(content))
            except (_Malformed, ValidationError) as exc:
                detail = exc.detail if isinstance(exc, _Malformed) else _summarise(exc)
                told = exc.for_model if isinstance(exc, _Malformed) else detail
                log.info("llm %s answer %d invalid: %s", task.name, attempt, detail)
                log.debug("llm %s answer %d invalid: %s", task.name, attempt, sensitive(told))
            messages = [
                *messages,
                {"role": "assistant", "content": _clip(content or "", ECHO_CHARS)},
                {
                    "role": "user",
                    "content": (
                        f"Your answer was not valid: {told}. Answer again with one JSON "
                        "object only, exactly in the format asked for, with no other text."
                    ),
                },
            ]
        raise LLMOutputError(task.name, detail)

    # -- chat with tools ------------------------------------------------------------------

    async def chat(
        self,
        task: ChatTask[C],
        ctx: C,
        tools: Sequence[ToolSpec],
        run_tool: ToolRunner,
    ) -> ChatOutcome:
        """Reply to the conversation ``task`` builds from ``ctx``, running the model's tool
        calls through ``run_tool``.

        Up to ``max_tool_rounds`` rounds of tool calls; after that the model is asked to
        answer without tools. Exceptions from ``run_tool`` are the caller's and propagate
        unchanged.
        """
        model = self._models[task.tier]
        convo = [message_param(m) for m in task.build(ctx)]
        tool_params = [tool_param(t) for t in tools]
        used: list[ToolCall] = []
        for round_ in range(self._max_tool_rounds + 1):
            may_call = bool(tool_params) and round_ < self._max_tool_rounds
            result = await self._complete(
                task.name,
                model,
                convo,
                tools=tool_params or None,
                tool_choice=None if may_call or not tool_params else "none",
                max_tokens=max_tokens_for(task.name, task.tier),
            )
            message = result.choices[0].message
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls or not may_call:
                text = (message.content or "").strip()
                cut = result.choices[0].finish_reason == "length"
                if not text and cut:
                    raise LLMTruncated(task.name, max_tokens_for(task.name, task.tier))
                if not text:
                    raise LLMOutputError(task.name, "the model returned no text")
                return ChatOutcome(text=text, tool_calls=used)
            convo.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.function.name,
                                "arguments": c.function.arguments,
                            },
                        }
                        for c in calls
                    ],
                }
            )
            for call in calls:
                try:
                    arguments = _parse_arguments(call.function.arguments)
                except _Malformed as exc:
                    output = f"error: the arguments were not valid JSON ({exc.detail}); try again"
                else:
                    tool_call = ToolCall(id=call.id, name=call.function.name, arguments=arguments)
                    used.append(tool_call)
                    output = await run_tool(tool_call)
                convo.append({"role": "tool", "tool_call_id": call.id, "content": output})
        raise AssertionError("unreachable: the last round never offers tools")

    # -- one request, with retries and error translation -----------------------------------

    async def _complete(
        self,
        purpose: str,
        model: str,
        messages: list[ChatCompletionMessageParam],
        *,
        shape: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        tools: list[ChatCompletionToolParam] | None = None,
        tool_choice: str | None = None,
    ) -> ChatCompletion:
        """One completion; transient failures retried, every failure an ``AlfredError``.

        ``shape`` asks for an answer of that model's JSON schema; then ``finish_reason:
        length`` raises :class:`LLMTruncated` (cut-off JSON is never valid). A cut-off
        chat reply is still readable text: :meth:`chat` decides.
        """
        failures = 0
        while True:
            kwargs: dict[str, Any] = {}
            if max_tokens is not None:
                kwargs["max_tokens"] = max_tokens
            wanted = response_format(self._output_mode, purpose, shape) if shape else None
            if wanted is not None:
                kwargs["response_format"] = wanted
            if tools:
                kwargs["tools"] = tools
            if tool_choice:
                kwargs["tool_choice"] = tool_choice
            try:
                result = await self._request(model, messages, kwargs)
            except _Transient as exc:
                failures += 1
                error, retry_after = exc.error, exc.retry_after
                too_long = retry_after is not None and retry_after > self._retry.max_retry_after
                if failures >= self._retry.attempts or too_long:
                    raise error from None
                delay = retry_after if retry_after is not None else self._retry.backoff(failures)
                log.warning(
                    "llm %s: %s; retry %d/%d in %.2fs",
                    purpose,
                    error.message,
                    failures,
                    self._retry.attempts - 1,
                    delay,
                )
                await self._sleep(delay)
                continue
            except BadInput as exc:
                if "response_format" in kwargs and _refuses_format(exc.message):
                    refused = self._output_mode
                    self._output_mode = OutputMode(refused - 1)
                    log.warning(
                        "llm: %s refuses response_format %s; using %s",
                        model,
                        refused.name.lower(),
                        self._output_mode.name.lower(),
                    )
                    continue
                raise
            usage = result.usage
            self._usage.record(
                purpose,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            )
            if result.choices[0].finish_reason == "length":
                log.warning("llm %s: the answer was cut off at %s tokens", purpose, max_tokens)
                if shape is not None:
                    raise LLMTruncated(purpose, max_tokens)
            return result

    async def _request(
        self, model: str, messages: list[ChatCompletionMessageParam], kwargs: dict[str, Any]
    ) -> ChatCompletion:
        """One HTTP round trip, SDK exceptions translated (``_Transient`` when retryable)."""
        try:
            async with asyncio.timeout(self._timeout):
                # The SDK's documented ``post``: ``create`` walks the body against its
                # TypedDicts first, 8-12 ms of event loop a reply (docs/scaling.md).
                body = {"model": model, "messages": messages, **kwargs}
                result: object = await self._client.post(
                    "/chat/completions",
                    cast_to=ChatCompletion,
                    body=body,
                    options={"timeout": self._timeout},
                )
        except TimeoutError:
            raise _Transient(
                Unavailable(COMPONENT, f"{model} did not answer within {self._timeout:g}s")
            ) from None
        except openai.OpenAIError as exc:
            raise _translate(exc, model) from None
        except ValueError as exc:
            # The SDK decodes a JSON-labelled body without wrapping decoder errors.
            raise _Transient(
                Unavailable(COMPONENT, f"{model} sent a body that is not JSON ({exc})")
            ) from None
        if (
            not isinstance(result, ChatCompletion)
            or not isinstance(getattr(result, "choices", None), list)
            or not result.choices
            or getattr(result.choices[0], "message", None) is None
        ):
            raise _Transient(
                Unavailable(COMPONENT, f"{model} sent a response that is not a chat completion")
            )
        return result


# ---------------------------------------------------------------------------------------
# Translation and parsing helpers


def _translate(exc: openai.OpenAIError, model: str) -> AlfredError | _Transient:
    """The Alfred error for an SDK exception (wrapped in ``_Transient`` when retryable)."""
    if isinstance(exc, openai.APITimeoutError):
        return _Transient(Unavailable(COMPONENT, f"{model} timed out"))
    if isinstance(exc, openai.APIConnectionError):
        return _Transient(Unavailable(COMPONENT, f"cannot reach the endpoint: {exc}"))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = f"{model}: HTTP {status}: {_clip(exc.message, 300)}"
        if status == 429:
            retry_after = _retry_after(exc.response.headers)
            return _Transient(RateLimited(COMPONENT, text, retry_after=retry_after), retry_after)
        if status >= 500 or status in TRANSIENT_STATUS:
            return _Transient(Unavailable(COMPONENT, text))
        if status in (400, 413, 422):
            return BadInput(f"the LLM endpoint refused the request: {text}")
        if status in (401, 403):
            return Unavailable(COMPONENT, text, hint="check OPENAI_API_KEY")
        if status == 404:
            return Unavailable(
                COMPONENT, text, hint="check OPENAI_BASE_URL and the LLM_*_MODEL names"
            )
        return Unavailable(COMPONENT, text)
    return Unavailable(COMPONENT, f"{type(exc).__name__}: {_clip(str(exc), 300)}")


def _refuses_format(message: str) -> bool:
    """Whether a 400 says the endpoint does not support the answer shape we asked for."""
    lowered = message.lower()
    return "response_format" in lowered or "json_schema" in lowered


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (numeric form), if present."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: rare from LLM APIs; fall back to our own backoff
        if seconds >= 0 and seconds == seconds:  # not NaN
            return seconds
    return None


def _content(result: ChatCompletion) -> tuple[str | None, str | None]:
    message = result.choices[0].message
    return message.content, getattr(message, "refusal", None)


def _parse_json_object(content: str | None) -> dict[str, Any]:
    """The JSON object in a model's answer: bare, in a ```json fence, or the first {...}.

    Servers that ignore ``response_format`` wrap JSON in prose or code fences.
    """
    text = (content or "").strip()
    if not text:
        raise _Malformed("the answer was empty")
    candidates = [text, *(m.strip() for m in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise _Malformed("no JSON object in the answer", quote=repr(_clip(text, 120)))


def _parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments; an empty string means no arguments."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise _Malformed(str(exc)) from None
    if not isinstance(value, dict):
        raise _Malformed("the arguments are not a JSON object")
    return value


def _summarise(exc: ValidationError, limit: int = 3) -> str:
    """A validation error in a line or two: what the model can act on, not a traceback."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
