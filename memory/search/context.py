"""What a memory's vector is computed from: its own words, then the message it answered.

A turn of a conversation often means little alone. "Researching adoption agencies"
answers "what have you been up to?"; "yes, since I moved from my home country" answers
"have you known them long?". The message a turn replies to names the topic the turn
leaves out, so when a memory is such a turn (its provenance carries that message as
``context``), its embedding is computed from its words followed by the message it
answered. Its own words come first, so the model's 256-token window never cuts them.

Only the vector changes: the keyword leg and what a reader sees remain the memory's own
words. Measured with ``alfred bench locomo`` (turns stored with the previous turn of
their session as context, 760 questions of conversations 0-4): recall@10 0.705 -> 0.750,
up on both halves (0-1: 0.694 -> 0.760, 2-4: 0.709 -> 0.746) and in every category.
Putting the context into the keyword index as well did worse (0.731: the previous
turn's words then match as strongly as the turn's own), and so did adding the next
turn too (0.745, and multi-hop fell).

Privacy: a context is searched wherever its memory is, since a word of it can make the
memory found. A writer may only give a memory a context that is visible wherever the
memory is (the turns of one partition's conversation, as the benchmark stores them).
Formation does not give its facts one: they are the model's self-contained sentences,
and in a group the message before a member's statement is often someone else's words.
"""

from __future__ import annotations

from typing import Final

#: Longest context embedded with a memory: about the model's whole 256-token window, so
#: anything longer would be cut by the model anyway, and the stored field stays small.
CONTEXT_MAX_CHARS: Final = 1000


def clip_context(context: str | None) -> str | None:
    """``context`` with its whitespace collapsed and cut to :data:`CONTEXT_MAX_CHARS`
    (None when nothing is left)."""
    if not context:
        return None
    text = " ".join(context.split())[:CONTEXT_MAX_CHARS]
    return text or None


def embedding_text(content: str, context: str | None = None) -> str:
    """The text whose embedding stands for a memory: its content, then what it replied to."""
    clipped = clip_context(context)
    if clipped is None:
        return content
    return f"{content} (replying to {clipped})"
