"""Adapters built from settings: the one place that reads configuration for them.

Adapters take plain arguments (URLs, keys, timeouts) and never see :class:`Settings`,
so each can be used and tested on its own; these functions translate the settings of
one concern into those arguments.
"""

from __future__ import annotations

from pathlib import Path

from integrations.mem0.common import OSS_EMBED_TIMEOUT_S
from memory.errors import ConfigurationError
from memory.llm import LLM
from memory.ports import Embedder
from memory.semantic import SemanticIndex
from runtime.settings import EmbeddingSettings, LLMSettings, Mode, Settings


def build_llm(settings: LLMSettings) -> LLM:
    """The OpenAI-compatible provider when a key is set, the offline rules otherwise."""
    if settings.openai_api_key is None:
        from integrations.offline_llm import OfflineLLM

        return OfflineLLM()
    from integrations.openai_llm import OpenAILLM

    return OpenAILLM.for_endpoint(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url,
        fast_model=settings.llm_fast_model,
        slow_model=settings.llm_slow_model,
        chat_model=settings.llm_chat_model,
        timeout=settings.llm_timeout,
    )


def build_embedder(settings: EmbeddingSettings) -> Embedder:
    """The configured :class:`memory.ports.Embedder`; loading model weights stays lazy."""
    if settings.embeddings_mode is Mode.CONFIGURED:
        # Imported here: the client library takes a second or more to import, which
        # every command, the bot and the worker would pay on the offline defaults too.
        from openai import AsyncOpenAI

        from integrations.openai_embedder import OpenAIEmbedder

        api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        client = AsyncOpenAI(
            api_key=api_key or "unset",
            base_url=settings.openai_base_url,
            timeout=settings.llm_timeout,
            max_retries=2,
        )
        return OpenAIEmbedder(client, settings.embeddings_model)
    from integrations.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


async def build_semantic_index(
    settings: Settings,
    *,
    embedder_base_url: str | None = None,
    embedder_api_key: str | None = None,
    embedding_dims: int | None = None,
    vector_path: Path | None = None,
    in_memory: bool = False,
) -> SemanticIndex | None:
    """The semantic index the settings ask for, or ``None`` when mem0 is off.

    ``MEM0_MODE``: ``off``; ``cloud`` (needs ``MEM0_API_KEY``; ``MEM0_HOST`` optional);
    ``oss`` (local qdrant under the data dir, embeddings from ``OPENAI_BASE_URL`` /
    ``OPENAI_API_KEY``); ``auto`` (the default: cloud when a key is set, else off).
    The keyword arguments override the embeddings endpoint and the vector location
    (tests point them at local fakes and in-memory stores).
    """
    mode = settings.mem0_mode
    key = settings.mem0_api_key.get_secret_value() if settings.mem0_api_key else None
    if mode not in ("auto", "off", "cloud", "oss"):
        raise ConfigurationError(f"unknown MEM0_MODE {mode!r}", hint="use auto, off, cloud or oss")
    if mode == "off" or (mode == "auto" and not key):
        return None
    data_dir = settings.data_dir()
    if mode in ("auto", "cloud"):
        if not key:
            raise ConfigurationError("MEM0_MODE=cloud needs MEM0_API_KEY")
        from integrations.mem0.cloud import Mem0CloudIndex

        return await Mem0CloudIndex.connect(key, host=settings.mem0_host, data_dir=data_dir)
    base_url = embedder_base_url or settings.openai_base_url
    api_key = embedder_api_key or (
        settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    )
    if not base_url and not api_key:
        raise ConfigurationError(
            "MEM0_MODE=oss needs an embeddings endpoint",
            hint="set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server",
        )
    path = None if in_memory else (vector_path or data_dir / "mem0" / "qdrant")
    from integrations.mem0.oss import Mem0OssIndex

    return await Mem0OssIndex.create(
        embedder_base_url=base_url,
        embedder_api_key=api_key,
        embedder_model=settings.embeddings_model,
        embedding_dims=embedding_dims,
        vector_path=path,
        data_dir=data_dir,
        embed_timeout_s=min(settings.llm_timeout, OSS_EMBED_TIMEOUT_S),
    )
