"""What the OpenAI-compatible adapter sends besides its transport: a token budget per
call, the answer's shape as a strict JSON schema, and the wire shape of messages and tools.

Kept apart from :mod:`integrations.openai_llm` (the transport and its retries) because
both are policy that changes with the prompts, not with the protocol.
"""

from __future__ import annotations

import copy
import json
import re
from enum import IntEnum
from typing import Any, cast

from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from pydantic import BaseModel

from memory.llm import ModelTier, PromptMessage, ToolSpec

#: Completion tokens per tier. Every call is bounded so a model that loops or rambles
#: costs a known amount and stops with ``finish_reason: length`` (reported as
#: ``LLMTruncated``) instead of running to the server's context limit. The figures are
#: several times what a sensible answer needs: a fact or a reflection is at most 30-35
#: words (≈ 50 tokens, ≈ 100 with its JSON keys), a reply a few short paragraphs.
TIER_MAX_TOKENS: dict[ModelTier, int] = {
    ModelTier.FAST: 2_000,
    ModelTier.SLOW: 2_000,
    ModelTier.CHAT: 1_000,
}

#: Tasks whose answers are larger than their tier's default. Extraction of a 100-message
#: batch may list a few dozen facts (≈ 100 tokens each); a circle's consolidated note
#: may hold 1,000 words (≈ 1,400 tokens) plus its JSON wrapper.
TASK_MAX_TOKENS: dict[str, int] = {
    "extract_facts": 4_000,
    "decide_updates": 2_000,
    "reflect": 1_500,
    "consolidate": 2_500,
}


def max_tokens_for(task: str, tier: ModelTier) -> int:
    """The completion budget of one call of ``task``."""
    return TASK_MAX_TOKENS.get(task, TIER_MAX_TOKENS[tier])


class OutputMode(IntEnum):
    """How the answer's shape is asked for, strongest first. An endpoint that refuses
    one mode (a 400 naming ``response_format`` or ``json_schema``) gets the next one,
    for the rest of the adapter's life."""

    JSON_SCHEMA = 2
    JSON_OBJECT = 1
    PROMPT_ONLY = 0


def response_format(mode: OutputMode, name: str, model: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` parameter for ``mode`` (None: the prompt alone asks)."""
    if mode is OutputMode.JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": strict_schema(model), "strict": True},
        }
    if mode is OutputMode.JSON_OBJECT:
        return {"type": "json_object"}
    return None


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the form strict structured outputs accept: every
    object closed (``additionalProperties: false``) and every property listed as
    required, with no ``default`` keywords.

    Listing the optional properties as required only makes a grammar-constrained model
    write them out (nullable ones as ``null``); the pydantic model still validates the
    answer, so the two never disagree about what is valid.
    """
    schema = copy.deepcopy(model.model_json_schema())
    _close(schema)
    for definition in schema.get("$defs", {}).values():
        _close(definition)
    return schema


def _close(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _close(item)
        return
    if not isinstance(node, dict):
        return
    node.pop("default", None)
    properties = node.get("properties")
    if node.get("type") == "object" and isinstance(properties, dict):
        node["additionalProperties"] = False
        node["required"] = list(properties)
    for key, value in node.items():
        if key != "$defs":
            _close(value)


#: What a participant name may not hold on the wire.
_NAME_JUNK = re.compile(r"[^A-Za-z0-9_-]+")


def message_param(message: PromptMessage) -> ChatCompletionMessageParam:
    """A neutral message in the wire shape (a tool result without an id becomes a note)."""
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user":
        name = wire_name(message.name)
        if name:
            return {"role": "user", "content": message.content, "name": name}
        return {"role": "user", "content": message.content}
    if message.role == "assistant":
        if message.tool_calls:
            return {
                "role": "assistant",
                "content": message.content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.arguments, ensure_ascii=False),
                        },
                    }
                    for call in message.tool_calls
                ],
            }
        return {"role": "assistant", "content": message.content}
    if message.tool_call_id:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    # The API rejects a tool message that answers no call; keep the text as context.
    label = f"tool {message.name}" if message.name else "tool"
    return cast(
        ChatCompletionMessageParam,
        {"role": "user", "content": f"({label} output) {message.content}"},
    )


def wire_name(name: str | None) -> str | None:
    """A participant name the API accepts (``^[A-Za-z0-9_-]{1,64}$``), or none at all.

    Display names ("Alice Smith", "Алиса") would otherwise make the request a 400.
    """
    if not name:
        return None
    cleaned = _NAME_JUNK.sub("_", name.strip())[:64].strip("_")
    return cleaned if any(ch.isalnum() for ch in cleaned) else None


def tool_param(tool: ToolSpec) -> ChatCompletionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
