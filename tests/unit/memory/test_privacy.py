"""The privacy predicate, row by row of DESIGN.md §3, and the shape of its filter."""

from __future__ import annotations

import pytest

from memory.models import Partition, Thread, ThreadKind, Viewer
from memory.privacy import MATCH_NOTHING, and_visible, is_visible, is_visible_doc, visibility_filter

GROUP = Thread(id="group:fam", kind=ThreadKind.GROUP, circle_id="fam")
OTHER_GROUP = Thread(id="group:work", kind=ThreadKind.GROUP, circle_id="work")
DM_ALICE = Thread(id="dm:alice", kind=ThreadKind.DM, user_id="alice")
DM_BOB = Thread(id="dm:bob", kind=ThreadKind.DM, user_id="bob")

FAM = frozenset({"fam"})


def viewer(user: str, thread: Thread, circles: frozenset[str] = FAM) -> Viewer:
    return Viewer(user_id=user, thread=thread, circle_ids=circles)


CIRCLE_LEVEL = Partition.circle("fam")
ALICE_IN_GROUP = Partition.member("fam", "alice")
ALICE_IN_DM = Partition.dm("alice")


@pytest.mark.parametrize(
    ("partition", "who", "thread", "expected"),
    [
        # circle-level: group yes, every member's DM yes
        (CIRCLE_LEVEL, "alice", GROUP, True),
        (CIRCLE_LEVEL, "alice", DM_ALICE, True),
        (CIRCLE_LEVEL, "bob", DM_BOB, True),
        # member X's from the group: group yes, X's DM yes, another member's DM no
        (ALICE_IN_GROUP, "bob", GROUP, True),
        (ALICE_IN_GROUP, "alice", DM_ALICE, True),
        (ALICE_IN_GROUP, "bob", DM_BOB, False),
        # member X's from X's DM: never in the group, only X's DM
        (ALICE_IN_DM, "alice", GROUP, False),
        (ALICE_IN_DM, "bob", GROUP, False),
        (ALICE_IN_DM, "alice", DM_ALICE, True),
        (ALICE_IN_DM, "bob", DM_BOB, False),
        # nobody sees anything in somebody else's DM thread
        (ALICE_IN_DM, "bob", DM_ALICE, False),
        (CIRCLE_LEVEL, "bob", DM_ALICE, False),
    ],
)
def test_table_rows(partition: Partition, who: str, thread: Thread, expected: bool) -> None:
    assert is_visible(partition, viewer(who, thread)) is expected


def test_other_circle_never_sees() -> None:
    work_member = viewer("carol", OTHER_GROUP, frozenset({"work"}))
    for p in (CIRCLE_LEVEL, ALICE_IN_GROUP, ALICE_IN_DM):
        assert not is_visible(p, work_member)
    carol_dm = viewer(
        "carol", Thread(id="dm:carol", kind=ThreadKind.DM, user_id="carol"), frozenset({"work"})
    )
    assert not is_visible(CIRCLE_LEVEL, carol_dm)


def test_member_who_left_loses_circle_memories_in_dm() -> None:
    left = viewer("bob", DM_BOB, frozenset())
    assert not is_visible(CIRCLE_LEVEL, left)
    assert visibility_filter(left) == {
        "visibility": "dm",
        "owner_user_id": "bob",
        "circle_id": None,
    }


def test_non_member_in_group_sees_nothing() -> None:
    outsider = viewer("mallory", GROUP, frozenset())
    assert visibility_filter(outsider) == MATCH_NOTHING
    assert not is_visible(CIRCLE_LEVEL, outsider)


def test_dm_never_makes_circle_level_memory() -> None:
    assert DM_ALICE.partition_for("alice", about_circle=True) == Partition.dm("alice")
    assert GROUP.partition_for("alice", about_circle=True) == Partition.circle("fam")


def test_invalid_partitions_rejected() -> None:
    with pytest.raises(ValueError):
        Partition(circle_id="fam", owner_user_id="alice", visibility="dm")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Partition(circle_id=None, owner_user_id=None, visibility="shared")  # type: ignore[arg-type]


def test_malformed_document_is_invisible() -> None:
    v = viewer("alice", DM_ALICE)
    assert not is_visible_doc({"content": "no partition"}, v)
    assert not is_visible_doc({"visibility": "dm", "owner_user_id": None}, v)


def test_and_visible_keeps_the_filter() -> None:
    v = viewer("alice", GROUP)
    combined = and_visible(v, {"current": True})
    assert combined == {"$and": [visibility_filter(v), {"current": True}]}
    assert and_visible(v) == visibility_filter(v)
