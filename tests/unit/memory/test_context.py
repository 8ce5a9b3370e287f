"""The memory text that enters the prompt: the fact block and the always-in-context block."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.always import AlwaysInContext
from memory.context import CITING_INSTRUCTIONS, fact_block, owner_note
from memory.models import (
    Category,
    Consolidated,
    Partition,
    Reflection,
    ReflectionScope,
    Viewer,
)
from memory.retrieval import ScoredFact
from memory.search.candidate import Candidate
from tests.helpers.world import dm, group, viewer

NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
NAMES = {"alice": "Alice", "bob": "Bob", "carol": "Carol"}

ALICE_GROUP = viewer("alice", group("fam"), ["fam"])
ALICE_DM = viewer("alice", dm("alice"), ["fam"])
BOB_DM = viewer("bob", dm("bob"), ["fam"])


def name_of(user_id: str) -> str:
    return NAMES[user_id]


def scored(
    content: str, partition: Partition, category: Category = Category.FACT, *, said: bool = False
) -> ScoredFact:
    candidate = Candidate(
        id=content,
        content=content,
        category=category,
        importance=5,
        partition=partition,
        reinforced_at=NOW,
        access_count=0,
        said=said,
    )
    return ScoredFact(fact=candidate, score=1.0, relevance=1.0)


# --- fact_block --------------------------------------------------------------------------


def test_fact_block_groups_by_category_and_marks_other_members() -> None:
    facts = [
        scored("Trip to Lisbon on Friday", Partition.circle("fam"), Category.CONTEXT),
        scored("Alice is allergic to peanuts", Partition.member("fam", "alice")),
        scored("Bob's sister is called Eve", Partition.member("fam", "bob"), Category.RELATIONSHIP),
        scored("Bob loves ramen", Partition.member("fam", "bob")),
        scored("The family dog is called Rex", Partition.circle("fam"), Category.RELATIONSHIP),
    ]
    assert fact_block(facts, ALICE_GROUP, name_of) == "\n".join(
        [
            "## What you remember",
            "**Facts:**",
            "- Alice is allergic to peanuts",
            "- Bob loves ramen (from Bob)",
            "**People:**",
            "- Bob's sister is called Eve (from Bob)",
            "- The family dog is called Rex",
            "**Current context:**",
            "- Trip to Lisbon on Friday",
        ]
    )


def test_a_line_not_formed_yet_is_quoted_as_its_author_s() -> None:
    """A message formation has not reached is in its author's words: Bob's "I" is shown
    as Bob's, the viewer's own as theirs, never as a fact in the prompt's own voice."""
    facts = [
        scored(
            "I parked on level 3",
            Partition.member("fam", "bob"),
            Category.CONTEXT,
            said=True,
        ),
        scored(
            "My mom is visiting next week",
            Partition.member("fam", "alice"),
            Category.CONTEXT,
            said=True,
        ),
        scored("Bob loves ramen", Partition.member("fam", "bob")),
    ]
    assert fact_block(facts, ALICE_GROUP, name_of) == "\n".join(
        [
            "## What you remember",
            "**Facts:**",
            "- Bob loves ramen (from Bob)",
            "**Current context:**",
            '- Bob said: "I parked on level 3"',
            '- You said: "My mom is visiting next week"',
        ]
    )


def test_fact_block_heading_and_missing_categories() -> None:
    facts = [scored("The family dog is called Rex", Partition.circle("fam"), Category.RELATIONSHIP)]
    assert fact_block(facts, ALICE_DM, name_of, heading="Memories") == (
        "## Memories\n**People:**\n- The family dog is called Rex"
    )


def test_fact_block_drops_what_the_viewer_may_not_see() -> None:
    facts = [
        scored("Alice is planning a surprise for Bob", Partition.dm("alice")),
        scored("Alice is allergic to peanuts", Partition.member("fam", "alice")),
        scored("The work offsite is in Porto", Partition.circle("work")),
        scored("The family dog is called Rex", Partition.circle("fam"), Category.RELATIONSHIP),
    ]
    # Bob in his DM: Alice's DM and group memories and another circle's are not his to see
    assert fact_block(facts, BOB_DM, name_of) == (
        "## What you remember\n**People:**\n- The family dog is called Rex"
    )
    # Alice in the group: never her DM memory
    block = fact_block(facts, ALICE_GROUP, name_of)
    assert "surprise" not in block and "Porto" not in block
    assert "- Alice is allergic to peanuts\n" in block
    # Alice in her DM sees her own memories, unmarked
    block = fact_block(facts, ALICE_DM, name_of)
    assert "- Alice is planning a surprise for Bob\n" in block and "(from" not in block


def test_fact_block_is_empty_without_visible_facts() -> None:
    assert fact_block([], ALICE_GROUP, name_of) == ""
    hidden = [scored("Alice is planning a surprise for Bob", Partition.dm("alice"))]
    assert fact_block(hidden, BOB_DM, name_of) == ""
    assert fact_block(hidden, ALICE_GROUP, name_of) == ""


def test_owner_note() -> None:
    assert owner_note("bob", ALICE_GROUP, name_of) == " (from Bob)"
    assert owner_note("alice", ALICE_GROUP, name_of) == ""
    assert owner_note(None, ALICE_GROUP, name_of) == ""


def test_citing_instructions_ask_to_cite_and_to_check_conflicts() -> None:
    assert "I remember you mentioned" in CITING_INSTRUCTIONS
    assert "has that changed?" in CITING_INSTRUCTIONS


# --- the always-in-context block ------------------------------------------------------------


class FakeNotes:
    """The three reads the block needs; returns everything, visible or not, so the
    block's own re-check is what is tested."""

    def __init__(self) -> None:
        self.reflections: list[Reflection] = []
        self.blobs: list[Consolidated] = []
        self.versions: dict[str, int] = {"p": 1}
        self.sessions: list[str | None] = []

    async def notes_versions(self, viewer: Viewer) -> dict[str, int]:
        return dict(self.versions)

    async def visible_reflections(
        self, viewer: Viewer, *, session_id: str | None
    ) -> list[Reflection]:
        self.sessions.append(session_id)
        return list(self.reflections)

    async def visible_blobs(self, viewer: Viewer, *, session_id: str | None) -> list[Consolidated]:
        return list(self.blobs)


def note(content: str, scope: ReflectionScope, partition: Partition) -> Reflection:
    return Reflection(id=content, content=content, scope=scope, partition=partition, created_at=NOW)


def blob(content: str, scope: ReflectionScope, partition: Partition) -> Consolidated:
    return Consolidated(
        id=content,
        scope=scope,
        partition=partition,
        content=content,
        word_limit=400,
        last_consolidated_at=NOW,
    )


def filled() -> FakeNotes:
    notes = FakeNotes()
    circle, alice, bob = (
        Partition.circle("fam"),
        Partition.member("fam", "alice"),
        Partition.member("fam", "bob"),
    )
    notes.blobs = [
        blob("Bob trains for a marathon. Bob runs at six.", ReflectionScope.USER, bob),
        blob("The family plans a trip to Lisbon.", ReflectionScope.CIRCLE, circle),
        blob("Alice secretly plans Bob's party.", ReflectionScope.USER, Partition.dm("alice")),
    ]
    notes.reflections = [
        note("Keep replies short", ReflectionScope.USER, alice),
        note("The group prefers Sunday calls", ReflectionScope.CIRCLE, circle),
        note("Talking about the hotel right now", ReflectionScope.SESSION, alice),
        note("Bob is tired this week", ReflectionScope.USER, bob),
        note("Another circle's note", ReflectionScope.CIRCLE, Partition.circle("work")),
    ]
    return notes


async def test_always_block_shape() -> None:
    block = await AlwaysInContext(filled()).block(ALICE_GROUP, "s1", name_of)  # type: ignore[arg-type]
    assert block == "\n".join(
        [
            "## What you keep in mind",
            "**About this circle:**",
            "The family plans a trip to Lisbon.",
            "- The group prefers Sunday calls",
            "",
            "**About the people here:**",
            "[Bob] Bob trains for a marathon. Bob runs at six.",
            "- Keep replies short",
            "- [Bob] Bob is tired this week",
            "",
            "**This conversation so far:**",
            "- Talking about the hotel right now",
        ]
    )


async def test_always_block_rechecks_visibility() -> None:
    # Bob in his DM: circle-level notes only; nothing of Alice's, nothing of another circle
    block = await AlwaysInContext(filled()).block(BOB_DM, None, name_of)  # type: ignore[arg-type]
    assert block == "\n".join(
        [
            "## What you keep in mind",
            "**About this circle:**",
            "The family plans a trip to Lisbon.",
            "- The group prefers Sunday calls",
            "",
            "**About the people here:**",
            "Bob trains for a marathon. Bob runs at six.",
            "- Bob is tired this week",
        ]
    )


async def test_always_block_is_empty_without_notes() -> None:
    assert await AlwaysInContext(FakeNotes()).block(ALICE_GROUP, None, name_of) == ""  # type: ignore[arg-type]
    only_hidden = FakeNotes()
    only_hidden.reflections = [note("secret", ReflectionScope.USER, Partition.dm("alice"))]
    assert await AlwaysInContext(only_hidden).block(BOB_DM, None, name_of) == ""  # type: ignore[arg-type]


async def test_always_block_is_cached_until_a_version_moves() -> None:
    notes = filled()
    always = AlwaysInContext(notes)  # type: ignore[arg-type]
    first = await always.block(ALICE_GROUP, "s1", name_of)
    notes.reflections.append(
        note("New note", ReflectionScope.USER, Partition.member("fam", "alice"))
    )
    assert await always.block(ALICE_GROUP, "s1", name_of) == first, "same versions: cached"
    assert always.builds == 1
    notes.versions["p"] = 2
    rebuilt = await always.block(ALICE_GROUP, "s1", name_of)
    assert always.builds == 2 and "- New note" in rebuilt
    # another session of the same thread is its own cache entry
    await always.block(ALICE_GROUP, "s2", name_of)
    assert always.builds == 3 and notes.sessions[-1] == "s2"
