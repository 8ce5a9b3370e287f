"""Hostile text for property tests: what a Telegram client, a proxy or an attacker could
put in a message, mixed with the phrases that steer Alfred's intent parsing."""

from __future__ import annotations

from hypothesis import strategies as st

#: Fragments that matter to the reply path: intent openers with nothing (or anything)
#: after them, markup Telegram would parse, regex metacharacters, invisible and
#: direction marks, control characters, unpaired surrogates, long emoji sequences, and
#: strings that look like commands or JSON.
PIECES = [
    "remember that ",
    "remember that",
    "forget ",
    "forget",
    "forget that ",
    "actually",
    "actually ",
    "no, ",
    "not ",
    "@alfred ",
    "Alfred, ",
    "what do you remember about me?",
    "what do you know about us",
    "from now on ",
    "always ",
    "never ",
    "call me ",
    "my mom ",
    "our ",
    "I ",
    "I'm ",
    "is ",
    "used to ",
    "no longer ",
    " ",
    "\n",
    "\n\n",
    "\t",
    ".",
    "?",
    "!",
    "*bold*",
    "_",
    "`code`",
    "```",
    "[link](tg://user?id=1)",
    "<b>",
    "</b>",
    "<a href='javascript:x'>",
    "&amp;",
    "(",
    ")",
    "[",
    "]",
    "\\",
    "$",
    "^",
    "|",
    "{",
    "}",
    ".*",
    "+",
    "(?P<x>",
    "\x00",
    "\x07",
    "\x1b[31m",
    "\r",
    "\u0085",
    "\u200b",
    "\u200d",
    "\u200f",
    "\u202e",
    "\u2028",
    "\ufeff",
    "\ud800",
    "\udfff",
    "\ud83d",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳️\u200d🌈",
    "e\u0301",
    "ﷺ",
    "مرحبا ",
    "/start",
    "/help@alfred",
    '{"say": {"text": 1}}',
    "null",
    "[]",
]

#: Any code point, unpaired surrogates included (Python strings allow them).
any_char = st.characters(exclude_categories=())

hostile_text = st.one_of(
    st.text(any_char, max_size=40),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(any_char, max_size=6)), max_size=20).map(
        "".join
    ),
)

#: A hostile text, sometimes repeated into a very long message (up to 50,000 characters).
hostile_message = st.one_of(
    hostile_text,
    st.builds(
        lambda text, size: (text * (size // max(1, len(text)) + 1))[:size],
        hostile_text.filter(bool),
        st.integers(min_value=4_000, max_value=50_000),
    ),
)
