"""Synthetic household facts and questions for the speed benchmarks.

Deterministic (seeded) and varied enough that keyword and vector search have real work:
names, relations, places, foods, activities and dates combined by templates.
"""

from __future__ import annotations

import random

from memory.rules.dates import MONTHS

NAMES = [
    "Alice",
    "Bob",
    "Carol",
    "Dan",
    "Eve",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Uma",
    "Victor",
    "Wendy",
]
RELATIONS = [
    "sister",
    "brother",
    "mother",
    "father",
    "cousin",
    "boss",
    "dentist",
    "doctor",
    "neighbour",
    "best friend",
    "aunt",
    "uncle",
    "coach",
    "teacher",
]
FOODS = [
    "Thai curry",
    "sushi",
    "ramen",
    "lasagne",
    "tacos",
    "dumplings",
    "falafel",
    "paella",
    "pho",
    "risotto",
    "kimchi stew",
    "goulash",
    "pad see ew",
    "biryani",
    "pierogi",
]
ACTIVITIES = [
    "hiking",
    "pottery",
    "chess",
    "swimming",
    "climbing",
    "jazz piano",
    "gardening",
    "birdwatching",
    "running",
    "salsa dancing",
    "photography",
    "knitting",
    "sailing",
]
PLACES = [
    "Lisbon",
    "Kyoto",
    "Oslo",
    "Marrakesh",
    "Lima",
    "Hanoi",
    "Seville",
    "Tallinn",
    "Porto",
    "Bruges",
    "Cusco",
    "Split",
    "Valencia",
    "Gdansk",
    "Lyon",
]

TEMPLATES = [
    "{a} loves {food} from the place near {place}",
    "{a}'s {rel} is called {b} and lives in {place}",
    "{a} goes {act} every {day} with {b}",
    "{a} is allergic to {food2} since {year}",
    "{a}'s birthday is on {d} {month}",
    "{a} and {b} plan a trip to {place} in {month}",
    "{a} started {act} lessons in {month} {year}",
    "{a} dislikes {food} but tolerates {food2}",
    "{a}'s {rel} {b} works as a {act} instructor",
    "{a} booked a table at the {food} restaurant for {d} {month}",
]
QUESTIONS = [
    "What food does {a} love?",
    "Who is {a}'s {rel}?",
    "When is {a}'s birthday?",
    "Where are {a} and {b} planning to travel?",
    "Is {a} allergic to anything?",
    "What does {a} do on weekends with {b}?",
    "Which restaurant did {a} book?",
    "What lessons did {a} start and when?",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _fill(template: str, rng: random.Random) -> str:
    a, b = rng.sample(NAMES, 2)
    return template.format(
        a=a,
        b=b,
        rel=rng.choice(RELATIONS),
        food=rng.choice(FOODS),
        food2=rng.choice(FOODS),
        act=rng.choice(ACTIVITIES),
        place=rng.choice(PLACES),
        month=rng.choice(MONTHS),
        d=rng.randint(1, 28),
        year=rng.randint(1990, 2026),
        day=rng.choice(DAYS),
    )


def facts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{_fill(rng.choice(TEMPLATES), rng)} (note {i})" for i in range(n)]


def questions(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng.choice(QUESTIONS), rng) for _ in range(n)]


def distinct_questions(n: int, seed: int = 11) -> list[str]:
    """Up to ``n`` questions, none repeated, so that no cache of query embeddings could
    answer a timed query (the templates allow about a thousand distinct ones)."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    for _ in range(n * 50):
        if len(seen) >= n:
            break
        seen.setdefault(_fill(rng.choice(QUESTIONS), rng), None)
    return list(seen)
