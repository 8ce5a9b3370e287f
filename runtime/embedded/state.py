"""The files through which an embedded server's supervisor and its clients cooperate.

Everything about a running embedded server lives in the data folder, so separate Alfred
processes (the bot, the worker, a CLI command) can find and share it without talking to
each other: a lock file serialises starting and stopping, a state file says where the
server listens, one lease file per client process says who still needs it, and an error
file carries a start-up failure back to the process that asked for the server.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, cast

from memory.errors import AlfredError, ConfigurationError, Unavailable

Kind = Literal["mongo", "redis"]
KINDS: tuple[Kind, ...] = ("mongo", "redis")

# How people know each server, and which setting changes what, for error messages.
COMPONENT: dict[Kind, str] = {"mongo": "embedded MongoDB", "redis": "embedded Redis"}
PORT_SETTING: dict[Kind, str] = {"mongo": "EMBEDDED_MONGO_PORT", "redis": "EMBEDDED_REDIS_PORT"}
URL_SETTING: dict[Kind, str] = {"mongo": "MONGODB_URI", "redis": "REDIS_URL"}

_PROC = Path("/proc")


@dataclass(frozen=True)
class EmbeddedPaths:
    """Where one kind of embedded server keeps its data and its coordination files."""

    data_dir: Path
    kind: Kind

    @property
    def lock(self) -> Path:
        return self.data_dir / f"{self.kind}.lock"

    @property
    def state(self) -> Path:
        return self.data_dir / f"{self.kind}.json"

    @property
    def leases(self) -> Path:
        return self.data_dir / f"{self.kind}.leases"

    @property
    def log(self) -> Path:
        return self.data_dir / f"{self.kind}.log"

    @property
    def error(self) -> Path:
        return self.data_dir / f"{self.kind}.error.json"

    @property
    def server_dir(self) -> Path:
        """The server's own data (WiredTiger home, or Valkey's AOF and RDB files)."""
        return self.data_dir / self.kind

    def lease_file(self, pid: int) -> Path:
        return self.leases / str(pid)


@dataclass(frozen=True)
class ServerState:
    """What the state file says: who supervises, who serves, and where.

    Start times (from ``/proc``) make the pids safe against reuse by unrelated
    processes. ``ready`` is false while the server is still starting.
    """

    kind: Kind
    supervisor_pid: int
    supervisor_started: int | None
    server_pid: int | None
    server_started: int | None
    port: int
    url: str
    ready: bool


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` in one step, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_state(paths: EmbeddedPaths, state: ServerState) -> None:
    write_json_atomic(paths.state, asdict(state))


def read_state(paths: EmbeddedPaths) -> ServerState | None:
    """The state file, or ``None`` when it is missing or unreadable."""
    data = _read_json(paths.state)
    if data is None or data.get("kind") != paths.kind:
        return None
    try:
        return ServerState(**data)
    except TypeError:
        return None


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """The process state letter and start time (clock ticks since boot), if Linux says."""
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def process_start_time(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[1] if stat else None


def process_alive(pid: int | None, started: int | None = None) -> bool:
    """Whether ``pid`` runs and is the same process that started at ``started``.

    Zombies count as dead: a killed client whose parent has not reaped it yet no longer
    needs the server, and a zombie server no longer holds its files.
    """
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _proc_stat(pid)
    if stat is None:
        return not _PROC.joinpath("self").exists()  # no /proc: trust kill(0)
    letter, start = stat
    if letter in ("Z", "X"):
        return False
    return started is None or start == started


def write_lease(paths: EmbeddedPaths, pid: int) -> None:
    write_json_atomic(paths.lease_file(pid), {"pid": pid, "started": process_start_time(pid)})


def live_leases(paths: EmbeddedPaths) -> list[int]:
    """Pids holding a lease; removes the leases of processes that have died."""
    try:
        entries = list(paths.leases.iterdir())
    except FileNotFoundError:
        return []
    live: list[int] = []
    for entry in entries:
        if not entry.name.isdigit():
            continue  # a temporary file of a lease being written
        pid = int(entry.name)
        data = _read_json(entry) or {}
        started = data.get("started")
        if process_alive(pid, started if isinstance(started, int) else None):
            live.append(pid)
        else:
            remove(entry)
    return sorted(live)


def log_tail(path: Path, offset: int = 0, lines: int = 5) -> str:
    """The last non-empty lines of a log after ``offset``, joined for a one-line message."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(offset, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def write_failure(paths: EmbeddedPaths, error: AlfredError) -> None:
    """Hand a start-up failure to the waiting client, which re-raises it as is."""
    data: dict[str, Any] = {"message": error.message, "hint": error.hint}
    if isinstance(error, Unavailable):
        prefix = f"{error.component}: "
        data |= {
            "type": "unavailable",
            "component": error.component,
            "message": error.message.removeprefix(prefix),
        }
    else:
        data["type"] = "configuration"
    write_json_atomic(paths.error, data)


def read_failure(paths: EmbeddedPaths) -> AlfredError | None:
    data = _read_json(paths.error)
    if data is None:
        return None
    message = str(data.get("message", "unknown failure"))
    hint = cast("str | None", data.get("hint"))
    if data.get("type") == "unavailable":
        return Unavailable(str(data.get("component", COMPONENT[paths.kind])), message, hint=hint)
    return ConfigurationError(message, hint=hint)
