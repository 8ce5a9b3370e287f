"""What a message asks of Alfred's memory, decided by rules, on the reply hot path.

Every provider (the OpenAI-compatible one and the offline rules) shares this package, so an
explicit "remember that …", a correction, a "forget …", a "what do you remember about
me?" or a standing directive behave the same whichever model is configured, cost nothing
and take microseconds. The functions are pure: text in, a frozen pydantic result (or
``None``) out.

Design choices, each made to avoid false positives, since a wrong intent on the hot path
stores, deletes or rewrites memory the user never asked about:

* **Cues are anchored.** An instruction must open a sentence, after optional addressing
  ("@alfred", "Alfred,", "hey Alfred"), fillers ("oh", "btw", "also") and politeness
  ("please", "can you", "I want you to"). "I remember that film" or "did you forget that
  I'm vegetarian?" are therefore never instructions.
* **Bare questions are not instructions.** "Remember that time we went to Rome?" is
  small talk; "Can you remember that I'm vegetarian?" is a polite request and counts.
* **"remember that" + a demonstrative noun** ("remember that film we saw") is a
  reminiscence, not an instruction.
* **Reminders are not memories.** "remember to buy milk" / "don't forget to call mom"
  are never stored as memories; "remind me to …" is read by :mod:`.remind`, apart from
  :func:`detect_intent`.
* **"actually" counts only sentence-initially** and in a statement: "what actually
  happened?" is not a correction. A bare "no, …" is not a correction either: it is far
  more often an answer to Alfred's question than a fix of memory.
* **Implicit corrections need something to correct.** "I'm not vegan anymore" counts
  because "I'm vegan" can be read back from it; "I can't wait anymore" or "it doesn't
  matter anymore" do not.
* **"forget it" / "forget about it" are dismissals** ("never mind"), not deletions.
* **Ambiguous references** (see :func:`detect_ambiguous_reference`): "my mom" always means
  the speaker's mother, since Telegram tells us who speaks; what is ambiguous in a group is
  a kinship word used as a name ("Mom called"), a role with a bare article ("the boss
  wants …") or a third-person possessive with no named antecedent ("her sister").

Text is cleaned first (:func:`memory.rules.text.clean_text`): Unicode NFKC, smart quotes
and apostrophes to ASCII, invisible characters removed, and long inputs cut at
:data:`memory.rules.text.MAX_INTENT_CHARS` so a 100 KB message costs the same as a short
one. Regular expressions that backtrack are only run on sentences of at most
:data:`memory.rules.text.MAX_PARSE_CHARS` characters.

One module per intent (:mod:`.remember`, :mod:`.correct`, :mod:`.forget`, :mod:`.pin`,
:mod:`.export`, :mod:`.recall`, :mod:`.directive`, :mod:`.reference`), the result types in
:mod:`.kinds`,
the shared clause preparation in :mod:`.clause` and :func:`detect_intent` in :mod:`.detect`.
"""

from memory.rules.addressing import strip_addressing
from memory.rules.intents.correct import detect_correction
from memory.rules.intents.detect import detect_intent
from memory.rules.intents.directive import detect_directive
from memory.rules.intents.export import detect_export
from memory.rules.intents.forget import detect_forget
from memory.rules.intents.kinds import (
    CorrectionIntent,
    DirectiveIntent,
    DirectiveTopic,
    ExportIntent,
    ForgetAllIntent,
    ForgetIntent,
    Intent,
    PinIntent,
    RecallIntent,
    RememberIntent,
    RememberLastIntent,
)
from memory.rules.intents.pin import detect_pin
from memory.rules.intents.recall import detect_recall
from memory.rules.intents.reference import detect_ambiguous_reference
from memory.rules.intents.remember import detect_remember, detect_remember_last

__all__ = [
    "CorrectionIntent",
    "DirectiveIntent",
    "DirectiveTopic",
    "ExportIntent",
    "ForgetAllIntent",
    "ForgetIntent",
    "Intent",
    "PinIntent",
    "RecallIntent",
    "RememberIntent",
    "RememberLastIntent",
    "detect_ambiguous_reference",
    "detect_correction",
    "detect_directive",
    "detect_export",
    "detect_forget",
    "detect_intent",
    "detect_pin",
    "detect_recall",
    "detect_remember",
    "detect_remember_last",
    "strip_addressing",
]
