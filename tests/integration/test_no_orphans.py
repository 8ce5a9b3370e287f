"""Nothing left running: the commands that start embedded servers leave no process behind.

``alfred replay`` and ``alfred demo`` run here as real subprocesses, on the real embedded
servers. Afterwards no process of theirs may remain: no supervisor, no ``secantusd``, no
``valkey-server`` whose command line or working folder is in their data folder. That
covers the throw-away folder the commands make and remove themselves, and a folder given
with ``--data-dir`` that is deleted the moment the command ends (the servers still run
their grace period then, and must stop by themselves rather than crash or hang on
saving into a folder that is gone).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runtime.embedded import lease

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [
    {"circle": "fam", "members": ["alice", "bob"]},
    {"say": {"from": "alice", "in": "group:fam", "text": "@alfred remember that we eat at 7"}},
    {"say": {"from": "bob", "in": "dm:bob", "text": "hello"}},
    {"jobs": "drain"},
]
COMMAND_TIMEOUT = 180
LEASE_TIMEOUT = 60.0  # starting both servers on a busy machine
SETTLE = 20.0  # the servers' grace period plus a stop, with a wide margin for a busy machine
_PROC = Path("/proc")


def processes_in(folder: Path) -> list[str]:
    """Live processes whose command line names ``folder`` or that run inside it (a
    Valkey server rewrites its title; its working folder is its data folder, shown
    with " (deleted)" once the folder is gone)."""
    where = str(folder)
    found: list[str] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat[stat.rfind(")") + 2 :].startswith("Z"):
                continue  # a zombie holds nothing; its parent reaps it
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                cwd = ""
        except OSError:
            continue  # exited while we looked
        if where in cmdline or cwd.startswith(where):
            found.append(f"{entry.name}: {cmdline.strip()} (in {cwd})")
    return found


def left_behind(folder: Path) -> list[str]:
    """What still runs in ``folder`` once ``SETTLE`` seconds have passed (polled, so a
    clean run returns as soon as everything is gone)."""
    give_up = time.monotonic() + SETTLE
    while True:
        found = processes_in(folder)
        if not found or time.monotonic() >= give_up:
            return found
        time.sleep(0.2)


def run_alfred(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``alfred ARGS`` with its temporary folders under ``tmp_path/tmp``."""
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(scratch),
        "PTB_TIMEDELTA": "1",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in SCRIPT))
    return path


def test_replay_in_a_temporary_folder_leaves_nothing_running(tmp_path: Path, script: Path) -> None:
    result = run_alfred(tmp_path, "replay", str(script))
    assert result.returncode == 0, result.stderr
    assert "reply" in result.stdout  # the servers did run
    scratch = tmp_path / "tmp"
    assert not list(scratch.glob("alfred-replay-*"))  # its temporary folder is gone
    assert left_behind(scratch) == []


def test_replay_with_a_data_dir_deleted_at_once_leaves_nothing_running(
    tmp_path: Path, script: Path
) -> None:
    data = tmp_path / "data"
    # The test holds a lease of its own on both servers while the command runs, so they
    # are certainly still up when it ends (their one-second grace alone may be over by
    # then on a busy machine); letting go starts that grace at a moment the test chooses.
    with contextlib.ExitStack() as held:
        for kind in ("mongo", "redis"):
            held.enter_context(lease.acquire(kind, data, timeout=LEASE_TIMEOUT))
        result = run_alfred(tmp_path, "replay", str(script), "--data-dir", str(data))
        assert result.returncode == 0, result.stderr
        assert processes_in(data)
    remove_under_them(data)  # the folder goes away under servers in their grace period
    assert left_behind(data) == []


def remove_under_them(folder: Path) -> None:
    """Delete ``folder`` while the servers in it may be stopping, and removing their own
    state files, at the same moment (a file listed and then gone is not an error here;
    one the deletion met half-written is retried)."""

    def vanished(_function: object, _path: str, exc_info: Any) -> None:
        if not isinstance(exc_info[1], FileNotFoundError):
            raise exc_info[1]

    for _ in range(50):
        # a file written in it meanwhile makes the last rmdir fail: "directory not empty"
        with contextlib.suppress(OSError):
            shutil.rmtree(folder, onerror=vanished)
        if not folder.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{folder} could not be deleted")


def test_demo_leaves_nothing_running(tmp_path: Path) -> None:
    result = run_alfred(tmp_path, "demo")
    assert result.returncode == 0, result.stderr
    assert "Alfred demo" in result.stdout
    scratch = tmp_path / "tmp"
    assert not list(scratch.glob("alfred-replay-*"))
    assert left_behind(scratch) == []
