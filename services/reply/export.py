"""A person's own export: "export my memories" (or ``/export``) sends two files.

What goes in is exactly what the privacy rule shows the person in their own DM
(:func:`memory.privacy.is_visible` for the DM viewer, DESIGN.md §3): what they said in their
DM, what they said about themselves in each circle's group, and each circle's shared
memories. Another member's memories are never in it, not even the ones visible in a
shared group (those are the other member's to export). Every read goes through the
viewer-taking ports, whose queries carry the privacy filter, and every item is checked
again with ``is_visible`` before it is written. It is the same view the admin
``export-user`` job computes (:mod:`services.admin.export`), but for the person: labelled
and readable, with no internal fields.

Two documents, the same content:

* ``alfred-memories-<date>.md``: readable Markdown, grouped by where each memory came from;
* ``alfred-memories-<date>.json``: for programs, format ``alfred-personal-export`` version 1::

    {"format", "version", "exported_at", "person": {"name", "username"},
     "circles": [{"id", "title"}], "counts": {…},
     "facts": [{"id", "content", "category", "current", "pinned", "source", "from",
                "learned_at", "updated_at", "ended_at", "history": […]}],
     "notes": [{"id", "content", "scope", "from", "created_at", "in_summary"}],
     "summaries": [{"id", "content", "scope", "from", "updated_at"}],
     "instructions": [{"instruction", "topic", "value", "from", "given_at"}],
     "lists": [{"id", "name", "from", "items": [{"text", "added_at", "by_you"}]}],
     "reminders": [{"id", "text", "from", "for", "state", "next_due", "repeats"}]}

``from`` says where an item came from: ``{"where": "dm"}`` (their private chat),
``{"where": "group", "circle": …}`` (theirs, said in that circle's group) or
``{"where": "circle", "circle": …}`` (the circle's shared memories). ``source`` is how a
fact was learned: ``explicit`` (asked to remember), ``conversation`` (learned in the
background), ``correction``, ``calendar``, ``import``, ``operator``. Facts that stopped
being true (corrected, withdrawn) are included with ``current: false``.

Lists and reminders are not memories, but they are the person's data too: the export holds
the lists they may read in their DM (their own, and their circles' shared lists, whole)
and the reminders they may see there (their DM's, and their circles' group reminders);
``for`` is ``you``, ``everyone`` (a "remind us") or ``another member``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memory.lists import SharedList
from memory.models import (
    Consolidated,
    Fact,
    Partition,
    Reflection,
    Thread,
    ThreadKind,
    Viewer,
    Visibility,
)
from memory.privacy import is_visible
from memory.reminders import Reminder
from services.messages import Document, Incoming, Outgoing, PrivateDelivery
from services.reply.deps import ReplyDeps
from services.reply.directives import Directives, Standing

EXPORT_FORMAT = "alfred-personal-export"
EXPORT_VERSION = 1
#: The kind of a pending delivery that is an export (see ``PendingDeliveries``).
EXPORT_KIND = "export"
#: How long an export asked for in a group waits for the person to open a chat with Alfred.
DELIVERY_TTL = timedelta(days=7)
SENT_PRIVATELY = "I've sent your export to you in our private chat."
START_ME = (
    "I can't write to you privately until you start a chat with me (Telegram doesn't let "
    "me begin one). Open {link} and press Start: I'll send your export there."
)
START_UNAVAILABLE = (
    "I can't write to you privately until you start a chat with me (Telegram doesn't let "
    'me begin one). Open a private chat with me and say "export my memories" there.'
)


@dataclass(frozen=True)
class Export:
    """The two files of one export, and a one-line summary of what they hold."""

    markdown: Document
    json: Document
    summary: str
    counts: dict[str, int]


def _date(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _day(value: datetime) -> str:
    return value.strftime("%Y-%m-%d")


class Exporter:
    """Builds a person's export from the ports of the reply path."""

    def __init__(self, deps: ReplyDeps, directives: Directives) -> None:
        self.d = deps
        self.directives = directives

    async def dm_viewer(self, user_id: str) -> Viewer:
        """The person as they are in their own DM, with their circles as of now (their
        DM thread's id is their user id, whether or not they ever wrote there)."""
        thread = Thread(id=user_id, kind=ThreadKind.DM, user_id=user_id)
        return await self.d.directory.viewer(user_id, thread)

    async def export(self, user_id: str) -> Export:
        """Everything the person may see in their own DM, as Markdown and JSON."""
        d = self.d
        viewer = await self.dm_viewer(user_id)
        now = d.clock.now()
        user = await d.directory.user(user_id)
        titles: dict[str, str] = {}
        for cid in sorted(viewer.circle_ids):
            circle = await d.directory.circle(cid)
            titles[cid] = (circle.title if circle and circle.title else None) or cid

        facts = [
            f
            for f in await d.facts.list_visible(viewer, include_history=True)
            if is_visible(f.partition, viewer)
        ]
        facts.sort(
            key=lambda f: (not f.current, _RANK[_origin(f.partition, {})["where"]], f.valid_at)
        )
        standing = [s for s in await self.directives.standing(viewer) if self._ok(s.note, viewer)]
        instruction_ids = {s.note.id for s in standing}
        reflections, blobs = await d.notes.all_visible(viewer)
        notes = sorted(
            (
                r
                for r in reflections
                if r.id not in instruction_ids and not r.directive and self._ok(r, viewer)
            ),
            key=lambda r: r.created_at,
        )
        summaries = [b for b in blobs if is_visible(b.partition, viewer)]
        lists = [s for s in await d.lists.visible(viewer) if is_visible(s.partition, viewer)]
        reminders = await self._reminders(viewer)

        def origin(partition: Partition) -> dict[str, Any]:
            return _origin(partition, titles)

        data: dict[str, Any] = {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "exported_at": now.isoformat(),
            "person": {
                "name": user.name if user else None,
                "username": user.username if user else None,
            },
            "circles": [{"id": cid, "title": title} for cid, title in titles.items()],
            "counts": {
                "facts": sum(1 for f in facts if f.current),
                "past_facts": sum(1 for f in facts if not f.current),
                "notes": len(notes),
                "summaries": len(summaries),
                "instructions": len(standing),
                "lists": len(lists),
                "reminders": len(reminders),
            },
            "facts": [_fact(f, origin(f.partition)) for f in facts],
            "notes": [
                {
                    "id": r.id,
                    "content": r.content,
                    "scope": r.scope.value,
                    "from": origin(r.partition),
                    "created_at": _date(r.created_at),
                    "in_summary": r.absorbed,
                }
                for r in notes
            ],
            "summaries": [
                {
                    "id": b.id,
                    "content": b.content,
                    "scope": b.scope.value,
                    "from": origin(b.partition),
                    "updated_at": _date(b.last_consolidated_at),
                }
                for b in summaries
            ],
            "instructions": [_instruction(s, origin(s.note.partition)) for s in standing],
            "lists": [_list(s, origin(s.partition), user_id) for s in lists],
            "reminders": [_reminder(r, origin(r.partition), user_id) for r in reminders],
        }
        counts: dict[str, int] = data["counts"]
        name = f"alfred-memories-{_day(now)}"
        markdown = _markdown(data, user.name if user else None, facts, notes, summaries, standing)
        return Export(
            markdown=Document(f"{name}.md", markdown.encode("utf-8"), "text/markdown"),
            json=Document(
                f"{name}.json",
                json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8"),
                "application/json",
            ),
            summary=_summary(counts),
            counts=counts,
        )

    async def _reminders(self, viewer: Viewer) -> list[Reminder]:
        """The reminders the person may see in their DM (read with the privacy filter,
        checked again)."""
        if self.d.reminders is None:
            return []
        found = await self.d.reminders.store.visible(viewer)
        return [r for r in found if is_visible(r.partition, viewer)]

    @staticmethod
    def _ok(note: Reflection, viewer: Viewer) -> bool:
        return note.partition.owner_user_id in (None, viewer.user_id) and is_visible(
            note.partition, viewer
        )


#: The order of the Markdown's groups: the person's private chat first.
_RANK = {"dm": 0, "group": 1, "circle": 2}


def _origin(partition: Partition, titles: dict[str, str]) -> dict[str, Any]:
    """Where an item came from, as the JSON says it."""
    if partition.visibility is Visibility.DM:
        return {"where": "dm"}
    circle = partition.circle_id or ""
    where = "circle" if partition.owner_user_id is None else "group"
    return {"where": where, "circle": titles.get(circle, circle), "circle_id": circle}


def _origin_words(origin: dict[str, Any]) -> str:
    """Where an item came from, as the Markdown says it."""
    if origin["where"] == "dm":
        return "our private chat"
    if origin["where"] == "group":
        return f"you, in the {origin['circle']} group"
    return f"the {origin['circle']} circle (shared)"


def _fact(fact: Fact, origin: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": fact.id,
        "content": fact.content,
        "category": fact.category.value,
        "current": fact.current,
        "pinned": fact.pinned,
        "source": fact.provenance.source,
        "from": origin,
        "learned_at": _date(fact.valid_at),
        "updated_at": _date(fact.updated_at),
        "ended_at": _date(fact.invalid_at),
        "history": [
            {"content": v.content, "changed_at": _date(v.changed_at), "reason": v.reason}
            for v in fact.history
        ],
    }


def _instruction(standing: Standing, origin: dict[str, Any]) -> dict[str, Any]:
    return {
        "instruction": standing.instruction,
        "topic": standing.topic,
        "value": standing.value,
        "from": origin,
        "given_at": _date(standing.note.created_at),
    }


def _list(shared: SharedList, origin: dict[str, Any], user_id: str) -> dict[str, Any]:
    return {
        "id": shared.id,
        "name": shared.label(),
        "from": origin,
        "items": [
            {"text": i.text, "added_at": _date(i.added_at), "by_you": i.added_by == user_id}
            for i in shared.items
        ],
    }


def _reminder(r: Reminder, origin: dict[str, Any], user_id: str) -> dict[str, Any]:
    whom = "everyone" if r.for_user_id is None else "you"
    if r.for_user_id not in (None, user_id):
        whom = "another member"
    return {
        "id": r.id,
        "text": r.text,
        "from": origin,
        "for": whom,
        "state": r.state.value,
        "next_due": _date(r.next_due),
        "repeats": r.rule,
    }


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary(counts: dict[str, int]) -> str:
    parts = [_count(counts["facts"], "fact")]
    if counts["past_facts"]:
        parts.append(f"{_count(counts['past_facts'], 'earlier value')} kept as history")
    parts.append(_count(counts["notes"] + counts["summaries"], "note"))
    parts.append(_count(counts["instructions"], "instruction"))
    for kind in ("list", "reminder"):  # not memories: named only when there are some
        if counts.get(f"{kind}s"):
            parts.append(_count(counts[f"{kind}s"], kind))
    return ", ".join(parts)


_SOURCE_WORDS = {
    "explicit": "you asked me to remember it",
    "conversation": "learned from conversation",
    "correction": "your correction",
    "calendar": "from your calendar",
    "import": "imported",
    "operator": "added by the operator",
}


def _markdown(
    data: dict[str, Any],
    name: str | None,
    facts: list[Fact],
    notes: list[Reflection],
    summaries: list[Consolidated],
    standing: list[Standing],
) -> str:
    """The readable document: facts grouped by where they came from, then the rest."""
    lines = [
        f"# What Alfred remembers{f' about {name}' if name else ''}",
        "",
        f"Exported {data['exported_at']} (UTC). This is exactly what I can use when you talk "
        "to me privately: what you told me in our private chat, what you said about "
        "yourself in your circles' groups, and what each circle shares. What other members "
        "told me is theirs and is not in here.",
        "",
        f"In short: {_summary(data['counts'])}. The JSON file holds the same, for programs.",
    ]
    rows = {f["id"]: f for f in data["facts"]}
    current = [f for f in facts if f.current]
    groups: dict[str, list[str]] = {}
    for fact in current:
        row = rows[fact.id]
        origin = _origin_words(row["from"])
        how = _SOURCE_WORDS.get(row["source"], row["source"])
        pin = ", pinned" if row["pinned"] else ""
        learned = (row["learned_at"] or "")[:10]
        groups.setdefault(origin, []).append(f"- {fact.content} ({how}, {learned}{pin})")
    lines += ["", "## Facts"]
    if not groups:
        lines += ["", "None yet."]
    for origin, items in groups.items():
        lines += ["", f"### {origin[:1].upper()}{origin[1:]}", "", *items]
    past = [f for f in facts if not f.current]
    if past:
        lines += ["", "## No longer true (kept as history)", ""]
        for fact in past:
            row = rows[fact.id]
            ended = (row["ended_at"] or "")[:10]
            lines.append(f"- {fact.content} (until {ended}; {_origin_words(row['from'])})")
    if summaries or notes:
        lines += ["", "## Notes"]
        lines.append("")
        for blob, row in zip(summaries, data["summaries"], strict=True):
            lines.append(f"- Summary, from {_origin_words(row['from'])}: {blob.content}")
        for note, row in zip(notes, data["notes"], strict=True):
            merged = ", merged into a summary" if note.absorbed else ""
            lines.append(f"- {note.content} (from {_origin_words(row['from'])}{merged})")
    if standing:
        lines += ["", "## How you asked me to answer", ""]
        for s, row in zip(standing, data["instructions"], strict=True):
            lines.append(f'- "{s.instruction}" ({_origin_words(row["from"])})')
    if data["lists"]:
        lines += ["", "## Lists (not memories)", ""]
        for row in data["lists"]:
            shown = ", ".join(i["text"] for i in row["items"]) or "empty"
            lines.append(f"- {row['name']} ({_origin_words(row['from'])}): {shown}")
    if data["reminders"]:
        lines += ["", "## Reminders (not memories)", ""]
        for row in data["reminders"]:
            repeats = ", repeating" if row["repeats"] else ""
            lines.append(
                f"- {row['text']}: for {row['for']}, {row['state']}, next {row['next_due']}"
                f"{repeats} ({_origin_words(row['from'])})"
            )
    return "\n".join(lines) + "\n"


class ExportRequests:
    """Answers an export request, and delivers one that waited for a start link."""

    def __init__(self, exporter: Exporter, deps: ReplyDeps) -> None:
        self.exporter = exporter
        self.d = deps

    async def messages(self, user_id: str, dm_chat_id: int) -> list[Outgoing]:
        """The export, as the two documents for the person's DM. Journaled as counts
        only: the journal must not hold a second copy of every memory (formation would
        read it again as something said)."""
        export = await self.exporter.export(user_id)
        caption = (
            f"Here's everything I remember that you can see in our private chat: "
            f"{export.summary}. The .md file is for reading, the .json file for programs."
        )
        journal = f"[sent you an export of your memories: {export.summary}]"
        return [
            Outgoing(dm_chat_id, caption, None, {"journal_text": journal}, export.markdown),
            Outgoing(
                dm_chat_id,
                "The same, as JSON.",
                None,
                {"journal_text": "[the export as JSON]"},
                export.json,
            ),
        ]

    async def answer(
        self, inc: Incoming, viewer: Viewer
    ) -> tuple[list[Outgoing], list[PrivateDelivery]]:
        """In a DM: the documents, here. In a group: nothing in the group but a notice,
        the documents going to the asker's DM (see :class:`PrivateDelivery`)."""
        dm = inc.sender.telegram_id
        documents = await self.messages(viewer.user_id, dm)
        if not inc.is_group:
            return documents, []
        refused = START_ME if self.d.deliveries is not None else START_UNAVAILABLE
        return [], [
            PrivateDelivery(
                user_id=viewer.user_id,
                telegram_user_id=dm,
                kind=EXPORT_KIND,
                messages=documents,
                chat_id=inc.chat_id,
                reply_to_message_id=inc.message_id,
                sent_notice=SENT_PRIVATELY,
                refused_notice=refused,
            )
        ]

    async def hold(self, delivery: PrivateDelivery) -> str | None:
        """Keep a refused delivery for the person's first visit; the start link's token,
        or None when nothing can keep it."""
        if self.d.deliveries is None:
            return None
        now = self.d.clock.now()
        return await self.d.deliveries.hold(
            delivery.user_id, delivery.kind, at=now, until=now + DELIVERY_TTL
        )

    async def waiting(self, viewer: Viewer, token: str | None, dm_chat_id: int) -> list[Outgoing]:
        """What waited for the person to open their DM (``/start`` with or without the
        link's token), made now from what they may see now; each delivery once."""
        if self.d.deliveries is None or viewer.thread.kind is not ThreadKind.DM:
            return []
        kinds = await self.d.deliveries.claim(viewer.user_id, token, now=self.d.clock.now())
        out: list[Outgoing] = []
        if EXPORT_KIND in kinds:
            out += await self.messages(viewer.user_id, dm_chat_id)
        return out
