"""Words that address Alfred rather than say anything: "@alfred", "Alfred,", "hey Alfred"."""

from __future__ import annotations

import re

_BOT_HANDLE = r"@(?:alfred\w*|\w*bot)\b"
_LEAD_ADDRESS = re.compile(
    r"^(?:"
    rf"(?:hey|hi|hello|ok|okay|yo|dear)[\s,]+(?:{_BOT_HANDLE}|@?alfred\w*\b)"
    rf"|{_BOT_HANDLE}"
    r"|alfred\b(?=\s*[,:;!.\-–—]|\s+please\b|\s*$)"
    r")[\s,:;!.\-–—]*",
    re.IGNORECASE,
)
_TRAIL_ADDRESS = re.compile(
    rf"(?:\s*[,\-–—]\s*@?alfred\w*|\s+{_BOT_HANDLE})\s*(?=[.!?]*\s*$)", re.IGNORECASE
)


def strip_addressing(text: str) -> str:
    """``text`` without a leading "@alfred" / "Alfred," / "hey Alfred" or trailing ", Alfred".

    Telegram bot usernames always end in "bot", so any leading "@…bot" mention is the bot
    itself. A bare "Alfred" is only an address when punctuation or "please" follows:
    "Alfred is great" keeps its subject.
    """
    text = _LEAD_ADDRESS.sub("", text.strip(), count=1)
    return _TRAIL_ADDRESS.sub("", text, count=1).strip()


def searched_text(text: str) -> str:
    """What a message asks retrieval to search for: the message without its addressing
    (counting "@alfred" would make every memory look a little less related), or the
    message itself when it is nothing else. The reply's search, the embedding started
    ahead of it and the ranking made ahead of it all use this one text, so they meet."""
    return strip_addressing(text) or text
