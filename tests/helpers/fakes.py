"""Small hand-written fakes of the domain's ports, for tests where the real part is not
the point (the real embedder has its own tests; here it would only slow things down)."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class HashEmbedder:
    """Bag-of-words vectors: each word hashed to a dimension. Texts sharing words are
    similar, texts sharing none are orthogonal, which is all retrieval tests need."""

    def __init__(self, dimensions: int = 64, model_name: str = "hash-bow-64") -> None:
        self._dims = dimensions
        self._name = model_name
        self.calls = 0

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dims

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self._dims] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out


class FailingEmbedder(HashEmbedder):
    """An embedder that is down."""

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise ConnectionError("embedder down")


class WrongDimensionEmbedder(HashEmbedder):
    """An embedder that returns vectors of the wrong size."""

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), self.dimensions + 3), dtype=np.float32)


class SlowEmbedder(HashEmbedder):
    """An embedder slower than any budget."""

    def __init__(self, delay: float = 5.0) -> None:
        super().__init__()
        self.delay = delay

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        await asyncio.sleep(self.delay)
        return await super().embed(texts)


class ScriptedLLM:
    """An LLM whose answers are scripted per task: a callable ``ctx -> response`` or a
    list of responses (popped in order); an Exception instance is raised instead."""

    def __init__(self, **scripts: object) -> None:
        from memory.llm import Usage

        self.scripts = dict(scripts)
        self._usage = Usage()
        self.seen: list[tuple[str, object]] = []

    @property
    def offline(self) -> bool:
        return False

    @property
    def usage(self):  # type: ignore[no-untyped-def]
        return self._usage

    async def run(self, task, ctx):  # type: ignore[no-untyped-def]
        self._usage.record(task.name)
        self.seen.append((task.name, ctx))
        script = self.scripts.get(task.name)
        if script is None:
            # The response models require their list key: "nothing" is said explicitly.
            required = task.response_model.model_fields
            return task.response_model.model_validate(
                {name: [] for name, f in required.items() if f.is_required()}
            )
        answer = script.pop(0) if isinstance(script, list) else script
        if callable(answer):
            answer = answer(ctx)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, dict):
            return task.response_model.model_validate(answer)
        return answer

    async def chat(self, task, ctx, tools, run_tool):  # type: ignore[no-untyped-def]
        from memory.llm import ChatOutcome

        self._usage.record("chat")
        return ChatOutcome(text="ok")
