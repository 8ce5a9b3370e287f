"""The records Alfred keeps, as pydantic models.

Every memory artefact embeds a :class:`Partition`: where the memory came from decides,
forever, who may see it (DESIGN.md §3). The partition is stored as three flat fields
(``circle_id``, ``owner_user_id``, ``visibility``) on each document so that the database
can filter on them directly and Atlas search indexes can declare them as filter fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.errors import AlfredError


class Visibility(StrEnum):
    """Where a memory was said: the circle's group (``shared``) or a private DM (``dm``)."""

    SHARED = "shared"
    DM = "dm"


class ThreadKind(StrEnum):
    """A Telegram chat bound to Alfred: a circle's group, or one user's DM."""

    GROUP = "group"
    DM = "dm"


class Category(StrEnum):
    """Fact categories (DESIGN.md §2)."""

    FACT = "fact"
    RELATIONSHIP = "relationship"
    CONTEXT = "context"


class ReflectionScope(StrEnum):
    """How wide a reflection reaches: a whole circle, one user, or one session."""

    CIRCLE = "circle"
    USER = "user"
    SESSION = "session"


class Role(StrEnum):
    """Who produced a journaled message; formation weighs them differently."""

    USER = "user"
    TOOL = "tool"
    AGENT = "agent"


class Partition(BaseModel):
    """The privacy partition of a memory artefact.

    Three shapes are valid, one per row of the table in DESIGN.md §3:

    * circle-level, from the group: ``circle_id=C, owner_user_id=None, visibility=shared``
    * member X's, from the group: ``circle_id=C, owner_user_id=X, visibility=shared``
    * member X's, from X's DM: ``circle_id=None, owner_user_id=X, visibility=dm``

    A DM never produces a circle-level memory, so ``dm`` always has an owner and no circle.
    """

    model_config = ConfigDict(frozen=True)

    circle_id: str | None
    owner_user_id: str | None
    visibility: Visibility

    @model_validator(mode="after")
    def _one_of_three_shapes(self) -> Partition:
        if self.visibility is Visibility.DM:
            if self.owner_user_id is None or self.circle_id is not None:
                raise ValueError("a DM partition has an owner and no circle")
        elif self.circle_id is None:
            raise ValueError("a shared partition belongs to a circle")
        return self

    @classmethod
    def circle(cls, circle_id: str) -> Partition:
        """A circle-level ("we", "our") memory said in the circle's group."""
        return cls(circle_id=circle_id, owner_user_id=None, visibility=Visibility.SHARED)

    @classmethod
    def member(cls, circle_id: str, user_id: str) -> Partition:
        """Something about one member, said in the circle's group."""
        return cls(circle_id=circle_id, owner_user_id=user_id, visibility=Visibility.SHARED)

    @classmethod
    def dm(cls, user_id: str) -> Partition:
        """Something said in a user's private DM with Alfred."""
        return cls(circle_id=None, owner_user_id=user_id, visibility=Visibility.DM)

    def key(self) -> str:
        """A stable string naming the partition, for caches and lock names."""
        return f"{self.visibility}:{self.circle_id or '-'}:{self.owner_user_id or '-'}"

    def as_fields(self) -> dict[str, Any]:
        """The flat document fields the partition is stored as."""
        return {
            "circle_id": self.circle_id,
            "owner_user_id": self.owner_user_id,
            "visibility": self.visibility.value,
        }

    @classmethod
    def from_fields(cls, doc: dict[str, Any]) -> Partition:
        """Read the partition back from a stored document."""
        return cls(
            circle_id=doc.get("circle_id"),
            owner_user_id=doc.get("owner_user_id"),
            visibility=Visibility(doc["visibility"]),
        )


class Thread(BaseModel):
    """A chat Alfred takes part in.

    A group thread belongs to one circle; a DM thread to one user. The thread a message
    arrives in decides the partition of everything learned from it.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: ThreadKind
    circle_id: str | None = None
    user_id: str | None = None
    telegram_chat_id: int | None = None
    title: str | None = None

    @model_validator(mode="after")
    def _bound(self) -> Thread:
        if self.kind is ThreadKind.GROUP and (self.circle_id is None or self.user_id):
            raise ValueError("a group thread is bound to a circle and no user")
        if self.kind is ThreadKind.DM and (self.user_id is None or self.circle_id):
            raise ValueError("a DM thread is bound to a user and no circle")
        return self

    def partition_for(self, speaker_id: str, *, about_circle: bool = False) -> Partition:
        """The partition of a memory learned from ``speaker_id`` in this thread.

        ``about_circle`` marks "we/our" statements; in a DM it is ignored on purpose,
        because a DM never produces a circle-level memory (DESIGN.md §3).
        """
        if self.kind is ThreadKind.DM:
            return Partition.dm(speaker_id)
        if about_circle:
            return Partition.circle(self.group_circle_id)
        return Partition.member(self.group_circle_id, speaker_id)

    @property
    def group_circle_id(self) -> str:
        """The circle of a group thread. The validator binds every group thread to one,
        so this raises only when asked of a DM thread (a caller's mistake)."""
        if self.circle_id is None:
            raise AlfredError(f"thread {self.id} is a {self.kind.value} thread, not a group")
        return self.circle_id

    @property
    def dm_user_id(self) -> str:
        """The person of a DM thread; raises only when asked of a group thread."""
        if self.user_id is None:
            raise AlfredError(f"thread {self.id} is a {self.kind.value} thread, not a DM")
        return self.user_id

    def home_partition(self) -> Partition:
        """The thread's own partition: its circle's for a group, its person's for a DM."""
        if self.kind is ThreadKind.GROUP:
            return Partition.circle(self.group_circle_id)
        return Partition.dm(self.dm_user_id)


class Viewer(BaseModel):
    """Who is looking, and from where: the required argument of every memory read.

    ``circle_ids`` are the circles the user is currently an active member of. The caller
    computes them from the membership records at the moment of the read, so a member who
    left a circle stops seeing its memories at once.
    """

    model_config = ConfigDict(frozen=True)

    user_id: str
    thread: Thread
    circle_ids: frozenset[str] = frozenset()


class Circle(BaseModel):
    """The people of one Telegram group bound to Alfred."""

    id: str
    title: str | None = None
    telegram_chat_id: int | None = None
    member_ids: list[str] = Field(default_factory=list)
    archived_at: datetime | None = None
    created_at: datetime


class User(BaseModel):
    """A Telegram user Alfred has met."""

    id: str
    telegram_user_id: int | None = None
    name: str
    username: str | None = None
    created_at: datetime


class Provenance(BaseModel):
    """Where a memory came from: a thread and its messages, or a calendar event."""

    thread_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    #: Who said it, so erasing a user also erases circle-level memories only they stated.
    speaker_id: str | None = None
    calendar_event_id: str | None = None
    source: Literal["conversation", "explicit", "correction", "calendar", "import", "operator"] = (
        "conversation"
    )
    #: The message this memory answered, when the memory is a turn of a conversation: it
    #: is embedded with the memory (memory.search.context), never shown or keyword-searched.
    context: str | None = None


class FactVersion(BaseModel):
    """One earlier wording of a fact, kept when it is updated."""

    content: str
    changed_at: datetime
    reason: str | None = None


class Fact(BaseModel):
    """An atomic, objective statement, retrieved by search (DESIGN.md §4)."""

    id: str
    content: str
    hash: str
    category: Category = Category.FACT
    importance: int = Field(default=5, ge=1, le=10)
    partition: Partition
    provenance: Provenance = Field(default_factory=Provenance)
    embedding: list[float] | None = None
    embedding_model: str | None = None
    embedding_dims: int | None = None
    valid_at: datetime
    invalid_at: datetime | None = None
    version: int = 1
    #: Bumped on every change to the stored fact, so caches can tell what moved.
    rev: int = 1
    history: list[FactVersion] = Field(default_factory=list)
    access_count: int = 0
    last_accessed_at: datetime | None = None
    mem0_id: str | None = None
    pinned: bool = False
    subject_user_id: str | None = None
    created_at: datetime
    updated_at: datetime

    @property
    def current(self) -> bool:
        """Whether the fact is still valid (contradicted facts stay as history)."""
        return self.invalid_at is None

    @property
    def reinforced_at(self) -> datetime:
        """When the fact was last stated, updated or recalled, whichever is latest: the
        age recency decay counts from."""
        return max(t for t in (self.valid_at, self.updated_at, self.last_accessed_at) if t)


class Reflection(BaseModel):
    """An interpreted note, always in context until consolidated (DESIGN.md §4)."""

    id: str
    content: str
    scope: ReflectionScope
    partition: Partition
    thread_id: str | None = None
    session_id: str | None = None
    absorbed: bool = False
    absorbed_into: str | None = None
    source_fact_ids: list[str] = Field(default_factory=list)
    #: Set for a standing instruction the person gave ("no emojis"), not an interpretation:
    #: its topic and key word, so it is listed as theirs, replaced and withdrawn by them.
    directive: str | None = None
    directive_value: str | None = None
    created_at: datetime


class Consolidated(BaseModel):
    """The word-limited blob merging the reflections of one (scope, partition)."""

    id: str
    scope: ReflectionScope
    partition: Partition
    session_id: str | None = None
    content: str
    word_limit: int
    reflection_ids: list[str] = Field(default_factory=list)
    unabsorbed_ids: list[str] = Field(default_factory=list)
    last_consolidated_at: datetime


class Clarification(BaseModel):
    """A question to ask a user the next time they speak in the same partition.

    Once asked it is bound to where and when: only the person's next message in that
    thread within :data:`memory.constants.CLARIFICATION_NEXT_MESSAGE_SECONDS`, or their
    Telegram reply to the question within :data:`memory.constants.CLARIFICATION_TTL_DAYS`,
    can answer it; after that it expires."""

    id: str
    user_id: str
    partition: Partition
    question: str
    kind: Literal["contradiction", "ambiguous_reference"] = "contradiction"
    fact_id: str | None = None
    #: A contradiction: the id of the older fact. An ambiguous reference: what the
    #: person asked to be remembered, to store once they say whose it is.
    proposed_content: str | None = None
    #: The ambiguous phrase ("Mom") an ``ambiguous_reference`` asked about.
    reference: str | None = None
    status: Literal["pending", "asked", "resolved", "dismissed", "expired"] = "pending"
    created_at: datetime
    resolved_at: datetime | None = None
    #: Where and when it was asked, and the Telegram id of the person's message whose
    #: reply carried the question: their next message after it may answer.
    asked_thread_id: str | None = None
    asked_at: datetime | None = None
    asked_after_message: int | None = None


class Message(BaseModel):
    """A journaled message, the raw material of formation; kept for a retention window."""

    id: str
    thread_id: str
    partition: Partition
    role: Role
    user_id: str | None = None
    text: str
    telegram_message_id: int | None = None
    session_id: str | None = None
    formed: bool = False
    #: An explicit request the reply path already acted on (remember, correct, forget, a
    #: directive, an answer to Alfred's question): what it did is final, so formation
    #: reads the message as context but learns nothing from it (DESIGN.md §5).
    handled: bool = False
    #: Formation jobs that failed on this message's batch because the model's answer was
    #: invalid; at :data:`memory.constants.FORMATION_MAX_FAILURES` it is set aside.
    formation_failures: int = 0
    #: Left out of formation until an operator retries it (``alfred admin
    #: retry-formation``), so one batch the model cannot answer never blocks its thread.
    set_aside: bool = False
    created_at: datetime


#: The pending confirmation of a "which should I forget?" question (fact ids, no text).
FORGET_CHOICE = "forget_choice"


@dataclass(frozen=True)
class SessionTick:
    """What touching a thread tells the reply path about its session and the questions
    waiting there, so only the people who were asked pay for reading the answer. A
    plain dataclass: built on every message from the database's own answer, nothing to
    validate."""

    session_id: str
    new_session: bool
    previous_session_id: str | None
    #: Users who were asked to confirm "forget everything" here: only their next
    #: message needs the confirmation check (a write), everyone else's is spared it.
    erase_pending_for: frozenset[str] = frozenset()
    #: Of those, the users asked "which should I forget?" instead.
    choice_pending_for: frozenset[str] = frozenset()
    #: The message touching the thread was among its last journaled ones: a redelivery.
    redelivered: bool = False


class CircleMove(BaseModel):
    """What moving a circle to its supergroup's chat id did: documents moved per
    collection, and the ids of moved facts (their mem0 copies, scoped by partition, must
    follow)."""

    old_id: str
    new_id: str
    moved: dict[str, int] = Field(default_factory=dict)
    fact_ids: list[str] = Field(default_factory=list)
    merged_duplicates: int = 0
    #: mem0 ids of old facts dropped as duplicates: their copies must go too.
    dropped_mem0_ids: list[str] = Field(default_factory=list)

    @property
    def anything(self) -> bool:
        return any(self.moved.values())
