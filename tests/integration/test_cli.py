"""The ``alfred`` command line, run as a real process (``python -m bot.cli``) with a clean
environment: nothing configured means embedded servers under a temporary data folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.bench import BENCHES
from integrations.mongo.migrator import LOCK_ID, NO_ATLAS_SEARCH
from memory.constants import SCHEMA_MIGRATIONS
from migrations import discover
from runtime.connections import open_mongo
from runtime.embedded import EmbeddedLease, acquire
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60
COMMANDS = ["doctor", "migrate", "replay", "demo", "chat", "run", "bench"]


class Cli:
    """Runs ``alfred`` in a temporary folder with only the environment it is given."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "work"  # no .env here
        self.cwd.mkdir()
        (tmp_path / "home").mkdir()
        self.data_dir = tmp_path / "data"
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path / "home"),
            "ALFRED_DATA_DIR": str(self.data_dir),
            "PTB_TIMEDELTA": "1",
            "PYTHONPATH": str(ROOT),
        }
        self.leases: list[EmbeddedLease] = []

    def keep_server(self) -> EmbeddedLease:
        """Hold the embedded database for the test, so the processes share one server
        instead of each starting and stopping its own (the CLI does the same in a deploy)."""
        lease = acquire("mongo", self.data_dir)
        self.leases.append(lease)
        return lease

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "bot.cli", *args]

    def env_with(self, **extra: str) -> dict[str, str]:
        return {**self.env, **extra}

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        (done,) = self.run_all([args], **extra)
        return done

    def start(self, *args: str, **extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args),
            cwd=self.cwd,
            env=self.env_with(**extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run_all(
        self, commands: list[tuple[str, ...]], **extra: str
    ) -> list[subprocess.CompletedProcess[str]]:
        """Run several commands at once (each is a fresh process), wait for all."""
        running = [(args, self.start(*args, **extra)) for args in commands]
        done = []
        for args, process in running:
            try:
                out, err = process.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                raise
            done.append(subprocess.CompletedProcess(list(args), process.returncode, out, err))
        return done


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    runner = Cli(tmp_path)
    yield runner
    for lease in runner.leases:
        lease.release()


def one_line(stderr: str) -> str:
    """The single line of an error report (fails on tracebacks and multi-line output)."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# --- doctor ---------------------------------------------------------------------------------


def test_doctor_json_with_nothing_configured(cli: Cli) -> None:
    done = cli.run("doctor", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    components = report["components"]
    assert list(report) == ["components"]
    assert list(components) == [
        "database",
        "job_queue",
        "llm",
        "embeddings",
        "mem0",
        "calendar",
        "telegram",
    ]
    for name in ("database", "job_queue"):
        assert components[name]["mode"] == "embedded" and components[name]["ok"] is True
        assert components[name]["detail"].startswith("embedded server at ")
    assert str(cli.data_dir / "mongo") in components["database"]["detail"]
    assert components["llm"]["mode"] == "embedded" and components["llm"]["ok"] is True
    assert "offline" in components["llm"]["detail"]
    assert components["embeddings"]["mode"] == "embedded" and components["embeddings"]["ok"]
    for name in ("mem0", "calendar", "telegram"):
        assert components[name]["mode"] == "off" and components[name]["ok"] is True
    assert set(components["database"]) == {"mode", "ok", "detail"}


def test_doctor_with_an_unreachable_database(cli: Cli) -> None:
    closed = {"MONGODB_URI": "mongodb://127.0.0.1:1", "MONGODB_TIMEOUT_MS": "500"}
    done, as_json = cli.run_all([("doctor",), ("doctor", "--json")], **closed)
    assert done.returncode == 1
    assert one_line(done.stderr) == "alfred: not answering: database"
    assert re.search(r"│ database +│ configured +│ NO +│", done.stdout), done.stdout
    assert re.search(r"│ job_queue +│ embedded +│ yes +│", done.stdout), done.stdout

    assert as_json.returncode == 1
    assert "Traceback" not in as_json.stderr
    components = json.loads(as_json.stdout)["components"]
    database = components["database"]
    assert database["mode"] == "configured" and database["ok"] is False
    assert database["detail"].startswith(
        "database: cannot reach MongoDB at mongodb://127.0.0.1:1 (ServerSelectionTimeoutError)"
    )
    # one broken part does not hide the others
    assert [name for name, c in components.items() if not c["ok"]] == ["database"]


def test_a_malformed_mongodb_uri_is_a_clear_error(cli: Cli) -> None:
    bad = {"MONGODB_URI": "not-a-uri", "MONGODB_TIMEOUT_MS": "30000"}
    started = time.monotonic()
    done, doctor = cli.run_all([("migrate",), ("doctor", "--json")], **bad)
    assert time.monotonic() - started < 20, "said at once, not after a server-selection timeout"
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(
        "alfred: MONGODB_URI is not a valid MongoDB URI: "
        "it must start with mongodb:// or mongodb+srv://"
    )
    assert "not-a-uri" not in line, "the value (which may hold a password) is not echoed"

    assert doctor.returncode == 1
    database = json.loads(doctor.stdout)["components"]["database"]
    assert database["ok"] is False
    assert database["detail"].startswith("MONGODB_URI is not a valid MongoDB URI")


def test_an_invalid_setting_exits_2_with_one_line(cli: Cli) -> None:
    done = cli.run("doctor", EMBEDDED_MONGO_PORT="99999")
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "alfred: invalid setting EMBEDDED_MONGO_PORT: Input should be less than or equal "
        "to 65535 (see .env.example)"
    )
    assert done.stdout == ""
    assert not (cli.data_dir / "mongo").exists(), "nothing was started"


# --- migrate ----------------------------------------------------------------------------------

STATUS_LINE = re.compile(r"^(\d{4})  (.+)  \[(pending|applied \d{4}-\d\d-\d\d \d\d:\d\d)\]$")


def status(cli: Cli) -> tuple[list[tuple[str, str, str]], str]:
    done = cli.run("migrate", "--status")
    assert done.returncode == 0, done.stderr
    *lines, search, current = done.stdout.strip().splitlines()
    # The embedded server has no Atlas Search, and --status says so.
    assert search == NO_ATLAS_SEARCH
    rows = []
    for line in lines:
        match = STATUS_LINE.match(line)
        assert match, line
        rows.append((match[1], match[2], match[3].split()[0]))
    return rows, current


def test_migrate_applies_once_and_lists_versions(cli: Cli) -> None:
    cli.keep_server()
    available = discover()
    assert [m.version for m in available][:2] == [1, 2]
    rows, current = status(cli)
    assert rows == [(f"{m.version:04d}", m.name, "pending") for m in available]
    assert current == "current version: 0"

    first = cli.run("migrate")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line for line in lines if line.startswith("applying ")] == [
        f"applying {m.version:04d} {m.name}" for m in available
    ]
    assert (
        "search indexes skipped: this server has no Atlas Search; "
        "Alfred scores vectors and keywords in the application"
    ) in lines
    assert lines[-1] == f"applied {len(available)} migration(s)"
    # A second run applies nothing but still reconciles the search indexes, and says
    # honestly that there are none to make on this server.
    second = cli.run("migrate")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines() == [
        NO_ATLAS_SEARCH,
        "nothing to apply: the database is up to date",
    ]

    rows, current = status(cli)
    assert [(v, state) for v, _, state in rows] == [
        (f"{m.version:04d}", "applied") for m in available
    ]
    assert current == f"current version: {available[-1].version}"


async def test_two_migrations_at_once_apply_each_version_once(cli: Cli) -> None:
    cli.keep_server()
    available = discover()
    runs = [cli.start("migrate"), cli.start("migrate")]
    outputs = [run.communicate(timeout=TIMEOUT) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    last_lines = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
    assert last_lines == [
        f"applied {len(available)} migration(s)",
        "nothing to apply: the database is up to date",
    ]
    for m in available:
        assert sum(out.count(f"applying {m.version:04d} ") for out, _ in outputs) == 1

    handle = await open_mongo(make_settings(cli.data_dir))
    try:
        docs = [d async for d in handle.db[SCHEMA_MIGRATIONS].find({}).sort("_id", 1)]
    finally:
        await handle.close()
    # one record per version, and the lock was let go
    assert [(d["_id"], d["version"]) for d in docs] == [
        (f"v{m.version:04d}", m.version) for m in available
    ]
    owners = {d["applied_by"] for d in docs}
    assert len(owners) == 1, "one process applied them all"
    assert owners.pop().rsplit(":", 1)[1] in {str(run.pid) for run in runs}


def test_incompatible_migrate_options_are_a_usage_error(cli: Cli) -> None:
    combos = [
        ("migrate", "--status", "--legacy-dry-run"),
        ("migrate", "--status", "--legacy-import"),
        ("migrate", "--to", "2", "--legacy-import"),
        ("migrate", "--status", "--legacy-agent", "a1"),
    ]
    results = cli.run_all(combos)
    lines = [one_line(done.stderr) for done in results]
    assert [done.returncode for done in results] == [2, 2, 2, 2]
    assert lines == [
        "alfred: --status and --legacy-dry-run cannot be used together",
        "alfred: --status and --legacy-import cannot be used together",
        "alfred: --to and --legacy-import cannot be used together",
        "alfred: --status cannot be used with --legacy-user-map or --legacy-agent",
    ]
    assert all(done.stdout == "" for done in results)
    assert not (cli.data_dir / "mongo").exists(), "refused before anything started"


async def test_a_migrate_that_cannot_get_the_lock_says_so_in_one_line(cli: Cli) -> None:
    cli.keep_server()
    handle = await open_mongo(make_settings(cli.data_dir))
    try:
        await handle.db[SCHEMA_MIGRATIONS].insert_one(
            {
                "_id": LOCK_ID,
                "owner": "other-host:7",
                "token": "t",
                "expires_at": datetime.now(UTC) + timedelta(hours=1),
            }
        )
        done = cli.run("migrate", "--wait", "0.5")
        assert done.returncode == 1
        assert one_line(done.stderr) == (
            "alfred: database: another migration (other-host:7) still holds the migration "
            "lock after 0.5 s (wait for it to finish and run the command again)"
        )
        assert await handle.db[SCHEMA_MIGRATIONS].count_documents({"version": 1}) == 0
    finally:
        await handle.close()


async def test_legacy_import_at_start_then_on_demand_after_mapping(cli: Cli) -> None:
    """0004 (as the bot applies it at start-up: no user map) imports what it can and says
    what it skipped; the dry run and the on-demand import then bring in the rest once the
    users are mapped, and a second on-demand import adds nothing."""
    from bson import ObjectId

    from memory.constants import FACTS, REFLECTIONS
    from memory.models import Partition
    from migrations.legacy_import import LEGACY_SESSIONS

    cli.keep_server()
    handle = await open_mongo(make_settings(cli.data_dir))
    created = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)

    def raw(kind: str, content: str, related: list[str]) -> dict[str, Any]:
        return {
            "_id": ObjectId(),
            "agent_id": "agent-1",
            "source_session_id": "s1",
            "memory_type": kind,
            "content": content,
            "related_users": related,
            "createdAt": created,
        }

    try:
        await handle.db[LEGACY_SESSIONS].insert_many(
            [
                raw("fact", "Carol plays the cello.", ["1003"]),  # already a Telegram id
                raw("fact", "Alice is allergic to shellfish.", ["legacy-alice"]),
                raw("directive", "Reply to Alice in Spanish.", ["legacy-alice"]),
                raw("suggestion", "Offer Alice travel tips.", ["legacy-alice"]),
                raw("suggestion", "Both like board games.", ["legacy-alice", "1003"]),
            ]
        )
        first = cli.run("migrate")
        assert first.returncode == 0, first.stderr
        out = first.stdout.splitlines()
        assert "legacy import (applied): found memory_sessions" in out
        assert "  fact: 2 seen, imported 1, skipped 1 (unmapped_user 1)" in out
        assert "  directive: 1 seen, imported 0, skipped 1 (unmapped_user 1)" in out
        assert (
            "  suggestion: 2 seen, imported 0, skipped 2 (several_owners 1, unmapped_user 1)"
        ) in out
        assert any(line.startswith("legacy import: 4 item(s) skipped") for line in out)
        assert await handle.db[FACTS].count_documents({}) == 1

        user_map = cli.cwd / "users.json"
        user_map.write_text(json.dumps({"legacy-alice": 1001}))
        dry = cli.run(
            "migrate", "--legacy-import", "--legacy-dry-run", "--legacy-user-map", "users.json"
        )
        assert dry.returncode == 0, dry.stderr
        out = dry.stdout.splitlines()
        assert out[0] == "legacy import (dry run, nothing written): found memory_sessions"
        assert "  fact: 2 seen, would import 1, skipped 1 (already_imported 1)" in out
        assert "  suggestion: 2 seen, would import 1, skipped 1 (several_owners 1)" in out
        assert await handle.db[FACTS].count_documents({}) == 1
        assert await handle.db[REFLECTIONS].count_documents({}) == 0

        real = cli.run("migrate", "--legacy-import", "--legacy-user-map", "users.json")
        assert real.returncode == 0, real.stderr
        out = real.stdout.splitlines()
        assert out[0] == "legacy import (applied): found memory_sessions"
        assert "  fact: 2 seen, imported 1, skipped 1 (already_imported 1)" in out
        assert "  directive: 1 seen, imported 1" in out
        assert "  suggestion: 2 seen, imported 1, skipped 1 (several_owners 1)" in out
        facts = {d["content"]: d async for d in handle.db[FACTS].find({})}
        assert set(facts) == {"Carol plays the cello.", "Alice is allergic to shellfish."}
        alice = facts["Alice is allergic to shellfish."]
        assert (alice["visibility"], alice["circle_id"], alice["owner_user_id"]) == (
            "dm",
            None,
            "1001",
        )
        reflections = [d async for d in handle.db[REFLECTIONS].find({})]
        alice_dm = Partition.dm("1001").key()
        # Alice's own suggestion is hers alone: a user reflection in her DM, buffered.
        assert sorted((r["content"], r["scope"], r["pkey"]) for r in reflections) == [
            ("Offer Alice travel tips.", "user", alice_dm),
            ("Reply to Alice in Spanish.", "user", alice_dm),
        ]
        assert all(r["absorbed"] is False for r in reflections)

        again = cli.run("migrate", "--legacy-import", "--legacy-user-map", "users.json")
        assert again.returncode == 0, again.stderr
        out = again.stdout.splitlines()
        assert "  fact: 2 seen, imported 0, skipped 2 (already_imported 2)" in out
        assert (
            "  suggestion: 2 seen, imported 0, skipped 2 (already_imported 1, several_owners 1)"
            in out
        )
        assert await handle.db[FACTS].count_documents({}) == 2
        assert await handle.db[REFLECTIONS].count_documents({}) == 2
    finally:
        await handle.close()


# --- help ----------------------------------------------------------------------------------------


def test_help_for_every_command(cli: Cli) -> None:
    commands = [
        ("--help",),
        *((name, "--help") for name in COMMANDS),
        *(("bench", name, "--help") for name in BENCHES),
    ]
    results = cli.run_all(commands)
    for args, done in zip(commands, results, strict=True):
        assert done.returncode == 0, (args, done.stderr)
        assert done.stderr == "", args
        usage = done.stdout.lstrip().splitlines()[0]
        assert usage.startswith("Usage: ") and " ".join(("", *args[:-1], "[OPTIONS]")) in usage
        assert "--install-completion" not in done.stdout, args
    top = results[0].stdout
    for name in COMMANDS:
        assert re.search(rf"│ {name} ", top), name
    bench = results[1 + COMMANDS.index("bench")].stdout
    for name in BENCHES:
        assert re.search(rf"│ {name} ", bench), name


def test_a_bench_with_bad_sizes_stops_before_it_starts_with_one_line(cli: Cli) -> None:
    combos = [
        ("bench", "bot", "--sizes", "abc"),
        ("bench", "bot", "--sizes", "1000,0"),
        ("bench", "bot", "--sizes", " , "),
        ("bench", "retrieval", "--plot", str(cli.data_dir / "p.png"), "--sizes", "10,ten"),
    ]
    results = cli.run_all(combos)
    assert [done.returncode for done in results] == [2, 2, 2, 2]
    assert [one_line(done.stderr) for done in results] == [
        "alfred bench bot: --sizes takes positive whole numbers separated by commas"
        " (e.g. 1000,10000), not 'abc'",
        "alfred bench bot: --sizes takes positive whole numbers separated by commas"
        " (e.g. 1000,10000), not '0'",
        "alfred bench bot: --sizes names no size (e.g. 1000,10000)",
        "alfred bench retrieval: --sizes takes positive whole numbers separated by commas"
        " (e.g. 1000,10000), not 'ten'",
    ]
    assert all(done.stdout == "" for done in results)
    assert not (cli.data_dir / "p.png").exists()


def test_chat_is_the_bot_at_a_prompt(cli: Cli) -> None:
    """``alfred chat`` as a newcomer types into it: a circle, a request in the group, the
    answer to another member there, and the console keeps a DM its owner's alone (as a
    script does). Input ends the session; the embedded servers stop with it."""
    typed = "\n".join(
        [
            "/circle fam ana ben",
            "/as ana in group:fam",
            "@alfred remember that the bins go out on Thursday",
            "/as ben in group:fam",
            "@alfred when do the bins go out?",
            "/as ana in dm:ben",
            "/probe when do the bins go out?",
            "/quit",
        ]
    )
    done = subprocess.run(
        cli.command("chat", "--data-dir", str(cli.data_dir)),
        cwd=cli.cwd,
        env=cli.env,
        input=typed + "\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the console wraps long lines
    assert "Alfred: Got it, I'll remember that." in out, out
    answer = out.split("now speaking as ben in group:fam", 1)[1].strip()
    assert answer.startswith("Alfred: From what I remember:") and "on Thursday" in answer, out
    assert "only ben can speak in dm:ben" in out, out
    # Refused, the console still speaks as ben in the group: his probe finds it there.
    assert "bins go out on Thursday" in out.split("only ben can speak in dm:ben", 1)[1], out
