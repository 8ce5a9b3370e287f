"""``alfred bench …``: the benchmarks (each one registers itself in :mod:`bot.bench`)."""

from __future__ import annotations

from bot.bench import bench_app

__all__ = ["bench_app"]
