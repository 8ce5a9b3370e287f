"""The privacy rule, as code: one predicate and one query-filter builder.

This module is the single place that decides who may see a memory. Every read path
(retrieval, the always-in-context block, tools, replies, exports, status counts, logs)
calls :func:`visibility_filter` to build its database query and :func:`is_visible` to
re-check each artefact before it is used. The two are written side by side from the
same table so they cannot drift; a property-based test stores random artefacts in the
real database and checks that the filter returns exactly what the predicate allows.

The table (DESIGN.md §3), for a viewer in a thread:

========================================  =========  ===========  ==============  ============
memory                                    its group  owner's DM   other member's  other circle
========================================  =========  ===========  ==============  ============
circle-level (owner null, from the group)  yes        yes          yes (members)   never
member X's, from the group                yes        yes (X only)  no              never
member X's, from X's DM                   no         yes (X only)  no              never
========================================  =========  ===========  ==============  ============
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.models import Partition, ThreadKind, Viewer, Visibility

#: A MongoDB filter that matches no document, for viewers who may see nothing.
MATCH_NOTHING: dict[str, Any] = {"visibility": {"$in": []}}


def is_visible(partition: Partition, viewer: Viewer) -> bool:
    """Whether an artefact of ``partition`` may be shown to ``viewer`` in their thread."""
    thread = viewer.thread
    if thread.kind is ThreadKind.GROUP:
        circle = thread.circle_id
        return (
            circle is not None
            and circle in viewer.circle_ids
            and partition.visibility is Visibility.SHARED
            and partition.circle_id == circle
        )
    # A DM thread shows memories only to the user it belongs to.
    if thread.user_id != viewer.user_id:
        return False
    if partition.visibility is Visibility.DM:
        return partition.owner_user_id == viewer.user_id and partition.circle_id is None
    return partition.circle_id in viewer.circle_ids and partition.owner_user_id in (
        None,
        viewer.user_id,
    )


def is_visible_doc(doc: Mapping[str, Any], viewer: Viewer) -> bool:
    """:func:`is_visible` for a stored document carrying the flat partition fields.

    A document whose partition fields are missing or malformed is never visible.
    """
    try:
        partition = Partition.from_fields(dict(doc))
    except (KeyError, ValueError):
        return False
    return is_visible(partition, viewer)


def visibility_filter(viewer: Viewer) -> dict[str, Any]:
    """The MongoDB filter that selects exactly the artefacts :func:`is_visible` allows.

    Combine it with other conditions under ``$and``; never loosen it. The same
    document serves as the ``filter`` of Atlas ``$vectorSearch`` (its fields are
    declared as filter fields in the index) and of ordinary ``find`` queries.
    """
    thread = viewer.thread
    if thread.kind is ThreadKind.GROUP:
        circle = thread.circle_id
        if circle is None or circle not in viewer.circle_ids:
            return dict(MATCH_NOTHING)
        return {"visibility": Visibility.SHARED.value, "circle_id": circle}
    if thread.user_id != viewer.user_id:
        return dict(MATCH_NOTHING)
    own_dm = {
        "visibility": Visibility.DM.value,
        "owner_user_id": viewer.user_id,
        "circle_id": None,
    }
    if not viewer.circle_ids:
        return own_dm
    from_groups = {
        "visibility": Visibility.SHARED.value,
        "circle_id": {"$in": sorted(viewer.circle_ids)},
        "owner_user_id": {"$in": [None, viewer.user_id]},
    }
    return {"$or": [own_dm, from_groups]}


def visibility_branches(viewer: Viewer) -> list[dict[str, Any]]:
    """What :func:`visibility_filter` selects, as disjoint filters of plain equalities:
    one per partition the viewer may see (a group: its circle's shared partition; a DM:
    the person's own DM partition, and per circle of theirs its circle-level and their
    own shared partition). Their union is exactly the filter's result.

    A server that plans indexes only from a filter's top-level equalities (the embedded
    one) serves each from an index, where the filter's ``$or`` and ``$in`` make it scan
    the whole collection: see :func:`and_visible_branches`."""
    thread = viewer.thread
    if thread.kind is ThreadKind.GROUP:
        circle = thread.circle_id
        if circle is None or circle not in viewer.circle_ids:
            return []
        return [{"visibility": Visibility.SHARED.value, "circle_id": circle}]
    if thread.user_id != viewer.user_id:
        return []
    own_dm: dict[str, Any] = {
        "visibility": Visibility.DM.value,
        "owner_user_id": viewer.user_id,
        "circle_id": None,
    }
    return [own_dm] + [
        {"visibility": Visibility.SHARED.value, "circle_id": circle, "owner_user_id": owner}
        for circle in sorted(viewer.circle_ids)
        for owner in (None, viewer.user_id)
    ]


def visibility_arms(viewer: Viewer) -> list[dict[str, Any]]:
    """Plain filters whose union holds everything :func:`visibility_filter` selects,
    bounded by the viewer's own partitions: their DM's (three equalities), the shared
    partitions of their circles (one equality and one ``$in``; in a DM this includes
    other members' shared partitions, which the filter then drops), a group's circle's
    (two equalities). Each is the prefix of a partition index, which the embedded server
    walks for exactly those partitions; the filter's ``$or`` made it scan the whole
    collection. Never a privacy filter on its own: the exact filter always follows."""
    thread = viewer.thread
    if thread.kind is ThreadKind.GROUP or thread.user_id != viewer.user_id:
        return visibility_branches(viewer)  # a group's one branch, or nothing
    arms: list[dict[str, Any]] = [
        {"visibility": Visibility.DM.value, "circle_id": None, "owner_user_id": viewer.user_id}
    ]
    if viewer.circle_ids:
        circles = sorted(viewer.circle_ids)
        arms.append({"visibility": Visibility.SHARED.value, "circle_id": {"$in": circles}})
    return arms


def and_visible_branches(viewer: Viewer, query: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``query`` restricted to each of :func:`visibility_branches`, merged into one
    filter per branch: the union of their results is ``and_visible(viewer, query)``,
    and none when the viewer may see nothing. ``query`` may not name a partition field
    or start with an operator: merging would replace a condition of the privacy filter
    instead of adding to it."""
    clash = sorted({"visibility", "circle_id", "owner_user_id"} & set(query))
    if clash or any(str(k).startswith("$") for k in query):
        raise ValueError(f"a query merged into the privacy filter may not name {clash or '$'}")
    return [{**branch, **query} for branch in visibility_branches(viewer)]


def and_visible(viewer: Viewer, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``query`` restricted to what ``viewer`` may see: the filter always applies."""
    vis = visibility_filter(viewer)
    if not query:
        return vis
    return {"$and": [vis, dict(query)]}
