"""The list rules: what is a list request, and what is only conversation."""

from __future__ import annotations

import pytest

from memory.lists import item_key, list_key
from memory.rules.intents import detect_intent
from memory.rules.intents.lists import ListIntent, detect_list_intent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "add oat milk and rye bread to the shopping list",
            ListIntent(action="add", name="shopping", items=("oat milk", "rye bread")),
        ),
        (
            "@alfred could you put wood glue, sandpaper & nails on our hardware list?",
            ListIntent(action="add", name="hardware", items=("wood glue", "sandpaper", "nails")),
        ),
        ("what's on the shopping list?", ListIntent(action="show", name="shopping")),
        ("Alfred, show me the list", ListIntent(action="show")),
        ("what lists do we have?", ListIntent(action="lists")),
        ("clear the list", ListIntent(action="clear")),
        ("empty the hardware list please", ListIntent(action="clear", name="hardware")),
        ("remove pears", ListIntent(action="remove", items=("pears",), implicit=True)),
        ("tick off the plums", ListIntent(action="remove", items=("plums",), implicit=True)),
        ("we got the eggs", ListIntent(action="remove", items=("eggs",), implicit=True)),
        (
            "take the nails off the hardware list",
            ListIntent(action="remove", name="hardware", items=("nails",)),
        ),
        ("we need batteries", ListIntent(action="add", items=("batteries",), implicit=True)),
        (
            "we're out of coffee and AA batteries",
            ListIntent(action="add", items=("coffee", "AA batteries"), implicit=True),
        ),
    ],
)
def test_list_requests(text: str, expected: ListIntent) -> None:
    assert detect_list_intent(text) == expected
    assert detect_intent(text) is None, "a list request is no memory request"


@pytest.mark.parametrize(
    "text",
    [
        "I need a break",
        "we need a break",
        "we need to talk",
        "we need you",
        "we need a word with the landlord",
        "we need more time",
        "I need batteries",  # about the speaker: never a household list add
        "put the kettle on",
        "what's on your mind?",
        "what lists do you think matter?",
        "remember that we need batteries",
        "the list of winners is out",
    ],
)
def test_conversation_is_not_a_list_request(text: str) -> None:
    assert detect_list_intent(text) is None


def test_names_and_items_match_loosely() -> None:
    assert list_key("Shopping list") == list_key("shopping") == "shopping"
    assert item_key("the Eggs") == item_key("egg")
    assert item_key("batteries") == item_key("battery")
    assert item_key("some tomatoes") == item_key("tomato")
    assert item_key("glass") == "glass"
