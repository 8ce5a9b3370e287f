"""What the offline provider says when asked to chat.

It cannot read a conversation, so it must not pretend to: with no structured fallback it
says plainly that it is offline and what it can still do. :func:`compose_reply` is the
extension point: the reply path will pass a structured fallback (the intent handled, the
memories found) and a templated answer will be composed from it here, or a composer can be
injected into :class:`~integrations.offline_llm.provider.OfflineLLM`.
"""

from __future__ import annotations

from typing import Any, Final

OFFLINE_NOTICE: Final = (
    "I'm running offline, without a language model, so I can't hold a real conversation "
    'right now. I can still remember things for you ("remember that …"), correct or forget '
    'them, and tell you what I remember ("what do you remember about me?").'
)


def compose_reply(fallback: Any = None) -> str:
    """The offline reply for ``fallback``.

    ``None`` → :data:`OFFLINE_NOTICE`. A non-blank string is an already composed answer and
    is returned as is. Anything else (a structure this version does not know yet) also gets
    the notice, rather than a wrong guess.
    """
    if isinstance(fallback, str) and fallback.strip():
        return fallback.strip()
    return OFFLINE_NOTICE
