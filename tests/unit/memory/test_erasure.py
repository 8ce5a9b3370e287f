"""Sentence-level scrubbing: which sentences say what is being forgotten."""

from __future__ import annotations

from memory.erasure import PLACEHOLDER, describe_removed, mentions, names, saying, without


def test_a_sentence_saying_it_in_other_forms_matches_and_a_neighbour_does_not() -> None:
    needle = "the ring is hidden in my sock drawer"
    assert mentions(needle, "Alice hides her ring in the socks drawer.")
    assert mentions(needle, "She said: THE RING IS HIDDEN IN MY SOCK DRAWER!")
    assert not mentions(needle, "Bob keeps his socks in the top drawer.")
    assert not mentions(needle, "The ring road was closed on Monday.")
    # a retelling made of a message's words matches it, a sentence that only shares two does not
    said = "we are driving to the lake house in April with the kids"
    assert mentions(said, "The family drives to the lake house in April.", min_terms=3)
    assert not mentions(said, "The kids love April.", min_terms=3)
    assert not mentions("ok thanks", "Thanks for the lovely dinner.", min_terms=3)
    pegs = "I stashed the spare tent pegs behind the water heater in the basement"
    assert mentions(pegs, "Dana stashed the tent pegs behind the water heater.", min_terms=3)
    assert not mentions(pegs, "The water heater is in the basement.", min_terms=3)


def test_only_the_doomed_sentences_go_and_lines_stay() -> None:
    text = (
        "Alice hid the ring in her sock drawer. Alice loves jazz.\n"
        "- Bob is training for a marathon.\n"
        "The ring is in the sock drawer, she said."
    )
    kept, removed = without(text, saying(["ring in my sock drawer"]))
    assert removed == 2
    assert kept == "Alice loves jazz.\n- Bob is training for a marathon."
    same, none = without(text, saying(["the red bicycle"]))
    assert (same, none) == (text, 0)


def test_names_match_whole_words_only() -> None:
    named = names("Ann")
    assert named("Ann moved the boxes.") and not named("Anne moved the boxes.")
    assert not names(None)("Ann moved the boxes.")


def test_the_reply_counts_in_words() -> None:
    assert describe_removed({"facts": 1}) == "1 memory"
    assert (
        describe_removed({"facts": 2, "reflections": 1, "consolidated": 0, "messages": 3})
        == "2 memories, 1 note and 3 messages"
    )
    assert describe_removed({"messages": 4, "clarifications": 2, "consolidated": 1}) == (
        "1 summary, 2 pending questions and 4 messages"
    )
    assert describe_removed({"facts": 0}) == ""


def test_a_short_needle_matches_whole_words_only() -> None:
    """ "forget … art" must not take every message with "part" or "started" in it (found by
    the hostile-input test: "FORGET THAT FORG" deleted the request's own journal entry)."""
    assert mentions("art", "we love modern art")
    assert not mentions("art", "we started the party early")
    assert not mentions("forg", "[a request to forget something]")
    assert PLACEHOLDER.fullmatch("[a request to forget something]")
    assert not PLACEHOLDER.fullmatch("I said [sic] that")
