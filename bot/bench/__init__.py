"""``alfred bench …``: benchmarks that print figures (never timed tests).

Each benchmark module defines ``register(app)``; with ``--json`` the last line on stdout
is one JSON object, and progress goes to stderr.
"""

from __future__ import annotations

import importlib

import typer

bench_app = typer.Typer(
    name="bench",
    help="Measure retrieval quality and speed, formation throughput and the reply path.",
    no_args_is_help=True,
)

for _name in ("locomo", "retrieval", "formation", "bot", "telegram", "faults"):
    importlib.import_module(f"bot.bench.{_name}").register(bench_app)
