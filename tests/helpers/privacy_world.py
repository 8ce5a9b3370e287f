"""Random worlds of circles, members, threads and memories, for privacy property tests.

The oracle here is written from the table in DESIGN.md §3, row by row, independently of
``memory.privacy``: if the predicate and the filter shared a bug, the oracle would still
disagree with both.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from memory.models import Partition, Thread, ThreadKind, Viewer

USERS = [f"u{i}" for i in range(5)]
CIRCLES = ["c0", "c1", "c2"]
GHOST_CIRCLE = "c-ghost"  # a circle nobody in the world belongs to


@dataclass(frozen=True)
class World:
    memberships: dict[str, frozenset[str]]  # circle -> members
    partitions: list[Partition]

    def circles_of(self, user: str) -> frozenset[str]:
        return frozenset(c for c, members in self.memberships.items() if user in members)

    def threads(self) -> list[Thread]:
        groups = [
            Thread(id=f"group:{c}", kind=ThreadKind.GROUP, circle_id=c)
            for c in [*self.memberships, GHOST_CIRCLE]
        ]
        dms = [Thread(id=f"dm:{u}", kind=ThreadKind.DM, user_id=u) for u in USERS]
        return groups + dms

    def viewers(self) -> list[Viewer]:
        """Every user in every thread, including threads they have no business in."""
        return [
            Viewer(user_id=u, thread=t, circle_ids=self.circles_of(u))
            for u in USERS
            for t in self.threads()
        ]


def oracle(p: Partition, v: Viewer) -> bool:
    """DESIGN.md §3, read literally."""
    t = v.thread
    if t.kind is ThreadKind.GROUP:
        in_its_group = p.circle_id == t.circle_id and p.visibility == "shared"
        return in_its_group and t.circle_id in v.circle_ids
    if t.user_id != v.user_id:  # someone else's DM: nothing
        return False
    if p.visibility == "dm":  # row 3: only in the owner's DM
        return p.owner_user_id == v.user_id
    if p.circle_id not in v.circle_ids:  # other circle: never
        return False
    if p.owner_user_id is None:  # row 1: every member's DM
        return True
    return p.owner_user_id == v.user_id  # row 2: the owner's DM only


memberships_st = st.fixed_dictionaries(
    {c: st.frozensets(st.sampled_from(USERS), min_size=1, max_size=4) for c in CIRCLES}
)


def partition_st() -> st.SearchStrategy[Partition]:
    circle = st.sampled_from([*CIRCLES, GHOST_CIRCLE])
    user = st.sampled_from(USERS)
    return st.one_of(
        circle.map(Partition.circle),
        st.builds(Partition.member, circle, user),
        user.map(Partition.dm),
    )


worlds = st.builds(
    World, memberships=memberships_st, partitions=st.lists(partition_st(), min_size=3, max_size=25)
)
