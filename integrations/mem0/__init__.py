"""mem0 as Alfred's optional semantic layer: the cloud client, the OSS library, the
privacy-filtered lookup that maps mem0 hits back to local facts, and the mirror helpers.

Modules: :mod:`~integrations.mem0.common` (importing mem0, reading answers),
:mod:`~integrations.mem0.cloud`, :mod:`~integrations.mem0.oss`,
:mod:`~integrations.mem0.lookup` (hits to local facts) and :mod:`~integrations.mem0.mirror`.

Two implementations of :class:`memory.semantic.SemanticIndex`:

* :class:`Mem0CloudIndex` wraps ``mem0.AsyncMemoryClient`` (the Platform REST API,
  ``MEM0_API_KEY``, optional ``MEM0_HOST``).
* :class:`Mem0OssIndex` wraps ``mem0.AsyncMemory`` with a local qdrant store (on disk
  under the data dir, or in memory) and mem0's ``openai`` embedder pointed at an
  OpenAI-compatible endpoint (``OPENAI_BASE_URL``/``OPENAI_API_KEY``, or injected).

Both store each fact verbatim (``infer=False``: Alfred already decided what to store)
under ``user_id = partition key``, with the partition fields and the local fact id in
metadata, so every mem0 search is scoped to one partition.

Telemetry: mem0 sends usage events to PostHog unless ``MEM0_TELEMETRY`` is false when it
is *imported*. This module sets it on import and imports mem0 lazily, and refuses to run
if mem0 was imported earlier with telemetry on. mem0 also writes a config file under
``MEM0_DIR`` (default ``~/.mem0``) at import; it is pointed at the data dir.

Honest notes on mem0 2.2.1's API, which shape the code below:

* ``POST /v3/memories/add/`` is asynchronous: it answers ``{"status": "PENDING",
  "event_id": …}``, not memory ids. The SDK has no call for the event, so the cloud
  index polls ``GET /v1/event/{event_id}/`` (documented) through the client's own httpx
  session, reads the id from the event's results when present, and otherwise lists the
  partition's memories and matches ``metadata.alfred_fact_id``. If neither names the id
  within ``id_wait_s``, ``add`` returns ``None`` (the write is accepted, the id unknown)
  and the fact keeps ``mem0_id = None``: its copy cannot be found by the leg until it
  is mirrored again.
* The client validates its key with a blocking ``requests.get`` in its constructor;
  it is built in a worker thread.
* OSS ``delete`` leaves the deleted text in mem0's SQLite history table; Alfred keeps
  that history in memory and scrubs the deleted ids, so "forget" leaves nothing behind.
"""

import os

# Before mem0 can possibly be imported (it reads the variable once, at import).
os.environ["MEM0_TELEMETRY"] = "False"
