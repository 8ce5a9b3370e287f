"""A group became a supergroup: its circle, memories and journal follow the new chat id.

Telegram announces the upgrade twice (a service message in the old group naming the new
id, one in the supergroup naming the old id) and refuses sends to the old id with
"group chat was upgraded to a supergroup chat". Any of the three starts the same move;
the move is idempotent, so all three may. See :mod:`integrations.mongo.circle_move`.
"""

from __future__ import annotations

import logging

from integrations.mongo.circle_move import CircleMove, move_circle_documents
from runtime.container import Services

log = logging.getLogger(__name__)


async def move_circle(
    services: Services, old_chat_id: int, new_chat_id: int, title: str | None = None
) -> CircleMove:
    """Move the circle of group ``old_chat_id`` to supergroup ``new_chat_id``."""
    move = await move_circle_documents(
        services.mongo.db,
        str(old_chat_id),
        str(new_chat_id),
        new_chat_id=new_chat_id,
        title=title,
        at=services.clock.now(),
    )
    if not move.anything and not move.fact_ids:
        return move
    log.info(
        "circle moved to its supergroup: %s → %s (%s; %d duplicate(s) merged)",
        move.old_id,
        move.new_id,
        ", ".join(f"{name} {n}" for name, n in sorted(move.moved.items()) if n) or "nothing",
        move.merged_duplicates,
    )
    await _rehome_semantic_copies(services, move)
    return move


async def _rehome_semantic_copies(services: Services, move: CircleMove) -> None:
    """mem0 copies are scoped by partition: each moved fact gets a copy under its new
    partition (the old copy is deleted by the mirror). Best effort, like all mirroring:
    a copy left under the old scope is never shown (no viewer's search is scoped there,
    and every hit is checked against the local fact), and reconcile-mem0 can tidy up."""
    mirror = services.mirror
    if mirror is None:
        return
    if move.dropped_mem0_ids:
        try:
            await mirror.index.delete(move.dropped_mem0_ids)
        except Exception as exc:  # the copies are unreachable; reconcile removes them
            log.warning("mem0 copies of merged duplicates not deleted (%s)", type(exc).__name__)
    wanted = set(move.fact_ids)
    for fact in await services.facts.in_circle(move.new_id):
        if fact.id in wanted and fact.mem0_id and fact.current:
            await mirror.mirror(fact)
