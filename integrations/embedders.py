"""Choosing the embedder from settings: OpenAI-compatible when configured, local otherwise."""

from __future__ import annotations

from openai import AsyncOpenAI

from memory.ports import Embedder
from runtime.settings import Mode, Settings


def build_embedder(settings: Settings) -> Embedder:
    """The configured :class:`memory.ports.Embedder`; loading model weights stays lazy."""
    if settings.embeddings_mode is Mode.CONFIGURED:
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
