"""What a message can ask of Alfred's memory: one frozen result type per intent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Intent(BaseModel):
    model_config = ConfigDict(frozen=True)


class RememberIntent(_Intent):
    """An explicit request to store something: ``payload`` is the text to remember."""

    kind: Literal["remember"] = "remember"
    payload: str


class RememberLastIntent(_Intent):
    """A message that is only a cue pointing back ("remember that", "keep that in mind"):
    the caller finds what the person said just before, as for "forget that"."""

    kind: Literal["remember_last"] = "remember_last"


class CorrectionIntent(_Intent):
    """The user corrects something Alfred knows.

    ``statement`` is what is true now, in the speaker's words ("I'm not vegetarian
    anymore"), or ``None`` when the message only rejects something said before ("That's
    not right.", "Not anymore."): the caller must look at the conversation for what.
    ``negated`` is what stopped being true, where the sentence says it ("I'm vegetarian").
    """

    kind: Literal["correction"] = "correction"
    statement: str | None
    negated: str | None = None
    cue: str
    #: A value swap ("I meant 5k, not 10k"): ``old_value`` in what was said or stored
    #: becomes ``new_value``; ``statement`` is then ``None``.
    old_value: str | None = None
    new_value: str | None = None


class ForgetIntent(_Intent):
    """Delete one memory; ``target`` is ``None`` for "forget that" (the last thing said)."""

    kind: Literal["forget"] = "forget"
    target: str | None


class ForgetAllIntent(_Intent):
    """Erase everything about the speaker (``me``) or the whole circle (``us``)."""

    kind: Literal["forget_all"] = "forget_all"
    target: Literal["me", "us"]


class RecallIntent(_Intent):
    """List what Alfred remembers about the speaker (``me``) or the circle (``us``)."""

    kind: Literal["recall"] = "recall"
    target: Literal["me", "us"]


class PinIntent(_Intent):
    """Pin (``pinned``) or unpin a memory so it does (not) fade with age; ``target`` is
    ``None`` for "pin that" (the last thing said)."""

    kind: Literal["pin"] = "pin"
    pinned: bool
    target: str | None


class ExportIntent(_Intent):
    """A request for a file of everything Alfred keeps that the speaker may see."""

    kind: Literal["export"] = "export"


DirectiveTopic = Literal["language", "name", "length", "style", "avoid", "general"]


class DirectiveIntent(_Intent):
    """A standing instruction on how Alfred should behave with this user.

    ``instruction`` is the sentence without addressing, politeness or final punctuation
    ("always keep your answers short"); ``value`` the key word where there is one
    ("Spanish", "Al", "emojis", "short"). ``revoke`` marks the withdrawal of an earlier
    instruction ("you can use emojis again"): ``value`` then says what it was about.
    """

    kind: Literal["directive"] = "directive"
    topic: DirectiveTopic
    instruction: str
    value: str | None = None
    revoke: bool = False


Intent = (
    RememberIntent
    | RememberLastIntent
    | CorrectionIntent
    | ForgetIntent
    | ForgetAllIntent
    | RecallIntent
    | DirectiveIntent
    | PinIntent
    | ExportIntent
)
