"""The reason ``alfred doctor`` quotes when a server has no Atlas Search: the server's
first sentence, whole, or a cut at a word, never the driver's dump of the reply."""

from __future__ import annotations

from integrations.mongo.capabilities import NO_REASON, REASON_CHARS, short_reason

MONGOD = (
    "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage "
    "requires additional configuration. Please connect to Atlas or an Atlas-compatible "
    "local deployment to use them, full error: {'ok': 0.0, 'errmsg': 'Using Atlas Search…', "
    "'code': 31082}"
)


def test_the_first_sentence_is_quoted_whole_without_the_dump() -> None:
    assert short_reason(MONGOD) == (
        "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage "
        "requires additional configuration"
    )


def test_a_comma_inside_the_message_is_kept() -> None:
    message = "Unrecognized pipeline stage name: '$listSearchIndexes', full error: {'ok': 0}"
    assert short_reason(message) == "Unrecognized pipeline stage name: '$listSearchIndexes'"


def test_a_long_sentence_is_cut_at_a_word() -> None:
    words = " ".join(f"word{i}" for i in range(60))
    reason = short_reason(words)
    assert len(reason) <= REASON_CHARS and reason.endswith("…")
    assert words.startswith(reason.removesuffix("…") + " ")


def test_one_endless_word_is_cut_at_the_limit() -> None:
    reason = short_reason("x" * 500)
    assert reason == "x" * (REASON_CHARS - 1) + "…"


def test_a_message_with_nothing_to_quote_says_so() -> None:
    """An empty error (or only the dump) would have shown as "()" in the doctor's row."""
    for message in ("", "  ", ".", ", full error: {'ok': 0}"):
        assert short_reason(message) == NO_REASON, repr(message)
