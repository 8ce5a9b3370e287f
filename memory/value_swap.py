""" "I meant X, not Y": the value swapped where the person said it, without asking.

Kept apart from :mod:`memory.operations` (which calls it) so each module stays small.
"""

from __future__ import annotations

import re
from typing import Protocol

from memory.facts import FactWriter
from memory.models import Category, Partition, Provenance, Role, Thread, Viewer
from memory.operation_result import OperationResult
from memory.ports import Clock
from memory.prompts.common import Person
from memory.stores import FactStore, JournalStore


class SwapDeps(Protocol):
    """What a swap needs of :class:`memory.operations.MemoryOperations` (which calls it)."""

    facts: FactStore
    writer: FactWriter
    journal: JournalStore
    clock: Clock

    @staticmethod
    def partitions_of(thread: Thread, speaker: Person) -> set[Partition]: ...

    async def facts_from(
        self, thread: Thread, speaker: Person, statement: str, message_id: str
    ) -> list[tuple[str, Category, int, bool]]: ...


async def swap_value(
    ops: SwapDeps, viewer: Viewer, speaker: Person, old: str, new: str, message_id: str
) -> OperationResult:
    """A swap, "I meant X, not Y": Y becomes X in the latest current fact of theirs
    that says Y, else in their latest message here that says it (a self-correction
    before formation: that message is then handled, its fact kept as history)."""
    thread = viewer.thread
    needle = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.IGNORECASE)
    partitions = ops.partitions_of(thread, speaker)
    mine = [
        f
        for f in await ops.facts.list_visible(viewer)
        if f.partition in partitions and needle.search(f.content)
    ]
    now = ops.clock.now()
    provenance = Provenance(
        thread_id=thread.id,
        message_ids=[message_id],
        speaker_id=speaker.id,
        source="correction",
    )
    if mine:
        target = max(mine, key=lambda f: f.valid_at)
        content = needle.sub(new, target.content)
        await ops.facts.invalidate(target.id, at=now, reason="corrected by the person")
        stored = [
            f
            for f, _ in await ops.writer.add_many(
                [(content, target.category, target.importance, target.partition, provenance)],
                pinned=True,
            )
        ]
        return OperationResult(
            text=f"Thanks for the correction — I've updated it: {content}", facts=stored
        )
    said = [
        m
        for m in await ops.journal.unformed(thread.id)
        if m.role is Role.USER
        and m.user_id == speaker.id
        and m.id != message_id
        and needle.search(m.text)
    ]
    if not said:
        return OperationResult(
            text=f'I couldn\'t find "{old}" in what you told me — say it again in full '
            "and I'll update it."
        )
    source = max(said, key=lambda m: (m.created_at, m.telegram_message_id or 0))
    before = await ops.facts_from(thread, speaker, source.text, source.id)
    after = await ops.facts_from(thread, speaker, needle.sub(new, source.text), message_id)
    partition = thread.partition_for(speaker.id)
    history = await ops.writer.add_many(
        [
            (
                c,
                cat,
                imp,
                partition,
                Provenance(thread_id=thread.id, message_ids=[source.id], speaker_id=speaker.id),
            )
            for c, cat, imp, _ in before
        ]
    )
    for fact, _ in history:
        await ops.facts.invalidate(fact.id, at=now, reason="corrected by the person")
    written = await ops.writer.add_many(
        [(c, cat, max(imp, 6), partition, provenance) for c, cat, imp, _ in after],
        pinned=True,
    )
    await ops.journal.mark_handled([source.id])
    stored = [f for f, _ in written]
    text = (
        f"Thanks for the correction — I've updated it: {stored[0].content}"
        if stored
        else ("Thanks — noted.")
    )
    return OperationResult(text=text, facts=stored)
