"""The reply path: from one incoming message to Alfred's answer, with memory.

For every message: register the circle, the person and the thread; journal the message;
then, if Alfred is addressed (always in a DM; in a group when mentioned, replied to or
named): answer a pending question, handle an explicit memory request (remember, correct,
forget, recall, a standing directive), or reply with the chat model, given the
always-in-context notes and the facts retrieval found, plus a ``search_memory`` tool
that searches with the same privacy filter. In a group, an explicit "remember that …"
is acted on even unaddressed, and acknowledged with a reaction instead of a reply. Last,
formation is triggered.

This module decides what a message leads to; :mod:`services.reply.conversation` builds
the chat model's context, :mod:`services.reply.forgetting` answers forget and recall
requests, and :mod:`services.membership` registers the people. Everything reaches
storage and models through the ports in :class:`services.reply.deps.ReplyDeps`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from memory.errors import AlfredError, Unavailable
from memory.flags import MemoryFlags
from memory.ids import new_id
from memory.models import (
    FORGET_CHOICE,
    Message,
    Reflection,
    ReflectionScope,
    Role,
    SessionTick,
    Thread,
    ThreadKind,
    Viewer,
)
from memory.operations import FORGET_CHOICES_MAX, MemoryOperations, choice_answer
from memory.prompts.common import Person
from memory.rules.intents import (
    CorrectionIntent,
    DirectiveIntent,
    ForgetAllIntent,
    ForgetIntent,
    RecallIntent,
    RememberIntent,
    detect_ambiguous_reference,
    detect_intent,
    strip_addressing,
)
from services.membership import Membership
from services.messages import Incoming, Outgoing, Reaction, split_for_telegram
from services.reply.commands import ChatCommands
from services.reply.conversation import Conversation
from services.reply.deps import ReplyDeps
from services.reply.forgetting import CONFIRM_ERASE, CONFIRM_ERASE_US, Forgetting

log = logging.getLogger(__name__)

AfterMessage = Callable[[str], Awaitable[None]]

LLM_DOWN = (
    "Sorry — I can't think right now: my language model isn't answering. I've kept your "
    "message and will learn from it when I'm back."
)
MEMORY_DOWN = "Sorry — my memory is unavailable right now. Please try again in a minute."
NOT_STORING = "Memory is switched off for new things here, so I'm not storing that."
NOT_RECALLING = "Memory recall is switched off here right now."
ERASE_CONFIRMED = re.compile(r"^\s*yes\b.*\b(erase|delete|forget)\b", re.I)


@dataclass
class Turn:
    """What one incoming message led to (for replay probes, logs and tests)."""

    replies: list[Outgoing]
    retrieved: bool = False
    addressed: bool = False
    #: Answered by an explicit operation (not the chat model): the message is marked
    #: handled in the journal, so formation never redoes or undoes what was done.
    handled: bool = False
    #: Quiet acknowledgements: reactions set on the user's message instead of a reply.
    reactions: list[Reaction] = field(default_factory=list)


class Assistant:
    """Alfred's behaviour, independent of Telegram."""

    def __init__(
        self,
        deps: ReplyDeps,
        membership: Membership,
        *,
        bot_username: str = "alfred",
        after_message: AfterMessage | None = None,
    ) -> None:
        self.d = deps
        self.membership = membership
        self.bot_username = bot_username.lstrip("@").lower()
        self.after_message = after_message
        self.conversation = Conversation(deps)
        self.forgetting = Forgetting(deps, membership)
        self.commands = ChatCommands(deps)

    @property
    def ops(self) -> MemoryOperations:
        """The explicit memory operations (remember, correct, forget, answer)."""
        return self.d.operations

    @property
    def flags(self) -> MemoryFlags:
        return self.d.flags()

    # --- the path -------------------------------------------------------------------------

    async def handle(self, inc: Incoming) -> Turn:
        """Journal, learn, and (when addressed) answer one message. Never raises for a
        dependency that is down: it answers with an apology instead."""
        try:
            return await self._handle(inc)
        except Unavailable as exc:
            log.warning("reply path degraded: %s", exc.component)
            text = LLM_DOWN if exc.component == "llm" else MEMORY_DOWN
            addressed = inc.addressed or not inc.is_group
            return Turn([Outgoing(inc.chat_id, text, inc.message_id)] if addressed else [])

    async def _handle(self, inc: Incoming) -> Turn:
        thread, viewer = await self.membership.register(inc)
        speaker = Person(id=viewer.user_id, name=inc.sender.name)
        intent = detect_intent(inc.text)
        stored_text = inc.text
        if isinstance(intent, ForgetIntent | ForgetAllIntent):
            stored_text = "[a request to forget something]"  # never keep what is being forgotten
        tick, new = await self._journal(inc, thread, viewer, stored_text, Role.USER)
        session_id = tick.session_id
        if not new:  # a redelivered update: already journaled, already answered
            return Turn([], addressed=False)
        if inc.kind == "edited":  # an edit is learned from, not answered a second time
            await self._after(thread)
            return Turn([], addressed=False)
        addressed = not inc.is_group or inc.addressed or self._names_alfred(inc.text)
        if not addressed and viewer.user_id in tick.choice_pending_for:
            # Asked "which should I forget?" in the group: a bare "2" answers it; anything
            # else they say lets the question lapse.
            if choice_answer(inc.text, FORGET_CHOICES_MAX) is not None:
                addressed = True
            else:
                await self.d.directory.pop_pending_erase(thread.id, viewer.user_id)
        quiet = not addressed and self._explicit_request(viewer, intent)
        if (
            quiet
            and isinstance(intent, RememberIntent)
            and detect_ambiguous_reference(intent.payload, thread.kind) is not None
        ):
            addressed, quiet = True, False  # whose "Mom"? Asked like an addressed request
        if quiet and isinstance(intent, RememberIntent):
            turn = await self._remember_quietly(inc, thread, speaker, intent)
            await self.d.journal.mark_handled([f"{inc.chat_id}:{inc.message_id}"])
            await self._after(thread)
            return turn
        if not addressed:
            await self._after(thread)
            return Turn([], addressed=False)
        erase_pending = viewer.user_id in tick.erase_pending_for
        turn = await self._respond(
            inc, thread, viewer, speaker, intent, session_id, erase_pending=erase_pending
        )
        if turn.handled:
            await self.d.journal.mark_handled([f"{inc.chat_id}:{inc.message_id}"])
        if thread.kind is ThreadKind.DM and self.flags.calendar:
            notice = await self.d.calendar.take_revoked_notice(viewer.user_id)
            if notice is not None:
                turn.replies.append(Outgoing(inc.chat_id, notice))
        for out in turn.replies:
            await self._journal_reply(thread, viewer, out)
        await self._after(thread)
        turn.addressed = True
        return turn

    def _explicit_request(self, viewer: Viewer, intent: object) -> bool:
        """An explicit "remember that …" (or "don't forget …", "keep in mind …", "note
        that …") where memory may store: acted on in a group even when nobody addressed
        Alfred, since a request said in front of it must not wait for the background (or
        be lost when the thread stays too short to form)."""
        flags = self.flags
        return isinstance(intent, RememberIntent) and flags.on_for(viewer) and flags.extraction

    async def _remember_quietly(
        self, inc: Incoming, thread: Thread, speaker: Person, intent: RememberIntent
    ) -> Turn:
        """Store an unaddressed request at once and acknowledge it with a reaction: a
        "Got it" message in a conversation among people would interrupt it."""
        await self.ops.remember(thread, speaker, intent.payload, f"{inc.chat_id}:{inc.message_id}")
        return Turn([], handled=True, reactions=[Reaction(inc.chat_id, inc.message_id)])

    def _names_alfred(self, text: str) -> bool:
        return re.search(rf"\b(alfred|@?{re.escape(self.bot_username)})\b", text, re.I) is not None

    async def _journal(
        self, inc: Incoming, thread: Thread, viewer: Viewer, text: str, role: Role
    ) -> tuple[SessionTick, bool]:
        now = self.d.clock.now()
        tick = await self.d.directory.touch(thread.id, now, tokens=max(1, len(text) // 4))
        suffix = f":edit:{inc.update_id}" if inc.kind == "edited" else ""
        message = Message(
            id=f"{inc.chat_id}:{inc.message_id}{suffix}",
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=role,
            user_id=viewer.user_id,
            text=text,
            telegram_message_id=inc.message_id,
            session_id=tick.session_id,
            created_at=now,
        )
        return tick, await self.d.journal.append(message)

    async def _journal_reply(self, thread: Thread, viewer: Viewer, out: Outgoing) -> None:
        """Alfred's own words are journaled too (weighted 0.2 in formation), in the partition
        of the thread and the person it answered."""
        message = Message(
            id=str(out.meta.get("journal_id") or f"{out.chat_id}:a:{new_id()}"),
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=Role.AGENT,
            user_id=None,
            text=str(out.meta.get("journal_text", out.text)),
            created_at=self.d.clock.now(),
        )
        await self.d.journal.append(message)

    async def _after(self, thread: Thread) -> None:
        if self.after_message is None or not (self.flags.enabled and self.flags.extraction):
            return
        try:
            await self.after_message(thread.id)
        except AlfredError as exc:  # formation is best effort: the outbox keeps the request
            log.warning("formation trigger failed: %s", exc.one_line())

    async def _respond(
        self,
        inc: Incoming,
        thread: Thread,
        viewer: Viewer,
        speaker: Person,
        intent: object,
        session_id: str,
        *,
        erase_pending: bool = True,
    ) -> Turn:
        def say(text: str, **meta: object) -> Turn:
            return Turn(
                [
                    Outgoing(inc.chat_id, part, inc.message_id, dict(meta))
                    for part in split_for_telegram(text)
                ],
                handled=True,
            )

        pending_erase = (
            await self.d.directory.pop_pending_erase(thread.id, viewer.user_id)
            if erase_pending
            else None
        )
        if pending_erase is not None and pending_erase.get("target") == FORGET_CHOICE:
            chosen = await self.forgetting.forget_chosen(viewer, pending_erase, inc.text)
            if chosen is not None:
                return say(chosen)
            # not an answer: the question lapses and the message is handled as any other
        elif pending_erase is not None and ERASE_CONFIRMED.match(strip_addressing(inc.text)):
            return say(await self.forgetting.erase(viewer, str(pending_erase.get("target", "me"))))

        flags = self.flags
        memory_on = flags.on_for(viewer)
        if memory_on and flags.conflicts:
            answered = await self.ops.answer(viewer, inc.text)
            if answered is not None:
                return say(answered.text)

        if isinstance(intent, ForgetAllIntent):
            if intent.target == "us" and thread.kind is not ThreadKind.GROUP:
                return say("Circle memories can only be erased from the circle's group.")
            await self.d.directory.set_pending_erase(
                thread.id, viewer.user_id, intent.target, self.d.clock.now()
            )
            return say(CONFIRM_ERASE if intent.target == "me" else CONFIRM_ERASE_US)
        if isinstance(intent, ForgetIntent):
            target = intent.target or await self.forgetting.previous_text(thread, viewer)
            if not target:
                return say('What should I forget? Tell me, e.g. "forget that I like jazz".')
            result = await self.ops.forget(viewer, target)
            if result.choices:
                asked = await self.forgetting.ask_which(inc, thread, viewer, result, new_id())
                return Turn(asked, handled=True)
            return say(result.text)
        # Forgetting works whatever the flags say: it is a person's right over their data.
        storing = isinstance(intent, RememberIntent | CorrectionIntent | DirectiveIntent)
        if storing and not (memory_on and flags.extraction):
            return say(NOT_STORING)
        if isinstance(intent, RecallIntent):
            if not (memory_on and flags.retrieval):
                return say(NOT_RECALLING)
            return say(await self.forgetting.recall(viewer, intent.target))
        if isinstance(intent, RememberIntent):
            reference = detect_ambiguous_reference(intent.payload, thread.kind)
            if reference is not None:
                return say(
                    f'Just to be sure — when you say "{reference}", whose do you mean? '
                    'Tell me again with a name (e.g. "remember that my mom\'s birthday is …").'
                )
            result = await self.ops.remember(
                thread, speaker, intent.payload, f"{inc.chat_id}:{inc.message_id}"
            )
            return say(result.text)
        if isinstance(intent, CorrectionIntent):
            result = await self.ops.correct(
                viewer, speaker, intent.statement, intent.negated, f"{inc.chat_id}:{inc.message_id}"
            )
            return say(result.text)
        if isinstance(intent, DirectiveIntent):
            await self._directive(thread, viewer, intent)
            return say(f"Understood — I'll {self._directive_echo(intent)}.")
        if thread.kind is ThreadKind.GROUP:
            reference = detect_ambiguous_reference(inc.text, thread.kind)
            if reference is not None and not inc.text.rstrip().endswith("?"):
                return say(f'Just to be sure — when you say "{reference}", whose do you mean?')
        answer = await self.conversation.answer(inc, thread, viewer, speaker, session_id)
        return Turn(
            [
                Outgoing(inc.chat_id, part, inc.message_id)
                for part in split_for_telegram(answer.text)
            ],
            retrieved=answer.retrieved,
        )

    async def _directive(self, thread: Thread, viewer: Viewer, intent: DirectiveIntent) -> None:
        reflection = Reflection(
            id=new_id(),
            content=intent.instruction[:300],
            scope=ReflectionScope.USER,
            partition=thread.partition_for(viewer.user_id),
            thread_id=thread.id,
            created_at=self.d.clock.now(),
        )
        await self.d.notes.add_reflection(reflection)

    @staticmethod
    def _directive_echo(intent: DirectiveIntent) -> str:
        text = intent.instruction.strip().rstrip(".!")
        text = re.sub(r"^(please\s+)?", "", text, flags=re.I)
        text = re.sub(r"\byour\b", "my", text, flags=re.I)
        return text[0].lower() + text[1:] if text else "do that"
