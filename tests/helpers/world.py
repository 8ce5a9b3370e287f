"""Builders for viewers and threads in tests."""

from __future__ import annotations

from collections.abc import Iterable

from memory.models import Thread, ThreadKind, Viewer


def group(circle: str) -> Thread:
    return Thread(id=f"group:{circle}", kind=ThreadKind.GROUP, circle_id=circle)


def dm(user: str) -> Thread:
    return Thread(id=f"dm:{user}", kind=ThreadKind.DM, user_id=user)


def viewer(user: str, thread: Thread, circles: Iterable[str]) -> Viewer:
    return Viewer(user_id=user, thread=thread, circle_ids=frozenset(circles))
