"""Export: the phrasings of "send me a file of my memories", and what is not one."""

from __future__ import annotations

import pytest

from memory.rules.intents import ExportIntent, RecallIntent, detect_export, detect_intent


@pytest.mark.parametrize(
    "text",
    [
        "export my memories",
        "Alfred, export all my data please",
        "@alfred export everything you know about me",
        "could you give me a copy of my data?",
        "send me an export of my memories",
        "I'd like a copy of everything you know about me",
        "can I download my data?",
        "/export",
        "/export@alfred",
    ],
)
def test_export_requests(text: str) -> None:
    assert detect_export(text) == ExportIntent()
    assert detect_intent(text) == ExportIntent()


@pytest.mark.parametrize(
    "text",
    [
        "we export olive oil to Canada",
        "export the slides to PDF",
        "give me a copy of the lease",
        "download the photos from the trip",
        "remember that I export furniture for a living",
    ],
)
def test_not_export_requests(text: str) -> None:
    assert detect_export(text) is None
    assert not isinstance(detect_intent(text), ExportIntent)


def test_recall_is_still_recall() -> None:
    """Listing in the chat stays a recall; only asking for a copy or an export is one."""
    assert detect_intent("what do you know about me?") == RecallIntent(target="me")
    assert detect_intent("show me my memories") == RecallIntent(target="me")
