"""The offline provider learns household basics from a family's chat in the background:
the people they rely on, pets, recurring dates, appointments and budgets, each in the
partition where it was said."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, say


async def test_a_familys_household_is_learned_where_it_was_said(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "home", "members": ["dana", "eli"]},
            say("dana", "group:home", "ok so our landlord is Mrs. Okonkwo"),
            say("eli", "group:home", "and the rent is due on the 3rd, don't forget"),
            say("dana", "group:home", "Pepper's vet appointment is next Monday at 10"),
            say("eli", "group:home", "we spend around 90 euros a week on groceries"),
            say("dana", "group:home", "the recycling goes out every other Friday"),
            say("dana", "dm:dana", "my piano teacher is Mr. Adeyemi"),
            say("dana", "dm:dana", "the weather is grey today"),
            say("dana", "dm:dana", "we watched a film last night"),
            say("dana", "dm:dana", "the train was late again"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            probe("eli", "group:home", "when is the rent due?"),
            probe("eli", "group:home", "who is Dana's piano teacher?"),
            {"dump": "all"},
        ],
        tmp_path / "h",
    )
    facts = {
        f["content"]: (f["visibility"], f["category"])
        for f in dumps(out)[-1]["facts"]
        if f["invalid_at"] is None
    }
    circle = {c for c, (visibility, _) in facts.items() if visibility == "shared"}
    for expected in (
        "Dana and Eli's landlord is Mrs. Okonkwo",
        "Dana and Eli's rent is due on the 3rd",
        "Dana and Eli spend around 90 euros a week on groceries",
        "Dana and Eli's recycling goes out every other Friday",
    ):
        assert expected in circle, (expected, facts)
    assert any("Pepper's vet appointment" in c for c in facts), facts
    assert facts["Dana's piano teacher is Mr. Adeyemi"] == ("dm", "relationship")
    rent, teacher = probes(out)
    assert rent["memories"][0]["content"] == "Dana and Eli's rent is due on the 3rd"
    assert all("Adeyemi" not in m["content"] for m in teacher["memories"])
    assert "Adeyemi" not in teacher["context"]
