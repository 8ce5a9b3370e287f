"""Memory intents: what each phrase family asks, and what must never be read as a request."""

from __future__ import annotations

import time

import pytest

from memory.intents import (
    CorrectionIntent,
    DirectiveIntent,
    ForgetAllIntent,
    ForgetIntent,
    RecallIntent,
    RememberIntent,
    clean_text,
    detect_ambiguous_reference,
    detect_correction,
    detect_directive,
    detect_forget,
    detect_intent,
    detect_recall,
    detect_remember,
    split_sentences,
    strip_addressing,
    third_person_singular,
)
from memory.models import ThreadKind

# --- cleaning -----------------------------------------------------------------------------


def test_clean_text_normalises_quotes_spaces_and_invisibles() -> None:
    assert clean_text("I\u2019m  \u201chappy\u201d\u200b \n\n ok") == 'I\'m "happy"\nok'


def test_clean_text_caps_long_input() -> None:
    assert len(clean_text("a" * 100_000)) == 4000
    assert len(clean_text("a" * 100_000, limit=None)) == 100_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@alfred remember this", "remember this"),
        ("@HouseholdBot: hi", "hi"),
        ("Alfred, remember this", "remember this"),
        ("alfred: remember this", "remember this"),
        ("Hey Alfred remember this", "remember this"),
        ("Alfred please remember this", "please remember this"),
        ("what do you know about me, Alfred?", "what do you know about me?"),
        ("Alfred is great", "Alfred is great"),
        ("I love Alfred", "I love Alfred"),
        ("@bob remember this", "@bob remember this"),
    ],
)
def test_strip_addressing(text: str, expected: str) -> None:
    assert strip_addressing(text) == expected


def test_split_sentences_keeps_titles_and_initials() -> None:
    assert split_sentences("Dr. Smith is our dentist. J. R. likes tea! Ok?\nNew line") == [
        "Dr. Smith is our dentist.",
        "J. R. likes tea!",
        "Ok?",
        "New line",
    ]


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        ("love", "loves"),
        ("go", "goes"),
        ("watch", "watches"),
        ("study", "studies"),
        ("play", "plays"),
        ("have", "has"),
        ("do", "does"),
        ("don't", "doesn't"),
        ("need", "needs"),
        ("moved", "moved"),
        ("got", "got"),
        ("can", "can"),
    ],
)
def test_third_person_singular(verb: str, expected: str) -> None:
    assert third_person_singular(verb) == expected


# --- remember -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "payload"),
    [
        ("remember that my mom's name is Sarah", "my mom's name is Sarah"),
        ("Remember: Bob hates cilantro.", "Bob hates cilantro"),
        ("remember - the wifi code is on the fridge", "the wifi code is on the fridge"),
        ("Remember, I'm allergic to nuts!", "I'm allergic to nuts"),
        ("remember my birthday is March 3", "my birthday is March 3"),
        ("@alfred remember that I\u2019m allergic to peanuts!", "I'm allergic to peanuts"),
        ("Alfred, please remember that we're out of milk", "we're out of milk"),
        ("Don't forget that our anniversary is on 12 June", "our anniversary is on 12 June"),
        ("dont forget: Bob's flight lands at 6", "Bob's flight lands at 6"),
        ("don't forget my sister is vegan", "my sister is vegan"),
        ("keep in mind I'm vegetarian", "I'm vegetarian"),
        ("Keep in mind that Bob works nights.", "Bob works nights"),
        ("bear in mind: the car is at the garage", "the car is at the garage"),
        ("make a note that the plumber comes Tuesday", "the plumber comes Tuesday"),
        ("Make a note of my new address: 5 Main St", "my new address: 5 Main St"),
        ("take a note: Bob prefers aisle seats", "Bob prefers aisle seats"),
        ("Note that the meeting moved to 3pm.", "the meeting moved to 3pm"),
        ("note: gate code 1234", "gate code 1234"),
        ("note to self: call the bank", "call the bank"),
        ("For the record, I hate mushrooms", "I hate mushrooms"),
        ("memorise that Bob's shoe size is 44", "Bob's shoe size is 44"),
        ("Can you remember that I'm vegan?", "I'm vegan"),
        ("could you please remember that Jane is Bob's sister", "Jane is Bob's sister"),
        ("I want you to remember that I hate jazz", "I hate jazz"),
        ("oh and btw remember that Bob is allergic to shellfish", "Bob is allergic to shellfish"),
        ("Actually, remember that the party is at 8", "the party is at 8"),
        ("We went out. Remember that Bob hates sushi. Fun night!", "Bob hates sushi"),
        ("remember that \u201cthe code is 42\u201d", "the code is 42"),
        ("REMEMBER THAT I LOVE TEA!!!", "I LOVE TEA"),
        ("remember that Dr. Smith is our dentist", "Dr. Smith is our dentist"),
        ("remember that I'm allergic to peanuts 🥜🙂", "I'm allergic to peanuts"),
    ],
)
def test_remember_payload(text: str, payload: str) -> None:
    assert detect_remember(text) == RememberIntent(payload=payload)


@pytest.mark.parametrize(
    "text",
    [
        "I remember that film",
        "Do you remember that I'm vegan?",
        "Remember that time we went to Rome?",
        "Remember that film we saw last week",
        "remember that night",
        "Remember when we met?",
        "remember to buy milk",
        "don't forget to call mom",
        "Don't forget the milk",
        "remember me?",
        "remember that",
        "remember this",
        "remember: 🙂",
        "I'll keep in mind",
        "Did you forget that I'm vegetarian?",
        "she said to note that",
        "What do you remember about me?",
        "",
        "   ",
    ],
)
def test_not_a_remember_request(text: str) -> None:
    assert detect_remember(text) is None


# --- corrections ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "statement", "negated", "cue"),
    [
        (
            "Actually, I'm not vegetarian anymore",
            "I'm not vegetarian anymore",
            "I'm vegetarian",
            "actually",
        ),
        ("actually my mom's name is Sarah", "my mom's name is Sarah", None, "actually"),
        ("Well actually, Bob works at Acme now", "Bob works at Acme now", None, "actually"),
        ("No, actually, I live in Berlin", "I live in Berlin", None, "actually"),
        (
            "I'm not vegetarian any more",
            "I'm not vegetarian any more",
            "I'm vegetarian",
            "not anymore",
        ),
        (
            "I am no longer vegetarian.",
            "I am no longer vegetarian",
            "I am vegetarian",
            "not anymore",
        ),
        ("I no longer work at Acme", "I no longer work at Acme", "I work at Acme", "not anymore"),
        (
            "Bob doesn't eat meat anymore",
            "Bob doesn't eat meat anymore",
            "Bob eats meat",
            "not anymore",
        ),
        (
            "I don't drink coffee anymore",
            "I don't drink coffee anymore",
            "I drink coffee",
            "not anymore",
        ),
        ("Bob isn't vegan anymore", "Bob isn't vegan anymore", "Bob is vegan", "not anymore"),
        (
            "I used to live in Paris but now I live in Berlin",
            "I live in Berlin",
            "I live in Paris",
            "used to",
        ),
        ("I used to like coffee, but now prefer tea", "I prefer tea", "I like coffee", "used to"),
        ("I used to smoke, but not anymore", "I no longer smoke", "I smoke", "used to"),
        (
            "Bob used to play golf but he quit",
            "Bob no longer plays golf",
            "Bob plays golf",
            "used to",
        ),
        (
            "That's not right, my mom's name is Sarah",
            "my mom's name is Sarah",
            None,
            "that's not right",
        ),
        (
            "That\u2019s wrong. My mom's name is Sarah.",
            "My mom's name is Sarah",
            None,
            "that's not right",
        ),
        ("that isn't true: I'm 34", "I'm 34", None, "that's not right"),
        ("Correction: the party is on Saturday", "the party is on Saturday", None, "correction"),
        ("small correction - Bob is 40", "Bob is 40", None, "correction"),
        ("I meant Tuesday", "Tuesday", None, "i meant"),
        (
            "My mom's name is Sarah, not Susan",
            "My mom's name is Sarah",
            "My mom's name is Susan",
            "not",
        ),
        (
            "I'm allergic to cashews, not peanuts",
            "I'm allergic to cashews",
            "I'm allergic to peanuts",
            "not",
        ),
        ("We live in New York, not Boston", "We live in New York", "We live in Boston", "not"),
        (
            "My phone number has changed to 555 0101",
            "My phone number has changed to 555 0101",
            None,
            "has changed",
        ),
        ("@alfred actually I’m vegan now", "I'm vegan now", None, "actually"),
    ],
)
def test_correction(text: str, statement: str, negated: str | None, cue: str) -> None:
    assert detect_correction(text) == CorrectionIntent(
        statement=statement, negated=negated, cue=cue
    )


@pytest.mark.parametrize(
    "text", ["Not anymore.", "That's not right!", "that's wrong", "No longer."]
)
def test_correction_without_statement_refers_back(text: str) -> None:
    found = detect_correction(text)
    assert found is not None
    assert found.statement is None


@pytest.mark.parametrize(
    "text",
    [
        "What actually happened?",
        "Actually, what time is it?",
        "Is it actually true?",
        "I actually love this",
        "Actually, no.",
        "That's right, I'm vegan",
        "That's true!",
        "I meant to call you",
        "I used to live in Paris",
        "Do you still eat meat anymore?",
        "I can't wait anymore",
        "It doesn't matter anymore",
        "No, I don't want pizza",
        "It's wrong to lie",
        "The weather has changed",
        "hello there",
    ],
)
def test_not_a_correction(text: str) -> None:
    assert detect_correction(text) is None


# --- forget -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("forget that I'm vegetarian", "I'm vegetarian"),
        ("Please forget my address", "my address"),
        ("forget about the party, it's cancelled", "the party"),
        ("Alfred, forget what I said about my job", "my job"),
        ("forget everything about the trip", "the trip"),
        ("can you forget my phone number?", "my phone number"),
        ("forget the fact that I smoke", "I smoke"),
        ("forget I said that Bob is moving", "Bob is moving"),
        ("delete the memory about my ex", "my ex"),
        ("Actually, forget that", None),
        ("forget that.", None),
        ("forget what I just said", None),
        ("please forget what I told you", None),
    ],
)
def test_forget_target(text: str, target: str | None) -> None:
    assert detect_forget(text) == ForgetIntent(target=target)


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("forget everything about me", "me"),
        ("Forget everything you know about me.", "me"),
        ("forget everything", "me"),
        ("Delete all my data", "me"),
        ("delete my memories", "me"),
        ("please wipe all my personal data", "me"),
        ("erase everything you have stored about me", "me"),
        ("forget me", "me"),
        ("forget all about me", "me"),
        ("forget everything you know about us", "us"),
        ("delete our data", "us"),
        ("forget about us", "us"),
        ("erase all memories about our family", "us"),
        ("forget what you know about me", "me"),
    ],
)
def test_forget_all(text: str, target: str) -> None:
    assert detect_forget(text) == ForgetAllIntent(target=target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "forget it",
        "Forget about it!",
        "never mind, forget it",
        "I forgot that Bob is vegan",
        "Don't forget that I'm allergic",
        "did you forget my birthday?",
        "I never forget a face",
        "forgetting things is normal",
        "forget that?",
    ],
)
def test_not_a_forget(text: str) -> None:
    assert detect_forget(text) is None


# --- recall -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("what do you remember about me?", "me"),
        ("What do you know about me", "me"),
        ("Alfred, what do you remember about us?", "us"),
        ("hey alfred, what do you know about us?", "us"),
        ("What do you know about us, Alfred?", "us"),
        ("so what else do you know about me?", "me"),
        ("what have you learned about me so far?", "me"),
        ("what do you have on me?", "me"),
        ("What have you got on us?", "us"),
        ("what's in your memory about me?", "me"),
        ("tell me what you know about me", "me"),
        ("Show me everything you remember about us", "us"),
        ("do you remember anything about me?", "me"),
        ("show me my memories", "me"),
        ("list our memories", "us"),
        ("what are my memories?", "me"),
        ("what do you remember?", "me"),
        ("what do you know about our family?", "us"),
    ],
)
def test_recall(text: str, target: str) -> None:
    assert detect_recall(text) == RecallIntent(target=target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "what do you know about cooking?",
        "What do you remember about my mom?",
        "What do you remember about the trip?",
        "I know about you",
        "what do you think about me?",
        "Tell me about yourself",
    ],
)
def test_not_a_recall(text: str) -> None:
    assert detect_recall(text) is None


# --- directives ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topic", "value"),
    [
        ("always keep your answers short", "length", "short"),
        ("Please keep your replies brief.", "length", "brief"),
        ("keep it short", "length", "short"),
        ("be more concise", "length", "concise"),
        ("Be brief", "length", "brief"),
        ("give me shorter answers", "length", "shorter answers"),
        ("I prefer short answers", "length", "short answers"),
        ("answer briefly", "length", "briefly"),
        ("be more formal", "style", "formal"),
        ("use bullet points", "style", "bullet points"),
        ("use metric units", "style", "metric units"),
        ("answer in Spanish", "language", "Spanish"),
        ("Always reply to me in french!", "language", "French"),
        ("Could you reply in German?", "language", "German"),
        ("speak Italian to me", "language", "Italian"),
        ("please call me Al", "name", "Al"),
        ("Call me Al", "name", "Al"),
        ("you can call me Lizzie", "name", "Lizzie"),
        ("I prefer to be called Beth", "name", "Beth"),
        ("I go by Sam", "name", "Sam"),
        ("call me 'Big Al'", "name", "Big Al"),
        ("Actually, call me Al", "name", "Al"),
        ("don't use emojis", "avoid", "emojis"),
        ("Please don\u2019t use emojis.", "avoid", "emojis"),
        ("stop using exclamation marks", "avoid", "exclamation marks"),
        ("No emojis please", "avoid", "emojis"),
        ("never mention my ex", "avoid", "my ex"),
        ("don't talk about work", "avoid", "work"),
        ("Stop calling me Alfie", "avoid", "Alfie"),
        ("don't be so formal", "avoid", "so formal"),
        ("don't swear", "avoid", "swearing"),
        ("always greet me in French", "general", None),
        ("from now on, check the weather before suggesting a walk", "general", None),
    ],
)
def test_directive(text: str, topic: str, value: str | None) -> None:
    found = detect_directive(text)
    assert found is not None
    assert (found.topic, found.value) == (topic, value)


def test_directive_instruction_is_the_bare_sentence() -> None:
    assert detect_directive("@alfred please, always keep your answers short!!") == (
        DirectiveIntent(topic="length", instruction="always keep your answers short", value="short")
    )


@pytest.mark.parametrize(
    "text",
    [
        "call me tomorrow",
        "Call me when you land",
        "call me back",
        "call me a taxi",
        "call me crazy, but I like it",
        "call me al",
        "Don't mention it",
        "don't say that",
        "don't use my mug",
        "Don't be late",
        "Don't be silly",
        "never mind",
        "give me more details",
        "keep it up",
        "keep the kids busy",
        "Do you always answer in English?",
        "answer in Spanish?",
        "answer in five minutes",
        "I speak Spanish",
        "Why do you use emojis?",
        "from now on I'm vegan",
        "always the same with you",
        "be careful",
    ],
)
def test_not_a_directive(text: str) -> None:
    assert detect_directive(text) is None


# --- the combined detector ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("remember that I'm vegan", "remember"),
        ("don't forget that I'm vegan", "remember"),
        ("forget that I'm vegan", "forget"),
        ("Actually, forget that", "forget"),
        ("forget everything about me", "forget_all"),
        ("what do you remember about me?", "recall"),
        ("Actually, call me Al", "directive"),
        ("Actually, I'm vegan", "correction"),
        ("I'm not vegan anymore", "correction"),
        ("answer in Spanish", "directive"),
    ],
)
def test_detect_intent_priority(text: str, kind: str) -> None:
    found = detect_intent(text)
    assert found is not None
    assert found.kind == kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "🙂🙂🙂",
        "ok",
        "thanks!",
        "I love hiking",
        "Привет, запомни что я люблю чай",
        "请记住我喜欢茶",
        "Recuerda que soy vegetariana",
        "\x00\x01\x02",
        "?!?!",
        "@alfred",
    ],
)
def test_no_intent(text: str) -> None:
    assert detect_intent(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "remember that " * 10_000,
        "I used to x " * 10_000 + "but now y",
        "actually " * 12_000,
        "a, not b " * 12_000,
        "not " * 25_000 + "anymore",
        "x" * 100_000,
        "🙂" * 50_000,
        "я люблю " * 12_000,
    ],
)
def test_huge_inputs_are_fast_and_safe(text: str) -> None:
    started = time.perf_counter()
    detect_intent(text)
    detect_ambiguous_reference(text, ThreadKind.GROUP)
    assert time.perf_counter() - started < 1.0


# --- ambiguous references --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("Mom called", "Mom"),
        ("mom is coming on Sunday", "mom"),
        ("I'm visiting mom tomorrow", "mom"),
        ("Grandma is in hospital", "Grandma"),
        ("Dad's birthday is next week", "Dad"),
        ("The boss wants the report by Friday", "The boss"),
        ("I left early because the dentist said so", "the dentist"),
        ("her sister is visiting", "her sister"),
        ("Yesterday her mom called", "her mom"),
        ("their dad is ill", "their dad"),
    ],
)
def test_ambiguous_in_a_group(text: str, reference: str) -> None:
    assert detect_ambiguous_reference(text, ThreadKind.GROUP) == reference
    assert detect_ambiguous_reference(text, ThreadKind.DM) is None


@pytest.mark.parametrize(
    "text",
    [
        "my mom called",
        "My sister's name is Jane",
        "our doctor is great",
        "Bob's mom is visiting",
        "Alice said her sister is visiting",
        "I'm going to the doctor",
        "Mom, are you coming?",
        "thanks, Dad!",
        "Mom!",
        "Happy Mother's Day",
        "Mother Teresa was kind",
        "dad jokes are the best",
        "English is my mother tongue",
        "she is a mother of two",
        "my step-mom is nice",
        "",
    ],
)
def test_not_ambiguous(text: str) -> None:
    assert detect_ambiguous_reference(text, ThreadKind.GROUP) is None
