"""Shared lists, end to end through replay: built, read and ticked off in the group; a
DM's list invisible and unchangeable anywhere else; never a memory; erased with the
person who made it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from bot.bench.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    completion,
    json_task_handler,
    tool_call,
)
from runtime.embedded import acquire, stop_before_removal
from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say, with_model

FAM = {"circle": "fam", "members": ["alice", "bob"]}
WORK = {"circle": "work", "members": ["alice", "carol"]}


def _reactions(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["reaction"] for o in out if "reaction" in o]


async def test_a_group_list_is_built_read_and_ticked_off(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("alice", "group:fam", "@alfred add oat milk and rye bread to the shopping list"),
            say("bob", "group:fam", "Alfred, put wood glue on the hardware list please"),
            say("bob", "group:fam", "@alfred what's on the shopping list?"),
            say("alice", "group:fam", "@alfred add apples, pears & plums to the shopping list"),
            say("alice", "group:fam", "@alfred remove pears"),
            say("bob", "group:fam", "@alfred tick off the plums"),
            say("alice", "group:fam", "@alfred we got the rye bread"),
            say("bob", "group:fam", "@alfred we need sandpaper"),
            say("alice", "group:fam", "@alfred what lists do we have?"),
            say("bob", "group:fam", "@alfred clear the list"),
            say("bob", "group:fam", "@alfred show me the hardware list"),
        ],
        tmp_path / "a",
    )
    texts = [r["text"] for r in replies(out)]
    assert texts[0] == (
        "Added oat milk and rye bread to the shopping list.\nShopping list: oat milk, rye bread"
    )
    assert texts[1].endswith("Hardware list: wood glue"), texts[1]
    assert texts[2] == "Shopping list: oat milk, rye bread"
    assert texts[3].endswith("Shopping list: oat milk, rye bread, apples, pears, plums")
    assert texts[4] == "Ticked off pears.\nShopping list: oat milk, rye bread, apples, plums"
    assert texts[5] == "Ticked off plums.\nShopping list: oat milk, rye bread, apples"
    assert texts[6] == "Ticked off rye bread.\nShopping list: oat milk, apples"
    # "we need …" goes on the list last used in the thread: the shopping list.
    assert texts[7].endswith("Shopping list: oat milk, apples, sandpaper"), texts[7]
    assert texts[8] == "Lists here:\n- Hardware list: 1 item\n- Shopping list: 3 items"
    assert texts[9] == "Cleared the shopping list."
    assert texts[10] == "Hardware list: wood glue"


async def test_unaddressed_household_talk_fills_the_list_with_a_reaction(
    settings: Settings, tmp_path: Path
) -> None:
    """Said among the family, not to Alfred: an explicit add and "we need …" act quietly
    (a reaction, no message); reading and clearing wait to be asked."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("alice", "group:fam", "put light bulbs on the hardware list"),
            say("bob", "group:fam", "we're out of AA batteries"),
            say("bob", "group:fam", "what's on the hardware list?"),
            say("alice", "group:fam", "clear the hardware list"),
            say("alice", "group:fam", "@alfred what's on the list?"),
        ],
        tmp_path / "q",
    )
    assert [r["to"] for r in _reactions(out)] == ["alice", "bob"]
    assert [r["text"] for r in replies(out)] == ["Hardware list: light bulbs, AA batteries"]


async def test_we_need_is_a_list_add_only_for_things_and_a_list_in_use(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            # No list in this thread yet: conversation, not a list.
            say("bob", "dm:bob", "we need batteries"),
            say("bob", "dm:bob", "add dishwasher tablets to the shopping list"),
            say("bob", "dm:bob", "I need a break"),
            say("bob", "dm:bob", "we need a break"),
            say("bob", "dm:bob", "we need to talk about the holidays"),
            say("bob", "dm:bob", "we need you"),
            say("bob", "dm:bob", "we need batteries"),
            say("bob", "dm:bob", "we got the tea"),  # not on any list: not a tick-off
            {"clock": "+15d"},
            say("bob", "dm:bob", "we need coffee"),  # the list was last used too long ago
            say("bob", "dm:bob", "what's on the shopping list?"),
        ],
        tmp_path / "n",
    )
    texts = [r["text"] for r in replies(out)]
    assert "list" not in texts[0].lower(), texts[0]
    assert texts[1].endswith("Shopping list: dishwasher tablets")
    for chat in texts[2:6]:
        assert "list" not in chat.lower(), texts
    assert texts[6].endswith("Shopping list: dishwasher tablets, batteries"), texts[6]
    assert "list" not in texts[7].lower(), texts[7]
    assert "list" not in texts[8].lower(), texts[8]
    assert texts[9] == "Shopping list: dishwasher tablets, batteries"


async def test_a_dm_list_never_leaks_and_a_group_list_stays_in_its_circle(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            WORK,
            say("alice", "dm:alice", "add a birthday watch to the presents list"),
            say("alice", "dm:alice", "add cake candles to the shopping list"),
            say("alice", "group:fam", "@alfred add flour to the shopping list"),
            # From the group: Alice's DM lists are neither listed, read nor changed.
            say("bob", "group:fam", "@alfred what lists do we have?"),
            say("bob", "group:fam", "@alfred what's on the presents list?"),
            say("bob", "group:fam", "@alfred remove the birthday watch from the presents list"),
            say("alice", "group:fam", "@alfred remove cake candles from the shopping list"),
            say("bob", "group:fam", "@alfred clear the shopping list"),
            # From Bob's DM: the circle's list, never Alice's.
            say("bob", "dm:bob", "what lists do we have?"),
            say("bob", "dm:bob", "what's on the presents list?"),
            say("bob", "dm:bob", "we got the birthday watch"),
            # Another circle sees none of the family's lists, nor Alice's.
            say("carol", "group:work", "@alfred what lists do we have?"),
            say("carol", "group:work", "@alfred what's on the shopping list?"),
            say("carol", "dm:carol", "what's on the shopping list?"),
            # Alice's DM lists are intact.
            say("alice", "dm:alice", "what's on the presents list?"),
            say("alice", "dm:alice", "what's on the shopping list?"),
            probe("bob", "group:fam", "what are we buying?"),
            # Changing it, explicitly, from elsewhere: nothing there to change.
            say("bob", "dm:bob", "remove the birthday watch from the presents list"),
            say("bob", "group:fam", "@alfred clear the presents list"),
            # And a DM changes no circle list either: that is done in the group.
            say("alice", "group:fam", "@alfred add rice to the shopping list"),
            say("bob", "dm:bob", "remove rice from the shopping list"),
            say("alice", "dm:alice", "what's on the presents list?"),
        ],
        tmp_path / "l",
    )
    shown_elsewhere = [
        r["text"].lower() for r in replies(out) if r["in"] != "dm:alice" and "list" in r["text"]
    ]
    for text in shown_elsewhere:  # (the only mentions are the askers' own words, quoted)
        assert "presents list:" not in text and "watch" not in text.replace(
            "remove the birthday watch", ""
        ), text
        assert "candles" not in text.replace("cake candles isn't on", ""), text
    ordered = [r["text"] for r in replies(out)]
    assert ordered[3] == "Lists here:\n- Shopping list: 1 item"
    assert ordered[4] == "There's no presents list here."
    assert ordered[5] == "There's no presents list here."
    assert ordered[6] == "cake candles isn't on the shopping list."
    assert ordered[7] == "Cleared the shopping list."
    assert ordered[8] == "Lists here:\n- Shopping list (the group's): 0 items"
    assert ordered[9] == "There's no presents list here."
    assert "list" not in ordered[10].lower(), ordered[10]
    assert ordered[11] == NONE_HERE
    assert ordered[12] == "There's no shopping list here."
    assert ordered[13] == "There's no shopping list here."
    assert ordered[14] == "Presents list: birthday watch"
    assert ordered[15] == "Shopping list: cake candles"
    assert ordered[16] == "There's no presents list here."
    assert ordered[17] == "There's no presents list here."
    assert ordered[19] == "That's on the group's shopping list: tick it off there."
    assert ordered[20] == "Presents list: birthday watch"
    assert len(ordered) == 21
    (seen,) = probes(out)
    assert "watch" not in json.dumps(seen) and "candles" not in json.dumps(seen)


NONE_HERE = 'There are no lists here yet. Say e.g. "add milk to the shopping list".'


async def test_lists_are_never_memories(settings: Settings, tmp_path: Path) -> None:
    """After formation has run over the conversation, no item of any list is a fact, a
    note or a summary, in any chat: only what people said besides is learned."""
    out = await replay_lines(
        settings,
        [
            FAM,
            say("alice", "group:fam", "@alfred add quinoa and saffron to the shopping list"),
            say("bob", "group:fam", "put a wheelbarrow on the garden list"),
            say("alice", "group:fam", "we need fenugreek"),
            say("bob", "group:fam", "@alfred what's on the shopping list?"),
            say("alice", "group:fam", "I work at the bakery on Main Street"),
            say("bob", "group:fam", "my favourite colour is green"),
            say("alice", "dm:alice", "add marzipan to the baking list"),
            say("alice", "dm:alice", "what's on the baking list?"),
            say("alice", "dm:alice", "my sister lives in Porto"),
            say("alice", "dm:alice", "I play the cello on Sundays"),
            {"clock": "+30m"},
            {"jobs": "drain"},
            {"clock": "+7h"},
            {"jobs": "drain"},
            probe("bob", "group:fam", "what do we need to buy?"),
            probe("alice", "dm:alice", "what do I need for baking?"),
            {"dump": "all"},
        ],
        tmp_path / "m",
    )
    (dump,) = dumps(out)
    memories = json.dumps(
        {k: dump[k] for k in ("facts", "reflections", "consolidated", "clarifications")}
    ).lower()
    assert dump["facts"], "formation ran and learned what was said besides the lists"
    for item in ("quinoa", "saffron", "wheelbarrow", "fenugreek", "marzipan"):
        assert item not in memories, item
    for seen in probes(out):
        text = json.dumps(seen).lower()
        assert not any(i in text for i in ("quinoa", "wheelbarrow", "fenugreek", "marzipan"))
    # Alfred's answers about lists are journaled without the list's text.
    agent = [m["text"] for m in dump["messages"] if m["role"] == "agent"]
    assert agent and not any("saffron" in t.lower() for t in agent), agent


async def test_forget_everything_erases_the_persons_lists_and_says_how_many(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("alice", "dm:alice", "add a silk scarf to the gifts list"),
            say("alice", "dm:alice", "add almond milk to the shopping list"),
            say("alice", "group:fam", "@alfred add tahini and limes to the shopping list"),
            say("bob", "group:fam", "@alfred add kale to the shopping list"),
            say("alice", "group:fam", "@alfred put a spirit level on the tools list"),
            say("alice", "dm:alice", "forget everything about me"),
            say("alice", "dm:alice", "yes"),
            say("bob", "group:fam", "@alfred what lists do we have?"),
            say("bob", "group:fam", "@alfred what's on the shopping list?"),
            say("alice", "dm:alice", "what lists do we have?"),
        ],
        tmp_path / "f",
    )
    texts = [r["text"] for r in replies(out)]
    erased = texts[6]
    # Her two DM lists and the tools list only she used (its spirit level counted among
    # her items); her two items on the circle's shopping list, which stays with Bob's kale.
    assert "3 lists, 3 items on shared lists" in erased, erased
    assert texts[7] == "Lists here:\n- Shopping list: 1 item"
    assert texts[8] == "Shopping list: kale"
    assert texts[9] == NONE_HERE


# --- the chat model's list tools -----------------------------------------------------

SPICE = "zanzibar pepper"  # only ever in Alice's DM list


def _list_model(request: RecordedRequest) -> Any:
    """A model that calls the list tool the message names (once), then repeats every
    message it was given, tool results included: the worst case for a leak."""
    if not request.tools:
        return json_task_handler()(request)
    called = any(m.get("role") == "tool" for m in request.messages)
    text = request.last_user_text
    for cue, name, args in (
        ("JOT", "add_to_list", {"list": "spices", "items": [SPICE, "sumac"]}),
        ("PEEK", "show_list", {"list": "spices"}),
        ("ALL", "show_list", {"list": "*"}),
        ("DROP", "remove_from_list", {"list": "spices", "items": [SPICE]}),
    ):
        if cue in text and not called:
            return completion(None, tool_calls=[tool_call(name, args)])
    return completion("Said: " + " | ".join(str(m.get("content")) for m in request.messages))


async def test_the_chat_models_list_tools_keep_to_the_thread(
    settings: Settings, tmp_path: Path
) -> None:
    """With a real model the list tools are offered with their JSON schemas; what they
    do and read obeys the same rule as the rules' requests, and a tool call marks the
    message handled (never learned from)."""
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.set_handler(_list_model)
        world = with_model(settings, fake)
        out = await replay_lines(
            world,
            [
                FAM,
                say("alice", "dm:alice", "JOT these down for the curry night, would you"),
                say("bob", "group:fam", "@alfred PEEK at the spices, please"),
                say("bob", "group:fam", "@alfred ALL the lists you know"),
                say("bob", "group:fam", "@alfred DROP that pepper"),
                say("bob", "dm:bob", "PEEK at Alice's spices"),
                say("alice", "dm:alice", "what's on the spices list?"),
                {"dump": "all"},
            ],
            tmp_path / "t",
        )
        offered = [r for r in fake.chat_requests if r.tools]
    assert offered
    names = {t["function"]["name"] for t in offered[0].tools}
    assert {"add_to_list", "show_list", "remove_from_list"} <= names, names
    schema = next(t for t in offered[0].tools if t["function"]["name"] == "add_to_list")
    assert schema["function"]["parameters"]["required"] == ["items"]
    texts = [(r["in"], r["text"]) for r in replies(out)]
    assert "Shopping" not in texts[0][1] and "Spices list: zanzibar pepper, sumac" in texts[0][1]
    for where, text in texts[1:5]:
        assert where != "dm:alice" and SPICE not in text.lower(), (where, text)
    assert "There's no spices list here." in texts[1][1]
    assert texts[5] == ("dm:alice", "Spices list: zanzibar pepper, sumac")
    (dump,) = dumps(out)
    asked = next(m for m in dump["messages"] if m["text"].startswith("JOT"))
    assert asked["handled"] is True
    answers = [m["text"] for m in dump["messages"] if m["role"] == "agent"]
    assert not any(SPICE in a for a in answers), answers


def _one_by_one_model(request: RecordedRequest) -> Any:
    """A model that, asked to STOCK, adds three items in one call; asked to TIDY, ticks
    two of them off in two calls of the same turn, one item each; then says what the
    last tool answered."""
    if not request.tools:
        return json_task_handler()(request)
    results = [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]
    text = request.last_user_text
    if "STOCK" in text and not results:
        args = {"list": "shopping", "items": ["milk", "eggs", "bread"]}
        return completion(None, tool_calls=[tool_call("add_to_list", args)])
    if "TIDY" in text and len(results) < 2:
        item = ("milk", "eggs")[len(results)]
        args = {"list": "shopping", "items": [item]}
        return completion(None, tool_calls=[tool_call("remove_from_list", args)])
    return completion(results[-1] if results else "Nothing to do.")


async def test_the_chat_model_ticks_off_items_one_call_at_a_time(
    settings: Settings, tmp_path: Path
) -> None:
    """The list tools name the message they answer (so a replay after a cut finds what
    its first try did); a second tick-off in the same turn is not taken for that replay:
    each item the model names is taken off."""
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.set_handler(_one_by_one_model)
        out = await replay_lines(
            with_model(settings, fake),
            [
                FAM,
                say("alice", "group:fam", "@alfred STOCK the shopping list"),
                say("bob", "group:fam", "@alfred TIDY the shopping list, we have those"),
                say("bob", "group:fam", "@alfred what's on the shopping list?"),
            ],
            tmp_path / "t",
        )
    texts = [r["text"] for r in replies(out)]
    assert texts[0].startswith("Added milk, eggs and bread to the shopping list."), texts[0]
    assert texts[1] == "Ticked off eggs.\nShopping list: bread", texts[1]
    assert "Shopping list: bread" in texts[2] and "milk" not in texts[2], texts[2]
    # What a replay of each message would find: the items the first added carry its
    # name, and the list names the second among the messages that took items off.
    with acquire("mongo", tmp_path / "t") as lease:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(lease.url)
        try:
            (shopping,) = await client["replay_t"]["lists"].find({}).to_list()
            journal = client["replay_t"]["messages"]
            stock = await journal.find_one({"text": {"$regex": "^@alfred STOCK"}})
            tidy = await journal.find_one({"text": {"$regex": "^@alfred TIDY"}})
        finally:
            await client.close()
    stop_before_removal(tmp_path / "t")
    assert stock is not None and tidy is not None
    assert [i["source"] for i in shopping["items"]] == [stock["_id"]]
    assert tidy["_id"] in shopping["removed_by"], shopping["removed_by"]


async def test_the_demo_builds_and_reads_a_shopping_list(
    settings: Settings, tmp_path: Path
) -> None:
    from bot.replay.demo import demo_script

    out = await replay_lines(settings, demo_script(), tmp_path / "demo")
    texts = [r["text"] for r in replies(out) if r["in"] == "group:fam"]
    assert "Shopping list: milk, basil" in texts, texts
    # and ticked off with a button: the list's message is edited to what is left
    edits = [o["edit"] for o in out if "edit" in o]
    assert edits == [
        {
            "in": "group:fam",
            "text": "Alice ticked off basil.\nShopping list: milk",
            "buttons": ["milk"],
        }
    ], edits
