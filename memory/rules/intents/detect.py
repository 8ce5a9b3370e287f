"""Every intent at once, by priority."""

from __future__ import annotations

from memory.rules.intents.correct import detect_correction
from memory.rules.intents.directive import detect_directive
from memory.rules.intents.export import detect_export
from memory.rules.intents.forget import detect_forget
from memory.rules.intents.kinds import Intent
from memory.rules.intents.pin import detect_pin
from memory.rules.intents.recall import detect_recall
from memory.rules.intents.remember import detect_remember, detect_remember_last


def detect_intent(text: str) -> Intent | None:
    """The first memory intent of ``text``, by priority, or None.

    Order: forget (most consequential, and "forget that …" must not be read as a
    statement), export ("export everything you know about me" is not a recall), pin,
    recall, remember, directive, correction ("actually, call me Al" is a
    directive; "actually, I'm vegan" a correction).
    """
    if not text or not text.strip():
        return None
    forget = detect_forget(text)
    if forget is not None:
        return forget
    export = detect_export(text)
    if export is not None:
        return export
    pin = detect_pin(text)
    if pin is not None:
        return pin
    found: Intent | None = (
        detect_recall(text) or detect_remember(text) or detect_remember_last(text)
    )
    if found is not None:
        return found
    return detect_directive(text) or detect_correction(text)
