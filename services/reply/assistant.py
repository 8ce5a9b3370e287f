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

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence

from memory.clarifications import short as short_answer
from memory.errors import AlfredError, Unavailable
from memory.flags import MemoryFlags
from memory.ids import new_id
from memory.models import (
    FORGET_CHOICE,
    Thread,
    ThreadKind,
    Viewer,
)
from memory.operations import FORGET_CHOICES_MAX, MemoryOperations, choice_answer
from memory.prompts.common import Person
from memory.rules.addressing import searched_text
from memory.rules.intents import (
    CorrectionIntent,
    DirectiveIntent,
    ExportIntent,
    ForgetAllIntent,
    ForgetIntent,
    PinIntent,
    RecallIntent,
    RememberIntent,
    RememberLastIntent,
    detect_ambiguous_reference,
    detect_intent,
    strip_addressing,
)
from memory.rules.intents.lists import detect_list_intent
from memory.rules.intents.remind import ReminderIntent, SetReminder, detect_reminder
from memory.rules.intents.time_zone import TimeZoneIntent, detect_time_zone
from services.membership import Membership
from services.messages import Incoming, Outgoing, Reaction, SentReply, split_for_telegram
from services.reply.commands import ChatCommands
from services.reply.conversation import Conversation
from services.reply.deps import ReplyDeps
from services.reply.directives import Directives
from services.reply.edits import Edits
from services.reply.export import Exporter, ExportRequests
from services.reply.forgetting import CONFIRM_ERASE, CONFIRM_ERASE_US, REMEMBER_WHAT, Forgetting
from services.reply.journaling import IncomingEntry, TurnJournal
from services.reply.lists import NOTHING_TO_TICK, Lists, Ticked, journal_note, parse_tick
from services.reply.pins import PinRequests
from services.reply.turn import Turn

log = logging.getLogger(__name__)

AfterMessage = Callable[[str], Awaitable[None]]

LLM_DOWN = (
    "Sorry — I can't think right now: my language model isn't answering. I've kept your "
    "message and will learn from it when I'm back."
)
MEMORY_DOWN = "Sorry — my memory is unavailable right now. Please try again in a minute."
#: Turns whose work is done and whose last writes failed, kept for their replay.
UNFINISHED_KEPT = 64
NOT_STORING = "Memory is switched off for new things here, so I'm not storing that."
NOT_RECALLING = "Memory recall is switched off here right now."


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
        self.pins = PinRequests(deps, self.forgetting, self._members)
        self.directives = Directives(deps)
        self.edits = Edits(deps)
        self.exports = ExportRequests(Exporter(deps, self.directives), deps)
        self.lists = Lists(deps.lists, deps.clock)
        self.turn_journal = TurnJournal(deps.clock, deps.directory, deps.journal)
        #: Turns whose last writes (marked handled, replies journaled) failed, by message:
        #: their replay finishes them with the answer the work gave ("Done, erased"),
        #: where doing the work again would find it done and answer otherwise.
        self._unfinished: OrderedDict[str, tuple[Thread, Viewer, Turn]] = OrderedDict()

    @property
    def ops(self) -> MemoryOperations:
        """The explicit memory operations (remember, correct, forget, answer)."""
        return self.d.operations

    @property
    def flags(self) -> MemoryFlags:
        return self.d.flags()

    # --- the path -------------------------------------------------------------------------

    async def handle(self, inc: Incoming, *, deliver_first: bool = False) -> Turn:
        """Journal, learn, and (when addressed) answer one message. Never raises for a
        dependency that is down: it answers with an apology instead.

        With ``deliver_first`` the replies come back before they are journaled, and the
        caller calls :meth:`settle` once it has sent them, so the person does not wait
        for that write (the Telegram handler). Without it (the console, ``alfred
        replay``) the turn comes back with everything written."""
        try:
            with self.d.turn_scope():
                turn = await self._handle(inc)
            if not deliver_first:
                await self.settle(turn)
            return turn
        except Unavailable as exc:
            log.warning("reply path degraded: %s", exc.component)
            text = LLM_DOWN if exc.component == "llm" else MEMORY_DOWN
            addressed = inc.addressed or not inc.is_group
            return Turn([Outgoing(inc.chat_id, text, inc.message_id)] if addressed else [])

    async def _handle(self, inc: Incoming) -> Turn:
        unfinished = self._unfinished.get(inc.journal_id) if inc.replayed else None
        if unfinished is not None:
            return await self._finish(inc, *unfinished)
        intent: object = detect_time_zone(inc.text) or detect_intent(inc.text)
        reminder = detect_reminder(inc.text)  # read once: it decides the journal text too
        addressed = not inc.is_group or inc.addressed or self._names_alfred(inc.text)
        answering = addressed and intent is None and reminder is None and inc.kind != "edited"
        if answering:
            await self._warm_search(inc)
        thread, viewer = await self.membership.register(inc)
        speaker = Person(id=viewer.user_id, name=inc.sender.name)
        stored_text = inc.text
        if isinstance(intent, ForgetIntent | ForgetAllIntent):
            stored_text = "[a request to forget something]"  # never keep what is being forgotten
        elif isinstance(reminder, SetReminder):
            stored_text = "[a reminder request]"  # a reminder is not a memory: never formed
        if inc.kind == "edited":  # an edit corrects what was learned; it is not answered
            members = await self._members(thread)
            if not await self.edits.apply(
                inc, thread, viewer, speaker, intent, stored_text, members
            ):
                await self.turn_journal.incoming(inc, thread, viewer, stored_text)
            await self._after(thread)
            return Turn([], addressed=False)
        entry = await self.turn_journal.open(inc, thread, viewer, stored_text)
        tick = entry.tick
        session_id = tick.session_id
        # A message the model will answer is journaled while the model answers (sent
        # by Conversation.answer, after the turn's reads; awaited below, before its
        # turn is finished). Any other is journaled first, as its handling may write.
        later = (
            answering
            and not inc.replayed
            and not tick.redelivered
            and viewer.user_id not in tick.erase_pending_for
        )
        new = later or await entry.written()
        if not new and (not inc.replayed or inc.answered):
            # Redelivered: journaled and answered before. Replayed after a restart lost
            # its turn, it brings the replies that went out, whose journaling failed.
            await self._journal_replies(inc, thread, viewer, inc.answers or ())
            return Turn([], addressed=False)
        if answering:
            self._foresee(inc, viewer)
        if not addressed and viewer.user_id in tick.choice_pending_for:
            # Asked "which should I forget?" in the group: a bare "2" answers it; anything
            # else they say lets the question lapse.
            if choice_answer(inc.text, FORGET_CHOICES_MAX) is not None:
                addressed = True
            else:
                await self.d.directory.pop_pending_erase(thread.id, viewer.user_id)
        erase = None
        if viewer.user_id in tick.erase_pending_for - tick.choice_pending_for:
            # Asked to confirm "forget everything": this message answers it, addressed or
            # not; a confirmation erases, anything else cancels and Alfred says so.
            erase = await self.d.directory.pop_pending_erase(thread.id, viewer.user_id)
        cancelled = self.forgetting.settle_erase(erase, inc.text) if erase else None
        if erase is not None and cancelled is None:
            erased = await self.forgetting.erase(viewer, str(erase.get("target", "me")))
            turn = Turn([Outgoing(inc.chat_id, erased, inc.message_id)], handled=True)
            return await self._finish(inc, thread, viewer, turn)
        if (
            cancelled is None
            and not addressed
            and short_answer(inc.text) is not None
            and self.flags.on_for(viewer)
        ):
            # "mine" said in the group right after Alfred asked whose "Mom" was meant:
            # the asked person's next message answers, addressed or not.
            answered = await self._answer_question(inc, viewer, speaker)
            if answered is not None:
                turn = Turn([Outgoing(inc.chat_id, answered, inc.message_id)], handled=True)
                return await self._finish(inc, thread, viewer, turn)
        quiet = cancelled is None and not addressed and self._explicit_request(viewer, intent)
        if (
            quiet
            and isinstance(intent, RememberIntent)
            and detect_ambiguous_reference(intent.payload, thread.kind) is not None
        ):
            addressed, quiet = True, False  # whose "Mom"? Asked like an addressed request
        if quiet and isinstance(intent, RememberIntent):
            turn = await self._remember_quietly(inc, thread, speaker, intent)
            await self.d.journal.mark_handled([inc.journal_id])
            await self._after(thread)
            return turn
        if cancelled is None and not addressed and intent is None:
            # "we need batteries" said among the family: onto the list, with a reaction.
            listed = await self._list_turn(inc, thread, viewer, quiet=True)
            if listed is not None:
                await self.d.journal.mark_handled([inc.journal_id])
                await self._after(thread)
                return listed
        if cancelled is not None and not addressed:
            turn = Turn([Outgoing(inc.chat_id, cancelled, inc.message_id)])
        elif not addressed:
            await self._after(thread)
            return Turn([], addressed=False)
        else:
            choice_pending = viewer.user_id in tick.choice_pending_for
            try:
                turn = await self._respond(
                    inc,
                    thread,
                    viewer,
                    speaker,
                    intent,
                    session_id,
                    erase_pending=choice_pending,
                    reminder=reminder,
                    journal=entry,
                )
            finally:  # kept even when the model is down ("I've kept your message")
                new = await entry.written()
            if later and not new:  # journaled meanwhile: one message delivered twice at once
                return Turn([], addressed=False)
            if cancelled is not None:  # one message: the cancellation, then the answer
                first = turn.replies[0] if turn.replies else None
                text = f"{cancelled}\n\n{first.text}" if first else cancelled
                head = Outgoing(inc.chat_id, text, inc.message_id, first.meta if first else {})
                turn.replies[:1] = [head]
        return await self._finish(inc, thread, viewer, turn)

    async def press(self, inc: Incoming, message_id: int, button: str) -> str:
        """A button under a delivered reminder (``done`` or ``snooze``), pressed by
        ``inc.sender`` in ``inc.chat_id``: only someone who may see that reminder there."""
        _, viewer = await self.membership.register(inc)
        if self.d.reminders is None:
            return "Reminders are not available here."
        return await self.d.reminders.press(viewer, inc.chat_id, message_id, button)

    async def tick(self, inc: Incoming, data: str) -> Ticked:
        """A list's tick-off button (callback ``data``) pressed by ``inc.sender`` in
        ``inc.chat_id``: acts only on a list of that chat the presser may see."""
        _, viewer = await self.membership.register(inc)
        ids = parse_tick(data)
        if ids is None:
            return Ticked(NOTHING_TO_TICK)
        return await self.lists.tick(viewer, ids[0], ids[1], inc.sender.name)

    async def _answer_question(self, inc: Incoming, viewer: Viewer, speaker: Person) -> str | None:
        """The reply to an answer of Alfred's pending question, if this message is one."""
        answered = await self.ops.answer(
            viewer,
            inc.text,
            speaker=speaker,
            message_id=inc.message_id,
            journal_id=inc.journal_id,
            reply_to_text=inc.reply_to_bot_text,
        )
        return answered.text if answered is not None else None

    async def _ask_whose(
        self, inc: Incoming, viewer: Viewer, statement: str, reference: str, question: str
    ) -> None:
        """Keep the statement until the person says whose ``reference`` is meant; nothing
        is stored as anyone's meanwhile (the message is handled)."""
        if self.flags.on_for(viewer) and self.flags.extraction:
            await self.ops.clarifications.ask_whose(
                viewer, statement, reference, question, inc.message_id
            )

    async def _finish(self, inc: Incoming, thread: Thread, viewer: Viewer, turn: Turn) -> Turn:
        """Mark what was handled and trigger formation; journaling the replies is left
        to :meth:`settle`. Each write may be done twice (a replay of a turn that failed
        here or in :meth:`settle`): marking is idempotent, and a reply's journal id is
        the message's and its place."""
        source = inc.journal_id
        self._unfinished[source] = (thread, viewer, turn)
        while len(self._unfinished) > UNFINISHED_KEPT:
            self._unfinished.popitem(last=False)
        if turn.handled:
            await self.d.journal.mark_handled([source])
        if thread.kind is ThreadKind.DM and self.flags.calendar and not inc.answered:
            notice = await self.d.calendar.take_revoked_notice(viewer.user_id)
            if notice is not None:
                turn.replies.append(Outgoing(inc.chat_id, notice))
        # In the turn: the trigger reads the counters the thread's update left in it.
        await self._after(thread)
        turn.addressed = True

        if not turn.sent:  # a replay of a turn kept here journals what it first sent
            turn.sent = self.turn_journal.sent(inc, turn.replies)
        sent = turn.sent

        async def settle() -> None:
            await self._journal_replies(inc, thread, viewer, sent)

        if inc.answered:  # replayed after its replies went out: say nothing again
            return Turn([], addressed=True, handled=turn.handled, settle=settle, sent=sent)
        turn.settle = settle
        return turn

    async def settle(self, turn: Turn) -> None:
        """Journal ``turn``'s replies. If this fails after they were sent, the caller
        spools the message as answered, and its replay finishes the turn kept here
        without answering again."""
        pending, turn.settle = turn.settle, None
        if pending is not None:
            await pending()

    async def _journal_replies(
        self, inc: Incoming, thread: Thread, viewer: Viewer, sent: Sequence[SentReply]
    ) -> None:
        for reply in sent:
            await self.turn_journal.reply(thread, viewer, reply)
        self._unfinished.pop(inc.journal_id, None)

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
        await self.ops.remember(
            thread,
            speaker,
            intent.payload,
            inc.journal_id,
            await self._members(thread),
        )
        return Turn([], handled=True, reactions=[Reaction(inc.chat_id, inc.message_id)])

    async def _list_turn(
        self, inc: Incoming, thread: Thread, viewer: Viewer, *, quiet: bool
    ) -> Turn | None:
        """A list request answered (a reaction when ``quiet``), or None when the message
        is not one. Lists are not memories: the turn is handled, and Alfred's answer is
        journaled without the list's text (:func:`services.reply.lists.journal_note`)."""
        intent = detect_list_intent(inc.text)
        if intent is None:
            return None
        answer = await self.lists.answer(intent, thread, viewer, quiet=quiet, source=inc.journal_id)
        if answer is None:
            return None
        if quiet:
            return Turn([], handled=True, reactions=[Reaction(inc.chat_id, inc.message_id)])
        meta: dict[str, object] = {"journal_text": journal_note(intent)}
        return Turn(
            _parts_with_buttons(inc, answer.text, meta, answer.buttons),
            handled=True,
        )

    async def _members(self, thread: Thread) -> list[Person]:
        """The people of a group's circle (for wording "our …"); none in a DM."""
        if thread.kind is not ThreadKind.GROUP or thread.circle_id is None:
            return []
        return [
            Person(id=u.id, name=u.name) for u in await self.d.directory.members(thread.circle_id)
        ]

    async def _warm_search(self, inc: Incoming) -> None:
        """An addressed message the model will answer: its query embedding starts before
        the turn's round trips, handed to its thread at once, so they overlap."""
        flags = self.flags
        if flags.enabled and flags.retrieval and self.d.retriever.warm(searched_text(inc.text)):
            await asyncio.sleep(0)

    def _foresee(self, inc: Incoming, viewer: Viewer) -> None:
        """Rank its memories on the viewer's cached index while the turn's memory read
        (next) confirms that index (:mod:`memory.search.guess`). Not sooner: beside the
        journal writes, the ranking's CPU delayed handling their answers."""
        flags = self.flags
        if flags.on_for(viewer) and flags.retrieval:
            self.d.retriever.foresee(viewer, searched_text(inc.text))

    def _names_alfred(self, text: str) -> bool:
        return re.search(rf"\b(alfred|@?{re.escape(self.bot_username)})\b", text, re.I) is not None

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
        reminder: ReminderIntent | None = None,
        journal: IncomingEntry | None = None,
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

        flags = self.flags
        memory_on = flags.on_for(viewer)
        if memory_on:
            answered = await self._answer_question(inc, viewer, speaker)
            if answered is not None:
                return say(answered)

        if isinstance(intent, TimeZoneIntent) and self.d.time_zones is not None:
            # A setting, not a memory: handled, so formation never files it as a fact.
            return say(await self.d.time_zones.answer(viewer, intent))
        if reminder is not None and self.d.reminders is not None:
            # A reminder is not a memory: handled here, so formation never reads it.
            text = await self.d.reminders.handle(
                viewer,
                inc.chat_id,
                reminder,
                inc.reply_to_bot_message_id,
                source=inc.journal_id,
            )
            return say(text, journal_text="[about reminders]")
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
            dropped = await self.directives.forget(viewer, target)
            if dropped is not None:  # "forget that I don't want emojis": an instruction
                return say(dropped, journal_text="[an instruction was forgotten]")
            result = await self.forgetting.forget(inc, viewer, target)
            if result.choices:
                asked = await self.forgetting.ask_which(inc, thread, viewer, result, new_id())
                return Turn(asked, handled=True)
            return say(result.text)
        if isinstance(intent, ExportIntent):  # a person's right over their data, like forget
            replies, private = await self.exports.answer(inc, viewer)
            return Turn(replies, handled=True, private=private)
        said = None
        if isinstance(intent, RememberLastIntent):  # "remember that", after saying it
            said = await self.forgetting.previous_statement(thread, viewer)
            if said is None:
                return say(REMEMBER_WHAT)
            intent = RememberIntent(payload=said.text)
        # Forgetting works whatever the flags say: it is a person's right over their data.
        storing = isinstance(intent, RememberIntent | CorrectionIntent) or (
            isinstance(intent, DirectiveIntent) and not intent.revoke
        )
        if storing and not (memory_on and flags.extraction):
            return say(NOT_STORING)
        if said is not None:  # stored on request: formation must not learn it again
            await self.d.journal.mark_handled([said.id])
        if isinstance(intent, RecallIntent):
            if not (memory_on and flags.retrieval):
                return say(NOT_RECALLING)
            mine = await self.directives.standing(viewer) if intent.target == "me" else []
            return say(await self.forgetting.recall(viewer, intent.target, mine))
        if isinstance(intent, PinIntent):
            if not memory_on:
                return say(NOT_RECALLING)
            return say(await self.pins.answer(inc, thread, viewer, speaker, intent))
        if isinstance(intent, RememberIntent):
            reference = detect_ambiguous_reference(intent.payload, thread.kind)
            if reference is not None:
                question = (
                    f'Just to be sure — when you say "{reference}", whose do you mean? '
                    'Reply "mine", or with a name.'
                )
                await self._ask_whose(inc, viewer, intent.payload, reference, question)
                return say(question)
            result = await self.ops.remember(
                thread,
                speaker,
                intent.payload,
                inc.journal_id,
                await self._members(thread),
            )
            return say(result.text)
        if isinstance(intent, CorrectionIntent):
            result = await self.ops.correct(
                viewer,
                speaker,
                intent.statement,
                intent.negated,
                inc.journal_id,
                old_value=intent.old_value,
                new_value=intent.new_value,
                others=await self._members(thread),
            )
            return say(result.text)
        if isinstance(intent, DirectiveIntent):
            source = inc.journal_id
            return say(await self.directives.give(thread, viewer, speaker, intent, source))
        if intent is None:
            listed = await self._list_turn(inc, thread, viewer, quiet=False)
            if listed is not None:
                return listed
        if thread.kind is ThreadKind.GROUP:
            reference = detect_ambiguous_reference(inc.text, thread.kind)
            if reference is not None and not inc.text.rstrip().endswith("?"):
                question = f'Just to be sure — when you say "{reference}", whose do you mean?'
                statement = strip_addressing(inc.text)
                await self._ask_whose(inc, viewer, statement, reference, question)
                return say(question)
        answer = await self.conversation.answer(
            inc, thread, viewer, speaker, session_id, journal=journal
        )
        # A list tool ran: as with the rules, the list's text is neither learned nor kept.
        note = {"journal_text": "[a list request was answered]"} if answer.used_lists else {}
        return Turn(
            _parts_with_buttons(inc, answer.text, note, answer.buttons),
            retrieved=answer.retrieved,
            handled=answer.used_lists,
        )


def _parts_with_buttons(
    inc: Incoming, text: str, meta: Mapping[str, object], buttons: tuple[tuple[str, str], ...]
) -> list[Outgoing]:
    """``text`` cut to Telegram's message size, each part a reply to ``inc``; a list's
    tick-off buttons go under the last part, where its items end."""
    parts = split_for_telegram(text)
    return [
        Outgoing(
            inc.chat_id,
            part,
            inc.message_id,
            dict(meta),
            buttons=buttons if n == len(parts) - 1 else (),
        )
        for n, part in enumerate(parts)
    ]
